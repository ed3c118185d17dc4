// What every destination implements: how many diff rows fit a page, and how one page is sent.

import type { DiffMember } from '../../store/analytics.js';
import type { AccessTokens } from './oauth.js';

/** How an answer is taken: accepted (with a note for the delivery log, e.g. rows the platform refused), or failed. */
export type Verdict = { ok: true; note?: string } | { ok: false; error: string; retryable: boolean };

export interface HttpRequest {
  /** Shown in the delivery log, e.g. `POST /users`. */
  label: string;
  method: 'POST' | 'DELETE';
  url: string;
  headers: Record<string, string>;
  body: string;
  /** Reads the answer as the platform means it (its error bodies, its throttling); by status alone unless given. */
  judge?: (response: HttpResponse) => Verdict;
}

/** A whole answer: read to its end (or its first MiB) within the request's time limit. */
export interface HttpResponse {
  status: number;
  body: string;
}

/**
 * Sends a request built at each attempt (signatures carry the attempt's time, bearer tokens are
 * fetched again after a 401), retrying as the delivery policy says; resolves with the accepted
 * answer, throws when it gives up.
 */
export type Send = (build: (now: Date) => HttpRequest | Promise<HttpRequest>) => Promise<HttpResponse>;

/** Where a page sits in its delivery: the work list holds every added member first, then every removed one. */
export interface DeliveryPosition {
  workspaceId: string;
  deliveryId: number;
  pageSize: number;
  added: number;
  removed: number;
  /** The pages are filtered by the audience's splits: what each page sends is known only once read. */
  filtered: boolean;
}

export interface DiffPage {
  audienceId: string;
  snapshotId: number;
  page: number;
  members: DiffMember[];
  delivery: DeliveryPosition;
  /** The explicit ads consent (`$consent.ads`) of the page's persons, by profile (ad platforms). */
  consent?: ReadonlyMap<number, boolean>;
}

export interface DriverConfig {
  /** Members per webhook request (1 000). */
  webhookPageSize: number;
  /** META_BASE_URL (no version) and META_API_VERSION. */
  metaBaseUrl: string;
  metaApiVersion: string;
  /** GOOGLE_DATA_MANAGER_BASE_URL (no version: the API's path carries v1). */
  googleDataManagerBaseUrl: string;
  /** GOOGLE_ADS_BASE_URL (no version) and GOOGLE_ADS_API_VERSION. */
  googleAdsBaseUrl: string;
  googleAdsApiVersion: string;
  /** GOOGLE_OAUTH_TOKEN_URL: where refresh tokens are exchanged for access tokens. */
  googleOauthTokenUrl: string;
  /** First wait before reading a Google Ads job's status; doubled per read up to googleJobPollMaxMs. */
  googleJobPollMs: number;
  googleJobPollMaxMs: number;
  /** A job still running after this long fails the delivery (Google says jobs may take 6 hours or more). */
  googleJobWaitMs: number;
}

/** What a driver sends a page with. */
export interface DeliveryContext {
  send: Send;
  /** Sleeps; throws at once when the service stops (the page stays unacknowledged). */
  wait(ms: number): Promise<void>;
  tokens: AccessTokens;
  config: DriverConfig;
}

export interface Driver<D> {
  /** Diff rows per page, each page acknowledged on its own. */
  pageSize(destination: D, config: DriverConfig): number;
  /** Sends one page; answers how many members it skipped (no email for an ad platform). Ad platforms get only members they may hold (audiences/consent.ts). */
  deliverPage(destination: D, page: DiffPage, context: DeliveryContext): Promise<{ skipped: number }>;
}

/** A member's public ids, and its split when the audience has splits. */
export const publicMember = ({ person_id, visitor_id, external_id, email, split }: DiffMember) =>
  ({ person_id, visitor_id, external_id, email, ...(split === undefined ? {} : { split }) });

/** Accepted when 2xx; 429 and 5xx are retried; any other status fails at once. */
export function byStatus(response: HttpResponse): Verdict {
  if (response.status >= 200 && response.status < 300) return { ok: true };
  return { ok: false, error: `HTTP ${response.status}`, retryable: response.status === 429 || response.status >= 500 };
}

/** The JSON of an answer, or null when it is not JSON. */
export function jsonOf(body: string): unknown {
  try {
    return JSON.parse(body) as unknown;
  } catch {
    return null;
  }
}

export const jsonRequest = (label: string, method: HttpRequest['method'], url: string, headers: Record<string, string>, body: unknown,
  judge?: HttpRequest['judge']): HttpRequest =>
  ({ label, method, url, headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body), ...(judge ? { judge } : {}) });
