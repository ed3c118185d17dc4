// Where the ad platforms are and which versions of their APIs we speak (decisions §9). Base URLs
// carry no version: a platform's new version is a change of its version setting alone.

import type { DriverConfig } from './driver.js';

export const PLATFORM_DEFAULTS = {
  metaBaseUrl: 'https://graph.facebook.com',
  // Marketing API v27.0, released 2026-11-04 (Meta's version table, checked 2026-11-28).
  metaApiVersion: 'v27.0',
  googleDataManagerBaseUrl: 'https://datamanager.googleapis.com',
  googleAdsBaseUrl: 'https://googleads.googleapis.com',
  // The newest Google Ads API version in googleapis/googleapis (checked 2026-11-28).
  googleAdsApiVersion: 'v25',
  googleOauthTokenUrl: 'https://oauth2.googleapis.com/token',
  googleJobPollMs: 30_000,
  googleJobPollMaxMs: 10 * 60_000,
  googleJobWaitMs: 24 * 60 * 60_000,
} satisfies Omit<DriverConfig, 'webhookPageSize'>;
