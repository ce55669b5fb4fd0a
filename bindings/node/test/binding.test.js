'use strict';
// Binding-specific behaviour the shared vectors cannot express: option
// validation, error classes and fields, JavaScript-only values, and the
// string conversion between JavaScript and the C core.

const assert = require('node:assert/strict');
const { describe, test } = require('node:test');

const a3s = require('..');
const { PermissionPolicy, PolicyError, NativeCoreError, Glob, argumentString, canonicalJson } = a3s;
const native = require('../lib/native');

describe('version', () => {
  test('version() describes the C library', () => {
    const v = a3s.version();
    assert.deepEqual(Object.keys(v).sort(), ['abi', 'major', 'minor', 'patch', 'string']);
    assert.equal(v.string, `${v.major}.${v.minor}.${v.patch}`);
    assert.equal(v.abi, a3s.abiVersion());
  });

  test('abiVersion() is the ABI the addon was compiled against', () => {
    assert.equal(a3s.abiVersion(), native.ABI_VERSION);
    assert.equal(a3s.abiVersion(), 1);
  });

  test('the package version follows the C library', () => {
    assert.equal(require('../../../package.json').version, a3s.version().string);
  });
});

describe('PermissionPolicy options', () => {
  test('defaults: ask, enabled', () => {
    const p = new PermissionPolicy();
    assert.equal(p.defaultDecision, 'ask');
    assert.equal(p.enabled, true);
    assert.equal(p.check('bash', { command: 'ls' }), 'ask');
    assert.equal(new PermissionPolicy({}).check('x'), 'ask');
  });

  test('an unknown key is a TypeError naming it', () => {
    assert.throws(() => new PermissionPolicy({ deny: [], Allow: [] }), {
      name: 'TypeError',
      message: /'Allow'/,
    });
  });

  test('snake_case default_decision gets a hint', () => {
    assert.throws(() => new PermissionPolicy({ default_decision: 'deny' }), {
      name: 'TypeError',
      message: /'default_decision' \(did you mean 'defaultDecision'\?\)/,
    });
  });

  const wrongTypes = [
    [{ deny: 'Bash' }, /deny must be an array of rules, not string \(write deny: \["Bash"\]/],
    [{ allow: { rule: 'x' } }, /allow must be an array of rules, not object/],
    [{ ask: 3 }, /ask must be an array of rules, not number/],
    [{ deny: [1] }, /deny\[0\]: a rule is a string or \{rule: \.\.\.\}, not number/],
    [{ allow: ['ok', null] }, /allow\[1\]: .* not null/],
    [{ ask: [{ rule: 'x', extra: 1 }] }, /ask\[0\]: unknown key\(s\) 'extra'/],
    [{ ask: [{}] }, /ask\[0\]: a rule object needs a 'rule' key/],
    [{ deny: [{ rule: 5 }] }, /deny\[0\]: 'rule' must be a string, not number/],
    [{ defaultDecision: 'maybe' }, /defaultDecision must be 'allow', 'deny' or 'ask', not "maybe"/],
    [{ defaultDecision: 1 }, /defaultDecision .* not number/],
    [{ enabled: 'yes' }, /enabled must be true or false, not string/],
    [{ enabled: 0 }, /enabled must be true or false, not number/],
  ];
  for (const [options, message] of wrongTypes) {
    test(`wrong type: ${JSON.stringify(options)}`, () => {
      assert.throws(() => new PermissionPolicy(options), { name: 'TypeError', message });
    });
  }

  test('options themselves must be an object', () => {
    for (const bad of [null, 'deny', [], 1]) {
      assert.throws(() => new PermissionPolicy(bad), TypeError);
    }
  });

  test('null and undefined lists are empty', () => {
    const p = new PermissionPolicy({ deny: null, allow: undefined, defaultDecision: 'allow' });
    assert.deepEqual([p.deny, p.allow, p.ask], [[], [], []]);
    assert.equal(p.check('bash', { command: 'x' }), 'allow');
  });

  test('rule objects and strings mix; ids run deny, allow, ask', () => {
    const p = new PermissionPolicy({
      ask: ['c'],
      allow: [{ rule: 'b' }],
      deny: ['a', { rule: 'Grep' }],
    });
    assert.deepEqual(
      p.rules().map((v) => [v.index, v.list, v.raw, v.tool, v.pattern]),
      [
        [0, 'deny', 'a', 'a', '*'],
        [1, 'deny', 'Grep', 'search', 'grep **'],
        [2, 'allow', 'b', 'b', '*'],
        [3, 'ask', 'c', 'c', '*'],
      ],
    );
    assert.deepEqual(p.toJSON(), {
      deny: ['a', 'Grep'],
      allow: ['b'],
      ask: ['c'],
      default_decision: 'ask',
      enabled: true,
    });
  });
});

describe('PolicyError', () => {
  test('carries the rule and the C core message', () => {
    const rule = 'Bash(ls';
    assert.throws(
      () => new PermissionPolicy({ allow: ['ok', rule] }),
      (e) => {
        assert.ok(e instanceof PolicyError);
        assert.ok(e instanceof Error);
        assert.equal(e.name, 'PolicyError');
        assert.equal(e.rule, rule);
        assert.match(e.message, /^allow rule "Bash\(ls": missing '\)'/);
        assert.ok(e.message.includes('the pattern opened at offset 4 is never closed'));
        return true;
      },
    );
  });

  test('every malformed rule in docs/policy.md is refused', () => {
    const bad = ['', '(ls)', 'Bash(', 'Bash()', 'Bash(x)y', 'Bash (x)', 'Ba sh', 'Ba\tsh',
      'Bä', 'a\u0001b', 'Bash)', 'x'.repeat(65537)];
    for (const rule of bad) {
      assert.throws(() => new PermissionPolicy({ deny: [rule] }), (e) => {
        assert.ok(e instanceof PolicyError, `${JSON.stringify(rule.slice(0, 20))}: ${e}`);
        assert.equal(e.rule, rule);
        return true;
      });
    }
  });

  test('a rule too long for the core says so', () => {
    assert.throws(() => new PermissionPolicy({ ask: [`Bash(${'x'.repeat(70000)})`] }), {
      name: 'PolicyError',
      message: /exceeds the limit of 4096/,
    });
  });

  test('NativeCoreError is exported for failures no input explains', () => {
    const e = new NativeCoreError('boom', { status: 'nomem' });
    assert.equal(e.status, 'nomem');
    assert.equal(e.errno, 0);
  });
});

describe('strings cross into C as UTF-8 bytes', () => {
  test('an embedded NUL is an ordinary byte in rules and subjects', () => {
    const p = new PermissionPolicy({ deny: ['Bash(a\u0000b)'], defaultDecision: 'allow' });
    assert.equal(p.check('bash', { command: 'a\u0000b' }), 'deny');
    assert.equal(p.check('bash', { command: 'a' }), 'allow');
    assert.equal(p.check('bash', { command: 'a\u0000bc' }), 'allow');
    assert.equal(p.rules()[0].pattern, 'a\u0000b');
  });

  test('an embedded NUL in a glob and a path', () => {
    assert.equal(new Glob('x\u0000*').match('x\u0000yz'), true);
    assert.equal(new Glob('x\u0000*').match('x'), false);
    assert.equal(a3s.normalizePath('./a\u0000/../b\u0000/'), 'b\u0000');
  });

  test('non-ASCII and astral characters survive the round trip', () => {
    assert.equal(a3s.normalizePath('./é/😀//x/'), 'é/😀/x');
    const p = new PermissionPolicy({ deny: ['Write(**/😀*)'], defaultDecision: 'allow' });
    assert.equal(p.check('write', { file_path: 'a/😀.txt' }), 'deny');
    assert.equal(p.rules()[0].pattern, '**/😀*');
    // One code point, so a single * covers it whatever its UTF-8 length.
    assert.equal(new Glob('a*b').match('a😀é\u0000b'), true);
  });

  test('a lone surrogate is passed through like Python surrogatepass', () => {
    const lone = '\ud800';
    assert.equal(a3s.normalizePath(`./${lone}/`), lone);
    const p = new PermissionPolicy({ deny: [`Bash(${lone}*)`], defaultDecision: 'allow' });
    assert.equal(p.check('bash', { command: `${lone}x` }), 'deny');
    // Not confused with U+FFFD, which V8's own UTF-8 conversion would produce.
    assert.equal(p.check('bash', { command: '\ufffdx' }), 'allow');
    assert.equal(p.rules()[0].pattern, `${lone}*`);
  });
});

describe('check and matchingRules arguments', () => {
  const p = new PermissionPolicy({ deny: ['Bash(rm**)'], allow: ['Foo'] });

  test('the tool name must be a string', () => {
    assert.throws(() => p.check(1, {}), { name: 'TypeError', message: /tool name must be a string/ });
    assert.throws(() => p.matchingRules(null), TypeError);
    assert.throws(() => p.exposesToModel({}), TypeError);
  });

  test('args must be a plain object, null or undefined', () => {
    assert.equal(p.check('bash'), 'ask');
    assert.equal(p.check('bash', null), 'ask');
    for (const bad of [[], 'rm', 3, new Date(0), new Map()]) {
      assert.throws(() => p.check('bash', bad), TypeError);
    }
    assert.equal(p.check('bash', Object.assign(Object.create(null), { command: 'rm x' })), 'deny');
  });

  test('values without a JSON form are a TypeError', () => {
    for (const bad of [() => 1, Symbol('s'), new Date(0), new Map(), Buffer.from('x'), new (class X {})()]) {
      assert.throws(() => argumentString('foo', { v: bad }), TypeError);
    }
    assert.throws(() => argumentString('foo', { [Symbol('k')]: 1 }), TypeError);
  });

  test('undefined is a missing field, null in an array', () => {
    assert.deepEqual(argumentString('bash', { command: undefined }), ['bash', '']);
    assert.deepEqual(argumentString('foo', { a: undefined, b: [undefined, 1] }), ['foo', '{"b":[null,1]}']);
  });

  test('inherited properties are never read', () => {
    // Prototype pollution must not put words in a call's mouth.
    Object.prototype.command = 'rm -rf /';
    Object.prototype.file_path = '/etc/passwd';
    try {
      assert.deepEqual(argumentString('bash', {}), ['bash', '']);
      assert.deepEqual(argumentString('read', { files: [{}] }), ['read', '']);
      assert.deepEqual(argumentString('foo', {}), ['foo', '{}']);
    } finally {
      delete Object.prototype.command;
      delete Object.prototype.file_path;
    }
    assert.deepEqual(argumentString('read', { files: [{ constructor: 1 }] }), ['read', '']);
    assert.throws(() => argumentString('bash', Object.create({ command: 'x' })), TypeError);
  });

  test('nesting beyond 1000 levels is a PolicyError, a cycle too', () => {
    const nested = (depth) => {
      let v = [];
      for (let i = 1; i < depth; i++) v = i % 2 ? { k: v } : [v];
      return v;
    };
    assert.doesNotThrow(() => canonicalJson(nested(1000)));
    assert.throws(() => canonicalJson(nested(1001)), { name: 'PolicyError', message: /nested too deeply/ });
    assert.throws(() => argumentString('foo', { deep: nested(200000) }), PolicyError);
    const cyclic = { a: 1 };
    cyclic.self = cyclic;
    assert.throws(() => argumentString('foo', cyclic), { name: 'PolicyError', message: /nested too deeply/ });
  });

  test('a BigInt prints as its digits, like a Python int', () => {
    assert.deepEqual(argumentString('foo', { n: 12345678901234567890n }), ['foo', '{"n":12345678901234567890}']);
  });

  test('a disabled policy allows without looking at the arguments', () => {
    const off = new PermissionPolicy({ deny: ['Bash'], enabled: false });
    assert.equal(off.check('bash', { command: () => 1 }), 'allow');
    assert.equal(off.exposesToModel('bash'), true);
    assert.deepEqual(off.matchingRules('bash', {}), { deny: ['Bash'], allow: [], ask: [] });
  });
});

describe('multi-file read: decided per file', () => {
  const rules = { deny: ['read(**/.env)'], allow: ['Read(src/**)', 'read(docs/*.md)'], ask: ['read(docs/**)'] };
  const policy = (defaultDecision) => new PermissionPolicy({ ...rules, defaultDecision });

  test('read(src/**) does not allow /etc/shadow alongside src/a', () => {
    // Regression: the joined subject "src/a\n/etc/shadow" matched src/** (** crosses newlines).
    const args = { files: ['src/a', '/etc/shadow'] };
    assert.equal(policy('ask').check('read', args), 'ask');
    assert.equal(policy('deny').check('read', args), 'deny');
    assert.equal(policy('allow').check('read', args), 'allow');
    assert.equal(policy('deny').check('read', { files: [{ path: 'src/a' }, { path: '/etc/shadow' }] }), 'deny');
    assert.equal(new PermissionPolicy({ allow: ['read(src/**)'], defaultDecision: 'deny' }).check('read', args), 'deny');
    assert.equal(policy('deny').check('read', { files: ['src/a', 'src/b/c'] }), 'allow');
  });

  test('a deny on one file among allowed ones denies', () => {
    for (const d of ['allow', 'ask', 'deny']) {
      assert.equal(policy(d).check('read', { files: ['src/a', 'src/x/.env', 'src/b'] }), 'deny');
      assert.equal(policy(d).check('read', { files: ['docs/r.md', { path: '.env' }] }), 'deny');
    }
  });

  test('ask if any file is asked or falls to an ask default', () => {
    assert.equal(policy('allow').check('read', { files: ['src/a', 'docs/x/y.md'] }), 'ask');
    assert.equal(policy('deny').check('read', { files: ['docs/x/y.md', 'src/a'] }), 'ask');
    assert.equal(policy('ask').check('read', { files: ['src/a', 'elsewhere'] }), 'ask');
    assert.equal(policy('ask').check('read', { files: ['src/a', 'docs/r.md'] }), 'allow');
  });

  test('matchingRules is the union over the files, in rule order', () => {
    assert.deepEqual(policy('ask').matchingRules('read', { files: ['docs/r.md', 'src/a', 'src/.env'] }), {
      deny: ['read(**/.env)'],
      allow: ['Read(src/**)', 'read(docs/*.md)'],
      ask: ['read(docs/**)'],
    });
    assert.deepEqual(policy('ask').matchingRules('read', { files: ['src/a', '/etc/shadow'] }), {
      deny: [],
      allow: ['Read(src/**)'],
      ask: [],
    });
    assert.deepEqual(policy('ask').matchingRules('read', { files: ['/etc/shadow', 'x'] }), { deny: [], allow: [], ask: [] });
  });

  test('string entries are paths, normalized like {path} entries', () => {
    const p = policy('ask');
    assert.equal(p.check('read', { files: ['./src//a/'] }), 'allow');
    assert.equal(p.check('read', { files: ['src/../etc/shadow', 'src/a'] }), 'ask');
    assert.equal(p.check('read', { files: ['src\\x\\.env', 'src/a'] }), 'deny');
    assert.deepEqual(p.matchingRules('read', { files: ['./src//a/'] }).allow, ['Read(src/**)']);
  });

  test('an empty files list is one empty subject', () => {
    assert.equal(policy('deny').check('read', { files: [] }), 'deny');
    assert.equal(new PermissionPolicy({ allow: ['read(**)'], defaultDecision: 'deny' }).check('read', { files: [] }), 'allow');
    assert.equal(new PermissionPolicy({ allow: ['read'], defaultDecision: 'deny' }).check('read', { files: [] }), 'allow');
  });

  test('a disabled policy still allows everything', () => {
    const p = new PermissionPolicy({ ...rules, enabled: false });
    assert.equal(p.check('read', { files: ['src/.env', '/etc/shadow'] }), 'allow');
  });
});

describe('exposesToModel', () => {
  test('whole-tool denies hide a tool; pattern denies do not', () => {
    const p = new PermissionPolicy({ deny: ['Bash', 'Write(*)', 'Edit(**)', 'mcp__evil', 'MCP__x__*', 'Grep'] });
    assert.equal(p.exposesToModel('bash'), false);
    assert.equal(p.exposesToModel('BASH'), false);
    assert.equal(p.exposesToModel('write'), false);
    assert.equal(p.exposesToModel('edit'), true); // "**" is a pattern, not any-args
    assert.equal(p.exposesToModel('mcp__evil'), false);
    assert.equal(p.exposesToModel('mcp__evil__drop'), false);
    assert.equal(p.exposesToModel('mcp__evilx'), true);
    assert.equal(p.exposesToModel('mcp__X__anything'), false);
    assert.equal(p.exposesToModel('grep'), true); // rewritten to search(grep **): a pattern
    assert.equal(p.exposesToModel('read'), true);
  });

  test('default deny hides tools without an allow or ask rule', () => {
    const p = new PermissionPolicy({
      allow: ['Read(src/**)', 'mcp__fs'],
      ask: ['Glob', 'mcp__gh__*'],
      deny: ['Read(*)'],
      defaultDecision: 'deny',
    });
    assert.equal(p.exposesToModel('read'), false); // the deny covers it first
    assert.equal(p.exposesToModel('write'), false);
    assert.equal(p.exposesToModel('mcp__fs__read'), true);
    assert.equal(p.exposesToModel('glob'), true); // search, named by the rewritten rule
    assert.equal(p.exposesToModel('bm25'), true);
    assert.equal(p.exposesToModel('mcp__GH__x'), true);
    assert.equal(p.exposesToModel('mcp__gh'), false);
  });
});

describe('Glob', () => {
  test('options: only toolName, a boolean', () => {
    assert.equal(new Glob('Bash').match('bash'), false);
    assert.equal(new Glob('Bash', { toolName: true }).match('bash'), true);
    assert.equal(new Glob('a*', { toolName: true }).match('A/b'), true);
    assert.throws(() => new Glob('x', { tool_name: true }), { name: 'TypeError', message: /'tool_name'/ });
    assert.throws(() => new Glob('x', { toolName: 1 }), { name: 'TypeError', message: /toolName/ });
    assert.throws(() => new Glob(1), TypeError);
    assert.throws(() => new Glob('x').match(1), TypeError);
  });

  test('a pattern over the size limit is a PolicyError', () => {
    assert.throws(() => new Glob('x'.repeat(4097)), PolicyError);
    assert.equal(new Glob('x'.repeat(4096)).match('x'.repeat(4096)), true);
  });

  test('native methods refuse an object of the wrong kind', () => {
    const rs = new native.NativeRuleset();
    assert.throws(() => native.NativeGlob.prototype.match.call(rs, 'x'), TypeError);
    assert.throws(() => native.NativeRuleset.prototype.check.call({}, 'a', 'b'), TypeError);
    assert.throws(() => native.NativeGlob('x'), TypeError);
  });
});

describe('prototype pollution', () => {
  test('inherited options are ignored', () => {
    Object.prototype.enabled = false;
    Object.prototype.defaultDecision = 'allow';
    Object.prototype.deny = ['Bash'];
    Object.prototype.toolName = true;
    try {
      const p = new PermissionPolicy({ ask: ['Bash(ls)'] });
      assert.equal(p.enabled, true);
      assert.equal(p.check('bash', { command: 'rm' }), 'ask');
      assert.deepEqual(p.deny, []);
      assert.equal(new Glob('Bash', {}).match('bash'), false);
    } finally {
      delete Object.prototype.enabled;
      delete Object.prototype.defaultDecision;
      delete Object.prototype.deny;
      delete Object.prototype.toolName;
    }
  });
});

describe('worker threads', () => {
  test('the addon loads and checks in a worker (context-aware module)', async () => {
    const { Worker } = require('node:worker_threads');
    const source = `
      const { parentPort, workerData } = require('node:worker_threads');
      const { PermissionPolicy } = require(workerData);
      const p = new PermissionPolicy({ deny: ['Bash(rm**)'] });
      parentPort.postMessage(p.check('bash', { command: 'rm -rf /' }));
    `;
    const worker = new Worker(source, { eval: true, workerData: require.resolve('..') });
    const [message] = await require('node:events').once(worker, 'message');
    assert.equal(message, 'deny');
    await worker.terminate();
  });
});

describe('the exec check from a policy', () => {
  test('execRules are the bash deny and ask patterns', () => {
    const policy = new PermissionPolicy({
      deny: ['bash(git push**)', 'Read(**/.env)', 'Bash'],
      ask: ['bash(npm publish:*)', 'bash'],
      allow: ['bash(*)'],
    });
    assert.deepEqual(policy.execRules(), { deny: ['git push**', '*'], ask: ['npm publish:*'] });
    assert.deepEqual(new PermissionPolicy({ deny: ['bash(x)'], enabled: false }).execRules(), {
      deny: [],
      ask: [],
    });
  });
});
