/**
 * Host normalization (decisions §5): scheme, leading `www.`, port, path and trailing dot dropped,
 * lowercased. Applied to stored hosts at ingest and to host filter values in criteria alike.
 */
export function normalizeHost(input: string): string {
  let host = input.trim().toLowerCase();
  host = host.replace(/^[a-z][a-z0-9+.-]*:\/\//, '');
  host = host.replace(/^[^@/]*@/, '');
  host = host.split(/[/?#]/, 1)[0] ?? '';
  host = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.replace(/:\d*$/, '');
  host = host.replace(/\.+$/, '');
  return host.startsWith('www.') ? host.slice(4) : host;
}
