// The ad-platform doubles on one loopback server, and the delivery settings that point the
// service at them (fast job-status reads and backoff, so tests do not wait).

import { AUDIENCE_DEFAULTS } from '../../../src/audiences/service.js';
import { DataManagerDouble } from './data-manager.js';
import { GoogleAdsDouble } from './google-ads.js';
import { GoogleOAuthDouble } from './google-oauth.js';
import { MetaDouble } from './meta.js';
import { startPlatformServer } from './server.js';

export const CREDENTIALS = {
  meta: 'EAAB-system-user-token',
  dataManager: { client_id: 'dm-client.apps.googleusercontent.com', client_secret: 'dm-secret', refresh_token: '1//dm-refresh' },
  googleAds: { client_id: 'ads-client.apps.googleusercontent.com', client_secret: 'ads-secret', refresh_token: '1//ads-refresh' },
  developerToken: 'dev-token-123',
};

export interface AdPlatforms {
  meta: MetaDouble;
  oauth: GoogleOAuthDouble;
  dataManager: DataManagerDouble;
  googleAds: GoogleAdsDouble;
  /** Delivery settings for startTestApp's `audiences.delivery`. */
  delivery: typeof AUDIENCE_DEFAULTS.delivery;
  close(): Promise<void>;
}

/** Doubles knowing the given Meta audiences and Google lists (of customer `customer`). */
export async function startAdPlatforms(options: { metaAudiences: string[]; customer: string; lists: string[] }): Promise<AdPlatforms> {
  const oauth = new GoogleOAuthDouble([
    { ...CREDENTIALS.dataManager, scope: 'https://www.googleapis.com/auth/datamanager' },
    { ...CREDENTIALS.googleAds, scope: 'https://www.googleapis.com/auth/adwords' },
  ]);
  const meta = new MetaDouble(CREDENTIALS.meta, options.metaAudiences);
  const dataManager = new DataManagerDouble(oauth, options.lists.map((listId) => ({ accountId: options.customer, listId })));
  const googleAds = new GoogleAdsDouble(oauth, CREDENTIALS.developerToken, options.lists.map((listId) => ({ customer: options.customer, listId })));
  const server = await startPlatformServer({ '/meta': meta.handle, '/oauth': oauth.handle, '/datamanager': dataManager.handle, '/googleads': googleAds.handle });
  return {
    meta, oauth, dataManager, googleAds,
    delivery: {
      ...AUDIENCE_DEFAULTS.delivery,
      metaBaseUrl: `${server.url}/meta`,
      googleOauthTokenUrl: `${server.url}/oauth/token`,
      googleDataManagerBaseUrl: `${server.url}/datamanager`,
      googleAdsBaseUrl: `${server.url}/googleads`,
      googleJobPollMs: 1,
      googleJobPollMaxMs: 4,
      backoffBaseMs: 2,
      backoffMaxMs: 8,
    },
    close: () => server.close(),
  };
}
