// Types of the codeward Node.js binding. README.md describes the behaviour;
// docs/security.md in the repository is the reference for the sandbox,
// docs/policy.md for rules and globs, native/abi/options.json for the
// sandbox's options (the same in Python, Node and Go).

/** What the policy says about one call. */
export type Decision = 'allow' | 'deny' | 'ask';

/** A rule: "Tool(pattern)" or a bare "Tool", or the same as {rule: "..."}. */
export type Rule = string | { rule: string };

export interface VersionInfo {
  major: number;
  minor: number;
  patch: number;
  /** A3S_ABI_VERSION of the built C library. */
  abi: number;
  /** "major.minor.patch" */
  string: string;
}

/** The C library's version. */
export function version(): VersionInfo;

/** The ABI version of the C library. */
export function abiVersion(): number;

export interface PermissionPolicyOptions {
  deny?: Rule[] | null;
  allow?: Rule[] | null;
  ask?: Rule[] | null;
  /** Used when no rule matches; default 'ask'. */
  defaultDecision?: Decision;
  /** false allows every call; default true. */
  enabled?: boolean;
}

/** Tool-call arguments: a plain object of JSON values (or null/undefined for none). */
export type ToolArgs = { [key: string]: unknown } | null | undefined;

/** The raw rule strings that match a call, per list, in policy order. */
export interface MatchingRules {
  deny: string[];
  allow: string[];
  ask: string[];
}

/** One compiled rule as the C core holds it. */
export interface RuleView {
  readonly index: number;
  readonly list: 'deny' | 'allow' | 'ask';
  /** The rule as written. */
  readonly raw: string;
  /** Canonical tool part: lower-case, grep/glob/bm25 rewritten to search. */
  readonly tool: string;
  /** Canonical pattern; "*" for any arguments. */
  readonly pattern: string;
  /** A3S_RULE_* bits. */
  readonly flags: number;
  readonly anyArgs: boolean;
  readonly toolGlob: boolean;
  readonly mcpServer: boolean;
  readonly rewritten: boolean;
  readonly prefix: boolean;
}

/**
 * Deny, allow and ask rules; evaluation is deny, then allow, then ask, then
 * the default. Options with an unknown key or a wrong type throw TypeError;
 * a malformed rule throws PolicyError.
 */
export class PermissionPolicy {
  constructor(options?: PermissionPolicyOptions);
  /**
   * The decision for one call. Throws TypeError for arguments with no JSON form.
   * A multi-file read (`files`, no `file_path`) is decided per file: 'deny' if any
   * file is denied, else 'ask' if any is asked or falls to an ask default, else 'allow'.
   * A search's allow rules match only its strict form (spaces inside the mode, query
   * and path as U+001F), so the query never satisfies a rule's path part.
   */
  check(tool: string, args?: ToolArgs): Decision;
  /**
   * Every matching rule, per list; for a multi-file read, those matching any file;
   * for a search, the allow rules its strict form matches.
   */
  matchingRules(tool: string, args?: ToolArgs): MatchingRules;
  /** False only if every call of the tool is denied before its arguments are known. */
  exposesToModel(tool: string): boolean;
  /** The bash deny and ask patterns for a sandbox's exec({execRules}) (the exec check); add `approved` after an approval. */
  execRules(): { deny: string[]; ask: string[] };
  readonly enabled: boolean;
  readonly defaultDecision: Decision;
  readonly deny: string[];
  readonly allow: string[];
  readonly ask: string[];
  /** Every rule in evaluation order with its canonical form. */
  rules(): RuleView[];
  /** The policy in the snake_case policy-file format. */
  toJSON(): {
    deny: string[];
    allow: string[];
    ask: string[];
    default_decision: Decision;
    enabled: boolean;
  };
}

export interface GlobOptions {
  /** Tool-name matching: ASCII case-insensitive, '*' crosses '/'. Default false. */
  toolName?: boolean;
}

/** One compiled policy glob. */
export class Glob {
  constructor(pattern: string, options?: GlobOptions);
  readonly pattern: string;
  readonly toolName: boolean;
  /** Whether the whole subject matches. */
  match(subject: string): boolean;
}

// ---- errors -----------------------------------------------------------------------
// Every error the package throws is one of the classes below and has a stable
// `code`: branch on `code` or `instanceof`, never on the message.

/** The stable codes of the package's errors. */
export type ErrorCode =
  | 'ERR_INVALID_ARG_TYPE'
  | 'ERR_CODEWARD_POLICY'
  | 'ERR_CODEWARD_CORE'
  | 'ERR_CODEWARD_SANDBOX_ARGUMENT'
  | 'ERR_CODEWARD_SANDBOX_UNAVAILABLE'
  | 'ERR_SANDBOX_CLOSED'
  | 'ERR_CODEWARD_NETWORK_GRANT'
  | 'ABORT_ERR';

/** The type of an argument or option is wrong (an unknown key, a number where a string belongs). */
export class ArgumentTypeError extends TypeError {
  readonly code: 'ERR_INVALID_ARG_TYPE';
}

/** A rule or policy is malformed; `rule` is the offending rule text, or null. */
export class PolicyError extends Error {
  constructor(message: string, options?: { rule?: string | null });
  readonly name: 'PolicyError';
  readonly code: 'ERR_CODEWARD_POLICY';
  readonly rule: string | null;
}

/** The C core failed for a reason outside the caller's input (out of memory, a system call). */
export class NativeCoreError extends Error {
  constructor(message: string, options: { status: string; errno?: number });
  readonly name: 'NativeCoreError';
  readonly code: 'ERR_CODEWARD_CORE';
  /** The stable status name, e.g. "nomem". */
  readonly status: string;
  readonly errno: number;
}

/**
 * [canonical tool name, argument string]: what a rule's pattern is matched against.
 * For a multi-file read it is the files' paths joined by "\n", which is only
 * displayed: such a call is decided per file (see PermissionPolicy.check).
 */
export function argumentString(tool: string, args?: ToolArgs): [string, string];

/** Compact JSON, keys by code point, minimal escaping, ECMAScript numbers. */
export function canonicalJson(value: unknown): string;

/** ASCII lower-case of a tool name. */
export function canonicalTool(tool: string): string;

/** The lexical normal form of a file path used in argument strings. */
export function normalizePath(path: string): string;

// ---- the sandbox ------------------------------------------------------------------

/** The environment variable that opts a host in to the process host (1/true/yes/on, any case). */
export const ENV_OPT_IN: 'A3S_CODE_ALLOW_PROCESS_HOST_SANDBOX';

/** A bound of `limits` that leaves its resource unbounded: 2n ** 64n - 1n (A3S_NO_LIMIT). */
export const UNLIMITED: bigint;

/**
 * The resource bounds of the native Linux sandbox (docs/security.md, "Resource
 * bounds"). A missing or null bound keeps the safe default; each takes a positive
 * safe integer, a BigInt or UNLIMITED. The process host enforces none of them.
 */
export interface SandboxLimits {
  /** The whole sandbox's memory; a command past it is killed (oomKilled). Default: half the machine's memory; least 16 MiB. */
  memoryMaxBytes?: number | bigint | null;
  /** Processes and threads; fork fails with EAGAIN beyond it. Default 4096; least 8. */
  maxProcesses?: number | bigint | null;
  /** Size of each tmpfs a command writes to (/tmp, /var/tmp, /run, /dev/shm, the masked homes). Default: an eighth of the machine's memory; least 1 MiB. */
  tmpfsMaxBytes?: number | bigint | null;
  /** inotify watches of the workspace's credential scan. Default: a quarter of fs.inotify.max_user_watches. */
  inotifyWatchBudget?: number | bigint | null;
  /** A long-lived sandbox idle this long (ms) is stopped, and the next command starts a new one. Default 300000 (5 minutes); UNLIMITED: never. */
  idleStopMs?: number | bigint | null;
}

/** Options of selectSandbox; an unknown key is a TypeError. */
export interface SandboxOptions {
  /**
   * When the native boundary cannot run, run commands on the host with no
   * boundary: only inside an outer container or VM. Default false (the
   * environment variable A3S_CODE_ALLOW_PROCESS_HOST_SANDBOX does the same).
   */
  allowProcessHostSandbox?: boolean;
  /** A boundary the host supplies: returned as it is, before anything is probed. */
  sandboxHandle?: { exec(command: string, options?: object): Promise<unknown> } | null;
  /** Resource bounds of the native sandbox. */
  limits?: SandboxLimits | null;
  /**
   * Reject with a SandboxUnavailableError when no enforcing sandbox can run,
   * instead of resolving with the error-only sandbox or the process host.
   * Default false; true with allowProcessHostSandbox is a SandboxArgumentError,
   * and the environment's opt-in is ignored.
   */
  strict?: boolean;
  /** One long-lived sandbox per handle (default true); false: one bubblewrap per command. */
  reuse?: boolean;
  /** Leave out the Landlock layer (tests of the other layers; never a default). */
  noLandlock?: boolean;
}

/** Options of exec; an unknown key is a TypeError, a value out of range a SandboxArgumentError. */
export interface ExecOptions {
  /** The command's time, 1 to 86400000 (default 120000); then TERM to every process of it, KILL after killGraceMs, exit 124. */
  timeoutMs?: number;
  /** Between TERM and KILL, 1 to 600000 (default 500); a timeout's result comes within timeoutMs + killGraceMs + 0.25 s. */
  killGraceMs?: number;
  /** Output kept per stream, 1 to 2**30 (default 102400): a head and a tail around a marker beyond it. */
  maxOutputBytes?: number;
  /** Per-call variables on top of the scrubbed environment; LD_*, BASH_ENV, NODE_OPTIONS ... and secret-looking ones are refused (SandboxArgumentError). */
  env?: { [name: string]: string } | null;
  /** Aborting stops the command with every process it started; exec then rejects with an AbortError. */
  signal?: AbortSignal | null;
  /** The directory the command starts in: absolute, or relative to the workspace (default); a missing one is exit 125 with setupError. */
  cwd?: string | null;
  /**
   * What the command reads on its standard input, then end of file (a string as UTF-8; default:
   * nothing, /dev/null). Written while the output is drained; a command that does not read it all
   * just does not get the rest.
   */
  stdin?: Buffer | Uint8Array | string | null;
  /**
   * Gets every piece of the output as it arrives (also past maxOutputBytes), each before the
   * next and all before exec settles; what it throws rejects the exec once the command is over.
   */
  onOutput?: ((chunk: Buffer, stream: 'stdout' | 'stderr') => void) | null;
  /** The exec check (docs/policy.md): every program the command runs is checked at its exec against these bash rule patterns. */
  execRules?: ExecRules | null;
  /**
   * Lets this one command reach one approved origin through a mediator on the host, and nothing
   * else (docs/security.md, "Network grants"): a NetworkGrant, or its options. The command gets
   * HTTP_PROXY, HTTPS_PROXY and ALL_PROXY for a proxy on 127.0.0.1:3128 in its sandbox. Under a
   * sandbox policy other than policyDigest nothing runs (exit 125, setupError). A malformed grant,
   * or one the process host cannot enforce, rejects with a NetworkGrantError.
   */
  networkGrant?: NetworkGrant | NetworkGrantOptions | null;
}

/** What a network grant names. */
export interface NetworkGrantOptions {
  /** One host exactly: a DNS name (Unicode names are mapped to their A-label), a dotted quad or an IPv6 address. No wildcard, scheme, port or path. */
  host: string;
  /** 1 to 65535; null or absent: 443 and 80. */
  port?: number | null;
  /** The digest of the sandbox policy the approver was shown: `(await sandbox.policy()).digest`. */
  policyDigest: string;
  /** The mediator that serves it (default: one with the system resolver and plain TCP connections). */
  mediator?: NetworkMediator | null;
}

/** One approved origin for one command, its host in canonical form. Frozen. */
export class NetworkGrant {
  /** Throws a NetworkGrantError for a host that is not exact, a port out of range, a missing digest. */
  constructor(options: NetworkGrantOptions);
  readonly host: string;
  readonly port: number | null;
  readonly policyDigest: string;
  readonly kind: 'name' | 'ipv4' | 'ipv6';
  readonly mediator: NetworkMediator | null;
  /** [port], or [443, 80]. */
  readonly ports: readonly number[];
  /** In words, as a prompt should show it: 'example.com:8443', or both web ports. */
  readonly origin: string;
  /** Whether a canonical host and a port are this grant's origin, exactly. */
  admits(host: string, port: number): boolean;
  toJSON(): { host: string; port: number | null; policyDigest: string };
}

/** The canonical form of an exact host and its kind; throws a NetworkGrantError otherwise. */
export function canonicalHost(host: string, what?: string): { host: string; kind: 'name' | 'ipv4' | 'ipv6' };

/** Where the init binds a granted command's proxy inside its sandbox (127.0.0.1:3128). */
export const PROXY_PORT: 3128;

export interface NetworkMediatorOptions {
  /** Resolves a granted name to IP address strings (default: the system resolver, asked with a trailing dot). Every answer is checked: one that is not public unicast refuses the connection. */
  resolver?: (host: string, port: number) => string[] | Promise<string[]>;
  /** Connects to a checked address (default: a plain TCP connection). */
  dialer?: (ip: string, port: number, timeoutMs: number) => import('node:net').Socket | Promise<import('node:net').Socket>;
  /** Resolving and connecting, per connection (default 30000). */
  connectTimeoutMs?: number;
  /** Reading one whole proxy request (default 15000); a client that trickles gets 408. */
  handshakeTimeoutMs?: number;
  /** Connections served at once per command (default 128). */
  maxConnections?: number;
}

/**
 * Serves the proxies of granted commands: HTTP CONNECT, absolute-form HTTP (one request per
 * connection, exactly its Content-Length body) and SOCKS5, for the grant's origin only; names
 * resolve to public addresses only. Each exec with a grant gets an admission that ends with it.
 */
export class NetworkMediator {
  constructor(options?: NetworkMediatorOptions);
  readonly closed: boolean;
  /** Ends every admission; a grant of this mediator then rejects with a NetworkGrantError. */
  close(): Promise<void>;
}

/** What a granted command did with its grant (CommandOutput.networkGrant). */
export interface NetworkGrantSummary {
  readonly host: string;
  readonly port: number | null;
  readonly policyDigest: string;
  /** The sandbox handed its proxy socket over (false when nothing ran, e.g. a stale digest). */
  readonly listening: boolean;
  /** Connections admitted and connected to the origin. */
  readonly connections: number;
  /** Connections and requests refused; refusals says why for the first 10. */
  readonly refused: number;
  readonly refusals: readonly string[];
}

/** A network grant is malformed, this sandbox cannot enforce it, or its mediator is closed. */
export class NetworkGrantError extends Error {
  readonly name: 'NetworkGrantError';
  readonly code: 'ERR_CODEWARD_NETWORK_GRANT';
}

/** The sandbox's effective policy: what a network grant is approved against. */
export interface SandboxPolicy {
  /** One "key value" line per element of the policy, sorted (docs/security.md). */
  readonly text: string;
  /** "sha256:" and 64 hex digits. */
  readonly digest: string;
}

/** Options of startProcess; an unknown key is a TypeError. */
export interface ProcessOptions {
  /** Variables added to the program's environment as given (the host's configuration of it, e.g. an MCP server's token), on top of the scrubbed environment. */
  env?: { [name: string]: string } | null;
  /** The directory it starts in: absolute, or relative to the workspace (default). */
  cwd?: string | null;
  /** Between TERM and KILL when it is stopped, 1 to 600000 (default 2000). */
  killGraceMs?: number;
}

/**
 * A long-lived program in a sandbox of its own, owned whole: whatever it starts (a setsid
 * daemon included) ends when it is killed or closed, when its sandbox is closed, or when this
 * process dies. While it runs it keeps the event loop alive, as a child process does.
 */
export class OwnedProcess {
  private constructor();
  /** Host pid of its supervisor (bubblewrap). */
  readonly pid: number;
  /** Its exit status once it has ended (128+N for signal N), else null. */
  readonly exitCode: number | null;
  /** Its standard input: end() or destroy() sends end of file. */
  readonly stdin: import('node:stream').Writable;
  /** Its standard output and error: read them while it runs (a full pipe holds it back). */
  readonly stdout: import('node:stream').Readable;
  readonly stderr: import('node:stream').Readable;
  /** Resolves with the exit status once it and everything it started have ended. */
  wait(): Promise<number>;
  /**
   * `signal` (default 'SIGTERM') to every process of it, sent by the init inside the sandbox, then KILL
   * after killGraceMs unless they ended sooner; resolves with the exit status (the program's own when its
   * handler exits). An unknown signal is a SandboxArgumentError. Idempotent.
   */
  kill(signal?: NodeJS.Signals | number): Promise<number>;
  /** Sends `signal` to every process of it without ending it; nothing once it has ended or is closed. */
  sendSignal(signal: NodeJS.Signals | number): void;
  /** kill() if it runs, then closes the streams and frees the handle; resolves with the exit status. Idempotent. */
  close(): Promise<number>;
  /** `await using p = await sandbox.startProcess(...)`: close() at the end of the scope. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** The exec check's rules: patterns of the policy's bash deny and ask rules (the text inside bash(...)), and the simple commands approved for this call. */
export interface ExecRules {
  deny?: string[];
  ask?: string[];
  approved?: string[];
}

/** A program the exec check stopped before its first instruction. */
export interface ExecStop {
  readonly decision: 'deny' | 'ask';
  /** The rule, e.g. 'bash(git push**)'. */
  readonly rule: string;
  /** The program as it would have run, e.g. 'git push origin'. */
  readonly command: string;
}

/** What one command produced (Python's CommandOutput, in camelCase). Frozen. */
export class CommandOutput {
  /** Standard output, UTF-8 decoded (invalid sequences as U+FFFD), head and tail past maxOutputBytes. */
  readonly stdout: string;
  readonly stderr: string;
  /** The command's status; 128+N for signal N, 124 on a timeout or a cancellation, 125 when the sandbox refused or failed to start it. */
  readonly exitCode: number;
  readonly timedOut: boolean;
  /** A stream went past maxOutputBytes. */
  readonly truncated: boolean;
  /** Every byte written to both streams. */
  readonly totalBytes: number;
  /** false only for the process host. */
  readonly sandboxed: boolean;
  /** 'bwrap' or 'process-host'. */
  readonly backend: string;
  /** Why the sandbox refused or failed to start the command, or null. */
  readonly setupError: string | null;
  /** The command was stopped by its AbortSignal or by close(). */
  readonly cancelled: boolean;
  readonly durationMs: number;
  /** The sandbox reached its memory bound and killed a process of the command. */
  readonly oomKilled: boolean;
  /** Something of the command may have run after this result (a process that could not be reaped after SIGKILL, or a sandbox killed by force): treat the workspace as changed. */
  readonly outlived: boolean;
  /** What the sandbox found hostile in the workspace and did not follow or mount, one line each. */
  readonly neutralized: readonly string[];
  /** What the exec check stopped (exitCode is then 126), or null. */
  readonly execStopped: ExecStop | null;
  /** For a command run with a networkGrant: what it did with it; else null. */
  readonly networkGrant: NetworkGrantSummary | null;
  /** The command ran and exited 0 (false for a refusal, a timeout, a cancellation). */
  readonly ok: boolean;
}

/**
 * An AbortSignal stopped the command, once its whole process tree is gone:
 * `output` is what it did (null if it never started), `cause` the signal's reason.
 */
export class AbortError extends Error {
  readonly name: 'AbortError';
  readonly code: 'ABORT_ERR';
  readonly output: CommandOutput | null;
}
/** The former name of AbortError's type. */
export type SandboxAbortError = AbortError;

/** The sandbox is closed: before the call, or while the command ran (`output`: what it did). */
export class SandboxClosedError extends Error {
  readonly name: 'SandboxClosedError';
  readonly code: 'ERR_SANDBOX_CLOSED';
  readonly output: CommandOutput | null;
}

/**
 * A sandbox the C core runs: the native boundary (backend 'bwrap') or the
 * opted-in process host ('process-host', sandboxed false). Commands run off
 * the event loop, each on a thread of its own, several at once.
 */
export class Sandbox {
  private constructor();
  readonly backend: 'bwrap' | 'process-host';
  readonly sandboxed: boolean;
  /** The canonical workspace path. */
  readonly workspace: string;
  /**
   * Runs `bash -c command`: a timeout, a refusal (exit 125) or a failing
   * command resolves as an output. Rejects with an ArgumentTypeError or a
   * SandboxArgumentError for arguments the sandbox refuses, a
   * SandboxClosedError (with `output`) once closed, an AbortError when
   * `signal` aborts, a NativeCoreError for failures of this process.
   */
  exec(command: string, options?: ExecOptions): Promise<CommandOutput>;
  /**
   * The sandbox's effective policy and its digest, what a network grant is approved against.
   * Rejects with a SandboxUnavailableError when a command would be refused right now.
   */
  policy(): Promise<SandboxPolicy>;
  /**
   * Starts the program at `path` (absolute, as the sandbox sees it) with `args` in a sandbox of
   * its own over the workspace (the boundary a command gets), and resolves once it runs. Rejects
   * with a SandboxArgumentError on the process host or for a relative path, a NativeCoreError
   * when it cannot be started (the message names the step and the program), a
   * SandboxUnavailableError when the sandbox refused to start, a SandboxClosedError once closed.
   */
  startProcess(path: string, args?: string[], options?: ProcessOptions): Promise<OwnedProcess>;
  /**
   * Closes its owned processes, cancels running commands, stops the long-lived sandbox (its placeholders
   * leave the workspace) and resolves once that is done. Final; may be
   * repeated. A worker's or the process's exit does the same. The commands it
   * cancels reject with a SandboxClosedError that is never reported as an
   * unhandled rejection (a handler attached later still sees it).
   */
  close(): Promise<void>;
  /** `await using sb = await selectSandbox(...)`: close() at the end of the scope. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** The error-only sandbox: every exec rejects with a SandboxUnavailableError naming the cause. */
export class UnavailableSandbox {
  private constructor();
  readonly backend: 'unavailable';
  readonly sandboxed: false;
  readonly workspace: string;
  /** Why no boundary can run. */
  readonly reason: string;
  exec(command: string, options?: ExecOptions): Promise<never>;
  policy(): Promise<never>;
  startProcess(path: string, args?: string[], options?: ProcessOptions): Promise<never>;
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * The boundary for a session over `workspace`, failing closed: a host-supplied
 * `sandboxHandle` as it is; else the native boundary when its self-test passes
 * (once per thread); else, with `strict`, a SandboxUnavailableError; else the
 * process host when the host opted in; else the error-only sandbox. Rejects
 * with an ArgumentTypeError for an unknown option key and a
 * SandboxArgumentError for a workspace that is not an existing directory (or is
 * a symlink), limits below what a sandbox runs with, or strict with
 * allowProcessHostSandbox.
 */
export function selectSandbox(
  workspace: string,
  options?: SandboxOptions,
): Promise<Sandbox | UnavailableSandbox>;

/** Whether the environment opts in to the process host (Python's value.strip().lower() in 1/true/yes/on). */
export function processHostOptedIn(env?: { [name: string]: string | undefined }): boolean;

/** A command, environment variable, workspace or option given to the sandbox is invalid. */
export class SandboxArgumentError extends Error {
  readonly name: 'SandboxArgumentError';
  readonly code: 'ERR_CODEWARD_SANDBOX_ARGUMENT';
}

/** No boundary can run and the host did not opt in to the process host (or selected strictly). */
export class SandboxUnavailableError extends Error {
  readonly name: 'SandboxUnavailableError';
  readonly code: 'ERR_CODEWARD_SANDBOX_UNAVAILABLE';
  /** The workspace the sandbox was selected for. */
  readonly workspace: string;
  /** What the probe found (bubblewrap missing, user namespaces disabled ...). */
  readonly reason: string;
  /** As ES2022 means it: the Error that led to this one (the C core's), or absent. */
  readonly cause?: Error;
}

/** One check of doctor() (one line of `codeward doctor`). */
export interface DoctorCheck {
  readonly name: string;
  readonly ok: boolean;
  /** The native sandbox cannot run without it. */
  readonly required: boolean;
  /** What was found. */
  readonly detail: string;
  /** What to do when ok is false ('' when there is nothing to say). */
  readonly fix: string;
}

/**
 * What `codeward doctor --json` prints: the checks (bubblewrap, user and pid
 * namespaces, seccomp, Landlock, pidfd, cgroup kill) and, when every required
 * one passed, a fresh self-test through the real boundary. `ready`: every
 * required check passed.
 */
export function doctor(): Promise<{ readonly ready: boolean; readonly checks: readonly DoctorCheck[] }>;
