'use strict';
// CommandOutput: what one command produced, whichever sandbox ran it
// (python/codeward/sandbox/_output.py, in camelCase).

class CommandOutput {
  /**
   * stdout/stderr are decoded as UTF-8, each invalid sequence replaced by
   * U+FFFD (as Python's "replace" does); past maxOutputBytes per stream only
   * a head and a tail are kept around a marker, truncated is set and
   * totalBytes still counts everything the command wrote. exitCode is the
   * command's status, 128+N when signal N ended it, 124 on a timeout or a
   * cancellation, 125 when the sandbox refused or failed to start
   * (setupError says why). oomKilled: the sandbox reached its memory bound
   * and a process of the command was killed for it. outlived: something of
   * the command may have run after this result (a process that could not be
   * reaped after SIGKILL, or a sandbox killed by force): treat the workspace
   * as changed. sandboxed is false only
   * for the process host. neutralized lists what the sandbox found hostile
   * in the workspace and did not follow or mount for this run. execStopped
   * says what the exec check stopped ({decision: 'deny' | 'ask', rule,
   * command}; exitCode is then 126), or null. networkGrant, for a command
   * run with one: {host, port, policyDigest, listening, connections,
   * refused, refusals}: what it did with its grant (listening: the sandbox
   * handed its proxy socket over; refusals: why, the first few).
   */
  constructor(fields) {
    this.stdout = fields.stdout;
    this.stderr = fields.stderr;
    this.exitCode = fields.exitCode;
    this.timedOut = fields.timedOut;
    this.truncated = fields.truncated;
    this.totalBytes = fields.totalBytes;
    this.sandboxed = fields.sandboxed;
    this.backend = fields.backend;
    this.setupError = fields.setupError ?? null;
    this.cancelled = fields.cancelled ?? false;
    this.durationMs = fields.durationMs ?? 0;
    this.oomKilled = fields.oomKilled ?? false;
    this.outlived = fields.outlived ?? false;
    this.neutralized = Object.freeze([...(fields.neutralized ?? [])]);
    this.execStopped = fields.execStopped ? Object.freeze({ ...fields.execStopped }) : null;
    this.networkGrant = fields.networkGrant
      ? Object.freeze({ ...fields.networkGrant, refusals: Object.freeze([...fields.networkGrant.refusals]) })
      : null;
    Object.freeze(this);
  }

  /** True when the command ran and exited 0 (not for a refusal, a timeout or a cancellation). */
  get ok() {
    return this.exitCode === 0 && this.setupError === null && !this.timedOut && !this.cancelled;
  }
}

/** The addon's raw result as a CommandOutput of `backend`. */
function fromRaw(raw, backend, sandboxed, networkGrant = null) {
  return new CommandOutput({
    stdout: raw.stdout.toString('utf8'),
    stderr: raw.stderr.toString('utf8'),
    exitCode: raw.exitCode,
    timedOut: raw.timedOut,
    truncated: raw.stdoutTruncated || raw.stderrTruncated,
    totalBytes: raw.stdoutTotal + raw.stderrTotal,
    sandboxed,
    backend,
    setupError: raw.setupError,
    cancelled: raw.cancelled,
    durationMs: raw.durationUs / 1000,
    oomKilled: raw.oomKilled,
    outlived: raw.outlived ?? false,
    // one line each (their control bytes are '?' already)
    neutralized: raw.neutralized ? raw.neutralized.replace(/\n$/, '').split('\n') : [],
    execStopped: raw.execStopped ?? null,
    networkGrant,
  });
}

module.exports = { CommandOutput, fromRaw };
