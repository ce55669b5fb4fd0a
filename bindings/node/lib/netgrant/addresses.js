'use strict';
// Which IP addresses a grant of a *name* may connect to: public unicast only,
// by the explicit table of python/codeward/download/_addresses.py (one row per
// block, each with the document that reserves it). IPv4: everything not in a
// row is allowed. IPv6: only 2000::/3, minus the rows inside it; every form
// that embeds an IPv4 address is refused outright rather than decoded.

const net = require('node:net');

const IPV4_TABLE = [
  ['0.0.0.0/8', "'this network' (0.0.0.0 reaches the local host)", 'RFC 791, RFC 1122 3.2.1.3'],
  ['10.0.0.0/8', 'private network', 'RFC 1918'],
  ['100.64.0.0/10', 'shared address space (carrier-grade NAT)', 'RFC 6598'],
  ['127.0.0.0/8', 'loopback', 'RFC 1122 3.2.1.3'],
  ['169.254.0.0/16', 'link-local (cloud metadata services live here)', 'RFC 3927'],
  ['172.16.0.0/12', 'private network', 'RFC 1918'],
  ['192.0.0.0/24', 'IETF protocol assignments (DS-Lite, NAT64 discovery ...)', 'RFC 6890'],
  ['192.0.2.0/24', 'documentation (TEST-NET-1)', 'RFC 5737'],
  ['192.31.196.0/24', 'AS112 DNS sink', 'RFC 7535'],
  ['192.52.193.0/24', 'automatic multicast tunnelling relays', 'RFC 7450'],
  ['192.88.99.0/24', '6to4 relay anycast (deprecated)', 'RFC 7526'],
  ['192.168.0.0/16', 'private network', 'RFC 1918'],
  ['192.175.48.0/24', 'AS112 direct delegation', 'RFC 7534'],
  ['198.18.0.0/15', 'benchmarking', 'RFC 2544'],
  ['198.51.100.0/24', 'documentation (TEST-NET-2)', 'RFC 5737'],
  ['203.0.113.0/24', 'documentation (TEST-NET-3)', 'RFC 5737'],
  ['224.0.0.0/4', 'multicast', 'RFC 5771'],
  ['240.0.0.0/4', 'reserved, and 255.255.255.255 limited broadcast', 'RFC 1112 4, RFC 919'],
  ['168.63.129.16/32', 'Azure platform endpoint (wire server)', 'Microsoft Azure documentation'],
];

const IPV6_TABLE = [
  ['::/128', 'unspecified address', 'RFC 4291 2.5.2'],
  ['::1/128', 'loopback', 'RFC 4291 2.5.3'],
  ['::ffff:0:0/96', 'IPv4-mapped address', 'RFC 4291 2.5.5.2'],
  ['::/96', 'IPv4-compatible address (deprecated)', 'RFC 4291 2.5.5.1'],
  ['::ffff:0:0:0/96', 'IPv4-translated address', 'RFC 2765 2.1'],
  ['64:ff9b::/96', 'NAT64 well-known prefix', 'RFC 6052 2.1'],
  ['64:ff9b:1::/48', 'NAT64 local-use prefix', 'RFC 8215'],
  ['100::/64', 'discard-only prefix', 'RFC 6666'],
  ['100:0:0:1::/64', 'dummy prefix', 'RFC 9780'],
  ['2001::/32', 'Teredo tunnelling (embeds an IPv4 address)', 'RFC 4380'],
  ['2001::/23', 'IETF protocol assignments (benchmarking, ORCHID, AMT ...)', 'RFC 2928'],
  ['2001:db8::/32', 'documentation', 'RFC 3849'],
  ['2002::/16', '6to4 (embeds an IPv4 address)', 'RFC 3056'],
  ['2620:4f:8000::/48', 'AS112 direct delegation', 'RFC 7534'],
  ['3ffe::/16', 'former 6bone test network', 'RFC 3701'],
  ['3fff::/20', 'documentation', 'RFC 9637'],
  ['5f00::/16', 'segment routing (SRv6) SIDs', 'RFC 9602'],
  ['fc00::/7', 'unique local address', 'RFC 4193'],
  ['fe80::/10', 'link-local', 'RFC 4291 2.5.6'],
  ['fec0::/10', 'site-local (deprecated)', 'RFC 3879'],
  ['ff00::/8', 'multicast', 'RFC 4291 2.7'],
];

/** The 128 bits of an IPv6 address (a valid one, no zone id) as a BigInt. */
function v6bits(text) {
  let s = text;
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(s);
  if (v4) {
    const n = v4.slice(1).map(Number);
    s = `${s.slice(0, v4.index)}${((n[0] << 8) | n[1]).toString(16)}:${((n[2] << 8) | n[3]).toString(16)}`;
  }
  const [head, tail] = s.includes('::') ? s.split('::') : [s, null];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = tail === null ? left : [...left, ...Array(8 - left.length - right.length).fill('0'), ...right];
  return groups.reduce((acc, g) => (acc << 16n) | BigInt(`0x${g || '0'}`), 0n);
}

function v4bits(text) {
  return text.split('.').reduce((acc, o) => (acc << 8n) | BigInt(o), 0n);
}

function compile(table, bits, width) {
  return table.map(([cidr, name, reference]) => {
    const [base, len] = cidr.split('/');
    const shift = BigInt(width - Number(len));
    return { cidr, name, reference, shift, prefix: bits(base) >> shift };
  });
}

const V4 = compile(IPV4_TABLE, v4bits, 32);
const V6 = compile(IPV6_TABLE, v6bits, 128);
const GLOBAL_UNICAST = compile([['2000::/3', '', '']], v6bits, 128)[0];

function inRow(row, bits) {
  return bits >> row.shift === row.prefix;
}

/** Why `address` (an IP address string) may not be connected to, or null when it is public. */
function refusal(address) {
  if (net.isIPv4(address)) {
    const bits = v4bits(address);
    const row = V4.find((r) => inRow(r, bits));
    return row ? `${row.name}, ${row.cidr} (${row.reference})` : null;
  }
  if (address.includes('%')) return 'an address with a zone id (link-scoped)';
  const bits = v6bits(address);
  const row = V6.find((r) => inRow(r, bits));
  if (row) return `${row.name}, ${row.cidr} (${row.reference})`;
  if (!inRow(GLOBAL_UNICAST, bits)) {
    return 'outside 2000::/3, the only global unicast IPv6 space (RFC 4291 2.4)';
  }
  return null;
}

module.exports = { IPV4_TABLE, IPV6_TABLE, refusal };
