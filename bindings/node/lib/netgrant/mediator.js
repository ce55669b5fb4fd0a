'use strict';
// The host-side mediator (python/codeward/netgrant/_mediator.py): one per
// host, one Admission per granted command. How a connection travels
// (docs/security.md, "Network grants"):
//
// 1. admit(grant) opens an Admission: an AF_UNIX SOCK_SEQPACKET pair whose
//    far end (admission.fd) goes with the exec to the sandbox (grant_fd).
// 2. Before the command starts, the sandbox's init sends on it the proxy's
//    socket, bound to 127.0.0.1:3128 inside the sandbox. The addon checks it
//    (a TCP socket bound to exactly that address), listens and answers 'L'
//    (Node's sockets cannot receive a descriptor); only then does the command
//    start. Here a node:net server takes the listening socket over.
// 3. Each connection the command makes to the proxy is accepted here, outside
//    the sandbox: the request is read (./protocol.js), admitted only for the
//    grant's host and ports, the origin is resolved and connected under the
//    download tool's address rules (./upstream.js), and the bytes are relayed.
// 4. When the command ends, the init shuts the proxy's socket down; close()
//    ends what is left (the server, every connection) and closes the fds, so
//    nothing keeps the process alive.

const fs = require('node:fs');
const net = require('node:net');

const native = require('../native');
const { ArgumentTypeError, NetworkGrantError, typeName } = require('../errors');
const { NetworkGrant } = require('./grant');
const { Refused, readRequest, sendGranted, sendRefusal } = require('./protocol');
const { admit, openUpstream, plainDialer, systemResolver } = require('./upstream');

const PROXY_PORT = 3128; // A3S_GRANT_PROXY_PORT: where the init binds the proxy's socket
const MAX_REFUSALS_KEPT = 10;
const LINGER_MS = 2000;
const MEDIATOR_KEYS = ['resolver', 'dialer', 'connectTimeoutMs', 'handshakeTimeoutMs', 'maxConnections'];
const PIPELINED = 'a request pipelined behind the first was dropped, not forwarded';

function positiveMs(name, value) {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw new ArgumentTypeError(`${name} must be a positive integer, not ${typeName(value)} ${String(value)}`);
  }
  return value;
}

/**
 * Serves the proxies of granted commands. `resolver(host, port)` resolves
 * with IP address strings (default: the system resolver) and
 * `dialer(ip, port, timeoutMs)` with a connected net.Socket (default: a plain
 * TCP connection): the host's seams; the address checks stay here.
 */
class NetworkMediator {
  #admissions = new Set();
  #closed = false;

  constructor(options = {}) {
    const unknown = Object.keys(options).filter((k) => !MEDIATOR_KEYS.includes(k));
    if (unknown.length) {
      throw new ArgumentTypeError(`unknown NetworkMediator option '${unknown[0]}'; allowed: ${MEDIATOR_KEYS.join(', ')}`);
    }
    const {
      resolver = systemResolver,
      dialer = plainDialer,
      connectTimeoutMs = 30_000,
      handshakeTimeoutMs = 15_000,
      maxConnections = 128,
    } = options;
    if (typeof resolver !== 'function' || typeof dialer !== 'function') {
      throw new ArgumentTypeError('resolver and dialer must be functions');
    }
    this.resolver = resolver;
    this.dialer = dialer;
    this.connectTimeoutMs = positiveMs('connectTimeoutMs', connectTimeoutMs);
    this.handshakeTimeoutMs = positiveMs('handshakeTimeoutMs', handshakeTimeoutMs);
    this.maxConnections = positiveMs('maxConnections', maxConnections);
  }

  get closed() {
    return this.#closed;
  }

  /** An admission for one command: pass admission.fd with its exec, then close it. */
  admit(grant) {
    if (!(grant instanceof NetworkGrant)) {
      throw new ArgumentTypeError(`admit() takes a NetworkGrant, not ${typeName(grant)}`);
    }
    if (this.#closed) throw new NetworkGrantError('the network mediator is closed');
    const admission = new Admission(this, grant, () => this.#admissions.delete(admission));
    this.#admissions.add(admission);
    return admission;
  }

  /** Closes every admission (their connections end). */
  async close() {
    this.#closed = true;
    await Promise.all([...this.#admissions].map((a) => a.close()));
  }
}

/**
 * One granted command's part of the mediator: its grant socket, its proxy
 * listener, its connections. `connections` (admitted and connected to the
 * origin), `refused` and `refusals` (why, the first few) say what the
 * command did with its grant.
 */
class Admission {
  #mediator;
  #forget;
  #mine;
  #theirs;
  #accepting;
  #server = null;
  #live = new Set(); // every socket of it: the clients and their origins
  #clients = 0; // connections being served
  #closed = false;
  #closing = null;

  constructor(mediator, grant, forget) {
    this.grant = grant;
    this.#mediator = mediator;
    this.#forget = forget;
    [this.#mine, this.#theirs] = native.grantPair();
    this.listening = false; // the sandbox handed over its proxy socket
    this.connections = 0;
    this.refused = 0;
    this.refusals = [];
    this.#accepting = native.grantAccept(this.#mine).then(
      (fd) => this.#listen(fd),
      () => {}, // refused (a malformed message) or ended before the sandbox sent it
    );
  }

  /** The grant socket to pass with the exec (grant_fd); owned by the admission. */
  get fd() {
    return this.#theirs;
  }

  /** For the command's output: the grant, and what the command did with it. */
  summary() {
    return {
      ...this.grant.toJSON(),
      listening: this.listening,
      connections: this.connections,
      refused: this.refused,
      refusals: [...this.refusals],
    };
  }

  /** Stops listening, ends every connection, closes the descriptors. Idempotent. */
  close() {
    if (this.#closing === null) this.#closing = this.#close();
    return this.#closing;
  }

  async #close() {
    this.#closed = true;
    native.grantShutdown(this.#mine); // a handshake still waiting ends
    await this.#accepting;
    if (this.#server !== null) {
      const server = this.#server;
      await new Promise((resolve) => server.close(() => resolve()));
    }
    for (const sock of this.#live) sock.destroy();
    this.#live.clear();
    fs.closeSync(this.#mine);
    fs.closeSync(this.#theirs);
    this.#forget();
  }

  #listen(fd) {
    if (this.#closed) {
      fs.closeSync(fd);
      return;
    }
    const server = net.createServer({ allowHalfOpen: true, pauseOnConnect: true }, (conn) =>
      this.#onConnection(conn),
    );
    server.on('error', () => {}); // the init shut the socket down: the command ended
    server.listen({ fd });
    this.#server = server;
    this.listening = true;
  }

  #noteRefusal(reason) {
    this.refused += 1;
    if (this.refusals.length < MAX_REFUSALS_KEPT) this.refusals.push(reason);
  }

  #track(sock) {
    this.#live.add(sock);
    sock.on('error', () => {}); // the client or the origin went away
    sock.once('close', () => this.#live.delete(sock));
  }

  async #onConnection(client) {
    const mediator = this.#mediator;
    if (this.#closed || this.#clients >= mediator.maxConnections) {
      client.destroy();
      this.#noteRefusal('too many connections at once');
      return;
    }
    this.#clients += 1;
    client.once('close', () => {
      this.#clients -= 1;
    });
    this.#track(client);
    let request = null;
    let upstream = null;
    try {
      request = await readRequest(client, mediator.handshakeTimeoutMs);
      const host = admit(this.grant, request);
      upstream = await openUpstream(this.grant, host, request.port, {
        resolver: mediator.resolver,
        dialer: mediator.dialer,
        timeoutMs: mediator.connectTimeoutMs,
      });
      this.#track(upstream);
      if (this.#closed) throw new Refused("the command's grant has ended", 403);
      this.connections += 1;
      sendGranted(client, request);
      if (request.kind === 'http') this.#forwardOne(client, upstream, request);
      else this.#tunnel(client, upstream, request);
    } catch (err) {
      if (upstream !== null) upstream.destroy();
      if (err instanceof Refused) {
        this.#noteRefusal(err.reason);
        sendRefusal(client, request ? request.kind : err.kind, err);
        finish(client);
      } else if (err && typeof err.code === 'string' && !(err instanceof TypeError)) {
        client.destroy(); // a socket error: the client or the origin went away
      } else {
        // no input may end a connection without an answer
        sendRefusal(client, request ? request.kind : null, new Refused('the proxy could not handle this request', 500));
        finish(client);
      }
    }
  }

  // A tunnel (CONNECT, SOCKS5): the grant is the origin, whatever flows inside.
  #tunnel(client, upstream, request) {
    if (request.forward.length) upstream.write(request.forward);
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.once('error', end);
    upstream.once('error', end);
    client.once('close', () => upstream.destroy());
    upstream.once('close', () => client.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
    client.resume();
  }

  // One plain HTTP request: its head and exactly its body go to the origin, and
  // only the origin's answer comes back. Whatever the client sends past the
  // body (a pipelined request, perhaps for another origin) is read and
  // dropped, never forwarded: the connection closes after the answer, so the
  // client's next request comes on a new connection and is decided again.
  #forwardOne(client, upstream, request) {
    let pipelined = request.pipelined;
    if (pipelined) this.#noteRefusal(PIPELINED);
    let bodyLeft = request.bodyLeft;
    upstream.write(request.forward);
    const fromClient = (data) => {
      let extra = data;
      if (bodyLeft > 0) {
        const part = data.subarray(0, bodyLeft);
        extra = data.subarray(part.length);
        bodyLeft -= part.length;
        if (!upstream.write(part)) {
          client.pause();
          upstream.once('drain', () => client.resume());
        }
      }
      if (extra.length && !pipelined) {
        pipelined = true;
        this.#noteRefusal(PIPELINED);
      }
    };
    if (request.late) fromClient(request.late);
    client.on('data', fromClient);
    upstream.on('data', (data) => {
      if (!client.write(data)) {
        upstream.pause(); // the client's pace is the origin's
        client.once('drain', () => upstream.resume());
      }
    });
    upstream.once('end', () => {
      finish(client); // the answer is complete
      upstream.destroy();
    });
    upstream.once('close', () => finish(client));
    client.once('close', () => upstream.destroy());
    client.resume();
  }
}

/**
 * Ends the client's connection after the answer without losing its tail: a
 * close with unread input would reset it, so the write side ends first and
 * what the client still sends is read and dropped, for at most LINGER_MS.
 */
function finish(client) {
  if (client.destroyed || client.writableEnded) return;
  client.end();
  client.on('data', () => {});
  client.resume();
  const timer = setTimeout(() => client.destroy(), LINGER_MS);
  client.once('close', () => clearTimeout(timer));
  client.once('end', () => client.destroy());
}

let shared = null;

/** The mediator an exec uses when it is given none (system resolver, plain dialer). */
function defaultMediator() {
  if (shared === null || shared.closed) shared = new NetworkMediator();
  return shared;
}

module.exports = { Admission, NetworkMediator, PROXY_PORT, defaultMediator };
