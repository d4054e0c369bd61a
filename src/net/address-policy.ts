/**
 * Which IP addresses fetch_url may connect to. Everything that is not plainly a public unicast
 * address is refused: loopback, private, link-local (the cloud metadata service at
 * 169.254.169.254 included), CGNAT, "this network", multicast, reserved and documentation
 * ranges, and IPv6 forms that carry one of those IPv4 addresses inside them (IPv4-mapped,
 * IPv4-compatible, NAT64, 6to4).
 */
import { isIPv4, isIPv6 } from 'node:net';

/** [first address as a number, prefix length, why] */
type V4Range = [number, number, string];

const V4_BLOCKED: V4Range[] = [
  [v4('0.0.0.0'), 8, '"this network" (0.0.0.0/8)'],
  [v4('10.0.0.0'), 8, 'private (10.0.0.0/8)'],
  [v4('100.64.0.0'), 10, 'carrier-grade NAT (100.64.0.0/10)'],
  [v4('127.0.0.0'), 8, 'loopback (127.0.0.0/8)'],
  [v4('169.254.0.0'), 16, 'link-local (169.254.0.0/16, cloud metadata)'],
  [v4('172.16.0.0'), 12, 'private (172.16.0.0/12)'],
  [v4('192.0.0.0'), 24, 'IETF protocol assignments (192.0.0.0/24)'],
  [v4('192.0.2.0'), 24, 'documentation (192.0.2.0/24)'],
  [v4('192.88.99.0'), 24, '6to4 relay anycast (192.88.99.0/24)'],
  [v4('192.168.0.0'), 16, 'private (192.168.0.0/16)'],
  [v4('198.18.0.0'), 15, 'benchmarking (198.18.0.0/15)'],
  [v4('198.51.100.0'), 24, 'documentation (198.51.100.0/24)'],
  [v4('203.0.113.0'), 24, 'documentation (203.0.113.0/24)'],
  [v4('224.0.0.0'), 4, 'multicast (224.0.0.0/4)'],
  [v4('240.0.0.0'), 4, 'reserved (240.0.0.0/4, broadcast)'],
];

/** Why an address may not be fetched from, or undefined when it may. Input: an IP literal. */
export function blockedReason(ip: string): string | undefined {
  const address = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  if (isIPv4(address)) return v4Reason(v4(address));
  const words = parseV6(address);
  if (!words) return 'not an IP address';
  return v6Reason(words);
}

export function isBlockedAddress(ip: string): boolean {
  return blockedReason(ip) !== undefined;
}

function v4Reason(n: number): string | undefined {
  for (const [base, prefix, why] of V4_BLOCKED) {
    const mask = prefix === 0 ? 0 : (~0 << (32 - prefix)) >>> 0;
    if (((n & mask) >>> 0) === base) return why;
  }
  return undefined;
}

function v6Reason(w: number[]): string | undefined {
  const [w0, w1, w2, w3, w4, w5, w6, w7] = w as [number, number, number, number, number, number, number, number];
  const embedded = ((w6 << 16) | w7) >>> 0;
  const zeroTo = (end: number) => w.slice(0, end).every((x) => x === 0);
  if (zeroTo(8)) return 'unspecified (::)';
  if (zeroTo(7) && w7 === 1) return 'loopback (::1)';
  // ::ffff:a.b.c.d — the IPv4 address itself is what gets connected to.
  if (zeroTo(5) && w5 === 0xffff) return inner('IPv4-mapped', embedded);
  // ::ffff:0:a.b.c.d (SIIT) and the deprecated IPv4-compatible ::a.b.c.d.
  if (zeroTo(4) && w4 === 0xffff && w5 === 0) return inner('IPv4-translated', embedded);
  if (zeroTo(6)) return inner('IPv4-compatible', embedded);
  // NAT64 well-known prefix 64:ff9b::/96 and local-use 64:ff9b:1::/48.
  if (w0 === 0x64 && w1 === 0xff9b && w2 === 0 && w3 === 0 && w4 === 0 && w5 === 0) return inner('NAT64', embedded);
  if (w0 === 0x64 && w1 === 0xff9b && w2 === 1) return 'NAT64 local use (64:ff9b:1::/48)';
  // 6to4 2002:AABB:CCDD::/48 carries the IPv4 address in words 1 and 2.
  if (w0 === 0x2002) return inner('6to4', ((w1 << 16) | w2) >>> 0);
  if ((w0 & 0xfe00) === 0xfc00) return 'unique local (fc00::/7)';
  if ((w0 & 0xffc0) === 0xfe80) return 'link-local (fe80::/10)';
  if ((w0 & 0xffc0) === 0xfec0) return 'site-local (fec0::/10)';
  if ((w0 & 0xff00) === 0xff00) return 'multicast (ff00::/8)';
  if (w0 === 0x2001 && w1 === 0x0db8) return 'documentation (2001:db8::/32)';
  if (w0 === 0x0100 && w1 === 0 && w2 === 0 && w3 === 0) return 'discard-only (100::/64)';
  // Teredo tunnels reach arbitrary IPv4 hosts through a relay; nothing public needs them.
  if (w0 === 0x2001 && w1 === 0) return 'Teredo (2001::/32)';
  return undefined;
}

function inner(form: string, n: number): string | undefined {
  const why = v4Reason(n);
  return why ? `${form} ${why}` : undefined;
}

function v4(address: string): number {
  return address.split('.').reduce((n, part) => ((n << 8) | Number(part)) >>> 0, 0);
}

/** Eight 16-bit words of an IPv6 literal (zone id dropped), or undefined. */
function parseV6(address: string): number[] | undefined {
  const text = address.split('%')[0]!;
  if (!isIPv6(text)) return undefined;
  let head = text;
  const tail: number[] = [];
  // A dotted IPv4 tail stands for the last two words.
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const n = v4(dotted[1]!);
    tail.push(n >>> 16, n & 0xffff);
    head = text.slice(0, -dotted[1]!.length);
    if (head.endsWith(':') && !head.endsWith('::')) head = head.slice(0, -1);
  }
  const parseWords = (s: string) => (s === '' ? [] : s.split(':').map((h) => parseInt(h, 16)));
  let words: number[];
  const gap = head.indexOf('::');
  if (gap === -1) {
    words = [...parseWords(head), ...tail];
  } else {
    const left = parseWords(head.slice(0, gap));
    const right = [...parseWords(head.slice(gap + 2)), ...tail];
    words = [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
  }
  return words.length === 8 && words.every((x) => Number.isInteger(x) && x >= 0 && x <= 0xffff) ? words : undefined;
}
