'use strict';
// Canonical JSON: the argument string of tools without a dedicated field,
// and the text of any non-string value inside a field. It must be
// byte-identical to canonical_json in python/codeward/policy/_subject.py:
//
//  - compact (no spaces), object keys sorted by Unicode code point;
//  - strings escaped minimally like Python's json.dumps(ensure_ascii=False):
//    `"`, `\`, and control characters (\b \f \n \r \t, else \u00xx in lower
//    case). Nothing else is escaped, not even a lone surrogate (Python keeps
//    it; JSON.stringify would write \udxxx);
//  - numbers as ECMAScript's Number::toString (String(n)), which the Python
//    side reproduces; NaN, Infinity and -Infinity as those bare words;
//  - a BigInt as its decimal digits, as Python prints an int.
//
// JavaScript-only values follow what JSON.stringify would send to a tool:
// an undefined property is left out and an undefined array item is null.
// Functions, symbols and objects that are not plain (Date, Map, Buffer,
// class instances) have no agreed text, so they are a TypeError rather than
// something a rule could silently fail to see.
//
// Nesting deeper than MAX_DEPTH arrays and objects is a PolicyError, which
// also stops a value that contains itself: Python fails near the same depth
// (its recursion limit) and the Go binding at exactly this one.

const { ArgumentTypeError, PolicyError, typeName } = require('./errors');

const MAX_DEPTH = 1000;

const ESCAPES = {
  '"': '\\"',
  '\\': '\\\\',
  '\b': '\\b',
  '\f': '\\f',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
};
// eslint-disable-next-line no-control-regex
const NEEDS_ESCAPE = /["\\\u0000-\u001f]/;
// eslint-disable-next-line no-control-regex
const ESCAPE_ALL = /["\\\u0000-\u001f]/g;

function escapeChar(c) {
  return ESCAPES[c] || `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
}

/** A JSON string literal, escaped exactly as Python's json.dumps(s, ensure_ascii=False). */
function quote(s) {
  return NEEDS_ESCAPE.test(s) ? `"${s.replace(ESCAPE_ALL, escapeChar)}"` : `"${s}"`;
}

/**
 * Orders two strings by Unicode code point, as Python's sorted() does.
 * Plain `<` compares UTF-16 code units, which puts astral characters
 * (surrogate pairs, 0xD800-0xDBFF) before U+E000-U+FFFF.
 */
function compareCodePoints(a, b) {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  if (i === n) return a.length - b.length;
  // If the difference is in the second half of a surrogate pair (in either
  // string), compare whole code points from the pair's first half. A high
  // surrogate followed by no low one is a lone code point of its own, as
  // it is to Python, and is compared where it stands.
  if (
    i > 0 &&
    isHighSurrogate(a.charCodeAt(i - 1)) &&
    (isLowSurrogate(a.charCodeAt(i)) || isLowSurrogate(b.charCodeAt(i)))
  ) {
    i--;
  }
  return a.codePointAt(i) - b.codePointAt(i);
}

function isHighSurrogate(unit) {
  return unit >= 0xd800 && unit <= 0xdbff;
}

function isLowSurrogate(unit) {
  return unit >= 0xdc00 && unit <= 0xdfff;
}

/** True for an object literal, Object.create(null), or one from another realm. */
function isPlainObject(value) {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === null || Object.getPrototypeOf(proto) === null;
}

/** Own enumerable string keys; an enumerable symbol key has no JSON form. */
function jsonKeys(obj) {
  for (const sym of Object.getOwnPropertySymbols(obj)) {
    if (Object.prototype.propertyIsEnumerable.call(obj, sym)) {
      throw new ArgumentTypeError('tool arguments are not representable as JSON: non-string key');
    }
  }
  return Object.keys(obj).sort(compareCodePoints);
}

function encode(value, out, depth) {
  switch (typeof value) {
    case 'string':
      out.push(quote(value));
      return;
    case 'number':
      out.push(String(value)); // ECMAScript Number::toString; -0 is "0"
      return;
    case 'boolean':
      out.push(value ? 'true' : 'false');
      return;
    case 'bigint':
      out.push(value.toString());
      return;
    case 'undefined':
      out.push('null'); // only reached for array items: JSON.stringify's choice
      return;
    case 'object':
      if (value === null) {
        out.push('null');
        return;
      }
      break;
    default:
      throw new ArgumentTypeError(`tool arguments are not representable as JSON: ${typeof value} value`);
  }
  if (!Array.isArray(value) && !isPlainObject(value)) {
    throw new ArgumentTypeError(`tool arguments are not representable as JSON: ${typeName(value)} value`);
  }
  if (depth >= MAX_DEPTH) throw new PolicyError('tool arguments are nested too deeply');
  if (Array.isArray(value)) {
    out.push('[');
    for (let i = 0; i < value.length; i++) {
      if (i) out.push(',');
      encode(value[i], out, depth + 1);
    }
    out.push(']');
  } else {
    out.push('{');
    let first = true;
    for (const key of jsonKeys(value)) {
      const item = value[key];
      if (item === undefined) continue;
      if (!first) out.push(',');
      first = false;
      out.push(quote(key), ':');
      encode(item, out, depth + 1);
    }
    out.push('}');
  }
}

/** The canonical JSON text of `value` (see the top of this file). */
function canonicalJson(value) {
  const out = [];
  encode(value, out, 0);
  return out.join('');
}

module.exports = { canonicalJson, compareCodePoints, isPlainObject, quote };
