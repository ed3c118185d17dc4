// Google Customer Match: through the Data Manager API by default, or the Google Ads API for the
// accounts Google allowlists (`api: "google_ads"`). Emails are normalized by Google's rules.

import type { DiffMember } from '../../store/analytics.js';
import type { DeliveryContext, Driver } from './driver.js';
import { DATA_MANAGER_MEMBERS_PER_REQUEST, sendToDataManager } from './data-manager.js';
import { googleEmail, type HashedMember, hashedMembers, withoutEmail } from './emails.js';
import { GOOGLE_ADS_PAGE_SIZE, sendToGoogleAds } from './google-ads.js';
import type { Destination } from './schema.js';

type Google = Extract<Destination, { type: 'google_customer_match' }>;

/** Sends hashed emails of one change to the destination's list, through its API. */
export function sendToGoogle(destination: Google, change: DiffMember['change'], members: HashedMember[], context: DeliveryContext): Promise<void> {
  if (!destination.oauth) throw new Error('this destination has no OAuth client: save it again with oauth and consent (decisions §9)');
  return (destination.api === 'google_ads' ? sendToGoogleAds : sendToDataManager)(destination, change, members, context);
}

/** Removes members by email (e.g. a person deleted for privacy): Google's normalization, then a removal. */
export const removeFromGoogle = (destination: Google, emails: string[], context: DeliveryContext) =>
  sendToGoogle(destination, 'removed', hashedMembers(emails.map((email) => ({ email, change: 'removed' }) as DiffMember), 'removed', googleEmail), context);

export const googleDriver: Driver<Google> = {
  pageSize: (destination) => (destination.api === 'google_ads' ? GOOGLE_ADS_PAGE_SIZE : DATA_MANAGER_MEMBERS_PER_REQUEST),
  async deliverPage(destination, page, context) {
    for (const change of ['added', 'removed'] as const) {
      const members = hashedMembers(page.members, change, googleEmail, page.consent);
      if (members.length > 0) await sendToGoogle(destination, change, members, context);
    }
    return { skipped: withoutEmail(page.members) };
  },
};
