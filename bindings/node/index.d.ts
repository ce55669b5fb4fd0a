// Types of the codeward Node.js binding. README.md describes the behaviour;
// docs/policy.md in the repository is the reference for rules and globs.

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

/** A rule or policy is malformed; `rule` is the offending rule text, or null. */
export class PolicyError extends Error {
  constructor(message: string, options?: { rule?: string | null });
  readonly rule: string | null;
}

/** The C core failed for a reason outside the caller's input (out of memory, a system call). */
export class NativeCoreError extends Error {
  constructor(message: string, options: { status: string; errno?: number });
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
