// The address of a Segment page call: properties.url, else context.page.url, else the path. The
// campaign of context.campaign (name, source, medium, term, content) becomes utm_ parameters when
// the address carries none, so the page view is classified as the tracker's would be.

type Json = Record<string, unknown>;

const CAMPAIGN_PARAMS: [string, string][] = [['source', 'utm_source'], ['medium', 'utm_medium'], ['name', 'utm_campaign'], ['term', 'utm_term'], ['content', 'utm_content']];

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

export function pageUrl(properties: Json | undefined, page: Json | undefined, campaign: Json | undefined): string | undefined {
  const url = str(properties?.url) ?? str(page?.url) ?? str(properties?.path) ?? str(page?.path);
  if (url === undefined || campaign === undefined || /[?&]utm_/i.test(url)) return url;
  const params = new URLSearchParams();
  for (const [field, param] of CAMPAIGN_PARAMS) {
    const value = str(campaign[field]);
    if (value !== undefined) params.set(param, value);
  }
  if ([...params.keys()].length === 0) return url;
  const hash = url.indexOf('#');
  const [base, fragment] = hash === -1 ? [url, ''] : [url.slice(0, hash), url.slice(hash)];
  return `${base}${base.includes('?') ? '&' : '?'}${params.toString()}${fragment}`;
}
