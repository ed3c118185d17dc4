// Removing people from an ad platform by email, outside a refresh's diff (a person deleted for
// privacy loses the email its removal would be matched by): each platform's normalization and
// removal request. Webhooks learn of removals from deliveries only.

import type { DeliveryContext } from './driver.js';
import { removeFromGoogle } from './google.js';
import { removeFromMeta } from './meta.js';
import type { Destination } from './schema.js';

/** Removes `emails` from the destination's audience or list; false for a webhook, which has no such request. */
export async function removeEmails(destination: Destination, emails: string[], context: DeliveryContext): Promise<boolean> {
  if (emails.length === 0) return true;
  if (destination.type === 'meta_custom_audience') await removeFromMeta(destination, emails, context);
  else if (destination.type === 'google_customer_match') await removeFromGoogle(destination, emails, context);
  else return false;
  return true;
}
