/**
 * The site lists of channels.md: the hand-written table (the contract's lists, our AI list and
 * the contract's own exceptions), the long tail generated from the maintained lists
 * (sites.generated.ts, docs/channels.md), and the index both are matched through.
 */
import { parse } from 'tldts';

/** `none`: a host the lists know to be neither (maps, drive, news pages of search companies). */
export type SiteList = 'search' | 'social' | 'ai' | 'webmail' | 'none';

export interface Site {
  list: SiteList;
  /** Lowercase name, used as the granular channel; a utm_source equal to it matches. */
  name: string;
  /** Hosts (a listed host covers its subdomains); a utm_source equal to one matches too. */
  domains: readonly string[];
  /** Other utm_source spellings of the same site. */
  aliases?: readonly string[];
  /** Also match `<name>.<any public suffix>`: engines with country domains (google.de, yahoo.co.jp). */
  anySuffix?: boolean;
}

/** Written by hand; wins over the generated lists for the same host or source name. */
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
  // GA4 files YouTube under Video, a category channels.md does not have; the contract lists it as social.
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

  // Webmail is matched on the referrer only (rule 5); mail apps send an android-app://<package> referrer.
  { list: 'webmail', name: 'gmail', domains: ['mail.google.com', 'com.google.android.gm'] },
  { list: 'webmail', name: 'outlook', domains: ['outlook.live.com', 'outlook.office.com', 'outlook.office365.com'] },
  { list: 'webmail', name: 'yahoo mail', domains: ['mail.yahoo.com'] },

  // channels.md's example: Hacker News is a Referral (GA4 lists it as social).
  { list: 'none', name: 'ycombinator', domains: ['news.ycombinator.com'] },
];

export interface SiteMatch {
  list: SiteList;
  name: string;
}

/** A source or referrer host, split once for matching. */
export interface SiteProbe {
  /** The utm_source itself; null for a referrer, which only matches by host. */
  name: string | null;
  host: string;
  /** Registrable domain (tldts), null for IPs, package ids of unknown suffixes and the like. */
  domain: string | null;
  /** The registrable domain without its public suffix (`google` of `google.co.uk`). */
  suffixless: string | null;
}

export function probeSite(host: string, name: string | null): SiteProbe {
  const parsed = parse(host, { extractHostname: false });
  return { name, host, domain: parsed.domain, suffixless: parsed.domainWithoutSuffix };
}

/**
 * Source names, hosts and suffix-less names of the lists. The first entry added for a key wins,
 * so the hand-written table is added before the generated one.
 */
export class SiteIndex {
  private readonly names = new Map<string, SiteMatch>();
  private readonly hosts = new Map<string, SiteMatch>();
  private readonly suffixless = new Map<string, SiteMatch>();

  add(list: SiteList, name: string, hosts: readonly string[], names: readonly string[] = [], anySuffix = false): this {
    const match: SiteMatch = { list, name };
    for (const key of names) if (!this.names.has(key)) this.names.set(key, match);
    for (const key of hosts) if (!this.hosts.has(key)) this.hosts.set(key, match);
    if (anySuffix && !this.suffixless.has(name)) this.suffixless.set(name, match);
    return this;
  }

  addSites(sites: readonly Site[]): this {
    for (const s of sites) this.add(s.list, s.name, s.domains, [s.name, ...(s.aliases ?? [])], s.anySuffix);
    return this;
  }

  /**
   * A source by its name first; then the most specific listed host among the host and its parent
   * domains down to the registrable one (so `mail.yandex.ru`, `maps.google.com` and `t.umblr.com`
   * are decided by their own entries before `yandex.ru` or `google.com`); then `<name>.<suffix>`.
   */
  match(p: SiteProbe): SiteMatch | undefined {
    const byName = p.name === null ? undefined : this.names.get(p.name);
    if (byName !== undefined) return byName;
    let host = p.host;
    for (;;) {
      const byHost = this.hosts.get(host);
      if (byHost !== undefined) return byHost;
      const dot = host.indexOf('.');
      if (p.domain === null || host === p.domain || dot < 0) break;
      host = host.slice(dot + 1);
    }
    return p.suffixless === null ? undefined : this.suffixless.get(p.suffixless);
  }
}
