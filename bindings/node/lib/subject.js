'use strict';
// The argument string a rule's pattern is matched against, one per tool.
//
// This is half of the matching contract (the glob is the other half) and
// must be byte-identical to python/codeward/policy/_subject.py, which is the
// reference; tests/vectors/policy.json pins both. Read the two side by side:
// each function here is named after its Python counterpart.
//
// "Missing" means what Python's dict.get returns None for: an absent own
// property, null, or (JavaScript only) undefined. Inherited properties are
// never read, so `constructor` or `toString` cannot leak in from a prototype.

const native = require('./native');
const { canonicalJson, isPlainObject } = require('./canonical-json');
const { ArgumentTypeError, typeName } = require('./errors');

const FILE_PATH_TOOLS = new Set(['read', 'write', 'edit', 'download']);
const SEARCH_MODE_TOOLS = new Set(['grep', 'glob', 'bm25']);
// Stands for a space inside the mode, query or path of a search in the strict
// form an allow rule is matched on (SEPARATOR_STAND_IN in Python).
const SEPARATOR_STAND_IN = '\x1f';

/** ASCII lower-case, the only case folding tool names get. */
function canonicalTool(tool) {
  if (typeof tool !== 'string') {
    throw new ArgumentTypeError(`tool name must be a string, not ${typeName(tool)}`);
  }
  return /[A-Z]/.test(tool) ? tool.replace(/[A-Z]+/g, (s) => s.toLowerCase()) : tool;
}

/**
 * Lexical normal form of a file path (a3s_path_normalize in the C core).
 * The same cheap test as Python decides whether the core needs calling: a
 * path with none of these features is already normal.
 */
function normalizePath(path) {
  if (
    path.includes('\\') ||
    path.includes('//') ||
    path.includes('/.') ||
    path.startsWith('.') ||
    path.endsWith('/')
  ) {
    return native.pathNormalize(path);
  }
  return path;
}

/** args.get(key) in Python: an own property's value, else undefined. */
function get(obj, key) {
  return Object.prototype.hasOwnProperty.call(obj, key) ? obj[key] : undefined;
}

/** `key in args` in Python: present, even when null. */
function has(obj, key) {
  return get(obj, key) !== undefined;
}

function isMissing(value) {
  return value === undefined || value === null;
}

/** A field as text: a string as is, missing as "", anything else as canonical JSON. */
function text(value) {
  if (typeof value === 'string') return value;
  if (isMissing(value)) return '';
  return canonicalJson(value);
}

/** A path field: normalized if a string, "" if missing, else canonical JSON. */
function pathField(obj, key) {
  const value = get(obj, key);
  if (isMissing(value)) return '';
  if (typeof value !== 'string') return canonicalJson(value);
  return normalizePath(value);
}

/**
 * read's multi-file form: each entry's path, one per file. An object entry
 * gives its `path` field and a string entry is itself a path, both
 * normalized; any other entry gives its text. `files` that is not an array
 * gives one string (its canonical JSON, or "" if missing), and an empty
 * array gives [""].
 */
function readPaths(args) {
  const files = get(args, 'files');
  if (!Array.isArray(files)) return [isMissing(files) ? '' : canonicalJson(files)];
  const paths = [];
  for (let i = 0; i < files.length; i++) {
    const entry = files[i];
    if (isPlainObject(entry)) paths.push(pathField(entry, 'path'));
    else if (typeof entry === 'string') paths.push(normalizePath(entry));
    else paths.push(text(entry));
  }
  return paths.length ? paths : [''];
}

/** A read of several files: each path is checked on its own (see subjects()). */
function isMultiRead(name, args) {
  return name === 'read' && !has(args, 'file_path') && has(args, 'files');
}

/**
 * Returns [canonical tool name, argument strings]: the strings a call is
 * decided on, one, or one per file of a multi-file read.
 *
 * Joining the paths with newlines would let read(src/**) allow src/a plus
 * /etc/shadow in one call, since ** crosses newlines; so a multi-file read
 * is decided per file, strictest first (see PermissionPolicy#check).
 */
function subjects(tool, args) {
  const name = canonicalTool(tool);
  const checked = plainArgs(args);
  if (isMultiRead(name, checked)) return [name, readPaths(checked)];
  const subject = subjectOf(name, checked);
  const target = get(checked, 'target');
  if (name === 'git' && typeof target === 'string') {
    const more = gitTargetSpellings(target).map((t) => canonicalJson({ ...checked, target: t }));
    return [name, [subject, ...more]];
  }
  return [ruleTool(name), [subject]];
}

/**
 * A path inside a tree as git resolves it: `.` and empty parts dropped, `..`
 * applied; a `..` above the top stays at the top (the strictest reading).
 */
function treePath(path) {
  const parts = [];
  for (const part of path.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') parts.pop();
    else parts.push(part);
  }
  return parts.join('/');
}

/**
 * The other spellings of a git REV:path target, with the path normalized
 * (HEAD:./secrets/k and HEAD:a/../secrets/k are HEAD:secrets/k), for every
 * ':' that could end the revision: a deny or ask rule must not be passed by
 * writing the path another way. Python: git_target_spellings.
 */
function gitTargetSpellings(target) {
  const out = [];
  for (let i = target.indexOf(':'); i >= 0; i = target.indexOf(':', i + 1)) {
    const rev = target.slice(0, i);
    const path = target.slice(i + 1);
    if (path.startsWith('/')) continue;
    const normal = treePath(path);
    if (normal !== path) {
      const spelled = `${rev}:${normal}`;
      if (!out.includes(spelled)) out.push(spelled);
    }
  }
  return out;
}

/**
 * The strict form of a search call's argument string, or null for any other
 * tool. A search is "<mode> <query> <path>"; its strict form has every space
 * inside the mode, the query and the path replaced by SEPARATOR_STAND_IN.
 * Deny and ask rules match either form, allow rules only the strict one,
 * where a literal space can only be a separator: text in the query never
 * stands in for the path.
 */
function strictSearchSubject(tool, args) {
  const name = canonicalTool(tool);
  if (name !== 'search' && !SEARCH_MODE_TOOLS.has(name)) return null;
  const parts = searchParts(name, plainArgs(args));
  return parts.map((p) => p.replaceAll(' ', SEPARATOR_STAND_IN)).join(' ');
}

/** [mode, query, path] of a search call or a call of a search-mode tool name. */
function searchParts(name, args) {
  const mode = name !== 'search' ? name : text(get(args, 'mode'));
  return [mode, text(get(args, 'query')), pathField(args, 'path')];
}

/** The arguments of a call as a plain object: {} for missing, else a TypeError. */
function plainArgs(args) {
  if (isMissing(args)) return {};
  if (!isPlainObject(args)) {
    throw new ArgumentTypeError(`tool arguments must be a plain object, not ${typeName(args)}`);
  }
  return args;
}

/**
 * Returns [canonical tool name, argument string] for one call.
 *
 * Calls to grep/glob/bm25 are calls to that mode of search. A missing field
 * gives ""; a field of another JSON type gives its canonical JSON, so no
 * value can slip past a rule by its type.
 */
function argumentString(tool, args) {
  const name = canonicalTool(tool);
  const subject = subjectOf(name, plainArgs(args));
  return [ruleTool(name), subject];
}

/** The tool name rules see: a call to grep, glob or bm25 is a call to search. */
function ruleTool(name) {
  return SEARCH_MODE_TOOLS.has(name) ? 'search' : name;
}

/** The argument string of a call to `name` (canonical) with plain-object `args`. */
function subjectOf(name, args) {
  if (name === 'bash') return text(get(args, 'command'));
  if (FILE_PATH_TOOLS.has(name)) {
    if (isMultiRead(name, args)) return readPaths(args).join('\n');
    return pathField(args, 'file_path');
  }
  if (name === 'search' || SEARCH_MODE_TOOLS.has(name)) return searchParts(name, args).join(' ');
  if (name === 'ls') return pathField(args, 'path');
  return canonicalJson(args);
}

module.exports = {
  argumentString,
  canonicalTool,
  gitTargetSpellings,
  normalizePath,
  strictSearchSubject,
  subjects,
};
