'use strict';
// The error classes of the binding, mirroring python/codeward/_errors.py.
//
// Problems with the *types* of what a caller passes (an unknown option key,
// a number where a rule string belongs, a function inside tool arguments)
// are a TypeError (ArgumentTypeError, code ERR_INVALID_ARG_TYPE), as is
// usual in JavaScript. A rule or glob the
// C core refuses is a PolicyError; a value no sandbox can honour (a bound
// out of range, a refused environment variable, a workspace that is not a
// directory) a SandboxArgumentError; no boundary to run in a
// SandboxUnavailableError; a failure no input explains (out of memory, a
// system call) is a NativeCoreError.

// Every error the package throws is one of these classes and carries a
// stable `code` (Node's convention: branch on `code` or `instanceof`, never
// on the message):
//
//   ArgumentTypeError        ERR_INVALID_ARG_TYPE              (a TypeError)
//   PolicyError              ERR_CODEWARD_POLICY
//   NativeCoreError          ERR_CODEWARD_CORE
//   SandboxArgumentError     ERR_CODEWARD_SANDBOX_ARGUMENT
//   SandboxUnavailableError  ERR_CODEWARD_SANDBOX_UNAVAILABLE
//   SandboxClosedError       ERR_SANDBOX_CLOSED
//   NetworkGrantError        ERR_CODEWARD_NETWORK_GRANT
//   AbortError               ABORT_ERR                         (Node's own code)

/** The type of an argument or option is wrong (an unknown key, a number where a string belongs). */
class ArgumentTypeError extends TypeError {
  constructor(message) {
    super(message);
    this.name = 'TypeError';
    this.code = 'ERR_INVALID_ARG_TYPE';
  }
}

/** A permission rule or policy is malformed; `rule` is the offending rule text, or null. */
class PolicyError extends Error {
  constructor(message, { rule = null } = {}) {
    super(message);
    this.name = 'PolicyError';
    this.code = 'ERR_CODEWARD_POLICY';
    this.rule = rule;
  }
}

/** The C core failed for a reason outside the caller's input; `status` is its stable name. */
class NativeCoreError extends Error {
  constructor(message, { status, errno = 0 } = {}) {
    super(message);
    this.name = 'NativeCoreError';
    this.code = 'ERR_CODEWARD_CORE';
    this.status = status;
    this.errno = errno;
  }
}

/** A command, environment variable, workspace or option given to the sandbox is invalid. */
class SandboxArgumentError extends Error {
  constructor(message) {
    super(message);
    this.name = 'SandboxArgumentError';
    this.code = 'ERR_CODEWARD_SANDBOX_ARGUMENT';
  }
}

/**
 * No enforced boundary can run here, and the host did not opt in to the
 * process host: `workspace` is the workspace and `reason` what the probe
 * found (bubblewrap missing, user namespaces disabled ...). `cause` is as
 * ES2022 means it: the Error that led to this one, when there is one.
 */
class SandboxUnavailableError extends Error {
  constructor(message, { workspace, reason, cause } = {}) {
    super(message, cause instanceof Error ? { cause } : undefined);
    this.name = 'SandboxUnavailableError';
    this.code = 'ERR_CODEWARD_SANDBOX_UNAVAILABLE';
    this.workspace = workspace;
    this.reason = reason;
  }
}

/** The sandbox was closed: before the call, or while the command ran (`output`: what it did). */
class SandboxClosedError extends Error {
  constructor(output = null) {
    super('codeward: the sandbox is closed');
    this.name = 'SandboxClosedError';
    this.code = 'ERR_SANDBOX_CLOSED';
    this.output = output;
  }
}

/**
 * A network grant is malformed (a host that is not exact, a port out of
 * range, no policy digest), this sandbox cannot enforce it (the process
 * host), or its mediator is closed. A connection the mediator refuses is not
 * an error of the host's: the command's tool gets the refusal (an HTTP status
 * or a SOCKS reply), and the output's networkGrant counts it.
 */
class NetworkGrantError extends Error {
  constructor(message) {
    super(message);
    this.name = 'NetworkGrantError';
    this.code = 'ERR_CODEWARD_NETWORK_GRANT';
  }
}

/**
 * A command stopped by its AbortSignal, once its whole process tree is gone:
 * `output` is what it did (null if it never started), `cause` the signal's
 * reason, as Node's own AbortError carries it.
 */
class AbortError extends Error {
  constructor(signal, output = null) {
    super('codeward: the command was cancelled', { cause: signal.reason });
    this.name = 'AbortError';
    this.code = 'ABORT_ERR';
    this.output = output;
  }
}

/** Statuses that mean "your rule or pattern is bad", as opposed to "the core failed". */
const INPUT_STATUSES = new Set(['syntax', 'too_large']);

/**
 * Maps an error thrown by the addon (an Error with .status, .detail,
 * .sysErrno) to the package's classes. `context(message)` builds the
 * PolicyError message; anything that is not an addon error is returned as is
 * (the caller throws whatever comes back).
 */
function fromNative(err, context, rule = null) {
  if (!err || typeof err.status !== 'string') return err;
  if (INPUT_STATUSES.has(err.status)) return new PolicyError(context(err.message), { rule });
  return new NativeCoreError(err.message, { status: err.status, errno: err.sysErrno || 0 });
}

/** A short description of a value's type for error messages ("array", "null", "number"). */
function typeName(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'object') {
    const tag = Object.prototype.toString.call(value).slice(8, -1);
    if (tag !== 'Object') return tag;
    const proto = Object.getPrototypeOf(value);
    const ctor = proto && Object.getPrototypeOf(proto) !== null ? proto.constructor : null;
    return typeof ctor === 'function' && ctor.name ? ctor.name : 'object';
  }
  return typeof value;
}

/**
 * Maps an addon error of a sandbox call as Python's _raise_native does:
 * "invalid" is the caller's argument, "unsupported" and "refused" mean no
 * boundary, anything else the core's own failure.
 */
function fromNativeSandbox(err, workspace) {
  if (!err || typeof err.status !== 'string') return err;
  if (err.status === 'invalid') return new SandboxArgumentError(err.message);
  if (err.status === 'unsupported' || err.status === 'refused') {
    return new SandboxUnavailableError(err.message, { workspace, reason: err.message, cause: err });
  }
  return new NativeCoreError(err.message, { status: err.status, errno: err.sysErrno || 0 });
}

module.exports = {
  ArgumentTypeError,
  AbortError,
  SandboxClosedError,
  NetworkGrantError,
  PolicyError,
  NativeCoreError,
  SandboxArgumentError,
  SandboxUnavailableError,
  fromNative,
  fromNativeSandbox,
  typeName,
};
