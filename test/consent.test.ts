// Ads consent (decisions §12) from the API's write path to the ad platforms, against the doubles of
// Meta's CustomAudience.json, Google's Data Manager v1 (audience.proto: a member's consent overrides
// the request's) and Google Ads v25 (offline_user_data.proto: UserData.consent overrides the job's),
// on every engine: who each destination holds, and a withdrawal that reaches the lists at the next
// refresh though the audience did not change. Webhooks receive every member.

import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.js';
import { ENGINES_WITH_POSTGRES } from './support/engines.js';
import { type AdPlatforms, CREDENTIALS, startAdPlatforms } from './support/platforms/index.js';
import { type Receiver, startReceiver } from './support/receiver.js';

const AT = new Date('2026-06-15T12:00:00Z');
const CUSTOMER = '1234567890';
const sha = (email: string) => createHash('sha256').update(email).digest('hex');
const signedUp = { version: 1, root: { source: 'product_event', name: 'signup', occurrence: { op: 'did', count: null, window: { kind: 'ever' } } } };

// ann gave no consent, bob granted ads, cy refused them, dee granted analytics only.
const PEOPLE = { ann: undefined, bob: { ads: true, analytics: true }, cy: { ads: false }, dee: { analytics: true } } as const;
type Name = keyof typeof PEOPLE;
const email = (name: Name) => `${name}@example.com`;
const hashes = (...names: Name[]) => names.map((n) => sha(email(n))).sort();

describe.each(ENGINES_WITH_POSTGRES)('%s: ads consent at the destinations', (engine) => {
  let t: TestApp;
  let platforms: AdPlatforms;
  let receiver: Receiver;

  beforeAll(async () => {
    platforms = await startAdPlatforms({ metaAudiences: ['2001'], customer: CUSTOMER, lists: ['31', '32'] });
    receiver = await startReceiver();
    t = await startTestApp({ engine, at: AT, audiences: { delivery: { ...platforms.delivery, googleJobPollMs: 1, googleJobPollMaxMs: 1 } } });
  });
  afterAll(async () => {
    await t?.close();
    await platforms?.close();
    receiver?.close();
  });

  const consent = async (name: Name, value: Record<string, boolean> | undefined) => {
    const res = await t.post('/v1/persons', { external_id: name, email: email(name), traits: value ? { $consent: value } : {} });
    expect(res.statusCode, res.body).toBe(200);
  };
  const refresh = async (id: string) => {
    const res = await t.app.inject({ method: 'POST', url: `/v1/audiences/${id}/refresh`, headers: { authorization: `Bearer ${t.ws.secret_key}` } });
    expect(res.statusCode, res.body).toBe(200);
    await t.app.audiences.deliverer.idle();
  };
  const meta = () => [...platforms.meta.audiences.get('2001')!].sort();
  const dataManager = () => [...platforms.dataManager.lists.get(`${CUSTOMER}/31`)!].sort();
  const googleAds = () => [...platforms.googleAds.lists.get(`${CUSTOMER}/32`)!].sort();

  it('refuses a $consent that is not an object of booleans, naming the field, and stores nothing', async () => {
    for (const [traits, field] of [
      [{ $consent: 'yes' }, '$consent'], [{ $consent: { ads: 'true' } }, 'ads'], [{ $consent: { marketing: true } }, 'marketing'],
    ] as const) {
      const res = await t.post('/v1/persons', { external_id: 'zed', traits });
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json().message).toContain(field);
      const event = await t.post('/v1/events', { event_name: 'signup', external_id: 'zed', traits });
      expect(event.statusCode, event.body).toBe(400);
    }
    const lookup = await t.app.inject({ method: 'GET', url: '/people?q=zed', headers: { authorization: `Bearer ${t.ws.secret_key}` } });
    expect(lookup.json().data).toEqual([]);
  });

  it('sends each ad platform the members its consent rule allows, every member to a webhook, and removes a withdrawal at the next refresh', async () => {
    for (const [name, value] of Object.entries(PEOPLE)) {
      await consent(name as Name, value);
      expect((await t.post('/v1/events', { event_name: 'signup', external_id: name })).statusCode).toBe(200);
    }
    const created = await t.post('/v1/audiences', {
      name: 'consent', criteria_json: signedUp, destinations: [
        { type: 'meta_custom_audience', audience_id: '2001', access_token: CREDENTIALS.meta },
        {
          type: 'google_customer_match', customer_id: CUSTOMER, user_list_id: '31', oauth: CREDENTIALS.dataManager, require_consent: true,
          consent: { ad_user_data: 'GRANTED', ad_personalization: 'GRANTED' },
        },
        {
          type: 'google_customer_match', api: 'google_ads', customer_id: CUSTOMER, user_list_id: '32', oauth: CREDENTIALS.googleAds,
          developer_token: CREDENTIALS.developerToken, consent: { ad_user_data: 'GRANTED', ad_personalization: 'GRANTED' },
        },
        { type: 'webhook', url: receiver.url, secret: 'whsec_consent' },
      ],
    });
    expect(created.statusCode, created.body).toBe(201);
    const audience = created.json() as { id: string; destinations: { require_consent?: boolean }[] };
    expect(audience.destinations[1]!.require_consent).toBe(true);
    await refresh(audience.id);

    expect(meta()).toEqual(hashes('ann', 'bob', 'dee'));
    expect(dataManager()).toEqual(hashes('bob'));
    expect(googleAds()).toEqual(hashes('ann', 'bob', 'dee'));
    expect(receiver.members()).toHaveLength(4);
    // A member's own consent goes with it; the others fall back to the destination's.
    const ingest = platforms.dataManager.requests.find((r) => r.verb === 'ingest')!.body!;
    expect(ingest.audienceMembers).toEqual([{ userData: { userIdentifiers: [{ emailAddress: sha(email('bob')) }] },
      consent: { adUserData: 'CONSENT_GRANTED', adPersonalization: 'CONSENT_GRANTED' } }]);
    const job = platforms.googleAds.jobs.find((j) => j.list === `${CUSTOMER}/32`)!;
    expect(job.memberConsents[job.hashes.indexOf(sha(email('bob')))]).toEqual({ adUserData: 'GRANTED', adPersonalization: 'GRANTED' });
    expect(job.memberConsents[job.hashes.indexOf(sha(email('ann')))]).toBeUndefined();
    const deliveries = (await t.app.inject({ method: 'GET', url: `/v1/audiences/${audience.id}/deliveries`, headers: { authorization: `Bearer ${t.ws.secret_key}` } }))
      .json().data as { skipped: number; status: string }[];
    expect(deliveries.map((d) => [d.status, d.skipped]).sort()).toEqual([['delivered', 0], ['delivered', 1], ['delivered', 1], ['delivered', 3]]);

    // bob withdraws, cy grants: the audience is the same, the lists follow the consent.
    await consent('bob', { ads: false, analytics: true });
    await consent('cy', { ads: true });
    const pagesBefore = receiver.accepted.length;
    await refresh(audience.id);
    expect(meta()).toEqual(hashes('ann', 'cy', 'dee'));
    expect(dataManager()).toEqual(hashes('cy'));
    expect(googleAds()).toEqual(hashes('ann', 'cy', 'dee'));
    expect(receiver.accepted.length).toBe(pagesBefore);

    // Nothing changed since: the next refresh sends nothing more.
    const requests = platforms.meta.requests.length + platforms.dataManager.requests.length + platforms.googleAds.requests.length;
    await refresh(audience.id);
    expect(platforms.meta.requests.length + platforms.dataManager.requests.length + platforms.googleAds.requests.length).toBe(requests);
  });
});
