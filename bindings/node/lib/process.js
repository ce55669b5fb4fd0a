'use strict';
// Owned processes: a long-lived program (an MCP server, a language server)
// the host talks to over its standard streams, started in a sandbox of its
// own over the workspace (a3s_sandbox_spawn: never in the long-lived
// sandbox) and owned whole: whatever it starts, a daemon that calls setsid
// included, ends when it is killed or closed, or when this process dies
// (the init inside watches a lifeline and this process's pidfd). Python's
// MCP client and Go's StartProcess run their servers the same way.

const net = require('node:net');
const os = require('node:os');

const { ArgumentTypeError, NativeCoreError, SandboxArgumentError } = require('./errors');

const MAX_SIGNAL = 64; // a3s_child_signal takes 1..64 (SIGRTMAX)

/** A signal name ('SIGTERM') or number as the C core takes it: a number from 1 to 64. */
function signalNumber(signal) {
  if (typeof signal === 'string') {
    const n = os.constants.signals[signal];
    if (n === undefined) throw new SandboxArgumentError(`unknown signal ${JSON.stringify(signal)}`);
    return n;
  }
  if (typeof signal !== 'number') {
    throw new ArgumentTypeError(`the signal must be a name such as 'SIGTERM' or a number, not ${typeof signal}`);
  }
  if (!Number.isInteger(signal) || signal < 1 || signal > MAX_SIGNAL) {
    throw new SandboxArgumentError(`${signal} is not a signal number (1 to ${MAX_SIGNAL})`);
  }
  return signal;
}

/** Symbol.asyncDispose where the runtime has it, else Node's registered one. */
const asyncDispose = Symbol.asyncDispose ?? Symbol.for('nodejs.asyncDispose');

/**
 * A running program, from sandbox.startProcess(). stdin is a Writable (end()
 * or destroy() it to send end of file), stdout and stderr are Readables: read
 * them while it runs, a full pipe holds the program back. `pid` is the host
 * pid of its supervisor (bubblewrap), `exitCode` null until it has ended
 * (128+N when signal N ended it).
 */
class OwnedProcess {
  #native;
  #exited;
  #closing = null;
  #released = false;
  #onClosed;

  /** @private Use sandbox.startProcess(). */
  constructor(raw, exited, onClosed) {
    this.#native = raw;
    this.#onClosed = onClosed;
    this.#exited = exited;
    this.pid = raw.pid;
    this.exitCode = null;
    this.stdin = new net.Socket({ fd: raw.stdin, readable: false, writable: true });
    this.stdout = new net.Socket({ fd: raw.stdout, readable: true, writable: false });
    this.stderr = new net.Socket({ fd: raw.stderr, readable: true, writable: false });
    for (const stream of [this.stdin, this.stdout, this.stderr]) {
      stream.on('error', () => {}); // EPIPE once it ended: its exit says what happened
    }
    exited.then(
      (code) => {
        this.exitCode = code;
      },
      () => {},
    );
  }

  /** Resolves with the exit status once the program (and everything it started) has ended. */
  wait() {
    return this.#exited;
  }

  /**
   * Ends the program and everything it started: `signal` (default 'SIGTERM';
   * a name or a number) to every process of it, KILL after killGraceMs
   * unless they end sooner, and resolves with its exit status (the program's
   * own when its handler exits; 128+9 when it had to be killed). The signal
   * is sent by the init inside the sandbox, which takes none from outside.
   * Idempotent.
   */
  async kill(signal = 'SIGTERM') {
    const sig = signalNumber(signal);
    if (this.#released) return this.#exited;
    try {
      await this.#native.stop(sig);
    } catch (err) {
      throw new NativeCoreError(err.message, { status: err.status, errno: err.sysErrno || 0 });
    }
    return this.#exited;
  }

  /**
   * Sends `signal` (a name such as 'SIGHUP', or a number) to every process of
   * the program without ending it; nothing once it has ended or is closed.
   */
  sendSignal(signal) {
    const sig = signalNumber(signal);
    if (this.#released || this.exitCode !== null) return;
    try {
      this.#native.signal(sig);
    } catch (err) {
      throw new NativeCoreError(err.message, { status: err.status, errno: err.sysErrno || 0 });
    }
  }

  /**
   * Kills the program if it still runs, waits for its end, closes the three
   * streams and frees the handle: nothing of it is left. Safe to call more
   * than once; resolves with the exit status.
   */
  close() {
    if (this.#closing === null) this.#closing = this.#close();
    return this.#closing;
  }

  async #close() {
    let code;
    try {
      code = await this.kill();
    } finally {
      for (const stream of [this.stdin, this.stdout, this.stderr]) stream.destroy();
      this.#released = true;
      this.#native.release();
      this.#onClosed(this);
    }
    return code;
  }

  /** `await using p = await sandbox.startProcess(...)` closes it at the end of the scope. */
  async [asyncDispose]() {
    await this.close();
  }

  toString() {
    return `OwnedProcess(pid ${this.pid}${this.exitCode === null ? '' : `, exited ${this.exitCode}`})`;
  }
}

/**
 * Starts `path` through `nativeSandbox.spawn` and resolves with an
 * OwnedProcess; `mapError` turns the addon's errors into the package's, and
 * `onClosed(process)` is called once it is closed.
 */
async function startOwned(nativeSandbox, { path, args, env, cwd, killGraceMs }, mapError, onClosed) {
  let settle;
  const exited = new Promise((resolve, reject) => {
    settle = (result) =>
      result instanceof Error
        ? reject(new NativeCoreError(result.message, { status: result.status, errno: result.sysErrno || 0 }))
        : resolve(result);
  });
  exited.catch(() => {}); // a caller that never waits is told nothing, not crashed
  let raw;
  try {
    raw = await nativeSandbox.spawn(path, args, env, cwd, killGraceMs, settle);
  } catch (err) {
    throw mapError(err);
  }
  return new OwnedProcess(raw, exited, onClosed);
}

module.exports = { OwnedProcess, startOwned };
