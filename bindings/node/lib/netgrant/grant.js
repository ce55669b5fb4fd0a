'use strict';
// NetworkGrant: the one origin a command may reach, and the host names it
// compares (python/codeward/netgrant/_grant.py). A grant names one host
// exactly, as the approver saw it: no wildcard, path, port or user inside
// the host; one mapping (lower-casing for ASCII names, IDNA UTS-46 for the
// rest, a trailing dot dropped), so a name is compared in one form
// everywhere. `localhost` and `127.0.0.1` are different hosts. A grant
// without a port covers 443 and 80 of its host.

const net = require('node:net');
const url = require('node:url');

const { ArgumentTypeError, NetworkGrantError, typeName } = require('../errors');
const { isPrintable, pyRepr } = require('./repr');

const DEFAULT_PORTS = Object.freeze([443, 80]);
// never part of an exact host: wildcards, paths, user information, ports, spaces
const FORBIDDEN = new Set('*?/\\@#%[] \t\r\n:');
const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const OCTET = '(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])';
const DOTTED_QUAD = new RegExp(`^${OCTET}(\\.${OCTET}){3}$`);
const NUMERIC_LABEL = /^([0-9]+|0[xX][0-9A-Fa-f]*)$/;

const show = pyRepr;

/** The WHATWG rule: a host whose last label is numeric is an IPv4 address, never a name. */
function endsInNumber(name) {
  const last = name.slice(name.lastIndexOf('.') + 1);
  return last !== '' && NUMERIC_LABEL.test(last);
}

function mapName(text, fail) {
  const lowered = text.replace(/[A-Z]/g, (c) => c.toLowerCase());
  // eslint-disable-next-line no-control-regex
  const ascii = /^[\x00-\x7f]*$/.test(text);
  if (ascii && !lowered.split('.').some((label) => label.startsWith('xn--'))) return lowered;
  const mapped = url.domainToASCII(text);
  if (!mapped) throw fail('the host is not a valid internationalised name');
  if (!ascii && endsInNumber(mapped.replace(/\.$/, ''))) {
    // WHATWG reads Unicode digits as an IPv4 address: never a host here
    throw fail('a numeric host must be written in ASCII digits');
  }
  return mapped;
}

/**
 * The canonical form of an exact host (a name, a dotted quad, an IPv6 address)
 * and its kind ('name', 'ipv4', 'ipv6'); a NetworkGrantError saying what is
 * wrong otherwise. IPv4 shorthand (127.1, 0x7f.0.0.1) and every other numeric
 * form are refused, as in URLs.
 */
function canonicalHost(text, what = 'host') {
  if (typeof text !== 'string' || !text) {
    throw new NetworkGrantError(`the ${what} must be a non-empty string`);
  }
  const literal = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  if (literal.includes(':')) {
    const bad6 = [...new Set([...literal].filter((c) => (FORBIDDEN.has(c) && c !== ':') || !isPrintable(c)))];
    if (bad6.length) {
      throw new NetworkGrantError(
        `the ${what} ${show(text)} is not an exact IP address: it contains ` +
          `${bad6.sort().map(show).join(', ')} (no zone id, port, path or wildcard)`,
      );
    }
    if (!net.isIPv6(literal)) {
      throw new NetworkGrantError(
        `the ${what} ${show(text)} is not a host: a port goes in the grant's port field, ` +
          'and an IPv6 address must be valid',
      );
    }
    return { host: new URL(`http://[${literal}]/`).hostname.slice(1, -1), kind: 'ipv6' };
  }
  const bad = [
    ...new Set([...text].filter((c) => FORBIDDEN.has(c) || c.charCodeAt(0) < 0x20 || c === '\x7f')),
  ];
  if (bad.length) {
    throw new NetworkGrantError(
      `the ${what} ${show(text)} is not an exact host name or IP address: it contains ` +
        `${bad.sort().map(show).join(', ')} (no scheme, port, path or wildcard)`,
    );
  }
  const fail = (why) => new NetworkGrantError(`the ${what} ${show(text)} is refused: ${why}`);
  const mapped = mapName(text, fail);
  const name = mapped.endsWith('.') ? mapped.slice(0, -1) : mapped;
  if (endsInNumber(name)) {
    if (mapped !== name || !DOTTED_QUAD.test(name)) {
      throw fail(
        `the numeric host ${show(mapped)} is not a canonical dotted quad ` +
          '(shorthand, octal, hex and integer forms are refused)',
      );
    }
    return { host: name, kind: 'ipv4' };
  }
  if (!name || name.length > 253) throw fail('the host name is empty or longer than 253 characters');
  for (const label of name.split('.')) {
    if (!LABEL.test(label)) {
      throw fail(`the host label ${show(label)} is not letters, digits and inner hyphens (1-63 long)`);
    }
  }
  return { host: name, kind: 'name' };
}

/**
 * One approved origin for one command: `host`, `port` (null: 443 and 80) and
 * `policyDigest`, the sandbox policy the approver was shown
 * (`await sandbox.policy()`): the command runs only under that policy.
 * `mediator` is the NetworkMediator that serves it (null: a default one with
 * the system resolver and plain TCP connections).
 */
class NetworkGrant {
  constructor({ host, port = null, policyDigest, mediator = null } = {}) {
    const { host: canonical, kind } = canonicalHost(host);
    if (port !== null && port !== undefined) {
      if (typeof port !== 'number') {
        throw new ArgumentTypeError(`the port must be a number, not ${typeName(port)}`);
      }
      if (!Number.isInteger(port) || port < 1 || port > 65535) {
        throw new NetworkGrantError(`the port must be an integer from 1 to 65535, not ${port}`);
      }
    }
    if (typeof policyDigest !== 'string' || !/^sha256:[0-9a-f]{64}$/.test(policyDigest)) {
      throw new NetworkGrantError(
        'a grant needs the sandbox policy digest it was approved on (sandbox.policy().digest)',
      );
    }
    this.host = canonical;
    this.port = port ?? null;
    this.policyDigest = policyDigest;
    this.kind = kind;
    if (mediator !== null && (typeof mediator !== 'object' || typeof mediator.admit !== 'function')) {
      throw new ArgumentTypeError(`mediator must be a NetworkMediator, not ${typeName(mediator)}`);
    }
    this.mediator = mediator;
    Object.freeze(this);
  }

  /** The ports it covers: [port], or [443, 80]. */
  get ports() {
    return this.port === null ? DEFAULT_PORTS : [this.port];
  }

  /** In words, as a prompt shows it: `example.com:8443`, or both web ports. */
  get origin() {
    const name = this.kind === 'ipv6' ? `[${this.host}]` : this.host;
    if (this.port === null) {
      return `${name}:443 and ${name}:80 (no port given: HTTPS and HTTP)`;
    }
    return `${name}:${this.port}`;
  }

  /** Whether a canonical host and a port are this grant's origin, exactly. */
  admits(host, port) {
    return host === this.host && this.ports.includes(port);
  }

  toJSON() {
    return { host: this.host, port: this.port, policyDigest: this.policyDigest };
  }
}

module.exports = { DEFAULT_PORTS, NetworkGrant, canonicalHost };
