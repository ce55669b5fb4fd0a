'use strict';
// The error classes of the binding, mirroring python/codeward/_errors.py.
//
// Problems with the *types* of what a caller passes (an unknown option key,
// a number where a rule string belongs, a function inside tool arguments)
// are the built-in TypeError, as is usual in JavaScript. A rule or glob the
// C core refuses is a PolicyError; a value no sandbox can honour (a bound
// out of range, a refused environment variable, a workspace that is not a
// directory) a SandboxArgumentError; no boundary to run in a
// SandboxUnavailableError; a failure no input explains (out of memory, a
// system call) is a NativeCoreError.

/** A permission rule or policy is malformed; `rule` is the offending rule text, or null. */
class PolicyError extends Error {
  constructor(message, { rule = null } = {}) {
    super(message);
    this.name = 'PolicyError';
    this.rule = rule;
  }
}

/** The C core failed for a reason outside the caller's input; `status` is its stable name. */
class NativeCoreError extends Error {
  constructor(message, { status, errno = 0 } = {}) {
    super(message);
    this.name = 'NativeCoreError';
    this.status = status;
    this.errno = errno;
  }
}

/** A command, environment variable, workspace or option given to the sandbox is invalid. */
class SandboxArgumentError extends Error {
  constructor(message) {
    super(message);
    this.name = 'SandboxArgumentError';
  }
}

/**
 * No enforced boundary can run here, and the host did not opt in to the
 * process host: `workspace` is the workspace and `cause` what the probe found
 * (bubblewrap missing, user namespaces disabled ...).
 */
class SandboxUnavailableError extends Error {
  constructor(message, { workspace, cause }) {
    super(message);
    this.name = 'SandboxUnavailableError';
    this.workspace = workspace;
    this.cause = cause;
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
    return new SandboxUnavailableError(err.message, { workspace, cause: err.message });
  }
  return new NativeCoreError(err.message, { status: err.status, errno: err.sysErrno || 0 });
}

module.exports = {
  PolicyError,
  NativeCoreError,
  SandboxArgumentError,
  SandboxUnavailableError,
  fromNative,
  fromNativeSandbox,
  typeName,
};
