'use strict';
// Validation of PermissionPolicy options. Every problem with the shape or
// type of an option is a TypeError that names the option (and the rule's
// position for a bad rule entry), checked before any rule is compiled. Rule
// *syntax* is the C core's job and is reported as a PolicyError by
// lib/policy.js.
//
// Mirrors _rule_list, _rule_text and _decision in
// python/codeward/policy/_policy.py, with camelCase keys.

const { isPlainObject } = require('./canonical-json');
const { ArgumentTypeError, typeName } = require('./errors');

const OPTION_KEYS = ['deny', 'allow', 'ask', 'defaultDecision', 'enabled'];
const LISTS = ['deny', 'allow', 'ask'];
const DECISIONS = ['allow', 'deny', 'ask'];
const SNAKE_HINTS = { default_decision: 'defaultDecision' };

/** obj[key] if it is an own property other than undefined, else `fallback`. */
function own(obj, key, fallback) {
  const value = Object.prototype.hasOwnProperty.call(obj, key) ? obj[key] : undefined;
  return value === undefined ? fallback : value;
}

function ruleText(entry, listName, position) {
  if (typeof entry === 'string') return entry;
  if (isPlainObject(entry)) {
    const extra = Object.keys(entry).filter((k) => k !== 'rule');
    if (extra.length) {
      throw new ArgumentTypeError(
        `${listName}[${position}]: unknown key(s) ${extra.map((k) => `'${k}'`).join(', ')} ` +
          "in a rule object; only 'rule' is allowed",
      );
    }
    if (!Object.prototype.hasOwnProperty.call(entry, 'rule')) {
      throw new ArgumentTypeError(`${listName}[${position}]: a rule object needs a 'rule' key`);
    }
    if (typeof entry.rule !== 'string') {
      throw new ArgumentTypeError(
        `${listName}[${position}]: 'rule' must be a string, not ${typeName(entry.rule)}`,
      );
    }
    return entry.rule;
  }
  throw new ArgumentTypeError(
    `${listName}[${position}]: a rule is a string or {rule: ...}, not ${typeName(entry)}`,
  );
}

function ruleList(value, listName) {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) {
    const hint =
      typeof value === 'string' ? ` (write ${listName}: [${JSON.stringify(value)}] for one rule)` : '';
    throw new ArgumentTypeError(`${listName} must be an array of rules, not ${typeName(value)}${hint}`);
  }
  return value.map((entry, i) => ruleText(entry, listName, i));
}

/**
 * Checks `options` and returns {lists: {deny, allow, ask}, defaultDecision,
 * enabled} with the defaults filled in and every rule as a string.
 */
function parseOptions(options) {
  if (options === undefined) options = {};
  if (!isPlainObject(options)) {
    throw new ArgumentTypeError(`PermissionPolicy options must be an object, not ${typeName(options)}`);
  }
  for (const key of Object.keys(options)) {
    if (!OPTION_KEYS.includes(key)) {
      const hint = SNAKE_HINTS[key] ? ` (did you mean '${SNAKE_HINTS[key]}'?)` : '';
      throw new ArgumentTypeError(
        `unknown PermissionPolicy option '${key}'${hint}; allowed: ${OPTION_KEYS.join(', ')}`,
      );
    }
  }
  // Own properties only: a polluted Object.prototype must not disable a policy.
  const enabled = own(options, 'enabled', true);
  const defaultDecision = own(options, 'defaultDecision', 'ask');
  if (typeof enabled !== 'boolean') {
    throw new ArgumentTypeError(`enabled must be true or false, not ${typeName(enabled)}`);
  }
  if (!DECISIONS.includes(defaultDecision)) {
    const shown =
      typeof defaultDecision === 'string'
        ? JSON.stringify(defaultDecision)
        : typeName(defaultDecision);
    throw new ArgumentTypeError(`defaultDecision must be 'allow', 'deny' or 'ask', not ${shown}`);
  }
  const lists = {};
  for (const name of LISTS) lists[name] = ruleList(own(options, name, undefined), name);
  return { lists, defaultDecision, enabled };
}

module.exports = { parseOptions, LISTS, DECISIONS };
