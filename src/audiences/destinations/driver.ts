// What every destination implements: how many diff rows fit a page, and how one page is sent.

import type { DiffMember } from '../../store/analytics.js';

export interface HttpRequest {
  /** Shown in the delivery log, e.g. `POST /users`. */
  label: string;
  method: 'POST' | 'DELETE';
  url: string;
  headers: Record<string, string>;
  body: string;
}

/** A whole answer: read to its end (or its first MiB) within the request's time limit. */
export interface HttpResponse {
  status: number;
  body: string;
}

/**
 * Sends a request built at each attempt (signatures carry the attempt's time), retrying as the
 * delivery policy says; resolves with the accepted (2xx) answer, throws when it gives up.
 */
export type Send = (build: (now: Date) => HttpRequest) => Promise<HttpResponse>;

export interface DiffPage {
  audienceId: string;
  snapshotId: number;
  page: number;
  members: DiffMember[];
}

export interface DriverConfig {
  metaBaseUrl: string;
  googleBaseUrl: string;
  /** Members per webhook request (1 000); the ad platforms take at most 10 000 rows a request. */
  webhookPageSize: number;
}

export interface Driver<D> {
  /** Diff rows per page, each page acknowledged on its own. */
  pageSize(config: DriverConfig): number;
  /** Sends one page; answers how many members it skipped (no email for an ad platform). */
  deliverPage(destination: D, page: DiffPage, send: Send, config: DriverConfig): Promise<{ skipped: number }>;
}

export const publicMember = ({ person_id, visitor_id, external_id, email }: DiffMember) => ({ person_id, visitor_id, external_id, email });
