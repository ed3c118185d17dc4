// The ad-platform doubles refuse what the platforms' references forbid, so that the delivery tests
// against them prove something: mixed operations in one Google Ads job, a Data Manager request
// without encoding, a non-numeric Meta audience, more than 10 000 rows, an expired token, and a
// DELETE whose body never arrived (sent without Content-Length).

import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AdPlatforms, CREDENTIALS, startAdPlatforms } from './support/platforms/index.js';

const HASH = 'a'.repeat(64);
let platforms: AdPlatforms;
let base: string;

async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
}

async function token(client: typeof CREDENTIALS.dataManager): Promise<string> {
  const res = await fetch(platforms.delivery.googleOauthTokenUrl, {
    method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'refresh_token', ...client }).toString(),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { access_token: string }).access_token;
}

beforeAll(async () => {
  platforms = await startAdPlatforms({ metaAudiences: ['4001'], customer: '1234567890', lists: ['51'] });
  base = platforms.delivery.metaBaseUrl;
});
afterAll(() => platforms.close());

describe('Meta double', () => {
  const users = (audience: string, version = 'v27.0') => `${base}/${version}/${audience}/users`;
  const auth = { authorization: `Bearer ${CREDENTIALS.meta}` };

  it('accepts EMAIL_SHA256 rows and answers num_received and num_invalid_entries', async () => {
    const res = await post(users('4001'), { payload: { schema: 'EMAIL_SHA256', data: [HASH, 'not-a-hash'] } }, auth);
    expect(res).toEqual({ status: 200, body: expect.objectContaining({ num_received: 2, num_invalid_entries: 1 }) });
  });

  it('refuses a non-numeric audience, a retired version, more than 10 000 rows and a bad token', async () => {
    const payload = { payload: { schema: 'EMAIL_SHA256', data: [HASH] } };
    expect((await post(users('ca_1'), payload, auth)).body.error).toMatchObject({ code: 100, error_subcode: 33 });
    expect((await post(users('4001', 'v21.0'), payload, auth)).body.error).toMatchObject({ code: 2635 });
    expect((await post(users('4001'), { payload: { schema: 'EMAIL_SHA256', data: Array(10_001).fill(HASH) } }, auth)).status).toBe(400);
    expect((await post(users('4001'), payload, { authorization: 'Bearer nope' })).body.error).toMatchObject({ code: 190 });
  });

  it('answers a DELETE sent without Content-Length as an empty one: 400, nothing removed', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(users('4001'), { method: 'DELETE', headers: { ...auth, 'content-type': 'application/json' } }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      req.on('error', reject);
      req.end(JSON.stringify({ payload: { schema: 'EMAIL_SHA256', data: [HASH] } }));
    });
    expect(status).toBe(400);
    expect(platforms.meta.audiences.get('4001')!.has(HASH)).toBe(true);
  });
});

describe('Google doubles', () => {
  const destination = { operatingAccount: { accountType: 'GOOGLE_ADS', accountId: '1234567890' }, productDestinationId: '51' };
  const members = (n: number) => Array.from({ length: n }, () => ({ userData: { userIdentifiers: [{ emailAddress: HASH }] } }));

  it('Data Manager refuses a request without encoding, more than 10 000 members, and an expired token', async () => {
    const auth = { authorization: `Bearer ${await token(CREDENTIALS.dataManager)}` };
    const ingest = `${platforms.delivery.googleDataManagerBaseUrl}/v1/audienceMembers:ingest`;
    expect((await post(ingest, { destinations: [destination], audienceMembers: members(1), encoding: 'HEX' }, auth)).status).toBe(200);
    expect((await post(ingest, { destinations: [destination], audienceMembers: members(1) }, auth)).body.error.details[0].reason).toBe('REQUIRED_FIELD_MISSING');
    expect((await post(ingest, { destinations: [destination], audienceMembers: members(10_001), encoding: 'HEX' }, auth)).body.error.details[0].reason)
      .toBe('TOO_MANY_AUDIENCE_MEMBERS');
    platforms.oauth.expire();
    expect((await post(ingest, { destinations: [destination], audienceMembers: members(1), encoding: 'HEX' }, auth)).status).toBe(401);
  });

  it('Google Ads refuses creates and removes in one job (CONFLICTING_OPERATION) and a token without the adwords scope', async () => {
    const headers = { authorization: `Bearer ${await token(CREDENTIALS.googleAds)}`, 'developer-token': CREDENTIALS.developerToken };
    const api = `${platforms.delivery.googleAdsBaseUrl}/v25/customers/1234567890`;
    const created = await post(`${api}/offlineUserDataJobs:create`, { job: { type: 'CUSTOMER_MATCH_USER_LIST', customerMatchUserListMetadata: { userList: 'customers/1234567890/userLists/51' } } }, headers);
    expect(created.status).toBe(200);
    const job = `${platforms.delivery.googleAdsBaseUrl}/v25/${created.body.resourceName}`;
    expect((await post(`${job}:addOperations`, { operations: [{ create: { userIdentifiers: [{ hashedEmail: HASH }] } }] }, headers)).status).toBe(200);
    const mixed = await post(`${job}:addOperations`, { operations: [{ remove: { userIdentifiers: [{ hashedEmail: HASH }] } }] }, headers);
    expect(mixed.status).toBe(400);
    expect(mixed.body.error.details[0].errors[0].errorCode).toEqual({ offlineUserDataJobError: 'CONFLICTING_OPERATION' });
    const dataManagerToken = { ...headers, authorization: `Bearer ${await token(CREDENTIALS.dataManager)}` };
    expect((await post(`${api}/offlineUserDataJobs:create`, {}, dataManagerToken)).status).toBe(403);
  });
});
