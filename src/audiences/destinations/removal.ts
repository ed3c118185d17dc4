// Sending people to an ad platform by email outside a refresh's diff: a person deleted for privacy
// loses the email its removal would be matched by, and a change of ads consent between deliveries
// (audiences/consent.ts) adds or removes members the diff does not carry. Each platform's
// normalization and request. Webhooks learn of changes from deliveries only.

import type { DiffMember } from '../../store/analytics.js';
import type { DeliveryContext } from './driver.js';
import { googleEmail, hashedEmails, hashedMembers, metaEmail } from './emails.js';
import { removeFromGoogle, sendToGoogle } from './google.js';
import { removeFromMeta, sendToMeta } from './meta.js';
import type { AdPlatform, Destination } from './schema.js';

/** Removes `emails` from the destination's audience or list; false for a webhook, which has no such request. */
export async function removeEmails(destination: Destination, emails: string[], context: DeliveryContext): Promise<boolean> {
  if (emails.length === 0) return true;
  if (destination.type === 'meta_custom_audience') await removeFromMeta(destination, emails, context);
  else if (destination.type === 'google_customer_match') await removeFromGoogle(destination, emails, context);
  else return false;
  return true;
}

/** Sends members of one change (`change` on each) by their email, Google's with their ads consent from `consent` (by profile). */
export async function sendMembers(destination: AdPlatform, change: DiffMember['change'], members: DiffMember[],
  consent: ReadonlyMap<number, boolean>, context: DeliveryContext): Promise<void> {
  if (destination.type === 'meta_custom_audience') {
    const hashes = hashedEmails(members, change, metaEmail);
    if (hashes.length > 0) await sendToMeta(destination, change, hashes, context);
  } else {
    const hashed = hashedMembers(members, change, googleEmail, consent);
    if (hashed.length > 0) await sendToGoogle(destination, change, hashed, context);
  }
}
