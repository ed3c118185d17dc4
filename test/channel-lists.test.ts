// The classifier against the two lists others maintain (docs/channels.md): Snowplow's
// referer-parser database and GA4's source categories, copies kept in test/fixtures/channels/.
// The expectation is computed here from the lists alone, GA4 winning where they disagree, so a
// change of the generated site data or of the matching shows up as misses per section.

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { GENERATED_MODULE, generateFromCopies, readSources } from '../scripts/channels-update.js';
import type { ChannelCategory } from '../src/criteria/schema.js';
import { derivePageviewFields } from '../src/ingest/channels.js';

const LISTS = new URL('./fixtures/channels/', import.meta.url);
const PAGE = 'https://shop.example.com/pricing';
const MIN_AGREEMENT = 0.97;

type SnowplowSection = 'unknown' | 'email' | 'social' | 'search' | 'paid' | 'chatbot';
const snowplow = parse(readFileSync(new URL('referers.yml', LISTS), 'utf8')) as
  Record<SnowplowSection, Record<string, { domains: string[] }>>;
const snowplowTests = JSON.parse(readFileSync(new URL('referer-tests.json', LISTS), 'utf8')) as
  { spec: string; uri: string; medium: SnowplowSection; known: boolean }[];
const ga4 = new Map(readFileSync(new URL('ga4_source_categories.csv', LISTS), 'utf8').trim().split('\n').slice(1)
  .map((line) => line.split(',') as [string, string])
  .map(([source, category]) => [source.toLowerCase(), category.replace('SOURCE_CATEGORY_', '').toLowerCase()]));

// The hand-written table of the contract wins over both lists (docs/channels.md, "Conflicts").
const CONTRACT: Record<string, SnowplowSection> = { 'news.ycombinator.com': 'unknown', 'youtube.com': 'social' };

type Mode = 'referrer' | 'utm_source' | 'utm_source+cpc';
const CATEGORY: Record<Mode, Partial<Record<SnowplowSection, ChannelCategory>>> = {
  referrer: { search: 'Organic Search', social: 'Organic Social', email: 'Email', chatbot: 'AI', unknown: 'Referral' },
  utm_source: { search: 'Organic Search', social: 'Organic Social', chatbot: 'AI', unknown: 'Other' },
  'utm_source+cpc': { search: 'Paid Search', social: 'Paid Social', unknown: 'Other' },
};

/**
 * GA4's category of a source or host where it is one of ours; GA4's video and shopping sources
 * are not social; else the Snowplow section's.
 */
function expected(site: string, section: SnowplowSection, mode: Mode = 'referrer'): ChannelCategory | undefined {
  const fromGa4 = ga4.get(site);
  const decided = CONTRACT[site]
    ?? (fromGa4 === 'search' || fromGa4 === 'social' ? fromGa4 : fromGa4 !== undefined && section === 'social' ? 'unknown' : section);
  return CATEGORY[mode][decided];
}

interface Case { name: string; url: string; referrer: string | null; want: ChannelCategory }

/** `example.com/path` entries name a host and a path; page views keep only the referrer's host. */
const hostOf = (domain: string): string => domain.toLowerCase().split('/')[0]!;
// Reverse-domain package ids (`com.facebook.katana`) are the host of an `android-app://` referrer.
const isAndroidPackage = (domain: string): boolean => /^(com|org|net|io)\./.test(domain);

function snowplowDomains(section: SnowplowSection): string[] {
  return Object.values(snowplow[section]).flatMap((provider) => provider.domains.map(hostOf));
}

function referrerCases(section: SnowplowSection): Case[] {
  return [...new Set(snowplowDomains(section))].flatMap((host) => {
    const want = expected(host, section);
    if (want === undefined) return [];
    const referrer = isAndroidPackage(host) ? `android-app://${host}` : `https://${host}/`;
    return [{ name: referrer, url: PAGE, referrer, want }];
  });
}

function ga4Cases(category: 'search' | 'social', as: Mode): Case[] {
  return [...ga4].filter(([, c]) => c === category).flatMap(([source]): Case[] => {
    const want = expected(source, category, as)!;
    if (as === 'referrer') return source.includes('.') ? [{ name: source, url: PAGE, referrer: `https://${source}/`, want }] : [];
    const query = `?utm_source=${encodeURIComponent(source)}${as === 'utm_source' ? '' : '&utm_medium=cpc'}`;
    return [{ name: `${source}${as === 'utm_source' ? '' : ' cpc'}`, url: PAGE + query, referrer: null, want }];
  });
}

const SECTIONS: Record<string, Case[]> = {
  'snowplow search (referrer)': referrerCases('search'),
  'snowplow social (referrer)': referrerCases('social'),
  'snowplow email (referrer)': referrerCases('email'),
  'snowplow chatbot (referrer)': referrerCases('chatbot'),
  'snowplow chatbot (utm_source)': [...new Set(snowplowDomains('chatbot'))]
    .map((host) => ({ name: host, url: `${PAGE}?utm_source=${host}`, referrer: null, want: expected(host, 'chatbot', 'utm_source')! })),
  'snowplow unknown (referrer)': referrerCases('unknown'),
  'snowplow android apps (referrer)': (['search', 'social', 'email'] as const)
    .flatMap((section) => referrerCases(section).filter((c) => c.referrer!.startsWith('android-app:'))),
  'snowplow real referrer URLs': snowplowTests.filter((t) => t.medium !== 'paid').flatMap((t) => {
    const want = expected(new URL(t.uri).hostname.replace(/^www\./, ''), t.known ? t.medium : 'unknown');
    return want === undefined ? [] : [{ name: `${t.spec}: ${t.uri.slice(0, 80)}`, url: PAGE, referrer: t.uri, want }];
  }),
  'ga4 search (referrer)': ga4Cases('search', 'referrer'),
  'ga4 search (utm_source)': ga4Cases('search', 'utm_source'),
  'ga4 search (utm_source, cpc)': ga4Cases('search', 'utm_source+cpc'),
  'ga4 social (referrer)': ga4Cases('social', 'referrer'),
  'ga4 social (utm_source)': ga4Cases('social', 'utm_source'),
  'ga4 social (utm_source, cpc)': ga4Cases('social', 'utm_source+cpc'),
};

describe('agreement with the maintained lists', () => {
  it.each(Object.entries(SECTIONS))('%s', (_section, cases) => {
    expect(cases.length).toBeGreaterThan(0);
    const misses = cases.flatMap((c) => {
      const got = derivePageviewFields(c.url, c.referrer).channel_category;
      return got === c.want ? [] : [`${c.name}: ${got}, want ${c.want}`];
    });
    const agreement = 1 - misses.length / cases.length;
    console.log(`${_section}: ${cases.length - misses.length} of ${cases.length} (${(agreement * 100).toFixed(1)} %)`
      + (misses.length === 0 ? '' : `\n  ${misses.join('\n  ')}`));
    expect(agreement).toBeGreaterThanOrEqual(MIN_AGREEMENT);
  });
});

describe('the generated site data', () => {
  it('is what the generator makes of the kept copies (no hand edits, no stale file)', () => {
    expect(generateFromCopies().module).toBe(readFileSync(GENERATED_MODULE, 'utf8'));
  });

  it('records each kept copy with its source, commit, license and checksum', () => {
    for (const source of readSources()) {
      expect(source).toMatchObject({ repository: expect.stringMatching(/^[\w.-]+\/[\w.-]+$/), commit: expect.stringMatching(/^[0-9a-f]{40}$/), license: expect.any(String) });
      const body = readFileSync(new URL(source.file, LISTS));
      expect(createHash('sha256').update(body).digest('hex'), source.file).toBe(source.sha256);
    }
  });
});
