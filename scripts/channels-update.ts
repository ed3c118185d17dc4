// Regenerates src/ingest/sites.generated.ts from the maintained lists (docs/channels.md).
//   npm run channels:update               download the newest lists (network), keep copies, regenerate
//   npm run channels:update -- --offline  regenerate from the copies in test/fixtures/channels/
// Run by hand; CI never reaches the network (the copies are what the tests read).

import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { getDomainWithoutSuffix } from 'tldts';
import { parse as parseYaml } from 'yaml';
import { normalizeHost } from '../src/criteria/host.js';
import { SITES, type SiteList } from '../src/ingest/sites.js';

export const LISTS_DIR = new URL('../test/fixtures/channels/', import.meta.url);
export const GENERATED_MODULE = new URL('../src/ingest/sites.generated.ts', import.meta.url);
const DOCS = new URL('../docs/channels.md', import.meta.url);

export interface ListSource {
  file: string;
  repository: string;
  branch: string;
  path: string;
  license: string;
  commit: string;
  retrieved: string;
  sha256: string;
}

type SnowplowSection = 'unknown' | 'email' | 'social' | 'search' | 'paid' | 'chatbot';
type Ga4Category = 'search' | 'social' | 'video' | 'shopping';

// Paid is left out: an ad network's referrer without a paid medium or click id is a Referral for GA4 too.
const SECTION_LIST: Partial<Record<SnowplowSection, SiteList>> = {
  chatbot: 'ai', email: 'webmail', social: 'social', search: 'search', unknown: 'none',
};
// A host in several Snowplow sections takes the first of these.
const SECTION_ORDER: SnowplowSection[] = ['chatbot', 'email', 'social', 'search', 'unknown'];

export type GeneratedSite = readonly [list: SiteList, name: string, hosts: readonly string[], names: readonly string[]];

export interface Conflict {
  key: string;
  contract?: SiteList;
  ga4?: string;
  snowplow?: string;
  decided: SiteList;
}

interface Decision {
  list: SiteList;
  /** Snowplow provider, for naming. */
  provider?: string;
  ga4?: Ga4Category;
  snowplow?: { section: SnowplowSection; provider: string };
}

const slug = (provider: string): string => provider.toLowerCase().replace(/!/g, '').replace(/\s+/g, ' ').trim();

/** Keys the hand-written table decides; it wins at run time, so generated entries for them would be dead. */
function contractKeys(): Map<string, SiteList> {
  const keys = new Map<string, SiteList>();
  for (const s of SITES) for (const key of [s.name, ...(s.aliases ?? []), ...s.domains]) keys.set(key, s.list);
  return keys;
}

/** Name of the contract's site of `list` that `host` is a host, subdomain or country domain of. */
function contractName(list: SiteList, key: string): string | undefined {
  const suffixless = key.includes('.') ? getDomainWithoutSuffix(key) : key;
  return SITES.find((s) => s.list === list && (
    s.name === key || (s.aliases ?? []).includes(key)
    || s.domains.some((d) => key === d || key.endsWith(`.${d}`))
    || (s.anySuffix === true && suffixless === s.name)))?.name;
}

export function buildSites(referersYml: string, ga4Csv: string): { sites: GeneratedSite[]; conflicts: Conflict[] } {
  const snowplow = parseYaml(referersYml) as Record<SnowplowSection, Record<string, { domains: string[] }>>;
  const decisions = new Map<string, Decision>();
  const providerHosts = new Map<string, string[]>();
  const conflicts = new Map<string, Conflict>();

  for (const section of SECTION_ORDER) {
    for (const [provider, { domains }] of Object.entries(snowplow[section] ?? {})) {
      for (const domain of domains) {
        const host = normalizeHost(String(domain));
        const earlier = decisions.get(host);
        if (earlier !== undefined) {
          if (earlier.list !== SECTION_LIST[section]) {
            conflicts.set(host, { key: host, snowplow: `${earlier.snowplow!.section} and ${section}`, decided: earlier.list });
          }
          continue;
        }
        decisions.set(host, { list: SECTION_LIST[section]!, provider, snowplow: { section, provider } });
        providerHosts.set(`${section}/${provider}`, [...(providerHosts.get(`${section}/${provider}`) ?? []), host]);
      }
    }
  }

  for (const line of ga4Csv.trim().split(/\r?\n/).slice(1)) {
    const [rawSource, rawCategory] = line.split(',');
    const key = rawSource!.trim().toLowerCase();
    const ga4 = rawCategory!.trim().replace('SOURCE_CATEGORY_', '').toLowerCase() as Ga4Category;
    const earlier = decisions.get(key);
    // Video and shopping are not categories of ours: GA4 only overrules Snowplow's social there.
    const list: SiteList | undefined = ga4 === 'search' || ga4 === 'social' ? ga4 : earlier?.list === 'social' ? 'none' : undefined;
    if (list === undefined) continue;
    if (earlier?.snowplow !== undefined && earlier.list !== list) {
      conflicts.set(key, { key, ga4, snowplow: earlier.snowplow.section, decided: list });
    }
    decisions.set(key, { ...earlier, list, ga4 });
  }

  const contract = contractKeys();
  const grouped = new Map<string, { list: SiteList; name: string; hosts: string[]; names: string[] }>();
  for (const [key, decision] of [...decisions].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const decidedByContract = contract.get(key);
    if (decidedByContract !== undefined) {
      if (decidedByContract !== decision.list) {
        conflicts.set(key, { key, contract: decidedByContract, ga4: decision.ga4, snowplow: decision.snowplow?.section, decided: decidedByContract });
      }
      continue;
    }
    const name = siteName(key, decision, providerHosts);
    const group = `${decision.list}/${name}`;
    const site = grouped.get(group) ?? { list: decision.list, name, hosts: [], names: [] };
    (key.includes('.') ? site.hosts : site.names).push(key);
    grouped.set(group, site);
  }
  const sites = [...grouped.values()]
    .sort((a, b) => (a.list === b.list ? (a.name < b.name ? -1 : 1) : a.list < b.list ? -1 : 1))
    .map((s): GeneratedSite => [s.list, s.name, s.hosts, s.names]);
  return { sites, conflicts: [...conflicts.values()].sort((a, b) => (a.key < b.key ? -1 : 1)) };
}

/**
 * The contract's name where the key or any host of its Snowplow provider belongs to a site of the
 * same list (images.google.com is `google`); else the provider's name; else the key's own.
 */
function siteName(key: string, d: Decision, providerHosts: Map<string, string[]>): string {
  if (d.list === 'none') return '';
  const provider = d.snowplow === undefined ? undefined : `${d.snowplow.section}/${d.snowplow.provider}`;
  const related = [key, ...(d.snowplow !== undefined && SECTION_LIST[d.snowplow.section] === d.list ? providerHosts.get(provider!) ?? [] : [])];
  for (const host of related) {
    const name = contractName(d.list, host);
    if (name !== undefined) return name;
  }
  if (d.snowplow !== undefined && SECTION_LIST[d.snowplow.section] === d.list) return slug(d.snowplow.provider);
  return key.includes('.') ? getDomainWithoutSuffix(key) ?? key : key;
}

export function renderModule(sites: readonly GeneratedSite[], sources: readonly ListSource[]): string {
  const header = [
    '// Generated by `npm run channels:update` (scripts/channels-update.ts); do not edit.',
    '// From (test/fixtures/channels/sources.json):',
    ...sources.map((s) => `//   ${s.repository} ${s.path} @ ${s.commit} (${s.license}), retrieved ${s.retrieved}`),
    "// Snowplow's referers.yml is GPL-3.0 (it derives from Matomo's lists): docs/channels.md, Licenses.",
    '',
    "import type { SiteList } from './sites.js';",
    '',
    '/** [list, granular channel name, hosts, bare utm_source names]. */',
    'export const GENERATED_SITES: readonly (readonly [SiteList, string, readonly string[], readonly string[]])[] = [',
  ];
  const rows = sites.map((s) => `  ${JSON.stringify(s)},`);
  return [...header, ...rows, '];', ''].join('\n');
}

export function renderConflicts(conflicts: readonly Conflict[]): string {
  const rows = conflicts.map((c) => `| ${c.key} | ${c.contract ?? ''} | ${c.ga4 ?? ''} | ${c.snowplow ?? ''} | ${c.decided} |`);
  return ['| key | channels.md | GA4 | Snowplow | decided |', '|---|---|---|---|---|', ...rows].join('\n');
}

const CONFLICTS_START = '<!-- conflicts: generated by npm run channels:update -->';
const CONFLICTS_END = '<!-- end of conflicts -->';

export function readSources(): ListSource[] {
  return JSON.parse(readFileSync(new URL('sources.json', LISTS_DIR), 'utf8')) as ListSource[];
}

export function generateFromCopies(): { module: string; conflicts: Conflict[] } {
  const sources = readSources();
  const text = (file: string): string => readFileSync(new URL(file, LISTS_DIR), 'utf8');
  const { sites, conflicts } = buildSites(text('referers.yml'), text('ga4_source_categories.csv'));
  return { module: renderModule(sites, sources), conflicts };
}

async function download(source: ListSource): Promise<ListSource> {
  const api = `https://api.github.com/repos/${source.repository}/commits/${source.branch}`;
  const commit = ((await (await fetch(api)).json()) as { sha: string }).sha;
  const response = await fetch(`https://raw.githubusercontent.com/${source.repository}/${commit}/${source.path}`);
  if (!response.ok) throw new Error(`${source.path}: HTTP ${response.status}`);
  const body = await response.text();
  writeFileSync(new URL(source.file, LISTS_DIR), body);
  return {
    ...source, commit, retrieved: new Date().toISOString().slice(0, 10),
    sha256: createHash('sha256').update(body).digest('hex'),
  };
}

async function main(offline: boolean): Promise<void> {
  if (!offline) {
    const sources = await Promise.all(readSources().map(download));
    writeFileSync(new URL('sources.json', LISTS_DIR), `${JSON.stringify(sources, null, 2)}\n`);
  }
  const { module, conflicts } = generateFromCopies();
  writeFileSync(GENERATED_MODULE, module);
  const docs = readFileSync(DOCS, 'utf8');
  const start = docs.indexOf(CONFLICTS_START);
  const end = docs.indexOf(CONFLICTS_END);
  if (start < 0 || end < start) throw new Error(`docs/channels.md lacks the conflict markers`);
  writeFileSync(DOCS, `${docs.slice(0, start + CONFLICTS_START.length)}\n${renderConflicts(conflicts)}\n${docs.slice(end)}`);
  console.log(`${GENERATED_MODULE.pathname}: ${module.split('\n').length} lines; ${conflicts.length} conflicts in docs/channels.md`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await main(process.argv.includes('--offline'));
}
