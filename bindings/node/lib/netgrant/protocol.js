'use strict';
// The proxy protocols a granted command's tools speak, read strictly and
// answered plainly (python/codeward/netgrant/_protocol.py). One port serves
// all: the first byte tells them apart (5: SOCKS5; anything else: HTTP). A
// request is read within one time bound and a size bound, and either names a
// target or is refused with a Refused saying why, answered as an HTTP status
// line and body, or a SOCKS reply code.
//
// - HTTP CONNECT host:port: a tunnel (TLS stays end to end).
// - HTTP absolute form (GET http://host[:port]/path): forwarded in origin form,
//   Proxy-* and hop-by-hop headers dropped, Host set to the target's
//   authority, Connection: close. One request per connection: exactly its
//   head and its Content-Length bytes of body reach the origin, nothing after
//   them. Framing an origin could read differently (Transfer-Encoding, two
//   Content-Lengths, folded or malformed header lines) is refused.
// - SOCKS5 CONNECT by name or address, no authentication.

const net = require('node:net');

const { pyRepr } = require('./repr');

const MAX_HEAD = 16 * 1024;
const HOP_HEADERS = new Set(['proxy-connection', 'proxy-authorization', 'connection', 'keep-alive']);
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9a-zA-Z]+$/;

// SOCKS5 reply codes (RFC 1928 6)
const SOCKS = {
  FAILURE: 1,
  NOT_ALLOWED: 2,
  HOST_UNREACHABLE: 4,
  REFUSED: 5,
  TTL_EXPIRED: 6,
  COMMAND: 7,
  ADDRESS_TYPE: 8,
};

/** A connection the mediator does not admit: the HTTP status and SOCKS code to answer with. */
class Refused extends Error {
  constructor(reason, status = 403, socks = SOCKS.NOT_ALLOWED) {
    super(reason);
    this.name = 'Refused';
    this.reason = reason;
    this.status = status;
    this.socks = socks;
    this.kind = null; // the protocol to answer in, once the first byte told
  }
}

/** Reads from a socket with one deadline for the whole request. */
class Reader {
  #sock;
  #chunks = [];
  #ended = false;
  #wake = null;
  #timer;
  #expired = false;

  constructor(sock, timeoutMs) {
    this.#sock = sock;
    this.onData = (chunk) => {
      this.#chunks.push(chunk);
      this.#notify();
    };
    this.onEnd = () => {
      this.#ended = true;
      this.#notify();
    };
    sock.on('data', this.onData);
    sock.on('end', this.onEnd);
    sock.on('close', this.onEnd);
    this.#timer = setTimeout(() => {
      this.#expired = true;
      this.#notify();
    }, timeoutMs);
  }

  #notify() {
    const wake = this.#wake;
    this.#wake = null;
    if (wake) wake();
  }

  /** Up to `n` bytes (at least one), all that came if n is Infinity. */
  async some(n = Infinity) {
    while (this.#chunks.length === 0) {
      if (this.#expired) throw new Refused('no complete request in time', 408, SOCKS.TTL_EXPIRED);
      if (this.#ended) {
        throw new Refused('the client closed before a complete request', 400, SOCKS.FAILURE);
      }
      await new Promise((resolve) => {
        this.#wake = resolve;
      });
    }
    if (this.#expired) throw new Refused('no complete request in time', 408, SOCKS.TTL_EXPIRED);
    const all = this.#chunks.length === 1 ? this.#chunks[0] : Buffer.concat(this.#chunks);
    const take = all.subarray(0, Math.min(n, all.length));
    const left = all.subarray(take.length);
    this.#chunks = left.length ? [left] : [];
    return take;
  }

  async exact(n) {
    const parts = [];
    let have = 0;
    while (have < n) {
      const part = await this.some(n - have);
      parts.push(part);
      have += part.length;
    }
    return Buffer.concat(parts);
  }

  /** Stops reading; what came past the request is dropped (HTTP keeps its own rest). */
  detach() {
    clearTimeout(this.#timer);
    this.#sock.off('data', this.onData);
    this.#sock.off('end', this.onEnd);
    this.#sock.off('close', this.onEnd);
    this.#sock.pause();
    const rest = Buffer.concat(this.#chunks);
    this.#chunks = [];
    return { rest, ended: this.#ended };
  }
}

/**
 * Reads one proxy request from a fresh connection within `timeoutMs` (for the
 * whole request: a client that trickles a byte at a time is refused when the
 * time is up). Resolves with {kind, host, port, forward, byAddress, bodyLeft,
 * pipelined, clientEnded}; rejects with a Refused.
 */
async function readRequest(sock, timeoutMs) {
  sock.pause();
  const reader = new Reader(sock, timeoutMs);
  sock.resume();
  let request;
  try {
    const first = await reader.some(1);
    if (first[0] === 5) {
      try {
        request = await readSocks5(reader, sock);
      } catch (err) {
        if (err instanceof Refused) err.kind = 'socks5';
        throw err;
      }
    } else if (first[0] === 4) {
      throw new Refused('SOCKS4 is not supported; use socks5h://', 400, SOCKS.FAILURE);
    } else {
      request = await readHttp(reader, first);
    }
  } finally {
    const { rest, ended } = reader.detach();
    if (request) {
      request.clientEnded = ended;
      if (request.kind !== 'http' && rest.length) request.forward = Buffer.concat([request.forward, rest]);
      if (request.kind === 'http' && rest.length) request.late = rest;
    }
  }
  return request;
}

/** Tells the client its tunnel is open (CONNECT, SOCKS5); a forwarded request needs nothing. */
function sendGranted(sock, request) {
  if (request.kind === 'connect') sock.write('HTTP/1.1 200 Connection established\r\n\r\n');
  else if (request.kind === 'socks5') sock.write(Buffer.from([5, 0, 0, 1, 0, 0, 0, 0, 0, 0]));
}

/** A reason phrase: printable ASCII on one line, at most 300 characters. */
function phrase(text) {
  return text.replace(/[^ -~]/g, '?').slice(0, 300);
}

/** The refusal in the client's protocol (the caller ends the connection). */
function sendRefusal(sock, kind, refused) {
  if (sock.destroyed || sock.writableEnded) return;
  if (kind === 'socks5') {
    sock.write(Buffer.from([5, refused.socks, 0, 1, 0, 0, 0, 0, 0, 0]));
    return;
  }
  const text = `codeward network grant: ${refused.reason}`;
  const body = Buffer.from(`${text}\n`, 'utf8');
  const head =
    `HTTP/1.1 ${refused.status} ${phrase(text)}\r\n` +
    'Content-Type: text/plain; charset=utf-8\r\n' +
    `Content-Length: ${body.length}\r\n` +
    'Connection: close\r\n\r\n';
  sock.write(Buffer.concat([Buffer.from(head, 'latin1'), body]));
}

function showText(text) {
  return pyRepr(text.slice(0, 100));
}

// -- HTTP -----------------------------------------------------------------------------------

async function readHttp(reader, first) {
  let data = first;
  let end = -1;
  while ((end = data.indexOf('\r\n\r\n')) < 0) {
    if (data.length > MAX_HEAD) throw new Refused(`the request head is longer than ${MAX_HEAD} bytes`, 431);
    data = Buffer.concat([data, await reader.some(4096)]);
  }
  const head = data.subarray(0, end);
  const rest = data.subarray(end + 4);
  if (head.length > MAX_HEAD) throw new Refused(`the request head is longer than ${MAX_HEAD} bytes`, 431);
  const lines = head.toString('latin1').split('\r\n');
  const parts = lines[0].split(' ');
  if (parts.length !== 3 || !parts[2].startsWith('HTTP/1.')) {
    throw new Refused('not an HTTP/1.x proxy request', 400);
  }
  const [method, target, version] = parts;
  if (method === 'CONNECT') {
    const { host, port } = authority(target, null);
    return { kind: 'connect', host, port, forward: rest, byAddress: false, bodyLeft: 0, pipelined: false };
  }
  const sep = target.indexOf('://');
  const scheme = sep < 0 ? '' : target.slice(0, sep);
  // eslint-disable-next-line no-control-regex
  const schemeLower = /^[\x00-\x7f]*$/.test(scheme) ? scheme.toLowerCase() : '';
  if (sep < 0 || (schemeLower !== 'http' && schemeLower !== 'https')) {
    throw new Refused(
      'a request to a proxy names its target in absolute form (http://host/path), ' +
        'or tunnels with CONNECT',
      400,
    );
  }
  if (schemeLower === 'https') {
    throw new Refused('an https:// URL goes through a CONNECT tunnel, not a plain request', 400);
  }
  const after = target.slice(sep + 3);
  const cuts = ['/', '?', '#'].map((c) => after.indexOf(c)).filter((i) => i >= 0);
  const cut = cuts.length ? Math.min(...cuts) : after.length;
  const auth = after.slice(0, cut);
  let path = after.slice(cut).split('#')[0] || '/';
  if (path.startsWith('?')) path = `/${path}`;
  const { host, port } = authority(auth, 80);
  const headers = parseHeaders(lines.slice(1));
  const length = bodyLength(headers);
  const kept = headers.filter(([name]) => !HOP_HEADERS.has(name) && name !== 'host').map(([, line]) => line);
  const rewritten = [`${method} ${path} ${version}`, `Host: ${auth}`, ...kept, 'Connection: close'].join('\r\n');
  const body = rest.subarray(0, length);
  return {
    kind: 'http',
    host,
    port,
    forward: Buffer.concat([Buffer.from(`${rewritten}\r\n\r\n`, 'latin1'), body]),
    byAddress: false,
    bodyLeft: length - body.length,
    pipelined: rest.length > length,
  };
}

/** [lower-case name, line] of each header line; Refused for a line an origin could read otherwise. */
function parseHeaders(lines) {
  return lines.map((line) => {
    const colon = line.indexOf(':');
    const name = colon < 0 ? '' : line.slice(0, colon);
    if (colon < 0 || !TOKEN.test(name)) throw new Refused(`malformed header line ${showText(line)}`, 400);
    // eslint-disable-next-line no-control-regex
    if (/[\x00-\x08\x0a-\x1f\x7f]/.test(line.slice(colon + 1))) {
      throw new Refused(`a control character in header ${showText(name)}`, 400);
    }
    return [name.toLowerCase(), line];
  });
}

/** The body's length from Content-Length (0 without one); Refused where framing is ambiguous. */
function bodyLength(headers) {
  if (headers.some(([name]) => name === 'transfer-encoding')) {
    throw new Refused(
      'a request body with Transfer-Encoding is not forwarded; send it with Content-Length',
      501,
    );
  }
  const values = new Set(
    headers
      .filter(([name]) => name === 'content-length')
      .map(([, line]) => line.slice(line.indexOf(':') + 1).replace(/^[ \t\n\r\v\f]+|[ \t\n\r\v\f]+$/g, '')),
  );
  if (values.size === 0) return 0;
  const [value] = values;
  if (values.size > 1 || !/^[0-9]+$/.test(value) || value.length > 18) {
    throw new Refused('the request has no single valid Content-Length', 400);
  }
  return Number(value);
}

/** host:port ([v6]:port), the port optional only where a default is given. */
function authority(text, fallback) {
  if (text.includes('@')) throw new Refused('user information in a proxy target is refused', 400);
  let host;
  let portText;
  if (text.startsWith('[')) {
    const close = text.indexOf(']');
    const after = close < 0 ? '' : text.slice(close + 1);
    if (close < 0 || (after && !after.startsWith(':'))) throw new Refused(`malformed target ${showText(text)}`, 400);
    host = text.slice(1, close);
    portText = after ? after.slice(1) : null;
  } else {
    const colon = text.lastIndexOf(':');
    host = colon < 0 ? text : text.slice(0, colon);
    portText = colon < 0 ? null : text.slice(colon + 1);
  }
  if (portText === null) {
    if (fallback === null) throw new Refused(`the target ${showText(text)} has no port`, 400);
    return { host, port: fallback };
  }
  // ASCII digits only: '\u00b9' and other Unicode digits are not a port
  if (!/^[1-9][0-9]*$/.test(portText) || Number(portText) >= 65536) {
    throw new Refused(`the target ${showText(text)} has no valid port`, 400);
  }
  return { host, port: Number(portText) };
}

// -- SOCKS5 ---------------------------------------------------------------------------------

async function readSocks5(reader, sock) {
  const count = (await reader.exact(1))[0];
  const methods = count ? await reader.exact(count) : Buffer.alloc(0);
  if (!methods.includes(0)) {
    sock.write(Buffer.from([5, 0xff]));
    throw new Refused('SOCKS5 without the no-authentication method', 400, SOCKS.NOT_ALLOWED);
  }
  sock.write(Buffer.from([5, 0]));
  const [version, command, , atyp] = await reader.exact(4);
  if (version !== 5) throw new Refused('malformed SOCKS5 request', 400, SOCKS.FAILURE);
  let host;
  if (atyp === 1) {
    host = [...(await reader.exact(4))].join('.');
  } else if (atyp === 4) {
    const raw = await reader.exact(16);
    const groups = [];
    for (let i = 0; i < 16; i += 2) groups.push(raw.readUInt16BE(i).toString(16));
    host = new URL(`http://[${groups.join(':')}]/`).hostname.slice(1, -1);
  } else if (atyp === 3) {
    const raw = await reader.exact((await reader.exact(1))[0]);
    if (raw.some((b) => b > 0x7f)) {
      throw new Refused('a SOCKS5 name must be ASCII (an A-label)', 400, SOCKS.FAILURE);
    }
    host = raw.toString('latin1');
  } else {
    throw new Refused(`SOCKS5 address type ${atyp} is unknown`, 400, SOCKS.ADDRESS_TYPE);
  }
  const port = (await reader.exact(2)).readUInt16BE(0);
  if (command !== 1) {
    const what = { 2: 'BIND', 3: 'UDP ASSOCIATE' }[command] || `command ${command}`;
    throw new Refused(`SOCKS5 ${what} is refused: only CONNECT`, 400, SOCKS.COMMAND);
  }
  if (port === 0) throw new Refused('port 0 is not a target', 400, SOCKS.FAILURE);
  return {
    kind: 'socks5',
    host,
    port,
    forward: Buffer.alloc(0),
    byAddress: atyp !== 3,
    bodyLeft: 0,
    pipelined: false,
  };
}

module.exports = { MAX_HEAD, SOCKS, Refused, readRequest, sendGranted, sendRefusal, isIP: net.isIP };
