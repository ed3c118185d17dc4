import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CHANNEL_CATEGORIES, type ChannelCategory } from '../src/criteria/schema.js';
import {
  CHANNEL_RULES,
  SITES,
  classifyChannel,
  derivePageviewFields,
  isInternalNavigation,
} from '../src/ingest/channels.js';

const PAGE = 'https://example.com/pricing';

interface Row {
  why: string;
  query: string;
  referrer: string | null;
  category: ChannelCategory;
  channel: string;
}

function classify(row: Pick<Row, 'query' | 'referrer'>): { category: ChannelCategory; channel: string } {
  const fields = derivePageviewFields(PAGE + row.query, row.referrer);
  return { category: fields.channel_category, channel: fields.channel };
}

// channels.md "Examples that must hold", verbatim.
const SPEC_EXAMPLES: Row[] = [
  { why: 'no query and no referrer is Direct', query: '', referrer: null, category: 'Direct', channel: 'direct' },
  { why: 'a Google referrer is Organic Search', query: '', referrer: 'https://www.google.com/', category: 'Organic Search', channel: 'google' },
  { why: 'gclid with a Google referrer is Paid Search', query: '?gclid=x', referrer: 'https://www.google.com/', category: 'Paid Search', channel: 'google' },
  { why: 'utm google/cpc is Paid Search', query: '?utm_source=google&utm_medium=cpc', referrer: null, category: 'Paid Search', channel: 'google' },
  { why: 'a chatgpt.com referrer is AI', query: '', referrer: 'https://chatgpt.com/', category: 'AI', channel: 'chatgpt' },
  { why: 'utm_source chatgpt.com is AI named chatgpt', query: '?utm_source=chatgpt.com', referrer: null, category: 'AI', channel: 'chatgpt' },
  { why: 'fbclid from l.facebook.com is Organic Social', query: '?fbclid=x', referrer: 'https://l.facebook.com/', category: 'Organic Social', channel: 'facebook' },
  { why: 'utm facebook/paid_social is Paid Social', query: '?utm_source=facebook&utm_medium=paid_social', referrer: null, category: 'Paid Social', channel: 'facebook' },
  { why: 'a t.co referrer is Organic Social named twitter', query: '', referrer: 'https://t.co/abc', category: 'Organic Social', channel: 'twitter' },
  { why: 'utm newsletter/email is Email named newsletter', query: '?utm_source=newsletter&utm_medium=email', referrer: null, category: 'Email', channel: 'newsletter' },
  { why: 'a Hacker News referrer is Referral named by registrable domain', query: '', referrer: 'https://news.ycombinator.com/', category: 'Referral', channel: 'ycombinator.com' },
  { why: 'utm display/criteo is Other named criteo', query: '?utm_medium=display&utm_source=criteo', referrer: null, category: 'Other', channel: 'criteo' },
  { why: 'an unknown utm_source alone is Other named by the source', query: '?utm_source=foo', referrer: null, category: 'Other', channel: 'foo' },
];

const REAL_WORLD: Row[] = [
  // Organic search
  { why: 'a Bing referrer is Organic Search', query: '', referrer: 'https://www.bing.com/search?q=x', category: 'Organic Search', channel: 'bing' },
  { why: 'a DuckDuckGo referrer is Organic Search', query: '', referrer: 'https://duckduckgo.com/', category: 'Organic Search', channel: 'duckduckgo' },
  { why: 'a Yahoo search referrer is Organic Search', query: '', referrer: 'https://search.yahoo.com/', category: 'Organic Search', channel: 'yahoo' },
  { why: 'a Yandex referrer is Organic Search', query: '', referrer: 'https://yandex.ru/search/?text=x', category: 'Organic Search', channel: 'yandex' },
  { why: 'an Ecosia referrer is Organic Search', query: '', referrer: 'https://www.ecosia.org/', category: 'Organic Search', channel: 'ecosia' },
  { why: 'a Brave Search referrer is Organic Search', query: '', referrer: 'https://search.brave.com/', category: 'Organic Search', channel: 'brave' },
  { why: 'a country Google domain is Organic Search', query: '', referrer: 'https://www.google.co.uk/', category: 'Organic Search', channel: 'google' },
  { why: 'utm_medium organic with an unknown source is Organic Search named by the source', query: '?utm_source=foo&utm_medium=organic', referrer: null, category: 'Organic Search', channel: 'foo' },
  // AI
  { why: 'a chat.openai.com referrer is AI named chatgpt', query: '', referrer: 'https://chat.openai.com/', category: 'AI', channel: 'chatgpt' },
  { why: 'a Perplexity referrer is AI', query: '', referrer: 'https://www.perplexity.ai/', category: 'AI', channel: 'perplexity' },
  { why: 'a Claude referrer is AI', query: '', referrer: 'https://claude.ai/', category: 'AI', channel: 'claude' },
  { why: 'a Gemini referrer is AI even though it is a google.com host', query: '', referrer: 'https://gemini.google.com/app', category: 'AI', channel: 'gemini' },
  { why: 'utm_source perplexity is AI', query: '?utm_source=perplexity', referrer: null, category: 'AI', channel: 'perplexity' },
  { why: 'an AI utm_source wins over a search referrer', query: '?utm_source=chatgpt.com', referrer: 'https://www.google.com/', category: 'AI', channel: 'chatgpt' },
  // Paid search
  { why: 'msclkid alone is Paid Search named bing', query: '?msclkid=abc', referrer: null, category: 'Paid Search', channel: 'bing' },
  { why: 'msclkid with a Bing referrer is Paid Search', query: '?msclkid=abc', referrer: 'https://www.bing.com/', category: 'Paid Search', channel: 'bing' },
  { why: 'gad_source alone is Paid Search named google', query: '?gad_source=1', referrer: null, category: 'Paid Search', channel: 'google' },
  { why: 'wbraid alone is Paid Search named google', query: '?wbraid=abc', referrer: null, category: 'Paid Search', channel: 'google' },
  { why: 'utm bing/cpc is Paid Search', query: '?utm_source=bing&utm_medium=cpc', referrer: null, category: 'Paid Search', channel: 'bing' },
  { why: 'utm_medium cpc without a source is Other named by the medium', query: '?utm_medium=cpc', referrer: null, category: 'Other', channel: 'cpc' },
  { why: 'utm_medium cpc without a source but with a Google referrer is Paid Search', query: '?utm_medium=cpc', referrer: 'https://www.google.com/', category: 'Paid Search', channel: 'google' },
  // Social
  { why: 'fbclid alone without a referrer is Organic Social', query: '?fbclid=x', referrer: null, category: 'Organic Social', channel: 'facebook' },
  { why: 'fbclid with utm_medium cpc is Paid Social', query: '?fbclid=x&utm_medium=cpc', referrer: null, category: 'Paid Social', channel: 'facebook' },
  { why: 'ttclid is Paid Social named tiktok', query: '?ttclid=x', referrer: null, category: 'Paid Social', channel: 'tiktok' },
  { why: 'li_fat_id is Paid Social named linkedin', query: '?li_fat_id=x', referrer: null, category: 'Paid Social', channel: 'linkedin' },
  { why: 'utm ig/paid is Paid Social named instagram', query: '?utm_source=ig&utm_medium=paid', referrer: null, category: 'Paid Social', channel: 'instagram' },
  { why: 'an x.com referrer is Organic Social named twitter', query: '', referrer: 'https://x.com/someone/status/1', category: 'Organic Social', channel: 'twitter' },
  { why: 'an lnkd.in referrer is Organic Social named linkedin', query: '', referrer: 'https://lnkd.in/abc', category: 'Organic Social', channel: 'linkedin' },
  { why: 'an m.facebook.com referrer is Organic Social', query: '', referrer: 'https://m.facebook.com/', category: 'Organic Social', channel: 'facebook' },
  { why: 'an Instagram link shim referrer is Organic Social', query: '', referrer: 'https://l.instagram.com/', category: 'Organic Social', channel: 'instagram' },
  { why: 'a Reddit referrer is Organic Social', query: '', referrer: 'https://old.reddit.com/r/typescript/', category: 'Organic Social', channel: 'reddit' },
  { why: 'a YouTube referrer is Organic Social', query: '', referrer: 'https://m.youtube.com/', category: 'Organic Social', channel: 'youtube' },
  { why: 'utm facebook/social is Organic Social', query: '?utm_source=facebook&utm_medium=social', referrer: null, category: 'Organic Social', channel: 'facebook' },
  { why: 'utm_medium social with an unknown source is Organic Social named by the source', query: '?utm_source=mastodon.example&utm_medium=social', referrer: null, category: 'Organic Social', channel: 'mastodon.example' },
  // Email
  { why: 'utm_source newsletter alone is Email', query: '?utm_source=newsletter', referrer: null, category: 'Email', channel: 'newsletter' },
  { why: 'utm_medium email without a source is Email named email', query: '?utm_medium=email', referrer: null, category: 'Email', channel: 'email' },
  { why: 'utm_medium e-mail with a source is Email named by the source', query: '?utm_source=mailchimp&utm_medium=e-mail', referrer: null, category: 'Email', channel: 'mailchimp' },
  { why: 'a Gmail webmail referrer is Email, not Google search', query: '', referrer: 'https://mail.google.com/', category: 'Email', channel: 'email' },
  { why: 'an Outlook webmail referrer is Email', query: '', referrer: 'https://outlook.live.com/mail/0/', category: 'Email', channel: 'email' },
  { why: 'the Gmail Android app referrer is Email', query: '', referrer: 'android-app://com.google.android.gm/', category: 'Email', channel: 'email' },
  // The long tail (docs/channels.md): Snowplow's and GA4's lists.
  { why: 'Ask is Organic Search', query: '', referrer: 'https://www.ask.com/web?q=x', category: 'Organic Search', channel: 'ask' },
  { why: 'AOL search is Organic Search', query: '', referrer: 'https://search.aol.com/aol/search?q=x', category: 'Organic Search', channel: 'aol' },
  { why: 'Mail.ru search is Organic Search', query: '', referrer: 'https://go.mail.ru/search?q=x', category: 'Organic Search', channel: 'mail.ru' },
  { why: 'Daum is Organic Search', query: '', referrer: 'https://search.daum.net/search?q=x', category: 'Organic Search', channel: 'daum' },
  { why: 'Coc Coc is Organic Search', query: '', referrer: 'https://coccoc.com/search#query=x', category: 'Organic Search', channel: 'coccoc' },
  { why: 'GA4 lists news.google.com as search', query: '', referrer: 'https://news.google.com/', category: 'Organic Search', channel: 'google' },
  { why: 'GA4 lists mail.yandex.ru as search, over Snowplow\'s webmail', query: '', referrer: 'https://mail.yandex.ru/', category: 'Organic Search', channel: 'yandex' },
  { why: 'utm_source ask is Organic Search', query: '?utm_source=ask', referrer: null, category: 'Organic Search', channel: 'ask' },
  { why: 'OK.ru is Organic Social', query: '', referrer: 'https://ok.ru/', category: 'Organic Social', channel: 'odnoklassniki' },
  { why: 'Weibo\'s short links are Organic Social', query: '', referrer: 'https://t.cn/abc', category: 'Organic Social', channel: 'weibo' },
  { why: 'Tumblr\'s link shim is Organic Social', query: '', referrer: 'https://t.umblr.com/redirect?z=x', category: 'Organic Social', channel: 'tumblr' },
  { why: 'Slack is Organic Social', query: '', referrer: 'https://app.slack.com/client/T1/C1', category: 'Organic Social', channel: 'slack' },
  { why: 'GitHub is Organic Social (Snowplow lists it)', query: '', referrer: 'https://github.com/org/repo', category: 'Organic Social', channel: 'github' },
  { why: 'a GA4 social source with cpc is Paid Social', query: '?utm_source=line&utm_medium=cpc', referrer: null, category: 'Paid Social', channel: 'line' },
  { why: 'a GA4 search source with cpc is Paid Search', query: '?utm_source=naver.com&utm_medium=cpc', referrer: null, category: 'Paid Search', channel: 'naver' },
  { why: 'Proton Mail is Email', query: '', referrer: 'https://mail.proton.me/u/0/inbox', category: 'Email', channel: 'email' },
  { why: 'a country Yahoo Mail is Email, not Yahoo search', query: '', referrer: 'https://mail.yahoo.co.uk/', category: 'Email', channel: 'email' },
  { why: 'the Google app is Organic Search', query: '', referrer: 'android-app://com.google.android.googlequicksearchbox/', category: 'Organic Search', channel: 'google' },
  { why: 'the Facebook app is Organic Social', query: '', referrer: 'android-app://com.facebook.katana', category: 'Organic Social', channel: 'facebook' },
  { why: 'the Outlook app is Email', query: '', referrer: 'android-app://com.microsoft.office.outlook', category: 'Email', channel: 'email' },
  { why: 'GA4 files Vimeo under Video, not social', query: '', referrer: 'https://vimeo.com/123', category: 'Referral', channel: 'vimeo.com' },
  // Referral
  { why: 'a referrer on no list is Referral named by its registrable domain', query: '', referrer: 'https://gitlab.com/org/repo', category: 'Referral', channel: 'gitlab.com' },
  { why: 'a map page of a search company is Referral, not search (Snowplow "unknown")', query: '', referrer: 'https://maps.google.com/', category: 'Referral', channel: 'google.com' },
  { why: 'a subdomain referrer is Referral named by its registrable domain', query: '', referrer: 'https://docs.python.org/3/', category: 'Referral', channel: 'python.org' },
  { why: 'an unknown utm_source with a referrer is Referral', query: '?utm_source=foo', referrer: 'https://blog.example.org/post', category: 'Referral', channel: 'example.org' },
  { why: 'utm_medium referral without a referrer is Referral named by the source', query: '?utm_source=partner&utm_medium=referral', referrer: null, category: 'Referral', channel: 'partner' },
  // Other
  { why: 'utm_medium sms is Other', query: '?utm_medium=sms', referrer: null, category: 'Other', channel: 'sms' },
  { why: 'utm_medium affiliate is Other named by the network', query: '?utm_source=awin&utm_medium=affiliate', referrer: null, category: 'Other', channel: 'awin' },
  { why: 'utm_medium banner without a source is Other', query: '?utm_medium=banner', referrer: null, category: 'Other', channel: 'banner' },
  { why: 'utm_campaign alone is Other named other', query: '?utm_campaign=spring', referrer: null, category: 'Other', channel: 'other' },
  // Case and emptiness
  { why: 'uppercase UTM values classify like lowercase ones', query: '?utm_source=Google&utm_medium=CPC', referrer: null, category: 'Paid Search', channel: 'google' },
  { why: 'empty utm and click id values count as absent', query: '?utm_source=&utm_medium=%20&gclid=', referrer: null, category: 'Direct', channel: 'direct' },
];

describe('channels.md examples', () => {
  it.each(SPEC_EXAMPLES)('$why', (row) => {
    expect(classify(row)).toEqual({ category: row.category, channel: row.channel });
  });
});

describe('real-world classification', () => {
  it.each(REAL_WORLD)('$why', (row) => {
    expect(classify(row)).toEqual({ category: row.category, channel: row.channel });
  });
});

describe('derived fields', () => {
  it('lowercases and trims utm values and keeps campaign', () => {
    const fields = derivePageviewFields(
      'https://example.com/?utm_source=%20Google%20&utm_medium=CPC&utm_campaign=Spring_Sale',
      null,
    );
    expect(fields).toMatchObject({ source: 'google', medium: 'cpc', campaign: 'spring_sale' });
  });

  it('turns empty utm values into null', () => {
    const fields = derivePageviewFields('https://example.com/?utm_source=&utm_medium=&utm_campaign=', null);
    expect(fields).toMatchObject({ source: null, medium: null, campaign: null });
  });

  it('strips www., port and case from the page host and keeps the path without query or fragment', () => {
    const fields = derivePageviewFields('https://WWW.Example.com:8443/Pricing/Plans?utm_source=x#top', null);
    expect(fields).toMatchObject({ host: 'example.com', path: '/Pricing/Plans' });
  });

  it('strips www. and port from the referrer host', () => {
    const fields = derivePageviewFields(PAGE, 'https://www.google.com:443/search?q=x');
    expect(fields.referrer_host).toBe('google.com');
  });

  it('uses / as the path of a URL without one', () => {
    expect(derivePageviewFields('https://example.com?utm_source=x', null).path).toBe('/');
  });

  it('accepts a page URL without a scheme', () => {
    const fields = derivePageviewFields('www.example.com/a?utm_source=news', null);
    expect(fields).toMatchObject({ host: 'example.com', path: '/a', source: 'news' });
  });

  it('reads host and port-only input like localhost:3000 as a host', () => {
    expect(derivePageviewFields('localhost:3000/app', null)).toMatchObject({ host: 'localhost', path: '/app' });
  });

  it('keeps the path and utm values of a relative page URL with an empty host', () => {
    const fields = derivePageviewFields('/pricing?utm_source=newsletter', null);
    expect(fields).toMatchObject({ host: '', path: '/pricing', source: 'newsletter', channel_category: 'Email' });
  });

  it.each(['', '   ', 'not a url', 'http://', '::::', '%%%', 'https://exa mple.com/'])(
    'does not throw on the garbage page URL %j and gives an empty host and / path',
    (url) => {
      expect(derivePageviewFields(url, null)).toMatchObject({ host: '', path: '/', channel_category: 'Direct' });
    },
  );

  it.each(['', 'not a url', 'garbage', 'about:blank', '/relative/path', 'http://', '%%%'])(
    'counts the garbage referrer %j as no referrer',
    (referrer) => {
      const fields = derivePageviewFields(PAGE, referrer);
      expect(fields).toMatchObject({ referrer_host: null, channel_category: 'Direct', channel: 'direct' });
    },
  );

  it('treats a null or undefined referrer as no referrer', () => {
    expect(derivePageviewFields(PAGE, undefined).referrer_host).toBeNull();
    expect(derivePageviewFields(PAGE, null).channel_category).toBe('Direct');
  });

  it('does not throw on non-string input from untyped callers', () => {
    const fields = derivePageviewFields(42 as unknown as string, {} as unknown as string);
    expect(fields).toMatchObject({ host: '', path: '/', referrer_host: null, channel: 'direct' });
  });

  it('never throws and always yields one of the nine categories for arbitrary input', () => {
    fc.assert(
      fc.property(fc.string(), fc.option(fc.string()), (url, referrer) => {
        const fields = derivePageviewFields(url, referrer);
        expect(CHANNEL_CATEGORIES).toContain(fields.channel_category);
        expect(fields.channel).not.toBe('');
        expect(fields.path.startsWith('/')).toBe(true);
      }),
    );
  });
});

describe('internal navigation', () => {
  it('is detected when the referrer is on the page host', () => {
    expect(isInternalNavigation(derivePageviewFields(PAGE, 'https://example.com/'))).toBe(true);
  });

  it('is detected despite a www. or port difference', () => {
    expect(isInternalNavigation(derivePageviewFields('https://www.example.com/a', 'https://example.com:443/b'))).toBe(true);
  });

  it('is not detected for another host, a subdomain or no referrer', () => {
    expect(isInternalNavigation(derivePageviewFields(PAGE, 'https://google.com/'))).toBe(false);
    expect(isInternalNavigation(derivePageviewFields(PAGE, 'https://blog.example.com/'))).toBe(false);
    expect(isInternalNavigation(derivePageviewFields(PAGE, null))).toBe(false);
  });

  it('is not detected when the page host is unknown', () => {
    expect(isInternalNavigation(derivePageviewFields('/relative', null))).toBe(false);
  });

  it('leaves the page view classified normally so the caller decides what to carry over', () => {
    expect(derivePageviewFields(PAGE, 'https://example.com/')).toMatchObject({
      channel_category: 'Referral',
      channel: 'example.com',
    });
  });
});

describe('rule and site tables', () => {
  it('numbers the rules 1 to 10 in order with the categories of channels.md', () => {
    expect(CHANNEL_RULES.map((r) => [r.rule, r.category])).toEqual([
      [1, 'Paid Search'], [2, 'Paid Social'], [3, 'Other'], [4, 'AI'], [5, 'Email'],
      [6, 'Organic Social'], [7, 'Organic Search'], [8, 'Direct'], [9, 'Referral'], [10, 'Other'],
    ]);
  });

  it('reports the rule that decided the classification', () => {
    const input = { source: null, medium: null, referrerHost: null, clickIds: [], hasUtm: false };
    expect(classifyChannel(input)).toEqual({ rule: 8, category: 'Direct', channel: 'direct' });
    expect(classifyChannel({ ...input, medium: 'push', hasUtm: true })).toEqual({ rule: 10, category: 'Other', channel: 'push' });
  });

  it('lists every domain once with lowercase names', () => {
    const domains = SITES.flatMap((s) => s.domains);
    expect(new Set(domains).size).toBe(domains.length);
    for (const site of SITES) expect(site.name).toBe(site.name.toLowerCase());
  });

  it('classifies every listed AI domain as AI under its own name', () => {
    for (const site of SITES.filter((s) => s.list === 'ai')) {
      for (const domain of site.domains) {
        expect(classify({ query: '', referrer: `https://${domain}/` })).toEqual({ category: 'AI', channel: site.name });
      }
    }
  });
});
