/**
 * Page view field derivation and channel classification (decisions §5, channels.md).
 * Pure: no I/O, never throws on malformed input.
 */
import { getDomain, getDomainWithoutSuffix } from 'tldts';
import { normalizeHost } from '../criteria/host.js';
import type { ChannelCategory } from '../criteria/schema.js';

export interface PageviewFields {
  host: string;
  path: string;
  source: string | null;
  medium: string | null;
  campaign: string | null;
  referrer_host: string | null;
  channel: string;
  channel_category: ChannelCategory;
}

// ---------------------------------------------------------------------------------------------
// Site lists (channels.md "Site lists"): one table, extend as data.

export type SiteList = 'search' | 'social' | 'ai' | 'webmail';

export interface Site {
  list: SiteList;
  /** Lowercase name, used as the granular channel; a utm_source equal to it matches. */
  name: string;
  /** Registrable domains or full hosts; a utm_source equal to one matches too. */
  domains: readonly string[];
  /** Other utm_source spellings of the same site. */
  aliases?: readonly string[];
  /** Also match `<name>.<any public suffix>`: engines with country domains (google.de, yahoo.co.jp). */
  anySuffix?: boolean;
}

export const SITES: readonly Site[] = [
  { list: 'search', name: 'google', domains: ['google.com'], anySuffix: true },
  { list: 'search', name: 'bing', domains: ['bing.com'] },
  { list: 'search', name: 'duckduckgo', domains: ['duckduckgo.com'] },
  { list: 'search', name: 'yahoo', domains: ['yahoo.com'], anySuffix: true },
  { list: 'search', name: 'yandex', domains: ['yandex.ru', 'yandex.com', 'ya.ru'], anySuffix: true },
  { list: 'search', name: 'baidu', domains: ['baidu.com'] },
  { list: 'search', name: 'ecosia', domains: ['ecosia.org'] },
  { list: 'search', name: 'brave', domains: ['search.brave.com'] },
  { list: 'search', name: 'startpage', domains: ['startpage.com'] },
  { list: 'search', name: 'qwant', domains: ['qwant.com'] },
  { list: 'search', name: 'naver', domains: ['naver.com'] },
  { list: 'search', name: 'seznam', domains: ['seznam.cz'] },
  { list: 'search', name: 'so.com', domains: ['so.com'] },
  { list: 'search', name: 'sogou', domains: ['sogou.com'] },

  // `meta` and `fb`/`ig` are the utm_source values Meta's own ad templates and advertisers use.
  { list: 'social', name: 'facebook', domains: ['facebook.com', 'fb.com', 'fb.me'], aliases: ['fb', 'meta'] },
  { list: 'social', name: 'instagram', domains: ['instagram.com'], aliases: ['ig'] },
  { list: 'social', name: 'twitter', domains: ['twitter.com', 'x.com', 't.co'], aliases: ['x'] },
  { list: 'social', name: 'linkedin', domains: ['linkedin.com', 'lnkd.in'] },
  { list: 'social', name: 'reddit', domains: ['reddit.com', 'redd.it'] },
  { list: 'social', name: 'pinterest', domains: ['pinterest.com', 'pin.it'], anySuffix: true },
  { list: 'social', name: 'tiktok', domains: ['tiktok.com'] },
  { list: 'social', name: 'youtube', domains: ['youtube.com', 'youtu.be'] },
  { list: 'social', name: 'threads', domains: ['threads.net', 'threads.com'] },
  { list: 'social', name: 'bluesky', domains: ['bsky.app'] },
  { list: 'social', name: 'mastodon', domains: ['mastodon.social'] },
  { list: 'social', name: 'quora', domains: ['quora.com'] },
  { list: 'social', name: 'snapchat', domains: ['snapchat.com'] },
  { list: 'social', name: 'tumblr', domains: ['tumblr.com'] },
  { list: 'social', name: 'vk', domains: ['vk.com'] },
  { list: 'social', name: 'discord', domains: ['discord.com', 'discord.gg'] },
  { list: 'social', name: 'telegram', domains: ['telegram.org', 't.me'] },
  { list: 'social', name: 'whatsapp', domains: ['whatsapp.com', 'wa.me'] },

  { list: 'ai', name: 'chatgpt', domains: ['chatgpt.com', 'chat.openai.com'] },
  { list: 'ai', name: 'perplexity', domains: ['perplexity.ai'] },
  { list: 'ai', name: 'claude', domains: ['claude.ai'] },
  { list: 'ai', name: 'gemini', domains: ['gemini.google.com', 'bard.google.com'] },
  { list: 'ai', name: 'copilot', domains: ['copilot.microsoft.com', 'm365.cloud.microsoft'] },
  { list: 'ai', name: 'deepseek', domains: ['chat.deepseek.com'] },
  { list: 'ai', name: 'grok', domains: ['grok.com'] },
  { list: 'ai', name: 'mistral', domains: ['chat.mistral.ai'] },
  // Domain as name: a bare `meta` or `you` source is far more likely to mean something else.
  { list: 'ai', name: 'meta.ai', domains: ['meta.ai'] },
  { list: 'ai', name: 'you.com', domains: ['you.com'] },
  { list: 'ai', name: 'qwen', domains: ['chat.qwen.ai'] },
  { list: 'ai', name: 'notebooklm', domains: ['notebooklm.google.com'] },

  // Webmail is matched on the referrer only (rule 5); the Gmail Android app sends an android-app:// referrer.
  { list: 'webmail', name: 'gmail', domains: ['mail.google.com', 'com.google.android.gm'] },
  { list: 'webmail', name: 'outlook', domains: ['outlook.live.com', 'outlook.office.com', 'outlook.office365.com'] },
  { list: 'webmail', name: 'yahoo mail', domains: ['mail.yahoo.com'] },
];

interface SiteIndex {
  names: Map<string, Site>;
  hosts: Map<string, Site>;
  suffixless: Map<string, Site>;
}

const SITE_INDEX = new Map<SiteList, SiteIndex>();
for (const site of SITES) {
  let index = SITE_INDEX.get(site.list);
  if (index === undefined) {
    index = { names: new Map(), hosts: new Map(), suffixless: new Map() };
    SITE_INDEX.set(site.list, index);
  }
  for (const name of [site.name, ...(site.aliases ?? [])]) index.names.set(name, site);
  for (const domain of site.domains) index.hosts.set(domain, site);
  if (site.anySuffix) index.suffixless.set(site.name, site);
}

/** A source or referrer host, pre-split for matching against the site lists. */
interface SiteProbe {
  /** The utm_source itself; null for a referrer, which only matches by host. */
  name: string | null;
  host: string;
  domain: string | null;
  suffixless: string | null;
}

function probe(value: string, isSource: boolean): SiteProbe {
  const host = normalizeHost(value);
  return {
    name: isSource ? value : null,
    host,
    domain: getDomain(host),
    suffixless: getDomainWithoutSuffix(host),
  };
}

/** The site of `list` the probe belongs to: by source name, then full host, then registrable domain. */
function matchSite(list: SiteList, p: SiteProbe | null): Site | undefined {
  const index = SITE_INDEX.get(list);
  if (p === null || index === undefined) return undefined;
  return (p.name === null ? undefined : index.names.get(p.name))
    ?? index.hosts.get(p.host)
    ?? (p.domain === null ? undefined : index.hosts.get(p.domain))
    ?? (p.suffixless === null ? undefined : index.suffixless.get(p.suffixless));
}

// ---------------------------------------------------------------------------------------------
// Click ids and mediums.

/** Click ids in precedence order: the first present one of a list names the site when no source does. */
export const CLICK_IDS = {
  gclid: { list: 'search', site: 'google', paid: true },
  gbraid: { list: 'search', site: 'google', paid: true },
  wbraid: { list: 'search', site: 'google', paid: true },
  gad_source: { list: 'search', site: 'google', paid: true },
  msclkid: { list: 'search', site: 'bing', paid: true },
  ttclid: { list: 'social', site: 'tiktok', paid: true },
  li_fat_id: { list: 'social', site: 'linkedin', paid: true },
  // Meta adds fbclid to organic clicks too, so it picks Social but never makes a visit paid.
  fbclid: { list: 'social', site: 'facebook', paid: false },
} as const satisfies Record<string, { list: SiteList; site: string; paid: boolean }>;

export type ClickId = keyof typeof CLICK_IDS;
const CLICK_ID_NAMES = Object.keys(CLICK_IDS) as ClickId[];

const PAID_MEDIUM = /^(.*cp.*|ppc|retargeting|paid.*)$/;
const PAID_MEDIUMS = new Set(['display', 'banner', 'cpm', 'affiliate']);
const EMAIL_VALUES = new Set(['email', 'e-mail', 'e_mail', 'e mail', 'newsletter']);
const SOCIAL_MEDIUMS = new Set(['social', 'social-network', 'social-media', 'sm']);
const REFERRAL_MEDIUMS = new Set(['referral', 'app', 'link']);

const within = (set: ReadonlySet<string>, value: string | null): boolean => value !== null && set.has(value);

// ---------------------------------------------------------------------------------------------
// Rules (channels.md "Rules, first match wins").

/** What classification needs; all strings lowercased and trimmed, empty ones null. */
export interface ChannelInput {
  source: string | null;
  medium: string | null;
  referrerHost: string | null;
  clickIds: Iterable<ClickId>;
  /** Any non-empty utm_* query parameter, not only source/medium/campaign. */
  hasUtm: boolean;
}

export interface ChannelContext {
  source: string | null;
  medium: string | null;
  referrerHost: string | null;
  /** Registrable domain of the referrer, or its host when it has none (IP, localhost). */
  referrerDomain: string | null;
  clickIds: ReadonlySet<ClickId>;
  hasUtm: boolean;
  paid: boolean;
  /** Name of the listed site that `site` (source, else referrer host) belongs to, per list. */
  site: Readonly<Record<Exclude<SiteList, 'webmail'>, string | null>>;
  webmailReferrer: boolean;
}

export interface ChannelRule {
  rule: number;
  category: ChannelCategory;
  /** The granular channel when the rule applies, null when it does not. */
  match(c: ChannelContext): string | null;
}

/** Site named by the first click id of `list` present in the URL. */
function clickIdSite(c: ChannelContext, list: SiteList): string | null {
  const id = CLICK_ID_NAMES.find((name) => c.clickIds.has(name) && CLICK_IDS[name].list === list);
  return id === undefined ? null : CLICK_IDS[id].site;
}

/** Channel for Other: the source, else the medium. */
const otherChannel = (c: ChannelContext): string => c.source ?? c.medium ?? 'other';

/** Channel when a medium, not a listed site, decided an organic category. */
const unlistedChannel = (c: ChannelContext): string => c.source ?? c.referrerDomain ?? c.medium ?? 'other';

export const CHANNEL_RULES: readonly ChannelRule[] = [
  {
    rule: 1,
    category: 'Paid Search',
    match: (c) => (c.paid ? c.site.search ?? clickIdSite(c, 'search') : null),
  },
  {
    rule: 2,
    category: 'Paid Social',
    match: (c) => (c.paid ? c.site.social ?? clickIdSite(c, 'social') : null),
  },
  {
    rule: 3,
    category: 'Other',
    match: (c) => (c.paid ? otherChannel(c) : null),
  },
  {
    rule: 4,
    category: 'AI',
    match: (c) => c.site.ai,
  },
  {
    rule: 5,
    category: 'Email',
    match: (c) =>
      within(EMAIL_VALUES, c.source) || within(EMAIL_VALUES, c.medium) || c.webmailReferrer ? c.source ?? 'email' : null,
  },
  {
    rule: 6,
    category: 'Organic Social',
    match: (c) =>
      c.site.social ?? clickIdSite(c, 'social') ?? (within(SOCIAL_MEDIUMS, c.medium) ? unlistedChannel(c) : null),
  },
  {
    rule: 7,
    category: 'Organic Search',
    match: (c) => c.site.search ?? (c.medium === 'organic' ? unlistedChannel(c) : null),
  },
  {
    rule: 8,
    category: 'Direct',
    match: (c) => (c.referrerHost === null && !c.hasUtm && c.clickIds.size === 0 ? 'direct' : null),
  },
  {
    rule: 9,
    category: 'Referral',
    match: (c) => c.referrerDomain ?? (within(REFERRAL_MEDIUMS, c.medium) ? c.source ?? c.medium : null),
  },
  {
    rule: 10,
    category: 'Other',
    match: otherChannel,
  },
];

export interface ChannelResult {
  rule: number;
  category: ChannelCategory;
  channel: string;
}

export function channelContext(input: ChannelInput): ChannelContext {
  const { source, medium, referrerHost, hasUtm } = input;
  const clickIds = new Set(input.clickIds);
  const site = source !== null ? probe(source, true) : referrerHost !== null ? probe(referrerHost, false) : null;
  const referrer = referrerHost === null ? null : probe(referrerHost, false);
  const paid = (medium !== null && (PAID_MEDIUM.test(medium) || PAID_MEDIUMS.has(medium)))
    || [...clickIds].some((id) => CLICK_IDS[id].paid);
  return {
    source,
    medium,
    referrerHost,
    referrerDomain: referrer === null ? null : referrer.domain ?? referrer.host,
    clickIds,
    hasUtm,
    paid,
    site: {
      search: matchSite('search', site)?.name ?? null,
      social: matchSite('social', site)?.name ?? null,
      ai: matchSite('ai', site)?.name ?? null,
    },
    webmailReferrer: matchSite('webmail', referrer) !== undefined,
  };
}

export function classifyChannel(input: ChannelInput): ChannelResult {
  const context = channelContext(input);
  for (const { rule, category, match } of CHANNEL_RULES) {
    const channel = match(context);
    if (channel !== null) return { rule, category, channel };
  }
  // Unreachable: rule 10 always matches.
  return { rule: 10, category: 'Other', channel: otherChannel(context) };
}

// ---------------------------------------------------------------------------------------------
// URL parsing.

interface ParsedUrl {
  protocol: string;
  host: string;
  path: string;
  params: URLSearchParams;
}

function tryUrl(text: string, base?: string): URL | null {
  try {
    return new URL(text, base);
  } catch {
    return null;
  }
}

/**
 * A scheme-less guess is kept only when it yields something host-like, not `https://garbage`, and
 * no user info (`mailto:a@example.com` is not the host example.com).
 */
const looksLikeHost = (url: URL): boolean =>
  (url.hostname.includes('.') || url.hostname === 'localhost' || url.hostname.startsWith('[')) && url.username === '' && url.password === '';

const ROOT_RELATIVE = /^\/(?!\/)/;

/**
 * Absolute URL first; else the same text with `https://` in front (`example.com/x`, and
 * `localhost:3000/x`, which parses as scheme `localhost:` with no host). A root-relative path
 * has no host: kept with an empty host for the page URL, no referrer otherwise.
 */
function parseUrl(raw: unknown, allowRelative: boolean): ParsedUrl | null {
  if (typeof raw !== 'string') return null;
  const text = raw.trim();
  if (text === '') return null;
  if (ROOT_RELATIVE.test(text)) {
    const relative = allowRelative ? tryUrl(text, 'https://relative.invalid') : null;
    return relative && { protocol: relative.protocol, host: '', path: pathOf(relative), params: relative.searchParams };
  }
  const absolute = tryUrl(text);
  const prefixed = absolute?.host ? null : tryUrl(`https://${text.replace(/^\/\//, '')}`);
  const url = prefixed !== null && looksLikeHost(prefixed) ? prefixed : absolute;
  return url && { protocol: url.protocol, host: normalizeHost(url.host), path: pathOf(url), params: url.searchParams };
}

/**
 * A page address the API takes: an http(s) URL with a host (its scheme may be left out) or a
 * root-relative path. Anything else (`not a url`, `javascript:…`) would be stored as a Direct visit to nowhere.
 */
export function isPageUrl(raw: string): boolean {
  const url = parseUrl(raw, true);
  return url !== null && (url.protocol === 'http:' || url.protocol === 'https:') && (url.host !== '' || ROOT_RELATIVE.test(raw.trim()));
}

// Opaque URLs (about:blank, mailto:) have paths that are not paths.
const pathOf = (url: URL): string => (url.pathname.startsWith('/') ? url.pathname : '/');

/** First non-empty value of each query parameter, keys and values lowercased and trimmed. */
function queryValues(params: URLSearchParams | undefined): Map<string, string> {
  const values = new Map<string, string>();
  if (params === undefined) return values;
  for (const [key, value] of params) {
    const k = key.trim().toLowerCase();
    const v = value.trim().toLowerCase();
    if (v !== '' && !values.has(k)) values.set(k, v);
  }
  return values;
}

// ---------------------------------------------------------------------------------------------
// Public entry points.

export function derivePageviewFields(url: string, referrer: string | null | undefined): PageviewFields {
  const page = parseUrl(url, true);
  const query = queryValues(page?.params);
  const source = query.get('utm_source') ?? null;
  const medium = query.get('utm_medium') ?? null;
  const referrerHost = parseUrl(referrer, false)?.host || null;
  const { category, channel } = classifyChannel({
    source,
    medium,
    referrerHost,
    clickIds: CLICK_ID_NAMES.filter((id) => query.has(id)),
    hasUtm: [...query.keys()].some((key) => key.startsWith('utm_')),
  });
  return {
    host: page?.host ?? '',
    path: page?.path ?? '/',
    source,
    medium,
    campaign: query.get('utm_campaign') ?? null,
    referrer_host: referrerHost,
    channel,
    channel_category: category,
  };
}

/** A referrer on the page's own host: the caller carries over the landing view's channel fields. */
export function isInternalNavigation(fields: PageviewFields): boolean {
  return fields.referrer_host !== null && fields.host !== '' && fields.referrer_host === fields.host;
}
