'use strict';
// The shared network grant vectors (tests/vectors/netgrant_requests.json) in
// the Node mediator: each case's bytes go through what the mediator does with
// a fresh connection before relaying anything (read the request, admit it
// for the grant, connect under the address rules, with the case's DNS
// answers and a dialer that records the address), exactly as the Python and
// Go mediators run the same file. The proxy's socket is a real loopback
// connection; the end-to-end path through the sandbox is netgrant.test.js.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { test, before, after } = require('node:test');

const installedIn = process.env.CODEWARD_TEST_INSTALLED;
const pkgDir = installedIn
  ? path.dirname(require.resolve('codeward/package.json', { paths: [installedIn] }))
  : path.join(__dirname, '..', '..', '..');
const lib = path.join(pkgDir, 'bindings', 'node', 'lib', 'netgrant');
const { NetworkGrant } = require(pkgDir);
const { Refused, readRequest } = require(path.join(lib, 'protocol.js'));
const { admit, openUpstream } = require(path.join(lib, 'upstream.js'));

const VECTORS = process.env.A3S_VECTORS_DIR || path.join(__dirname, '..', '..', '..', 'tests', 'vectors');
const FILE = path.join(VECTORS, 'netgrant_requests.json');
const { cases } = JSON.parse(fs.readFileSync(FILE, 'utf8'));
const DIGEST = `sha256:${'0'.repeat(64)}`;
const DEFAULT_ANSWER = '93.184.215.14';

function grantOf(origin) {
  if (origin.startsWith('[')) {
    const [host, port] = origin.slice(1).split(']:');
    return new NetworkGrant({ host, port: Number(port), policyDigest: DIGEST });
  }
  const colon = origin.lastIndexOf(':');
  if (colon < 0) return new NetworkGrant({ host: origin, policyDigest: DIGEST });
  return new NetworkGrant({ host: origin.slice(0, colon), port: Number(origin.slice(colon + 1)), policyDigest: DIGEST });
}

const hostport = (host, port) => (host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`);

let server;
const incoming = [];
before(async () => {
  server = net.createServer({ allowHalfOpen: true, pauseOnConnect: true }, (sock) => incoming.shift()(sock));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
});
after(() => server.close());

/** The proxy's side of a connection whose client sent `bytes` and shut its write side. */
async function connectionWith(bytes) {
  const accepted = new Promise((resolve) => incoming.push(resolve));
  const client = net.connect({ port: server.address().port, host: '127.0.0.1', allowHalfOpen: true });
  client.on('error', () => {});
  client.on('data', () => {}); // SOCKS5 method replies
  client.end(Buffer.from(bytes, 'latin1'));
  return { client, sock: await accepted };
}

test('the vectors cover every outcome', () => {
  assert.ok(cases.length >= 100);
  const statuses = new Set(cases.map((c) => c.expect.status));
  for (const s of [200, 400, 403, 431, 501, 502]) assert.ok(statuses.has(s), `status ${s}`);
});

for (const c of cases) {
  test(`vector ${c.name}`, async () => {
    const grant = grantOf(c.origin);
    const dns = c.dns || {};
    const resolved = [];
    const dialed = [];
    const resolver = (host) => {
      resolved.push(host);
      return dns[host] || [DEFAULT_ANSWER];
    };
    const dialer = (ip, port) => {
      dialed.push(hostport(ip, port));
      return { destroy() {} };
    };
    const { expect } = c;
    const { client, sock } = await connectionWith(c.request);
    let request = null;
    let host;
    try {
      request = await readRequest(sock, 5000);
      host = admit(grant, request);
      (await openUpstream(grant, host, request.port, { resolver, dialer, timeoutMs: 5000 })).destroy();
    } catch (err) {
      if (!(err instanceof Refused)) throw err;
      assert.equal(expect.forward, false, `refused: ${err.reason}`);
      const kind = request ? request.kind : err.kind;
      if (kind === 'socks5') assert.equal(err.socks, expect.socks);
      else assert.equal(err.status, expect.status);
      assert.equal(err.reason, expect.reason);
      assert.deepEqual(dialed, []);
      return;
    } finally {
      client.destroy();
      sock.destroy();
    }
    assert.equal(expect.forward, true, 'forwarded');
    assert.equal(hostport(host, request.port), expect.target);
    assert.equal(dialed[0], expect.dialed);
    assert.equal(request.forward.toString('latin1'), expect.sent);
    if (request.kind === 'socks5') assert.equal(expect.socks, 0);
    else if (request.kind === 'connect') assert.equal(expect.status, 200);
    else {
      assert.equal(expect.status, undefined);
      assert.equal(request.bodyLeft, expect.body_left);
      assert.equal(request.pipelined || Boolean(request.late), expect.pipelined);
    }
    if (grant.kind !== 'name' || grant.host === 'localhost') assert.deepEqual(resolved, []);
  });
}
