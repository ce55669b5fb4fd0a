'use strict';
// The enforced boundary agent commands run in, chosen as
// python/codeward/sandbox/_select.py chooses it, failing closed: the native
// boundary when its self-test passes; the process host only when the host
// opted in; otherwise the error-only sandbox, whose every exec rejects with a
// SandboxUnavailableError naming the cause. Option names and defaults:
// native/abi/options.json (test/options.test.js checks them against it).

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const native = require('./native');
const {
  AbortError,
  ArgumentTypeError,
  SandboxArgumentError,
  SandboxClosedError,
  SandboxUnavailableError,
  NetworkGrantError,
  fromNativeSandbox,
  typeName,
} = require('./errors');
const { isPlainObject } = require('./canonical-json');
const { fromRaw } = require('./output');
const { initPath } = require('./init');
const { findBwrap, bwrapVersion, tooOld } = require('./locate');
const { NetworkGrant } = require('./netgrant/grant');
const { defaultMediator } = require('./netgrant/mediator');
const { startOwned } = require('./process');

const ENV_OPT_IN = 'A3S_CODE_ALLOW_PROCESS_HOST_SANDBOX';
/** A bound of `limits` that leaves its resource unbounded (the C ABI's A3S_NO_LIMIT). */
const UNLIMITED = 2n ** 64n - 1n;

const DEFAULT_TIMEOUT_MS = 120_000;
const DEFAULT_MAX_OUTPUT = 102_400;
const DEFAULT_GRACE_MS = 500;
const MAX_TIMEOUT_MS = 24 * 3600 * 1000;
const MAX_OUTPUT_BYTES = 2 ** 30;
const MAX_GRACE_MS = 600_000;
const PROBE_TIMEOUT_MS = 10_000;

const SELECT_KEYS = [
  'allowProcessHostSandbox',
  'strict',
  'sandboxHandle',
  'limits',
  'reuse',
  'noLandlock',
];
const LIMIT_KEYS = [
  'memoryMaxBytes',
  'maxProcesses',
  'tmpfsMaxBytes',
  'inotifyWatchBudget',
  'idleStopMs',
];
const EXEC_KEYS = [
  'timeoutMs',
  'killGraceMs',
  'maxOutputBytes',
  'env',
  'signal',
  'onOutput',
  'cwd',
  'execRules',
  'stdin',
  'networkGrant',
];
const PROCESS_KEYS = ['env', 'cwd', 'killGraceMs'];
const EXEC_RULE_KEYS = ['deny', 'ask', 'approved'];

// Python's str.isspace, which str.strip() removes (not JS's trim: \x1c-\x1f
// are space to Python, U+FEFF is not).
const PY_SPACE = '\\t-\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
const PY_STRIP = new RegExp(`^[${PY_SPACE}]+|[${PY_SPACE}]+$`, 'g');
const OPT_IN_VALUES = new Set(['1', 'true', 'yes', 'on']);

/**
 * Whether A3S_CODE_ALLOW_PROCESS_HOST_SANDBOX opts in to the process host:
 * 1, true, yes or on, in any case, surrounding white space ignored (exactly
 * Python's value.strip().lower()).
 */
function processHostOptedIn(env = process.env) {
  const value = env[ENV_OPT_IN];
  if (typeof value !== 'string') return false;
  // only ASCII letters lower to the letters of the four words, so this is Python's lower()
  const folded = value.replace(PY_STRIP, '').replace(/[A-Z]/g, (c) => c.toLowerCase());
  return OPT_IN_VALUES.has(folded);
}

function checkKeys(options, allowed, what, hints = {}) {
  if (!isPlainObject(options)) {
    throw new ArgumentTypeError(`${what} must be an object, not ${typeName(options)}`);
  }
  for (const key of Object.keys(options)) {
    if (!allowed.includes(key)) {
      const camel = key.replace(/_([a-z])/g, (_m, c) => c.toUpperCase());
      const hint = allowed.includes(camel) ? ` (did you mean '${camel}'?)` : hints[key] || '';
      throw new ArgumentTypeError(`unknown ${what} '${key}'${hint}; allowed: ${allowed.join(', ')}`);
    }
  }
}

/** options[key] if it is an own property other than undefined, else `fallback`. */
function own(options, key, fallback) {
  const value = Object.prototype.hasOwnProperty.call(options, key) ? options[key] : undefined;
  return value === undefined ? fallback : value;
}

function bool(options, key, fallback) {
  const value = own(options, key, fallback);
  if (typeof value !== 'boolean') {
    throw new ArgumentTypeError(`${key} must be true or false, not ${typeName(value)}`);
  }
  return value;
}

/** limits as five BigInts, 0n for a default (Python's SandboxLimits). */
function parseLimits(limits) {
  if (limits === undefined || limits === null) return LIMIT_KEYS.map(() => 0n);
  checkKeys(limits, LIMIT_KEYS, 'limits key');
  return LIMIT_KEYS.map((key) => {
    const value = own(limits, key, null);
    if (value === null) return 0n;
    if (typeof value !== 'number' && typeof value !== 'bigint') {
      throw new ArgumentTypeError(`limits.${key} must be a number or a BigInt, not ${typeName(value)}`);
    }
    const ok =
      typeof value === 'bigint'
        ? value > 0n && value <= UNLIMITED
        : Number.isSafeInteger(value) && value > 0;
    if (!ok) {
      throw new SandboxArgumentError(
        `limits.${key} must be null, a positive integer or UNLIMITED, not ${String(value)}`,
      );
    }
    return BigInt(value);
  });
}

function positive(name, value, upper) {
  if (typeof value !== 'number') {
    throw new ArgumentTypeError(`${name} must be a number, not ${typeName(value)}`);
  }
  if (!Number.isInteger(value) || value < 1 || value > upper) {
    throw new SandboxArgumentError(`${name} must be an integer from 1 to ${upper}, not ${value}`);
  }
  return value;
}

/**
 * The exec check's lists ({deny, ask, approved}: arrays of strings; see
 * docs/policy.md, "The exec check") as [deny, ask, approved], or null.
 */
function execRules(rules) {
  if (rules === undefined || rules === null) return null;
  if (!isPlainObject(rules)) {
    throw new TypeError(`execRules must be an object, not ${typeName(rules)}`);
  }
  checkKeys(rules, EXEC_RULE_KEYS, 'execRules key');
  return EXEC_RULE_KEYS.map((key) => {
    const list = own(rules, key, []);
    if (!Array.isArray(list) || list.some((item) => typeof item !== 'string')) {
      throw new TypeError(`execRules.${key} must be an array of strings`);
    }
    if (list.some((item) => item.includes('\0'))) {
      throw new SandboxArgumentError(`execRules.${key} has an entry with a NUL byte`);
    }
    return [...list];
  });
}

function envEntries(env) {
  if (env === undefined || env === null) return [];
  if (!isPlainObject(env)) throw new ArgumentTypeError(`env must be an object, not ${typeName(env)}`);
  return Object.entries(env).map(([key, value]) => {
    if (typeof value !== 'string') {
      throw new ArgumentTypeError(`environment variable ${key} must be a string, not ${typeName(value)}`);
    }
    if (!key || key.includes('=') || key.includes('\0')) {
      throw new SandboxArgumentError(
        `invalid environment variable name ${JSON.stringify(key)}: it must be non-empty, ` +
          "without '=' or NUL",
      );
    }
    if (value.includes('\0')) {
      throw new SandboxArgumentError(`environment variable ${key} contains a NUL byte`);
    }
    return `${key}=${value}`;
  });
}

function parseExec(command, options) {
  if (typeof command !== 'string') {
    throw new ArgumentTypeError(`command must be a string, not ${typeName(command)}`);
  }
  if (command.includes('\0')) throw new SandboxArgumentError('the command contains a NUL byte');
  if (options === undefined) options = {};
  checkKeys(options, EXEC_KEYS, 'exec option', { cancel: " (use 'signal': an AbortSignal)" });
  const signal = own(options, 'signal', null);
  if (signal !== null && !(signal instanceof AbortSignal)) {
    throw new ArgumentTypeError(`signal must be an AbortSignal, not ${typeName(signal)}`);
  }
  const cwd = own(options, 'cwd', null);
  if (cwd !== null && typeof cwd !== 'string') {
    throw new ArgumentTypeError(`cwd must be a string, not ${typeName(cwd)}`);
  }
  if (cwd !== null && (cwd === '' || cwd.includes('\0'))) {
    throw new SandboxArgumentError(`cwd must be a non-empty path without NUL, not ${JSON.stringify(cwd)}`);
  }
  const stdin = stdinBytes(own(options, 'stdin', null));
  const grant = networkGrant(own(options, 'networkGrant', null));
  const onOutput = own(options, 'onOutput', null);
  if (onOutput !== null && typeof onOutput !== 'function') {
    throw new ArgumentTypeError(`onOutput must be a function, not ${typeName(onOutput)}`);
  }
  return {
    timeoutMs: positive('timeoutMs', own(options, 'timeoutMs', DEFAULT_TIMEOUT_MS), MAX_TIMEOUT_MS),
    killGraceMs: positive('killGraceMs', own(options, 'killGraceMs', DEFAULT_GRACE_MS), MAX_GRACE_MS),
    maxOutputBytes: positive(
      'maxOutputBytes',
      own(options, 'maxOutputBytes', DEFAULT_MAX_OUTPUT),
      MAX_OUTPUT_BYTES,
    ),
    env: envEntries(own(options, 'env', null)),
    signal,
    onOutput,
    cwd,
    execRules: execRules(own(options, 'execRules', null)),
    stdin,
    grant,
  };
}

// exec's networkGrant: a NetworkGrant, or {host, port, policyDigest, mediator} to make one of.
function networkGrant(value) {
  if (value === null || value instanceof NetworkGrant) return value;
  if (!isPlainObject(value)) {
    throw new ArgumentTypeError(`networkGrant must be a NetworkGrant or an object, not ${typeName(value)}`);
  }
  checkKeys(value, ['host', 'port', 'policyDigest', 'mediator'], 'networkGrant key');
  return new NetworkGrant(value);
}

// The bytes of exec's stdin option: a string as UTF-8, a Buffer or any Uint8Array as it is.
function stdinBytes(stdin) {
  if (stdin === null) return null;
  if (typeof stdin === 'string') return Buffer.from(stdin, 'utf8');
  if (stdin instanceof Uint8Array) return stdin;
  throw new ArgumentTypeError(`stdin must be a Buffer, a Uint8Array or a string, not ${typeName(stdin)}`);
}

/** The host environment the sandbox filters: this thread's (a worker has its own copy). */
function hostEnv() {
  return Object.entries(process.env).map(([k, v]) => `${k}=${v}`);
}

/** Symbol.asyncDispose where the runtime has it (Node 18.18+, 20.4+), else Node's registered one. */
const asyncDispose = Symbol.asyncDispose ?? Symbol.for('nodejs.asyncDispose');

/** The error of a selection that found no boundary (or of the error-only sandbox's exec). */
function unavailableError(workspace, reason) {
  const fix =
    process.platform === 'darwin'
      ? 'Check that /usr/bin/sandbox-exec runs'
      : 'Install bubblewrap and enable user namespaces';
  return new SandboxUnavailableError(
    `bash is unavailable for workspace ${workspace}: ${reason}. ${fix}, or, ` +
      'only inside an outer container or VM, ' +
      `opt in to the process host (${ENV_OPT_IN}=1)`,
    { workspace, reason },
  );
}

// The key of the method that reads the long-lived sandbox's state (for the tests).
const kInfo = Symbol('codeward.sandbox.info');
let nextId = 1;

/**
 * A sandbox the C core runs: the native boundary (backend "bwrap") or the
 * opted-in process host ("process-host", sandboxed false). Commands run off
 * the event loop, each on a thread of its own; several may run at once.
 */
class Sandbox {
  #native;
  #backend;
  #sandboxed;
  #workspace;
  #pending = new Set(); // the promises exec returned that have not settled
  #processes = new Set(); // the owned processes started in it, not closed yet

  /** @private Use selectSandbox. */
  constructor(handle, backend, sandboxed) {
    if (!(handle instanceof native.NativeSandbox)) {
      throw new ArgumentTypeError('use selectSandbox() to make a sandbox');
    }
    this.#native = handle;
    this.#backend = backend;
    this.#sandboxed = sandboxed;
    this.#workspace = handle.workspace();
  }

  get backend() {
    return this.#backend;
  }

  get sandboxed() {
    return this.#sandboxed;
  }

  get workspace() {
    return this.#workspace;
  }

  /**
   * Runs `bash -c command` and resolves with its CommandOutput: a timeout,
   * a refusal of the sandbox (exit 125) or a failing command is an output.
   * Rejects for arguments the sandbox refuses (TypeError,
   * SandboxArgumentError), a closed sandbox, and, when `signal` aborts, with
   * an AbortError (its `output`: the cancelled command's) once the whole
   * process tree is gone.
   */
  exec(command, options) {
    // No handler is attached to the promise here: a rejection nobody
    // handles stays visible, except the ones close() causes (see close).
    const entry = { promise: null };
    this.#pending.add(entry);
    entry.promise = this.#exec(command, options).finally(() => this.#pending.delete(entry));
    return entry.promise;
  }

  async #exec(command, options) {
    const o = parseExec(command, options);
    if (o.signal && o.signal.aborted) throw new AbortError(o.signal, null);
    if (o.grant !== null && !this.#sandboxed) {
      throw new NetworkGrantError(
        'a network grant needs the enforcing sandbox: the process host shares the host network',
      );
    }
    const admission = o.grant === null ? null : (o.grant.mediator ?? defaultMediator()).admit(o.grant);
    const id = nextId++;
    const onAbort = () => this.#native.cancel(id);
    if (o.signal) o.signal.addEventListener('abort', onAbort, { once: true });
    // The caller's onOutput gets (chunk, 'stdout' | 'stderr') as the bytes arrive, every
    // piece before exec settles; what it throws rejects the exec once the command is over.
    let sinkError = null;
    const sink =
      o.onOutput &&
      ((stream, chunk) => {
        if (sinkError !== null) return;
        try {
          o.onOutput(chunk, stream === 1 ? 'stdout' : 'stderr');
        } catch (err) {
          sinkError = { err };
        }
      });
    let raw;
    try {
      raw = await this.#native.exec(
        id,
        command,
        o.env,
        o.timeoutMs,
        o.killGraceMs,
        o.maxOutputBytes,
        sink || undefined,
        o.cwd === null ? undefined : o.cwd,
        o.execRules ?? undefined,
        o.stdin === null ? undefined : o.stdin,
        admission === null ? undefined : admission.fd,
        o.grant === null ? undefined : o.grant.policyDigest,
      );
    } catch (err) {
      if (err && err.code === 'ERR_SANDBOX_CLOSED') throw new SandboxClosedError(null);
      throw fromNativeSandbox(err, this.#workspace);
    } finally {
      if (o.signal) o.signal.removeEventListener('abort', onAbort);
      // the command has ended: its proxy is shut down, and nothing of the grant is left
      if (admission !== null) await admission.close();
    }
    if (sinkError !== null) throw sinkError.err;
    const output = fromRaw(raw, this.#backend, this.#sandboxed, admission && admission.summary());
    if (output.cancelled && raw.closed) throw new SandboxClosedError(output);
    if (output.cancelled && o.signal && o.signal.aborted) throw new AbortError(o.signal, output);
    return output;
  }

  /**
   * Stops the sandbox: running commands are cancelled, the long-lived
   * sandbox stops and its placeholders leave the workspace. Resolves once
   * that is done. Final: a later exec rejects. Safe to call more than once.
   */
  async close() {
    // The owned processes go first: they need the sandbox's run directory.
    await Promise.allSettled([...this.#processes].map((p) => p.close()));
    // The commands close() cancels reject with a SandboxClosedError; the
    // caller asked for that, so it is not an unhandled rejection when the
    // caller awaits close() before (or instead of) their promises. A
    // handler attached later still sees the rejection.
    for (const { promise } of this.#pending) promise.catch(() => {});
    await this.#native.close();
  }

  /** `await using sb = await selectSandbox(...)` closes the sandbox at the end of the scope. */
  [asyncDispose]() {
    return this.close();
  }

  /**
   * The sandbox's effective policy, {text, digest}: what a network grant is
   * approved against (the digest goes into the grant; a command runs under a
   * grant only while the policy still has it). Rejects with a
   * SandboxUnavailableError when a command would be refused right now.
   */
  async policy() {
    try {
      return this.#native.policy();
    } catch (err) {
      if (err && err.status === 'invalid') throw new SandboxClosedError(null);
      throw fromNativeSandbox(err, this.#workspace);
    }
  }

  /**
   * Starts the program at `path` (absolute, as the sandbox sees it) with
   * `args`, in a sandbox of its own over the workspace with the boundary a
   * command gets, and resolves once it runs with an OwnedProcess (stdin,
   * stdout, stderr streams, pid, wait(), kill(), close()). It is owned whole:
   * everything it starts ends when it is closed, when the sandbox is closed,
   * or when this process dies. Options: env (variables added as given: the
   * host's configuration of the program), cwd (absolute or relative to the
   * workspace), killGraceMs (TERM to KILL when it is stopped).
   */
  async startProcess(path_, args = [], options = {}) {
    if (typeof path_ !== 'string' || !path.isAbsolute(path_) || path_.includes('\0')) {
      throw new SandboxArgumentError(`the program must be an absolute path without NUL, not ${JSON.stringify(path_)}`);
    }
    if (!Array.isArray(args) || args.some((a) => typeof a !== 'string')) {
      throw new ArgumentTypeError('args must be an array of strings');
    }
    if (args.some((a) => a.includes('\0'))) throw new SandboxArgumentError('an argument contains a NUL byte');
    checkKeys(options, PROCESS_KEYS, 'startProcess option');
    if (!this.#sandboxed) {
      throw new SandboxArgumentError(
        `startProcess needs the native sandbox (backend bwrap), not ${this.#backend}`,
      );
    }
    const env = envEntries(own(options, 'env', null));
    let cwd = own(options, 'cwd', null);
    if (cwd !== null) {
      if (typeof cwd !== 'string') throw new ArgumentTypeError(`cwd must be a string, not ${typeName(cwd)}`);
      if (cwd === '' || cwd.includes('\0')) throw new SandboxArgumentError('cwd must be a non-empty path without NUL');
      cwd = path.resolve(this.#workspace, cwd); // the workspace has the same path inside
    }
    const grace = positive('killGraceMs', own(options, 'killGraceMs', DEFAULT_GRACE_MS), MAX_GRACE_MS);
    const owned = await startOwned(
      this.#native,
      { path: path_, args: [...args], env, cwd: cwd ?? undefined, killGraceMs: grace },
      (err) =>
        err && err.code === 'ERR_SANDBOX_CLOSED'
          ? new SandboxClosedError(null)
          : fromNativeSandbox(err, this.#workspace),
      (closed) => this.#processes.delete(closed),
    );
    this.#processes.add(owned);
    return owned;
  }

  [kInfo]() {
    return this.#native.info();
  }

  toString() {
    return `Sandbox(${this.#backend}, ${JSON.stringify(this.#workspace)})`;
  }
}

/**
 * The error-only sandbox: every exec rejects with a SandboxUnavailableError
 * naming the workspace and the cause, so tools fail closed instead of
 * running unconfined.
 */
class UnavailableSandbox {
  constructor(workspace, reason) {
    this.workspace = workspace;
    this.reason = reason;
    Object.freeze(this);
  }

  get backend() {
    return 'unavailable';
  }

  get sandboxed() {
    return false;
  }

  async exec() {
    throw unavailableError(this.workspace, this.reason);
  }

  async policy() {
    throw unavailableError(this.workspace, this.reason);
  }

  async startProcess() {
    throw unavailableError(this.workspace, this.reason);
  }

  async close() {}

  [asyncDispose]() {
    return this.close();
  }

  toString() {
    return `UnavailableSandbox(${JSON.stringify(this.workspace)}, reason=${JSON.stringify(this.reason)})`;
  }
}

// The host's own code the sandbox keeps read-only when it lies inside the workspace
// (docs/security.md, "The host's own code"): this package (its JavaScript and the addon),
// and the program's main module's directory. The core adds the node executable's own.
function hostCode() {
  const dirs = [path.resolve(__dirname, '..', '..', '..')];
  if (require.main && require.main.filename) dirs.push(path.dirname(require.main.filename));
  return dirs;
}

function newHandle(workspace, init, bwrap, flags, limits) {
  try {
    return new native.NativeSandbox(workspace, init, bwrap, flags, limits, hostEnv(), hostCode());
  } catch (err) {
    throw fromNativeSandbox(err, workspace);
  }
}

// The readiness verdict per (bubblewrap, init), once per thread: a promise, so
// that concurrent selections share one self-test.
const probeCache = new Map();

async function runProbe(bwrap, init) {
  const version = await bwrapVersion(bwrap);
  if (version === null || tooOld(version)) {
    const shown = version ? version.join('.') : 'unknown';
    return `${bwrap} is version ${shown}; bubblewrap 0.8 or newer is required`;
  }
  const features = native.features();
  if (!features.userNamespaces) {
    return (
      'user namespaces are not available: enable them ' +
      '(sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0) ' +
      'or allow them in the container runtime'
    );
  }
  if (!features.seccompFilter) return 'the kernel has no seccomp filter support';
  if (init === null) {
    return 'the a3s-init executable is missing from the installed package; reinstall codeward';
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'a3s-probe-'));
  try {
    // through a long-lived sandbox: the path commands take by default
    const handle = newHandle(dir, init, bwrap, native.SANDBOX_REUSE, LIMIT_KEYS.map(() => 0n));
    try {
      await handle.probe(PROBE_TIMEOUT_MS);
    } finally {
      await handle.close();
    }
  } catch (err) {
    return err instanceof SandboxUnavailableError ? err.reason : String((err && err.message) || err);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return null;
}

/** null if the native boundary works on this machine, else the reason it does not. */
function probe(workspace) {
  if (process.platform !== 'linux') {
    return Promise.resolve(
      `the native sandbox is not supported on this platform (${process.platform})`,
    );
  }
  const bwrap = findBwrap(workspace);
  if (bwrap === null) {
    return Promise.resolve(
      'bubblewrap (bwrap) is not installed as a root-owned system program: ' +
        'apt-get install bubblewrap',
    );
  }
  const init = initPath();
  const key = `${bwrap}\0${init}`;
  if (!probeCache.has(key)) probeCache.set(key, runProbe(bwrap, init));
  return probeCache.get(key);
}

/**
 * The boundary for a session over `workspace` (python/codeward/sandbox/_select.py):
 *
 * 1. a host-supplied `sandboxHandle` always wins;
 * 2. otherwise the native boundary is probed (once per thread: a self-test
 *    through the real boundary); if it works, every command runs inside it,
 *    within `limits`;
 * 3. if it does not and `strict` is true, rejects with a
 *    SandboxUnavailableError naming the cause;
 * 4. if the host opted in (`allowProcessHostSandbox`, or
 *    A3S_CODE_ALLOW_PROCESS_HOST_SANDBOX), the process host runs commands
 *    unconfined (sandboxed false);
 * 5. otherwise the error-only sandbox: every exec rejects with a
 *    SandboxUnavailableError naming the cause.
 *
 * Unknown option keys are a TypeError. Rejects with a SandboxArgumentError
 * for a workspace that is not an existing directory (or is a symlink), or,
 * once the boundary works, for limits below what a sandbox runs with.
 */
async function selectSandbox(workspace, options = {}) {
  checkKeys(options, SELECT_KEYS, 'selectSandbox option');
  const handle = own(options, 'sandboxHandle', null);
  if (handle !== null) {
    if (typeof handle.exec !== 'function') {
      throw new ArgumentTypeError('sandboxHandle must have an exec(command, options) method');
    }
    return handle;
  }
  const allow = bool(options, 'allowProcessHostSandbox', false);
  const strict = bool(options, 'strict', false);
  if (strict && allow) {
    throw new SandboxArgumentError(
      'strict and allowProcessHostSandbox contradict each other: the process host enforces nothing',
    );
  }
  const reuse = bool(options, 'reuse', true);
  const noLandlock = bool(options, 'noLandlock', false);
  const limits = parseLimits(own(options, 'limits', null));
  if (typeof workspace !== 'string') {
    throw new ArgumentTypeError(`workspace must be a string, not ${typeName(workspace)}`);
  }
  const ws = path.resolve(workspace);
  let st = null;
  try {
    st = fs.lstatSync(ws);
  } catch {
    // missing: refused below
  }
  if (!st || !st.isDirectory()) {
    throw new SandboxArgumentError(`workspace ${ws} must be an existing directory, not a symlink`);
  }
  let cause = await probe(ws);
  if (cause === null) {
    const bwrap = findBwrap(ws);
    if (bwrap === null) {
      throw new SandboxUnavailableError('bubblewrap (bwrap) is not installed', {
        workspace: ws,
        reason: 'bwrap missing',
      });
    }
    const flags = (reuse ? native.SANDBOX_REUSE : 0) | (noLandlock ? native.SANDBOX_NO_LANDLOCK : 0);
    return new Sandbox(newHandle(ws, initPath(), bwrap, flags, limits), 'bwrap', true);
  }
  if (strict) throw unavailableError(ws, cause);
  if (allow || processHostOptedIn()) {
    const init = initPath();
    if (process.platform !== 'linux' || init === null) {
      cause += `; the process host is not available here either (${
        init === null ? 'no a3s-init in the package' : process.platform
      })`;
      return new UnavailableSandbox(ws, cause);
    }
    const h = newHandle(ws, init, null, native.SANDBOX_PROCESS_HOST, LIMIT_KEYS.map(() => 0n));
    return new Sandbox(h, 'process-host', false);
  }
  return new UnavailableSandbox(ws, cause);
}

module.exports = {
  selectSandbox,
  processHostOptedIn,
  Sandbox,
  UnavailableSandbox,
  ENV_OPT_IN,
  UNLIMITED,
  kInfo,
  probeCache,
  runProbe,
  SELECT_KEYS,
  LIMIT_KEYS,
  EXEC_KEYS,
  PROCESS_KEYS,
};
