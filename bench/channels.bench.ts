// Cost of deriving a page view's fields and channel (src/ingest/channels.ts), per page view, over
// a mix of real referrers (Snowplow's referer-tests.json), GA4's sources as utm_source with and
// without a paid medium, click ids and direct visits.
//   npx tsx bench/channels.bench.ts

import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { Bench } from 'tinybench';
import { derivePageviewFields } from '../src/ingest/channels.js';

const LISTS = new URL('../test/fixtures/channels/', import.meta.url);

export function pageViewMix(): { url: string; referrer: string | null }[] {
  const page = 'https://shop.example.com/pricing';
  const referrers = (JSON.parse(readFileSync(new URL('referer-tests.json', LISTS), 'utf8')) as { uri: string }[]).map((t) => t.uri);
  const sources = readFileSync(new URL('ga4_source_categories.csv', LISTS), 'utf8').trim().split('\n').slice(1).map((line) => line.split(',')[0]!);
  return [
    ...referrers.map((referrer) => ({ url: page, referrer })),
    ...sources.map((source) => ({ url: `${page}?utm_source=${encodeURIComponent(source)}`, referrer: null })),
    ...sources.map((source) => ({ url: `${page}?utm_source=${encodeURIComponent(source)}&utm_medium=cpc&utm_campaign=spring`, referrer: null })),
    ...Array.from({ length: 100 }, (_, i) => ({ url: `${page}?gclid=${i}`, referrer: 'https://www.google.com/' })),
    ...Array.from({ length: 100 }, () => ({ url: page, referrer: null })),
  ];
}

export async function benchChannels(): Promise<{ views: number; meanUs: number; p99Us: number }> {
  const views = pageViewMix();
  const bench = new Bench({ time: 3000 });
  bench.add('derive fields of the mix', () => {
    for (const v of views) derivePageviewFields(v.url, v.referrer);
  });
  await bench.run();
  const r = bench.tasks[0]!.result;
  if (r.state !== 'completed') throw new Error(`channels bench ${r.state}`);
  return { views: views.length, meanUs: (r.latency.mean * 1000) / views.length, p99Us: (r.latency.p99 * 1000) / views.length };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const r = await benchChannels();
  console.log(`page view fields + channel: mean ${r.meanUs.toFixed(2)} µs per view, p99 of a pass ${r.p99Us.toFixed(2)} µs per view (${r.views} views per pass)`);
}
