'use strict';
// Python's repr() of a string, for the refusal texts the mediators share
// (tests/vectors/netgrant_requests.json has the Python mediator's words).

// what Python's str.isprintable() refuses: controls, format, surrogates, private
// use, unassigned, and separators other than the ASCII space
const NOT_PRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}]|(?! )\p{Zs}/u;
const ESCAPES = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function pyRepr(text) {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  let out = '';
  for (const c of text) {
    if (ESCAPES[c]) out += ESCAPES[c];
    else if (c === quote) out += `\\${c}`;
    else if (NOT_PRINTABLE.test(c)) {
      const cp = c.codePointAt(0);
      if (cp < 0x100) out += `\\x${cp.toString(16).padStart(2, '0')}`;
      else if (cp < 0x10000) out += `\\u${cp.toString(16).padStart(4, '0')}`;
      else out += `\\U${cp.toString(16).padStart(8, '0')}`;
    } else out += c;
  }
  return quote + out + quote;
}

function isPrintable(c) {
  return !NOT_PRINTABLE.test(c);
}

module.exports = { pyRepr, isPrintable };
