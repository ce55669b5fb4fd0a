'use strict';
// native/abi/options.json is the canonical option list: every Node spelling
// it gives is an option this binding takes, and every option this binding
// takes is listed there, so the three bindings cannot drift apart.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { test } = require('node:test');

const { SELECT_KEYS, LIMIT_KEYS, EXEC_KEYS } = require('../lib/sandbox');

const FILE = path.join(__dirname, '..', '..', '..', 'native', 'abi', 'options.json');

test('the sandbox options are the ones native/abi/options.json lists', () => {
  const { options } = JSON.parse(fs.readFileSync(FILE, 'utf8'));
  // null: an option of another binding only (the Python MCP servers' allow_unowned)
  const listed = new Set(options.filter((o) => o.node !== null).map((o) => o.node));
  const taken = new Set([
    ...SELECT_KEYS.filter((k) => k !== 'limits'),
    ...LIMIT_KEYS.map((k) => `limits.${k}`),
    ...EXEC_KEYS,
  ]);
  assert.deepEqual([...listed].filter((n) => !taken.has(n)), [], 'listed but not taken');
  assert.deepEqual([...taken].filter((n) => !listed.has(n)), [], 'taken but not listed');
});
