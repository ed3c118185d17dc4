/**
 * Page view field derivation and channel classification (decisions §5, channels.md).
 * Pure: no I/O, never throws on malformed input.
 */
import { normalizeHost } from '../criteria/host.js';
import type { ChannelCategory } from '../criteria/schema.js';
import { GENERATED_SITES } from './sites.generated.js';
import { probeSite, SiteIndex, type SiteList, SITES } from './sites.js';

export { SITES } from './sites.js';

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
// Site lists (channels.md "Site lists", docs/channels.md): the hand-written table first, so it wins.

const SITE_INDEX = new SiteIndex().addSites(SITES);
for (const [list, name, hosts, names] of GENERATED_SITES) SITE_INDEX.add(list, name, hosts, names);

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
  site: Readonly<Record<'search' | 'social' | 'ai', string | null>>;
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
  const referrer = referrerHost === null ? null : probeSite(normalizeHost(referrerHost), null);
  const referrerSite = referrer === null ? undefined : SITE_INDEX.match(referrer);
  const site = source !== null ? SITE_INDEX.match(probeSite(normalizeHost(source), source)) : referrerSite;
  const paid = (medium !== null && (PAID_MEDIUM.test(medium) || PAID_MEDIUMS.has(medium)))
    || [...clickIds].some((id) => CLICK_IDS[id].paid);
  const named = (list: SiteList): string | null => (site?.list === list ? site.name : null);
  return {
    source,
    medium,
    referrerHost,
    referrerDomain: referrer === null ? null : referrer.domain ?? referrer.host,
    clickIds,
    hasUtm,
    paid,
    site: { search: named('search'), social: named('social'), ai: named('ai') },
    webmailReferrer: referrerSite?.list === 'webmail',
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
