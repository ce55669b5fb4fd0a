'use strict';
// The connection to the granted origin, under the download tool's address
// rules (python/codeward/netgrant/_upstream.py). The target a client asks for
// is compared with the grant in canonical form, then:
// - a grant that names an IP address reaches that address, whatever it is
//   (the approver saw it);
// - a grant of `localhost` exactly reaches the loopback addresses, without
//   asking a resolver (RFC 6761);
// - a grant of any other name is resolved once, and every answer must be a
//   public unicast address (./addresses.js): one private answer refuses the
//   connection, so a name that rebinds to 127.0.0.1 or a metadata address
//   reaches nothing. The connection goes to the answers just checked.

const dns = require('node:dns');
const net = require('node:net');

const { NetworkGrantError } = require('../errors');
const { canonicalHost } = require('./grant');
const { refusal } = require('./addresses');
const { Refused, SOCKS } = require('./protocol');

const LOOPBACK = ['127.0.0.1', '::1'];
const MAX_ANSWERS = 64;
const MAX_ATTEMPTS = 8;

/** The system resolver; the trailing dot keeps local search domains out. */
async function systemResolver(host) {
  const answers = await dns.promises.lookup(`${host}.`, { all: true, verbatim: true });
  return answers.map((a) => a.address);
}

/** A plain TCP connection to an already validated address. */
function plainDialer(ip, port, timeoutMs) {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: ip, port, allowHalfOpen: true });
    const timer = setTimeout(() => {
      sock.destroy();
      reject(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' }));
    }, timeoutMs);
    sock.once('connect', () => {
      clearTimeout(timer);
      sock.removeAllListeners('error');
      resolve(sock);
    });
    sock.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

/** The canonical host of an admitted request; Refused for anything but the grant's origin. */
function admit(grant, request) {
  let host;
  let kind;
  try {
    ({ host, kind } = canonicalHost(request.host, 'target'));
  } catch (err) {
    if (err instanceof NetworkGrantError) throw new Refused(err.message, 400);
    throw err;
  }
  if (!grant.admits(host, request.port)) {
    const asked = kind === 'ipv6' ? `[${host}]:${request.port}` : `${host}:${request.port}`;
    throw new Refused(`${asked} is not the granted origin; this command may reach ${grant.origin}`);
  }
  return host;
}

class Timeout extends Error {}

/** `promise`, or a Timeout once `deadline` (a Date.now() value) has passed. */
function before(deadline, promise) {
  let timer;
  const expired = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Timeout()), Math.max(0, deadline - Date.now()));
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}

async function addresses(grant, host, port, resolver, deadline) {
  if (grant.kind !== 'name') return [host];
  if (host === 'localhost') return LOOPBACK;
  let answers;
  try {
    answers = await before(deadline, Promise.resolve().then(() => resolver(host, port)));
  } catch (err) {
    if (err instanceof Timeout) throw err;
    throw new Refused(`cannot resolve ${host}: ${err.code || err.message}`, 502, SOCKS.HOST_UNREACHABLE);
  }
  if (!Array.isArray(answers)) throw new TypeError('a resolver must return a list of IP address strings');
  if (answers.length === 0) throw new Refused(`${host} has no address`, 502, SOCKS.HOST_UNREACHABLE);
  if (answers.length > MAX_ANSWERS) {
    throw new Refused(`${host} has ${answers.length} addresses, more than ${MAX_ANSWERS}`, 502, SOCKS.HOST_UNREACHABLE);
  }
  const pinned = [];
  for (const answer of answers) {
    // every answer, before any connection, in its canonical form
    const family = typeof answer === 'string' ? net.isIP(answer) : 0;
    const address = family === 6 && !answer.includes('%') ? new URL(`http://[${answer}]/`).hostname.slice(1, -1) : String(answer);
    const reason = family ? refusal(address) : 'not an IP address';
    if (reason !== null) {
      throw new Refused(
        `${host} resolves to ${address.slice(0, 64)} (${reason}); a grant of a name reaches ` +
          'public addresses only: grant the address itself to reach it',
      );
    }
    if (!pinned.includes(address)) pinned.push(address);
  }
  return pinned;
}

/** A connection to the admitted host:port; Refused (with the status to answer) if none. */
async function openUpstream(grant, host, port, { resolver, dialer, timeoutMs }) {
  const deadline = Date.now() + timeoutMs;
  const seconds = `${timeoutMs / 1000}`;
  let ips;
  try {
    ips = await addresses(grant, host, port, resolver, deadline);
  } catch (err) {
    if (err instanceof Timeout) {
      throw new Refused(`${host} did not resolve within ${seconds} s`, 504, SOCKS.TTL_EXPIRED);
    }
    throw err;
  }
  const failures = [];
  for (const ip of ips.slice(0, MAX_ATTEMPTS)) {
    const left = deadline - Date.now();
    if (left <= 0) break;
    const dialing = Promise.resolve().then(() => dialer(ip, port, left));
    try {
      return await before(deadline, dialing);
    } catch (err) {
      if (err instanceof Timeout) {
        dialing.then((sock) => sock.destroy(), () => {}); // too late: never used
        break;
      }
      failures.push(`${ip}: ${err.code || err.message}`);
    }
  }
  if (Date.now() >= deadline) {
    throw new Refused(`${host}:${port} did not answer within ${seconds} s`, 504, SOCKS.TTL_EXPIRED);
  }
  throw new Refused(`could not connect to ${host}:${port} (${failures.join('; ')})`, 502, SOCKS.REFUSED);
}

module.exports = { admit, openUpstream, systemResolver, plainDialer };
