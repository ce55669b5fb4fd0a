'use strict';
// The argument string and canonical JSON: the parts of the matching
// contract written in JavaScript (python/codeward/policy/_subject.py is the
// reference; the shared vectors pin most of it, these pin the corners).

const assert = require('node:assert/strict');
const { describe, test } = require('node:test');

const { argumentString, canonicalJson, canonicalTool, normalizePath } = require('..');
const { compareCodePoints } = require('../lib/canonical-json');
const { subjects } = require('../lib/subject');
const native = require('../lib/native');

describe('canonicalJson', () => {
  test('compact, keys by code point, numbers as ECMAScript prints them', () => {
    assert.equal(
      canonicalJson({ b: [1.0, 1e21, 1e-7, 1e-6, -0, 0.1], a: { y: null, x: true }, '': false }),
      '{"":false,"a":{"x":true,"y":null},"b":[1,1e+21,1e-7,0.000001,0,0.1]}',
    );
    assert.equal(canonicalJson([NaN, Infinity, -Infinity]), '[NaN,Infinity,-Infinity]');
  });

  test('minimal escaping, lower-case \\u00xx, nothing else touched', () => {
    assert.equal(canonicalJson('"\\/\b\f\n\r\t\u0000\u001f\u007f\u2028é😀'), '"\\"\\\\/\\b\\f\\n\\r\\t\\u0000\\u001f\u007f\u2028é😀"');
    assert.equal(canonicalJson('\u001b'), '"\\u001b"');
    // A lone surrogate stays raw, as in Python (JSON.stringify would escape it).
    assert.equal(canonicalJson('\ud800'), '"\ud800"');
  });

  test('astral keys sort after U+E000..U+FFFF (code points, not UTF-16 units)', () => {
    assert.equal(canonicalJson({ '😀': 1, '\uffff': 2, '\ue000': 3, z: 4 }), '{"z":4,"\ue000":3,"\uffff":2,"😀":1}');
  });

  test('a lone high surrogate is its own code point when sorting', () => {
    // Regression: found by the random comparison with Python.
    assert.equal(canonicalJson({ '\ud800a': 1, '\ud800\f': 2 }), '{"\ud800\\f":2,"\ud800a":1}');
    assert.ok(compareCodePoints('\ud800\udc00', '\ud800\ue000') > 0); // U+10000 > U+D800
    assert.ok(compareCodePoints('\ud800', '\ud800\udc00') < 0);
  });

  test('compareCodePoints agrees with comparing code point arrays', () => {
    const alphabet = ['a', '\f', '\ud800', '\udbff', '\udc00', '\udfff', '\ue000', '\uffff', '😀', '\u{10ffff}'];
    const strings = [''];
    for (const x of alphabet) for (const y of alphabet) strings.push(x, x + y);
    const reference = (a, b) => {
      const x = [...a].map((c) => c.codePointAt(0));
      const y = [...b].map((c) => c.codePointAt(0));
      for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
      return x.length - y.length;
    };
    for (const a of strings) {
      for (const b of strings) {
        assert.equal(Math.sign(compareCodePoints(a, b)), Math.sign(reference(a, b)), JSON.stringify([a, b]));
      }
    }
  });
});

describe('argumentString', () => {
  test('tool names are ASCII-lower-cased only', () => {
    assert.equal(canonicalTool('BaSh'), 'bash');
    assert.equal(canonicalTool('ÉDIT'), 'Édit');
    assert.deepEqual(argumentString('GREP', { query: 'q' }), ['search', 'grep q ']);
  });

  test('one field per tool, missing fields empty', () => {
    assert.deepEqual(argumentString('bash', { command: 'ls -la' }), ['bash', 'ls -la']);
    assert.deepEqual(argumentString('download', {}), ['download', '']);
    assert.deepEqual(argumentString('search', {}), ['search', '  ']);
    assert.deepEqual(argumentString('search', { mode: 'bm25', query: 'q', path: 'a/b/' }), ['search', 'bm25 q a/b']);
    assert.deepEqual(argumentString('glob', { mode: 'grep', query: '*.rs' }), ['search', 'glob *.rs ']);
    assert.deepEqual(argumentString('ls', { path: '' }), ['ls', '']);
    assert.deepEqual(argumentString('web_fetch', { url: 'u' }), ['web_fetch', '{"url":"u"}']);
  });

  test('non-string fields are their canonical JSON', () => {
    assert.deepEqual(argumentString('bash', { command: ['rm', '-rf'] }), ['bash', '["rm","-rf"]']);
    assert.deepEqual(argumentString('bash', { command: 1.5 }), ['bash', '1.5']);
    assert.deepEqual(argumentString('search', { mode: false, query: null, path: 3 }), ['search', 'false  3']);
    assert.deepEqual(argumentString('read', { files: 'a' }), ['read', '"a"']);
  });

  test('read with files: paths of entries (strings are paths too), other entries as text', () => {
    assert.deepEqual(
      argumentString('read', { files: [{ path: './a/' }, 'b//c', 7, null, { path: ['x'] }] }),
      ['read', 'a\nb/c\n7\n\n["x"]'],
    );
    assert.deepEqual(argumentString('read', { files: ['./x/../y/', '\\etc\\shadow'] }), ['read', 'y\n/etc/shadow']);
    assert.deepEqual(argumentString('read', { files: [] }), ['read', '']);
    assert.deepEqual(argumentString('read', { file_path: 'x', files: [{ path: 'y' }] }), ['read', 'x']);
    assert.deepEqual(argumentString('write', { files: [{ path: 'y' }] }), ['write', '']);
  });
});

describe('normalizePath', () => {
  const examples = [
    ['', ''],
    ['.', '.'],
    ['./', '.'],
    ['a/..', '.'],
    ['/..', '/'],
    ['//x', '/x'],
    ['///x//y/', '/x/y'],
    ['../a/../../b', '../../b'],
    ['a\\b\\..\\c', 'a/c'],
    ['\\\\server\\share', '/server/share'],
    ['src/./main.rs', 'src/main.rs'],
    ['.env', '.env'],
    ['a/.../b', 'a/.../b'],
  ];
  for (const [input, expected] of examples) {
    test(`${JSON.stringify(input)} -> ${JSON.stringify(expected)}`, () => {
      assert.equal(normalizePath(input), expected);
    });
  }

  test('the fast path never skips a path the core would change', () => {
    const parts = ['', '.', '..', 'a', 'é', '.x', 'x.', '/', '\\', '//'];
    const walk = (prefix, depth) => {
      assert.equal(normalizePath(prefix), native.pathNormalize(prefix), JSON.stringify(prefix));
      if (depth === 0) return;
      for (const p of parts) walk(prefix + p, depth - 1);
    };
    walk('', 4);
  });

  test('the addon refuses a non-string', () => {
    assert.throws(() => native.pathNormalize(1), { name: 'TypeError', message: /path must be a string/ });
  });
});

describe('subjects', () => {
  test('a multi-file read gives one normalized path per file', () => {
    assert.deepEqual(subjects('READ', { files: ['src/a', { path: '/etc//shadow' }, './b/', 7, null, { p: 1 }] }), [
      'read',
      ['src/a', '/etc/shadow', 'b', '7', '', ''],
    ]);
    assert.deepEqual(subjects('read', { files: ['a\nb'] }), ['read', ['a\nb']]);
  });

  test('an empty files list is one empty subject; files not a list is one subject', () => {
    assert.deepEqual(subjects('read', { files: [] }), ['read', ['']]);
    assert.deepEqual(subjects('read', { files: null }), ['read', ['']]);
    assert.deepEqual(subjects('read', { files: 'a//b' }), ['read', ['"a//b"']]);
    assert.deepEqual(subjects('read', { files: { path: 'a' } }), ['read', ['{"path":"a"}']]);
  });

  test('every other call is its argument string', () => {
    assert.deepEqual(subjects('read', { file_path: 'x', files: ['a', 'b'] }), ['read', ['x']]);
    assert.deepEqual(subjects('read', { file_path: null, files: ['a', 'b'] }), ['read', ['']]);
    assert.deepEqual(subjects('write', { files: ['a', 'b'] }), ['write', ['']]);
    assert.deepEqual(subjects('read', { file_path: 'a\nb' }), ['read', ['a\nb']]);
    assert.deepEqual(subjects('Grep', { query: 'x', path: './s/' }), ['search', ['grep x s']]);
    assert.deepEqual(subjects('bash', undefined), ['bash', ['']]);
    assert.deepEqual(subjects('foo', { a: [1] }), ['foo', ['{"a":[1]}']]);
  });

  test('agrees with argumentString: the joined subjects are the argument string', () => {
    const calls = [
      ['read', { files: ['./a', { path: 'b//' }, 1.5, [2], true] }],
      ['read', { files: [] }],
      ['read', { files: ['x'] }],
      ['read', { file_path: './q' }],
      ['ls', { path: 'a/..' }],
    ];
    for (const [tool, args] of calls) {
      const [name, each] = subjects(tool, args);
      assert.deepEqual([name, each.join('\n')], argumentString(tool, args));
    }
  });

  test('the same errors as argumentString', () => {
    assert.throws(() => subjects(1, {}), TypeError);
    assert.throws(() => subjects('read', []), TypeError);
    assert.throws(() => subjects('read', { files: [() => 1] }), TypeError);
  });
});
