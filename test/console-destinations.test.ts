// The audience page's destinations in a real Chromium against the real app (DuckDB), delivering
// to the Meta double (test/support/platforms, from Meta's published references) and a loopback
// webhook receiver: add, edit and remove destinations, credentials never shown back, the consent
// choice explained, Send now, and each destination's last delivery with its counts and errors.

import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.js';
import { axeViolations, launchChromium } from './support/browser.js';
import { type AdPlatforms, CREDENTIALS, startAdPlatforms } from './support/platforms/index.js';
import { type Receiver, startReceiver } from './support/receiver.js';

const signedUp = { version: 1, root: { source: 'product_event', name: 'signup', occurrence: { op: 'did', count: null, window: { kind: 'ever' } } } };

let t: TestApp;
let platforms: AdPlatforms;
let receiver: Receiver;
let browser: Browser;
let page: Page;
let audienceId: string;
const consoleErrors: string[] = [];


const row = (type: string) => page.locator('.destinations tbody tr', { hasText: type });

beforeAll(async () => {
  platforms = await startAdPlatforms({ metaAudiences: ['2001'], customer: '1234567890', lists: ['31'] });
  receiver = await startReceiver();
  t = await startTestApp({ audiences: { delivery: platforms.delivery } });
  for (const [user_id, email] of [['u_ada', 'ada@example.com'], ['u_bob', 'bob@example.com'], ['u_anon', null]] as const) {
    expect((await t.post('/v1/persons', { user_id, ...(email ? { email } : {}) })).statusCode).toBeLessThan(300);
  }
  expect((await t.post('/v1/events', { batch: ['u_ada', 'u_bob', 'u_anon'].map((user_id) => ({ event_name: 'signup', user_id })) })).statusCode).toBeLessThan(300);
  const created = await t.post('/v1/audiences', { name: 'Signed up', criteria_json: signedUp });
  audienceId = created.json().id as string;
  expect((await t.app.inject({ method: 'POST', url: `/v1/audiences/${audienceId}/refresh`, headers: { authorization: `Bearer ${t.ws.secret_key}` } })).statusCode).toBe(200);
  const origin = await t.app.listen({ port: 0, host: '127.0.0.1' });
  browser = await launchChromium();
  const context = await browser.newContext({ viewport: { width: 1366, height: 900 }, locale: 'en-US', timezoneId: 'UTC' });
  page = await context.newPage();
  page.on('console', (msg) => { if (msg.type() === 'error') consoleErrors.push(msg.text()); });
  page.on('pageerror', (err) => consoleErrors.push(String(err)));
  page.on('dialog', (dialog) => void dialog.accept());
  await page.goto(`${origin}/`);
  await page.getByLabel('Secret key', { exact: true }).fill(t.ws.secret_key);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'New audience' }).waitFor();
  await page.goto(`${origin}/#/audiences/${audienceId}`);
  await page.getByRole('heading', { name: 'Signed up' }).waitFor();
});

afterAll(async () => {
  await browser?.close();
  await t?.close();
  receiver?.close();
  await platforms?.close();
});

describe('destinations on the audience page', () => {
  it('adds a Meta destination whose token is never shown back, and a Google one with the consent explained', async () => {
    await page.getByRole('button', { name: 'Add destination' }).click();
    await page.getByLabel('Type', { exact: true }).selectOption('meta_custom_audience');
    await page.getByLabel('Custom audience id', { exact: true }).fill('2001');
    await page.getByLabel('Access token', { exact: true }).fill(CREDENTIALS.meta);
    await page.getByRole('button', { name: 'Save destination' }).click();
    await row('Meta custom audience').waitFor();
    expect(await row('Meta custom audience').textContent()).toContain('Audience: 2001');

    await page.getByRole('button', { name: 'Add destination' }).click();
    await page.getByLabel('Type', { exact: true }).selectOption('google_customer_match');
    expect(await page.getByTestId('consent-hint').textContent()).toContain('drops members whose consent is not granted');
    await page.getByLabel('Customer id', { exact: true }).fill('123-456-7890');
    await page.getByLabel('User list id', { exact: true }).fill('31');
    await page.getByLabel('OAuth client id', { exact: true }).fill(CREDENTIALS.dataManager.client_id);
    await page.getByLabel('OAuth client secret', { exact: true }).fill(CREDENTIALS.dataManager.client_secret);
    await page.getByLabel('Refresh token', { exact: true }).fill(CREDENTIALS.dataManager.refresh_token);
    await page.getByLabel('Ad personalization consent', { exact: true }).selectOption('DENIED');
    await page.getByLabel('Only members who granted ads consent', { exact: true }).check();
    expect(await axeViolations(page)).toEqual([]);
    await page.getByRole('button', { name: 'Save destination' }).click();
    await row('Google Customer Match').waitFor();
    const saved = (await t.app.inject({ method: 'GET', url: `/v1/audiences/${audienceId}`, headers: { authorization: `Bearer ${t.ws.secret_key}` } })).json();
    expect(saved.destinations.map((d: { require_consent?: boolean }) => d.require_consent ?? false)).toEqual([false, true]);
    expect(await row('Google Customer Match').textContent()).toContain('Customer: 1234567890');
    const html = await page.content();
    for (const secret of [CREDENTIALS.meta, CREDENTIALS.dataManager.client_secret, CREDENTIALS.dataManager.refresh_token]) expect(html).not.toContain(secret);
  });

  it('sends now, and shows the last delivery with its added and skipped counts', async () => {
    await row('Meta custom audience').getByRole('button', { name: 'Send now' }).click();
    await expect.poll(() => row('Meta custom audience').getByTestId('delivery-counts').textContent(), { timeout: 20_000 })
      .toBe('added 3, removed 0, skipped 1'); // the member without an email is skipped
    expect(await row('Meta custom audience').locator('.badge').textContent()).toBe('delivered');
    expect(platforms.meta.audiences.get('2001')!.size).toBe(2);
  });

  it('edits the Meta destination to an audience Meta does not know, keeping its token, and shows Meta\'s refusal', async () => {
    await row('Meta custom audience').getByRole('button', { name: 'Edit' }).click();
    expect(await page.getByLabel('Access token', { exact: true }).inputValue()).toBe('');
    await page.getByLabel('Custom audience id', { exact: true }).fill('2999');
    await page.getByRole('button', { name: 'Save destination' }).click();
    await expect.poll(() => row('Meta custom audience').textContent()).toContain('Audience: 2999');
    // A changed destination is a new one: it receives the audience at the next delivery.
    await row('Meta custom audience').getByRole('button', { name: 'Send now' }).click();
    await expect.poll(() => row('Meta custom audience').textContent(), { timeout: 20_000 }).toContain("Object with ID '2999' does not exist");
    expect(await row('Meta custom audience').locator('.badge').textContent()).toBe('failed');
    // The token was kept: Meta refused the audience, not the token.
    expect(platforms.meta.requests.at(-1)!.status).toBe(400);
    expect(await row('Meta custom audience').textContent()).not.toContain('Invalid OAuth access token');
  });

  it('adds a webhook and removes the Google destination', async () => {
    await page.getByRole('button', { name: 'Add destination' }).click();
    await page.getByLabel('URL', { exact: true }).fill(receiver.url);
    await page.getByLabel('Signing secret', { exact: true }).fill('whsec_console');
    await page.getByRole('button', { name: 'Save destination' }).click();
    await row('Webhook').waitFor();
    await row('Google Customer Match').getByRole('button', { name: 'Remove' }).click();
    await expect.poll(() => row('Google Customer Match').count()).toBe(0);
    const saved = (await t.app.inject({ method: 'GET', url: `/v1/audiences/${audienceId}`, headers: { authorization: `Bearer ${t.ws.secret_key}` } })).json();
    expect(saved.destinations.map((d: { type: string }) => d.type)).toEqual(['meta_custom_audience', 'webhook']);
    expect(JSON.stringify(saved)).not.toContain('whsec_console');
    expect(await axeViolations(page)).toEqual([]);
  });

  it('logged no console error', () => {
    expect(consoleErrors).toEqual([]);
  });
});
