'use strict';
// Glob: one compiled policy glob (a3s_glob_*), for callers and tests that
// want the matcher without a rule around it. docs/policy.md and the comment
// above a3s_glob_compile in native/include/a3s/a3s.h define the language.

const native = require('./native');
const { ArgumentTypeError, fromNative, typeName } = require('./errors');

const GLOB_OPTIONS = new Set(['toolName']);

class Glob {
  #native;

  /**
   * @param {string} pattern
   * @param {{toolName?: boolean}} [options] toolName: ASCII case-insensitive,
   *   and `*` crosses `/` (the matching used for a rule's tool part).
   */
  constructor(pattern, options = undefined) {
    if (typeof pattern !== 'string') {
      throw new ArgumentTypeError(`pattern must be a string, not ${typeName(pattern)}`);
    }
    const { toolName = false } = checkOptions(options);
    try {
      this.#native = new native.NativeGlob(pattern, toolName);
    } catch (err) {
      throw fromNative(err, (msg) => `glob ${JSON.stringify(pattern)}: ${msg}`, pattern);
    }
    this.pattern = pattern;
    this.toolName = toolName;
    Object.freeze(this);
  }

  /** Whether the whole subject matches. */
  match(subject) {
    if (typeof subject !== 'string') {
      throw new ArgumentTypeError(`subject must be a string, not ${typeName(subject)}`);
    }
    return this.#native.match(subject);
  }
}

function checkOptions(options) {
  if (options === undefined) return {};
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new ArgumentTypeError(`Glob options must be an object, not ${typeName(options)}`);
  }
  for (const key of Object.keys(options)) {
    if (!GLOB_OPTIONS.has(key)) {
      throw new ArgumentTypeError(`unknown Glob option '${key}'; allowed: toolName`);
    }
  }
  const toolName = Object.prototype.hasOwnProperty.call(options, 'toolName')
    ? options.toolName
    : undefined;
  if (toolName !== undefined && typeof toolName !== 'boolean') {
    throw new ArgumentTypeError(`toolName must be a boolean, not ${typeName(toolName)}`);
  }
  return { toolName };
}

module.exports = { Glob };
