// The pure parts of the ad-platform destinations: emails as each platform normalizes them, Meta's
// session numbering across a delivery's pages, and how Google's and Meta's error answers are read.

import { describe, expect, it } from 'vitest';
import { googleEmail, metaEmail } from '../src/audiences/destinations/emails.js';
import { judgeGoogle, partialFailure } from '../src/audiences/destinations/google-errors.js';
import { judgeMeta, metaSession } from '../src/audiences/destinations/meta.js';

const position = { workspaceId: 'ws', deliveryId: 7, pageSize: 10, added: 25, removed: 12, filtered: false };

describe('emails as each platform matches them', () => {
  it('Meta trims and lowercases only', () => {
    expect(metaEmail('  Ann.Lee+x@Gmail.COM ')).toBe('ann.lee+x@gmail.com');
  });

  it('Google removes all whitespace, lowercases, and drops dots and +suffix of gmail.com and googlemail.com local parts', () => {
    expect(googleEmail(' Ann.Lee+promo@Gmail.com ')).toBe('annlee@gmail.com');
    expect(googleEmail('a.b+c@googlemail.com')).toBe('ab@googlemail.com');
    expect(googleEmail('Jo Hn.Doe+x@Example.com')).toBe('john.doe+x@example.com');
  });
});

describe('Meta sessions across a delivery (adds first, then removes)', () => {
  it('numbers the adds of pages 0 to 2 as one session ending on page 2', () => {
    expect([0, 1, 2].map((page) => metaSession(position, page, 'added'))).toEqual([
      expect.objectContaining({ batch_seq: 1, last_batch_flag: false, estimated_num_total: 25 }),
      expect.objectContaining({ batch_seq: 2, last_batch_flag: false }),
      expect.objectContaining({ batch_seq: 3, last_batch_flag: true }),
    ]);
  });

  it('starts the removes on the page where the adds end, in a session of their own', () => {
    const removes = [2, 3].map((page) => metaSession(position, page, 'removed'));
    expect(removes).toEqual([
      expect.objectContaining({ batch_seq: 1, last_batch_flag: false, estimated_num_total: 12 }),
      expect.objectContaining({ batch_seq: 2, last_batch_flag: true }),
    ]);
    expect(removes[0]!.session_id).not.toBe(metaSession(position, 0, 'added')!.session_id);
    expect(Number.isSafeInteger(removes[0]!.session_id)).toBe(true);
  });

  it('sends no session when a change fits one request', () => {
    expect(metaSession({ ...position, added: 4, removed: 3 }, 0, 'added')).toBeNull();
    expect(metaSession({ ...position, added: 4, removed: 3 }, 0, 'removed')).toBeNull();
  });

  it('sends no session when the pages are filtered by splits (no request could be known to be the last)', () => {
    expect([0, 1, 2].map((page) => metaSession({ ...position, filtered: true }, page, 'added'))).toEqual([null, null, null]);
  });
});

describe('reading the platforms\' answers', () => {
  const meta = (status: number, body: unknown) => judgeMeta({ status, body: JSON.stringify(body) });

  it('retries Meta\'s rate-limit codes and fails its other errors at once with its message', () => {
    expect(meta(400, { error: { message: 'too many calls', code: 80003, error_subcode: 2446079 } })).toMatchObject({ ok: false, retryable: true });
    expect(meta(400, { error: { message: 'User request limit reached', code: 17 } })).toMatchObject({ ok: false, retryable: true });
    expect(meta(400, { error: { message: 'Invalid OAuth access token', code: 190 } }))
      .toEqual({ ok: false, retryable: false, error: 'HTTP 400: Invalid OAuth access token (code 190)' });
  });

  it('notes the rows Meta refused in an accepted answer', () => {
    expect(meta(200, { num_received: 10, num_invalid_entries: 2 })).toEqual({ ok: true, note: 'Meta refused 2 of 10 rows (num_invalid_entries)' });
    expect(meta(200, { num_received: 10, num_invalid_entries: 0 })).toEqual({ ok: true });
  });

  it('retries Google\'s RESOURCE_EXHAUSTED and CONCURRENT_MODIFICATION, fails CONFLICTING_OPERATION with its message, forgets the token on a 401', () => {
    let forgotten = 0;
    const judge = judgeGoogle(() => { forgotten++; });
    const failure = (status: string, errorCode: Record<string, string>, message: string) => JSON.stringify({ error: { code: 400, status, message: 'Request contains an invalid argument.', details: [{ errors: [{ errorCode, message }] }] } });
    expect(judge({ status: 400, body: failure('INVALID_ARGUMENT', { databaseError: 'CONCURRENT_MODIFICATION' }, 'busy') })).toMatchObject({ ok: false, retryable: true });
    expect(judge({ status: 429, body: failure('RESOURCE_EXHAUSTED', { quotaError: 'RESOURCE_EXHAUSTED' }, 'quota') })).toMatchObject({ ok: false, retryable: true });
    expect(judge({ status: 400, body: failure('INVALID_ARGUMENT', { offlineUserDataJobError: 'CONFLICTING_OPERATION' }, 'Mixing creation and removal') })).toEqual({
      ok: false, retryable: false,
      error: 'HTTP 400: INVALID_ARGUMENT: Request contains an invalid argument.: CONFLICTING_OPERATION (Mixing creation and removal)',
    });
    expect(forgotten).toBe(0);
    expect(judge({ status: 401, body: JSON.stringify({ error: { code: 401, status: 'UNAUTHENTICATED', message: 'expired' } }) })).toMatchObject({ ok: false, retryable: true });
    expect(forgotten).toBe(1);
  });

  it('describes a Google Ads partial failure of an accepted answer', () => {
    const body = JSON.stringify({ partialFailureError: { code: 3, message: "Multiple errors in '1' operations.", details: [{ errors: [{ errorCode: { offlineUserDataJobError: 'INVALID_SHA256_FORMAT' }, message: 'malformed' }] }] } });
    expect(partialFailure(body)).toBe("partial failure (1 operations refused): Multiple errors in '1' operations.: INVALID_SHA256_FORMAT (malformed)");
    expect(partialFailure('{}')).toBeNull();
  });
});
