// End to end through the API: page views and events sent as an app and a browser would send them
// make a compile estimate come out right.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { firstTouchChannels } from '../src/store/duckdb/pageviews.js';
import { startTestApp, type TestApp } from './support/app.js';

const ever = { kind: 'ever' };
const did = (leaf: Record<string, unknown>) => ({ ...leaf, occurrence: { op: 'did', count: null, window: ever } });
const fromAi = did({ source: 'pageview', filter: { channel_category: { op: '=', value: 'AI' } } });
const signedUp = did({ source: 'product_event', name: 'signup' });
const churned = did({ source: 'product_event', name: 'churned' });

describe('events and page views through the API feed the estimates', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ at: new Date(Date.now() + 60_000) });
    const events = (batch: unknown[]) => t.post('/v1/events', { batch });
    // As the tracker sends them: a beacon's text/plain body, the publishable key in the query.
    for (const [visitor_id, url, referrer] of [
      ['va', 'https://shop.example/', 'https://chatgpt.com/'],
      ['vb', 'https://shop.example/?utm_source=perplexity', null],
      ['vc', 'https://shop.example/', 'https://www.google.com/'],
      ['vd', 'https://shop.example/pricing', 'https://perplexity.ai/search'],
      ['va', 'https://shop.example/pricing', 'https://shop.example/'],
    ]) {
      const res = await t.app.inject({ method: 'POST', url: `/v1/pageviews?key=${t.ws.publishable_key}`,
        headers: { 'content-type': 'text/plain' }, payload: JSON.stringify({ visitor_id, url, referrer }) });
      expect(res.statusCode, res.body).toBe(200);
    }
    for (const res of [
      await events([{ event_name: 'signup', external_id: 'a', visitor_id: 'va' }, { event_name: 'signup', external_id: 'b', visitor_id: 'vb' }]),
      await events([{ event_name: 'signup', external_id: 'c', visitor_id: 'vc' }, { event_name: 'churned', external_id: 'b' }]),
    ]) expect(res.statusCode, res.body).toBe(200);
  });
  afterAll(() => t.close());

  const estimate = async (root: unknown) => {
    const res = await t.compile({ version: 1, root });
    expect(res.json().valid, res.body).toBe(true);
    return res.json().estimated_count.count as number;
  };

  it('counts visitors from AI assistants, anonymous ones included', async () => {
    expect(await estimate(fromAi)).toBe(3);
  });

  it('counts AI visitors who signed up, minus those who churned', async () => {
    expect(await estimate({ op: 'and', children: [fromAi, signedUp, { op: 'not', child: churned }] })).toBe(1);
    expect(await estimate({ op: 'and', children: [fromAi, signedUp, { ...churned, occurrence: { op: 'did_not', count: null, window: ever } }] })).toBe(1);
  });

  it('counts an internal navigation under its landing channel', async () => {
    const pricingFromAi = did({ source: 'pageview', filter: { path: { op: '=', value: '/pricing' }, channel_category: { op: '=', value: 'AI' } } });
    expect(await estimate(pricingFromAi)).toBe(2);
  });

  it('matches host filters written as URLs', async () => {
    expect(await estimate(did({ source: 'pageview', filter: { referrer_host: { op: '=', value: 'https://www.Google.com/' } } }))).toBe(1);
  });

  it('gives each visitor and person the channel of their earliest page view as first touch', async () => {
    const keys = await t.store.query(`SELECT v.visitor_id, v.visitor_key, v.person_key FROM visitors v WHERE v.workspace_id = $1`, [t.ws.workspace_id]);
    const key = (id: string) => keys.find((k) => k.visitor_id === id)!;
    const later = new Date(Date.now() + 3_600_000).toISOString();
    // A later visit from Google does not change a first touch.
    const res = await t.app.inject({ method: 'POST', url: `/v1/pageviews?key=${t.ws.publishable_key}`, headers: { 'content-type': 'application/json' },
      payload: { visitor_id: 'va', url: 'https://shop.example/', referrer: 'https://www.google.com/', timestamp: later } });
    expect(res.statusCode).toBe(200);
    const touch = await firstTouchChannels(t.store, t.ws.workspace_id, {
      visitorKeys: ['va', 'vb', 'vc', 'vd'].map((v) => Number(key(v).visitor_key)),
      personKeys: [Number(key('va').person_key), Number(key('vc').person_key)],
    });
    expect([...touch.visitors.values()]).toEqual(expect.arrayContaining(['AI', 'AI', 'Organic Search', 'AI']));
    expect(touch.visitors.get(Number(key('va').visitor_key))).toBe('AI');
    expect(touch.visitors.get(Number(key('vc').visitor_key))).toBe('Organic Search');
    expect(touch.persons.get(Number(key('va').person_key))).toBe('AI');
    expect(touch.persons.get(Number(key('vc').person_key))).toBe('Organic Search');
  });
});
