'use strict';
// Network grants end to end: a command in the real sandbox reaches a real
// loopback origin through its proxy and the JavaScript mediator, and nothing
// else (python/codeward/netgrant, tests/netgrant). The grant names the
// origin's address (127.0.0.1:port), so the address table does not apply;
// the decisions themselves are the shared vectors (netgrant-vectors.test.js).

const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const path = require('node:path');
const { test } = require('node:test');

const { pkgDir, codeward, scratch } = require('./sandboxkit.js');

const { NetworkGrant, NetworkGrantError, NetworkMediator } = codeward;
const { workspace, nativeSandbox, closeAfter } = scratch('cw-grant-');

/** An HTTP origin on the host's loopback; `seen` lists each request it got. */
async function origin(handler = (req, res) => res.end(`hello from ${req.url}\n`)) {
  const seen = [];
  const server = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    handler(req, res);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  closeAfter(() => new Promise((resolve) => server.close(resolve)));
  return { port: server.address().port, seen };
}

/**
 * An origin that records every byte of each connection, answers once, and
 * reads on for a while before it closes (as the forwarded Connection: close
 * asks), so pipelined bytes, had they been forwarded, are recorded.
 */
async function rawOrigin() {
  const received = [];
  const server = net.createServer({ allowHalfOpen: true }, (sock) => {
    const chunks = [];
    let answered = false;
    sock.on('data', (d) => {
      chunks.push(d);
      if (!answered && Buffer.concat(chunks).includes('\r\n\r\n')) {
        answered = true;
        sock.write('HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nanswer');
        setTimeout(() => sock.end(), 500);
      }
    });
    sock.on('error', () => {});
    sock.on('end', () => sock.end());
    sock.on('close', () => received.push(Buffer.concat(chunks).toString('latin1')));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  closeAfter(() => new Promise((resolve) => server.close(resolve)));
  return { port: server.address().port, all: () => received.join('') };
}

const CURL = 'curl -sS --max-time 20';

/** bash: send the bytes of printf FORMAT to the proxy on one connection, print the answer. */
function raw(format) {
  return `exec 3<>/dev/tcp/127.0.0.1/3128 && printf '${format}' >&3 && cat <&3; echo; exec 3<&-`;
}

test('a granted command reaches the granted origin and nothing else', async () => {
  const sb = await nativeSandbox();
  const granted = await origin();
  const other = await origin();
  const { digest } = await sb.policy();
  const out = await sb.exec(
    [
      `${CURL} http://127.0.0.1:${granted.port}/hello`,
      `${CURL} -p http://127.0.0.1:${granted.port}/tunnel`, // CONNECT, then the request inside
      `${CURL} -x "$ALL_PROXY" http://127.0.0.1:${granted.port}/socks`, // socks5h://127.0.0.1:3128
      `${CURL} http://127.0.0.1:${other.port}/other; echo "other=$?"`,
      `${CURL} -x '' --max-time 5 http://127.0.0.1:${granted.port}/direct; echo "direct=$?"`,
    ].join('; '),
    { networkGrant: { host: '127.0.0.1', port: granted.port, policyDigest: digest }, timeoutMs: 60_000 },
  );
  assert.equal(out.setupError, null);
  assert.match(out.stdout, /hello from \/hello/);
  assert.match(out.stdout, /hello from \/tunnel/);
  assert.match(out.stdout, /hello from \/socks/);
  assert.match(out.stdout, /is not the granted origin; this command may reach 127\.0\.0\.1:\d+/);
  assert.match(out.stdout, /direct=[1-9]/); // no network but the proxy's
  assert.deepEqual(granted.seen, ['GET /hello', 'GET /tunnel', 'GET /socks']);
  assert.deepEqual(other.seen, []);
  const g = out.networkGrant;
  assert.equal(g.host, '127.0.0.1');
  assert.equal(g.listening, true);
  assert.equal(g.connections, 3);
  assert.equal(g.refused, 1);
  // the grant ended with the command: the next one has no network at all
  const next = await sb.exec(`${CURL} http://127.0.0.1:${granted.port}/after; echo "after=$?"`);
  assert.match(next.stdout, /after=[1-9]/);
  assert.equal(next.networkGrant, null);
  assert.deepEqual(granted.seen, ['GET /hello', 'GET /tunnel', 'GET /socks']);
});

test('a request pipelined behind the first never reaches the origin', async () => {
  const sb = await nativeSandbox();
  const o = await rawOrigin();
  const { digest } = await sb.policy();
  const first = `GET http://127.0.0.1:${o.port}/first HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n`;
  const second = 'GET http://127.0.0.1:1/second HTTP/1.1\\r\\nHost: y\\r\\n\\r\\n';
  const out = await sb.exec(raw(first + second), {
    networkGrant: { host: '127.0.0.1', port: o.port, policyDigest: digest },
  });
  assert.match(out.stdout, /^HTTP\/1\.1 200 OK/);
  for (let i = 0; i < 200 && !o.all(); i++) await new Promise((resolve) => setTimeout(resolve, 50));
  assert.match(o.all(), /GET \/first HTTP\/1\.1/);
  assert.doesNotMatch(o.all(), /second/);
  assert.equal(out.networkGrant.refused, 1);
  assert.match(out.networkGrant.refusals[0], /pipelined/);
});

test('malformed requests and a Unicode-digit port are answered, never forwarded', async () => {
  const sb = await nativeSandbox();
  const o = await rawOrigin();
  const { digest } = await sb.policy();
  const h = `127.0.0.1:${o.port}`;
  const cases = [
    // CONNECT to a port of Unicode digits: U+00B9 SUPERSCRIPT ONE, U+0661 ARABIC-INDIC ONE
    [`CONNECT 127.0.0.1:\\302\\271 HTTP/1.1\\r\\n\\r\\n`, 400],
    [`CONNECT 127.0.0.1:\\331\\241 HTTP/1.1\\r\\n\\r\\n`, 400],
    [`POST http://${h}/ HTTP/1.1\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n0\\r\\n\\r\\n`, 501],
    [`POST http://${h}/ HTTP/1.1\\r\\nContent-Length: 1\\r\\nContent-Length: 2\\r\\n\\r\\n`, 400],
    [`GET http://${h}/ HTTP/1.1\\r\\nContent-Length : 0\\r\\n\\r\\n`, 400],
    [`GET http://${h}/ HTTP/1.1\\r\\nX: a\\r\\n folded\\r\\n\\r\\n`, 400],
    ['GET /origin-form HTTP/1.1\\r\\n\\r\\n', 400],
    ['HELLO\\r\\n\\r\\n', 400],
  ];
  const out = await sb.exec(cases.map(([req]) => raw(req)).join('; '), {
    networkGrant: { host: '127.0.0.1', port: o.port, policyDigest: digest },
  });
  const statuses = out.stdout.split('\n').filter((l) => l.startsWith('HTTP/1.1 ')).map((l) => Number(l.split(' ')[1]));
  assert.deepEqual(statuses, cases.map(([, status]) => status), out.stdout);
  assert.equal(o.all(), ''); // nothing reached the origin
  assert.equal(out.networkGrant.connections, 0);
  assert.equal(out.networkGrant.refused, cases.length);
});

test('a redirect to another origin is refused', async () => {
  const sb = await nativeSandbox();
  const landing = await origin();
  const start = await origin((req, res) => {
    res.writeHead(302, { Location: `http://127.0.0.1:${landing.port}/landing` });
    res.end();
  });
  const { digest } = await sb.policy();
  const out = await sb.exec(`${CURL} -L http://127.0.0.1:${start.port}/start; echo "curl=$?"`, {
    networkGrant: { host: '127.0.0.1', port: start.port, policyDigest: digest },
  });
  assert.match(out.stdout, /is not the granted origin/);
  assert.deepEqual(start.seen, ['GET /start']);
  assert.deepEqual(landing.seen, []);
  assert.equal(out.networkGrant.refused, 1);
});

test('too many connections at once, and an idle one, are turned away', async () => {
  const sb = await nativeSandbox();
  const o = await origin();
  const { digest } = await sb.policy();
  const mediator = new NetworkMediator({ maxConnections: 1, handshakeTimeoutMs: 1000 });
  closeAfter(() => mediator.close());
  const out = await sb.exec(
    'exec 3<>/dev/tcp/127.0.0.1/3128; sleep 0.3; exec 4<>/dev/tcp/127.0.0.1/3128; cat <&4; cat <&3',
    { networkGrant: { host: '127.0.0.1', port: o.port, policyDigest: digest, mediator } },
  );
  assert.match(out.stdout, /^HTTP\/1\.1 408 codeward network grant: no complete request in time/m);
  assert.equal(out.networkGrant.refused, 2);
  assert.ok(out.networkGrant.refusals.includes('too many connections at once'), out.networkGrant.refusals);
  assert.deepEqual(o.seen, []);
  assert.throws(() => new NetworkMediator({ resolve: () => [] }), { code: 'ERR_INVALID_ARG_TYPE' });
});

test('a grant under a policy digest that is not the sandbox policy runs nothing', async () => {
  const sb = await nativeSandbox();
  const o = await origin();
  const out = await sb.exec(`${CURL} http://127.0.0.1:${o.port}/stale; touch ran`, {
    networkGrant: { host: '127.0.0.1', port: o.port, policyDigest: `sha256:${'0'.repeat(64)}` },
  });
  assert.equal(out.exitCode, 125);
  assert.match(out.setupError, /policy changed/);
  assert.equal(out.networkGrant.listening, false);
  assert.deepEqual(o.seen, []);
  assert.equal(fs.existsSync(path.join(sb.workspace, 'ran')), false);
});

test('malformed grants and grants the sandbox cannot enforce are NetworkGrantErrors', async () => {
  const digest = `sha256:${'a'.repeat(64)}`;
  for (const host of ['*.example.com', 'example.com:443', '127.1', 'fe80::1%lo', 'http://x', '']) {
    assert.throws(() => new NetworkGrant({ host, policyDigest: digest }), {
      code: 'ERR_CODEWARD_NETWORK_GRANT',
    });
  }
  assert.throws(() => new NetworkGrant({ host: 'example.com', port: 0, policyDigest: digest }), NetworkGrantError);
  assert.throws(() => new NetworkGrant({ host: 'example.com' }), NetworkGrantError);
  const g = new NetworkGrant({ host: 'B\u00fccher.DE.', policyDigest: digest });
  assert.equal(g.host, 'xn--bcher-kva.de');
  assert.equal(g.origin, 'xn--bcher-kva.de:443 and xn--bcher-kva.de:80 (no port given: HTTPS and HTTP)');
  const sb = await nativeSandbox();
  await assert.rejects(sb.exec('true', { networkGrant: { host: 'x.com', policyDigest: 'sha1:x' } }), {
    code: 'ERR_CODEWARD_NETWORK_GRANT',
  });
  await assert.rejects(sb.exec('true', { networkGrant: { host: 'x.com', policyDigest: digest, extra: 1 } }), {
    code: 'ERR_INVALID_ARG_TYPE',
  });
  const mediator = new NetworkMediator();
  await mediator.close();
  await assert.rejects(sb.exec('true', { networkGrant: { host: 'x.com', policyDigest: digest, mediator } }), {
    code: 'ERR_CODEWARD_NETWORK_GRANT',
  });
});

test('a host process that ran a granted command exits by itself: no handle is left', async () => {
  const ws = workspace();
  const script = `
    const http = require('node:http');
    const { selectSandbox } = require(${JSON.stringify(pkgDir)});
    (async () => {
      const server = http.createServer((req, res) => res.end('ok'));
      await new Promise((r) => server.listen(0, '127.0.0.1', r));
      const port = server.address().port;
      const sb = await selectSandbox(${JSON.stringify(ws)});
      const { digest } = await sb.policy();
      const out = await sb.exec('curl -sS --max-time 20 http://127.0.0.1:' + port + '/', {
        networkGrant: { host: '127.0.0.1', port, policyDigest: digest },
      });
      await sb.close();
      server.close();
      console.log(out.stdout === 'ok' ? 'reached' : 'not reached: ' + out.stdout + out.stderr);
    })();
  `;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let stdout = '';
  child.stdout.on('data', (d) => {
    stdout += d;
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const [code, signal] = await new Promise((resolve) => child.on('exit', (c, s) => resolve([c, s])));
  clearTimeout(timer);
  assert.equal(signal, null, 'the host process did not exit by itself: a handle was left open');
  assert.equal(code, 0);
  assert.equal(stdout.trim(), 'reached');
});
