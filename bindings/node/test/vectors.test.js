'use strict';
// Runs the shared test vectors (tests/vectors/*.json, the contract every
// binding passes) and this binding's own cases in the same format
// (test/fixtures/local-*.json). The shared files are skipped, with a
// message, only when they do not exist.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { describe, test } = require('node:test');

// ci/npm_package.py runs this file against the package as a user installs it:
// CODEWARD_TEST_INSTALLED names a project whose node_modules holds it.
const installedIn = process.env.CODEWARD_TEST_INSTALLED;
const codeward = installedIn ? require.resolve('codeward', { paths: [installedIn] }) : '..';
const { PermissionPolicy, PolicyError, Glob, argumentString } = require(codeward);

const SHARED = path.join(__dirname, '..', '..', '..', 'tests', 'vectors');
const LOCAL = path.join(__dirname, 'fixtures');

// Vector files are written by Python's json.dump, which can hold two things
// JSON.parse cannot: the bare tokens NaN, Infinity and -Infinity, and
// integers beyond 2**53, which Python prints exactly and a Number would
// round. Such tokens outside string literals are swapped for marker strings
// and turned back by the reviver: the words into Numbers, the integers into
// BigInts (which canonicalJson prints digit for digit, as Python does).
const MARK = '\u0000a3s-token:';
const TOKEN = /"(?:[^"\\]|\\.)*"|(-?Infinity|NaN|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)/g;

function markToken(match, token) {
  if (token === undefined) return match; // a string literal
  const exact = /^-?\d+$/.test(token) && !Number.isSafeInteger(Number(token));
  return exact || /[IN]/.test(token) ? JSON.stringify(MARK + token) : token;
}

function readVectors(file) {
  const marked = fs.readFileSync(file, 'utf8').replace(TOKEN, markToken);
  return JSON.parse(marked, (_key, value) => {
    if (typeof value !== 'string' || !value.startsWith(MARK)) return value;
    const token = value.slice(MARK.length);
    return /^-?\d+$/.test(token) ? BigInt(token) : Number(token);
  });
}

/** A vector policy (snake_case file format) as PermissionPolicy options. */
function toOptions(policy) {
  const options = {};
  for (const [key, value] of Object.entries(policy)) {
    options[key === 'default_decision' ? 'defaultDecision' : key] = value;
  }
  return options;
}

function caseName(c, i) {
  return c.name ? `${i}: ${c.name}` : `${i}: ${JSON.stringify(c).slice(0, 80)}`;
}

function runPolicyVectors(file) {
  const data = readVectors(file);
  assert.equal(data.schema, 1, `${file}: unsupported schema`);
  const named = new Map();
  const policyFor = (ref) => {
    if (typeof ref !== 'string') return new PermissionPolicy(toOptions(ref));
    if (!named.has(ref)) {
      assert.ok(data.policies && data.policies[ref], `unknown policy ${ref}`);
      named.set(ref, new PermissionPolicy(toOptions(data.policies[ref])));
    }
    return named.get(ref);
  };
  data.cases.forEach((c, i) => {
    test(caseName(c, i), () => {
      if ('error' in c) {
        assert.equal(c.error, 'policy', `unknown error kind ${c.error}`);
        assert.throws(
          () => new PermissionPolicy(toOptions(c.policy)),
          (err) => {
            assert.ok(err instanceof PolicyError || err instanceof TypeError, `got ${err}`);
            if (c.message_contains !== undefined) {
              assert.ok(
                err.message.includes(c.message_contains),
                `message ${JSON.stringify(err.message)} lacks ${JSON.stringify(c.message_contains)}`,
              );
            }
            return true;
          },
        );
        return;
      }
      if ('decision' in c) {
        const policy = policyFor(c.policy);
        assert.equal(policy.check(c.tool, c.args), c.decision);
        if (c.matching !== undefined) {
          const expected = { deny: [], allow: [], ask: [], ...c.matching };
          assert.deepEqual(policy.matchingRules(c.tool, c.args), expected);
        }
      }
      if ('subject' in c) {
        assert.equal(argumentString(c.tool, c.args)[1], c.subject);
      }
      assert.ok('decision' in c || 'subject' in c, 'case has no decision, subject or error');
    });
  });
}

function runGlobVectors(file) {
  const data = readVectors(file);
  assert.equal(data.schema, 1, `${file}: unsupported schema`);
  data.cases.forEach((c, i) => {
    const name = c.name || `${JSON.stringify(c.pattern)} ~ ${JSON.stringify(c.subject)}`;
    test(`${i}: ${name}`.slice(0, 200), () => {
      const glob = new Glob(c.pattern, { toolName: Boolean(c.tool_name) });
      assert.equal(glob.match(c.subject), c.match);
    });
  });
}

function shared(name, run) {
  const file = path.join(SHARED, name);
  if (fs.existsSync(file)) {
    describe(`shared vectors: tests/vectors/${name}`, () => run(file));
  } else {
    test(`shared vectors: tests/vectors/${name}`, (t) => {
      t.skip(`tests/vectors/${name} does not exist yet`);
    });
  }
}

shared('policy.json', runPolicyVectors);
// a bash line decided per simple command by the C core: the same format, decision cases only
shared('bash_policy.json', runPolicyVectors);
shared('bash_reader.json', runPolicyVectors);
shared('glob.json', runGlobVectors);
describe('local vectors: test/fixtures/local-policy.json', () =>
  runPolicyVectors(path.join(LOCAL, 'local-policy.json')));
describe('local vectors: test/fixtures/local-glob.json', () =>
  runGlobVectors(path.join(LOCAL, 'local-glob.json')));
