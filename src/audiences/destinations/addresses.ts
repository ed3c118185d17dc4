// Which addresses a destination may reach: public unicast only, so an audience cannot be pointed at
// the service's own machine, its private network or a cloud metadata endpoint (SSRF). The ranges
// follow IANA's special-purpose registries; IPv6 is allowed only inside global unicast (2000::/3).

import { BlockList, isIP } from 'node:net';

const RANGES: [kind: string, network: string, prefix: number][] = [
  ['an unspecified ("this network") address', '0.0.0.0', 8],
  ['a private address', '10.0.0.0', 8],
  ['a carrier-grade NAT address', '100.64.0.0', 10],
  ['a loopback address', '127.0.0.0', 8],
  ['a link-local address (cloud metadata)', '169.254.0.0', 16],
  ['a private address', '172.16.0.0', 12],
  ['a reserved address', '192.0.0.0', 24],
  ['a documentation address', '192.0.2.0', 24],
  ['a reserved address', '192.88.99.0', 24],
  ['a private address', '192.168.0.0', 16],
  ['a benchmarking address', '198.18.0.0', 15],
  ['a documentation address', '198.51.100.0', 24],
  ['a documentation address', '203.0.113.0', 24],
  ['a multicast address', '224.0.0.0', 4],
  ['a reserved address', '240.0.0.0', 4],
  ['an unspecified address', '::', 128],
  ['a loopback address', '::1', 128],
  // NAT64 and 6to4 embed an IPv4 address that a gateway would reach for us: refused whole.
  ['a NAT64 address', '64:ff9b::', 96],
  ['a NAT64 address', '64:ff9b:1::', 48],
  ['a reserved address', '2001::', 23],
  ['a documentation address', '2001:db8::', 32],
  ['a 6to4 address', '2002::', 16],
  ['a documentation address', '3fff::', 20],
  ['a unique local (private) address', 'fc00::', 7],
  ['a link-local address', 'fe80::', 10],
  ['a site-local address', 'fec0::', 10],
  ['a multicast address', 'ff00::', 8],
  ['a reserved address', '::', 3],
  ['a reserved address', '4000::', 2],
  ['a reserved address', '8000::', 1],
];

interface Rule { kind: string; list: BlockList }

function rules(family: 4 | 6): Rule[] {
  return RANGES.filter(([, network]) => isIP(network) === family).map(([kind, network, prefix]) => {
    const list = new BlockList();
    list.addSubnet(network, prefix, family === 4 ? 'ipv4' : 'ipv6');
    return { kind, list };
  });
}

// A BlockList matches an IPv4 rule against an IPv4-mapped IPv6 address (::ffff:a.b.c.d) and an IPv6
// rule against any IPv4 address mapped, so each family is checked against its own rules only.
const IPV4 = rules(4);
const IPV6 = rules(6);
const MAPPED = new BlockList();
MAPPED.addSubnet('::ffff:0:0', 96, 'ipv6');

/** What keeps `address` (an IP, without brackets) from being a destination, e.g. "a loopback address"; null when public. */
export function nonPublic(address: string): string | null {
  const family = isIP(address);
  if (family === 0) return 'not an IP address';
  const type = family === 4 ? 'ipv4' : 'ipv6';
  const candidates = family === 4 || MAPPED.check(address, 'ipv6') ? IPV4 : IPV6;
  return candidates.find(({ list }) => list.check(address, type))?.kind ?? null;
}

/** The IP literal of a URL host (`[::1]` → `::1`), or null for a name. */
export function ipLiteral(hostname: string): string | null {
  const host = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return isIP(host) ? host : null;
}

/**
 * Why a URL may not be a destination, judged without DNS: IP literals by their range (the URL
 * parser has already turned `2130706433` or `0x7f.1` into `127.0.0.1`), and localhost names, which
 * always resolve to loopback (RFC 6761). Other names are checked on the address connected to.
 */
export function refusedUrl(url: string): string | null {
  const { hostname } = new URL(url);
  const literal = ipLiteral(hostname);
  const name = hostname.toLowerCase().replace(/\.$/, '');
  const kind = literal ? nonPublic(literal) : name === 'localhost' || name.endsWith('.localhost') ? 'a loopback name' : null;
  return kind ? `${hostname} is ${kind}; destinations must be public addresses` : null;
}
