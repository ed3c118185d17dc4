// "Merge into…" on the people page in a real Chromium against the real app (DuckDB): the preview
// of what moves, force asked for when both persons have a user id, the merge done through the API
// (its record read back), an accessibility check and no console error.

import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.js';
import { axeViolations, launchChromium } from './support/browser.js';
import { checkoutSession, deliver, notification } from './support/stripe.js';


let t: TestApp;
let browser: Browser;
let page: Page;
const consoleErrors: string[] = [];


const get = (url: string) => t.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${t.ws.secret_key}` } });

async function lookUp(q: string) {
  await page.getByLabel('Email, user id, name or customer id', { exact: true }).fill(q);
  await page.getByRole('button', { name: 'Look up' }).click();
}

beforeAll(async () => {
  t = await startTestApp();
  await t.post('/v1/pageviews', { visitor_id: 'v_guest', url: 'https://shop.example/', referrer: 'https://chatgpt.com/' });
  for (const body of [{ email: 'guest@example.com', visitor_id: 'v_guest' }, { user_id: 'u_main', email: 'main@example.com' },
    { user_id: 'u_x', email: 'x@example.com' }, { user_id: 'u_y', email: 'y@example.com' }]) {
    expect((await t.post('/v1/persons', body)).statusCode).toBe(200);
  }
  expect((await deliver(t, notification('checkout.session.completed', checkoutSession('cus_guest', { tr_visitor_id: 'v_guest' }, 'guest@example.com')))).statusCode).toBe(200);
  const origin = await t.app.listen({ port: 0, host: '127.0.0.1' });
  browser = await launchChromium();
  const context = await browser.newContext({ viewport: { width: 1366, height: 900 }, locale: 'en-US', timezoneId: 'UTC' });
  page = await context.newPage();
  page.on('console', (msg) => { if (msg.type() === 'error') consoleErrors.push(msg.text()); });
  page.on('pageerror', (err) => consoleErrors.push(String(err)));
  await page.goto(`${origin}/`);
  await page.getByLabel('Secret key', { exact: true }).fill(t.ws.secret_key);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'New audience' }).waitFor();
  await page.getByRole('link', { name: 'People' }).click();
});

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe('merging a person from the people page', () => {
  it('previews what moves, then merges the guest payer into the registered person', async () => {
    await lookUp('guest');
    await page.locator('tbody tr', { hasText: 'guest@example.com' }).getByRole('button', { name: 'Merge into…' }).click();
    await page.getByRole('heading', { name: 'Merge guest@example.com into…' }).waitFor();
    await page.getByLabel('Into the person with').selectOption('external_id');
    await page.getByLabel('Value', { exact: true }).fill('u_main');
    await page.getByRole('button', { name: 'Preview' }).click();
    const preview = page.getByTestId('merge-preview');
    await preview.waitFor();
    expect(await preview.textContent()).toContain('Moves 1 visitors (with their page views and events) and 1 payment customers (with their revenue) to main@example.com');
    expect(await preview.textContent()).toContain('A merge cannot be undone.');
    expect(await axeViolations(page)).toEqual([]);
    await page.getByRole('button', { name: 'Merge into main@example.com' }).click();
    await page.getByRole('status').filter({ hasText: 'Merged' }).waitFor();
    const main = (await t.post('/v1/persons', { user_id: 'u_main' })).json().person_id;
    expect((await get(`/v1/persons/${main}/merges`)).json().data).toEqual([expect.objectContaining({ into_person_id: main, visitors: 1, customers: 1 })]);
    expect((await get('/people?q=cus_guest')).json().data).toEqual([expect.objectContaining({ person_id: main, external_id: 'u_main', first_touch_channel: 'AI' })]);
  });

  it('asks for force when both persons have a user id', async () => {
    await lookUp('u_x');
    await page.locator('tbody tr', { hasText: 'x@example.com' }).getByRole('button', { name: 'Merge into…' }).click();
    await page.getByLabel('Value', { exact: true }).fill('y@example.com');
    await page.getByRole('button', { name: 'Preview' }).click();
    const merge = page.getByRole('button', { name: 'Merge into y@example.com' });
    await merge.waitFor();
    expect(await merge.isDisabled()).toBe(true);
    await page.getByLabel('Both have a user id: merge them anyway').check();
    await merge.click();
    await page.getByRole('status').filter({ hasText: 'Merged' }).waitFor();
    expect((await t.post('/v1/events', { event_name: 'signup', user_id: 'u_x' })).json().person_id)
      .toBe((await t.post('/v1/persons', { email: 'y@example.com' })).json().person_id);
  });

  it('logged no console error', () => {
    expect(consoleErrors).toEqual([]);
  });
});
