'use strict';
// The errors a Node host sees: a class and a stable code for each, ES2022's
// `cause`, no unhandled rejection from the package's own promises, `await
// using`, strict selection and doctor().

const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { test, after } = require('node:test');

const installedIn = process.env.CODEWARD_TEST_INSTALLED;
const pkgDir = installedIn
  ? path.dirname(require.resolve('codeward/package.json', { paths: [installedIn] }))
  : path.join(__dirname, '..', '..', '..');
const codeward = require(pkgDir);
const { UnavailableSandbox } = codeward;
const VECTORS = process.env.A3S_VECTORS_DIR || path.join(__dirname, '..', '..', '..', 'tests', 'vectors');

const dirs = [];
function workspace() {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'cw-node-err-')));
  dirs.push(dir);
  return dir;
}
after(() => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

/** Runs `source` in a fresh node process with the package as `codeward`. */
function node(source) {
  const prelude = `const codeward = require(${JSON.stringify(pkgDir)});\n`;
  return spawnSync(process.execPath, ['-e', prelude + source], { encoding: 'utf8', timeout: 120_000 });
}

test('close() while an exec has no handler yet does not crash the process', () => {
  const r = node(`
    (async () => {
      const sb = await codeward.selectSandbox(${JSON.stringify(workspace())}, { strict: true });
      const pending = sb.exec('sleep 60'); // no handler until after close() resolved
      await new Promise((resolve) => setTimeout(resolve, 200));
      await sb.close();
      await new Promise((resolve) => setTimeout(resolve, 100)); // unhandled rejections surface here
      const err = await pending.then(() => null, (e) => e);
      console.log(err.constructor.name, err.code, err.output && err.output.cancelled);
    })();
  `);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), 'SandboxClosedError ERR_SANDBOX_CLOSED true');
});

test('a rejection nobody handles is still reported (only close() marks its own as handled)', () => {
  const r = node(`
    (async () => {
      const sb = await codeward.selectSandbox(${JSON.stringify(workspace())}, { strict: true });
      sb.exec('true', { env: { LD_PRELOAD: '/x.so' } }); // never handled
      await new Promise((resolve) => setTimeout(resolve, 100));
      await sb.close();
    })();
  `);
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /ERR_CODEWARD_SANDBOX_ARGUMENT/);
});

test('every error class has its stable code', async () => {
  const ws = workspace();
  const cases = [
    [() => new codeward.PermissionPolicy({ deny: ['Bash('] }), codeward.PolicyError, 'ERR_CODEWARD_POLICY'],
    [() => new codeward.PermissionPolicy({ deny: 'Bash' }), codeward.ArgumentTypeError, 'ERR_INVALID_ARG_TYPE'],
    [() => new codeward.Glob(3), TypeError, 'ERR_INVALID_ARG_TYPE'],
    [() => codeward.selectSandbox(ws, { nope: 1 }), TypeError, 'ERR_INVALID_ARG_TYPE'],
    [() => codeward.selectSandbox(path.join(ws, 'missing')), codeward.SandboxArgumentError, 'ERR_CODEWARD_SANDBOX_ARGUMENT'],
    [
      () => codeward.selectSandbox(ws, { strict: true, allowProcessHostSandbox: true }),
      codeward.SandboxArgumentError,
      'ERR_CODEWARD_SANDBOX_ARGUMENT',
    ],
    [() => codeward.selectSandbox('/'), codeward.SandboxUnavailableError, 'ERR_CODEWARD_SANDBOX_UNAVAILABLE'],
  ];
  for (const [call, cls, code] of cases) {
    let err = null;
    try {
      await call();
    } catch (e) {
      err = e;
    }
    assert.ok(err instanceof cls, `${call}: ${err && err.stack}`);
    assert.equal(err.code, code, String(call));
  }
  const sb = await codeward.selectSandbox(ws, { strict: true });
  await assert.rejects(sb.exec('true', { signal: AbortSignal.abort() }), (e) => {
    assert.ok(e instanceof codeward.AbortError && e.code === 'ABORT_ERR' && e.output === null);
    return true;
  });
  await sb.close();
  await assert.rejects(sb.exec('true'), (e) => e instanceof codeward.SandboxClosedError && e.code === 'ERR_SANDBOX_CLOSED');
});

test("SandboxUnavailableError's cause is an Error or absent; the reason is a string", async () => {
  const err = await codeward.selectSandbox('/').then(() => null, (e) => e);
  assert.ok(err instanceof codeward.SandboxUnavailableError);
  assert.ok(err.cause === undefined || err.cause instanceof Error, String(err.cause));
  assert.equal(typeof err.reason, 'string');
  assert.match(err.reason, /\/proc/);
  const handle = new UnavailableSandbox('/w', 'bubblewrap is missing');
  const e = await handle.exec('true').then(() => null, (x) => x);
  assert.equal(e.reason, 'bubblewrap is missing');
  assert.ok(!('cause' in e), 'an error with no underlying Error has no cause');
});

test('await using closes the sandbox at the end of the scope', async () => {
  const ws = workspace();
  let sb;
  {
    const scope = await codeward.selectSandbox(ws, { strict: true });
    sb = scope;
    assert.equal(typeof scope[Symbol.asyncDispose ?? Symbol.for('nodejs.asyncDispose')], 'function');
    await scope[Symbol.asyncDispose ?? Symbol.for('nodejs.asyncDispose')](); // what `await using` calls
  }
  await assert.rejects(sb.exec('true'), { code: 'ERR_SANDBOX_CLOSED' });
});

test('doctor() reports the checks of `codeward doctor`', async () => {
  const want = JSON.parse(fs.readFileSync(path.join(VECTORS, 'doctor.json'), 'utf8')).checks;
  const report = await codeward.doctor();
  assert.equal(report.ready, true, JSON.stringify(report)); // this machine runs the sandbox vectors
  assert.deepEqual(
    report.checks.map((c) => ({ name: c.name, required: c.required })),
    want.map((c) => ({ name: c.name, required: c.required })),
  );
  for (const c of report.checks) {
    assert.deepEqual(Object.keys(c), ['name', 'ok', 'required', 'detail', 'fix']);
    if (c.required) assert.ok(c.ok && c.detail, JSON.stringify(c));
  }
});

test('onOutput gets every byte as it arrives; what it throws rejects the exec once the command is over', async () => {
  const sb = await codeward.selectSandbox(workspace(), { strict: true });
  try {
    const pieces = [];
    const out = await sb.exec('echo a; head -c 200000 /dev/zero; echo b >&2', {
      maxOutputBytes: 100,
      onOutput: (chunk, stream) => pieces.push([stream, chunk]),
    });
    const stdout = Buffer.concat(pieces.filter(([s]) => s === 'stdout').map(([, c]) => c));
    assert.equal(stdout.length, 200002);
    assert.ok(out.truncated && out.stdout.length < 300);
    assert.equal(Buffer.concat(pieces.filter(([s]) => s === 'stderr').map(([, c]) => c)).toString(), 'b\n');
    const boom = new Error('boom');
    await assert.rejects(
      sb.exec('echo x; echo done > done', {
        onOutput: () => {
          throw boom;
        },
      }),
      (err) => err === boom,
    );
    assert.equal(fs.readFileSync(path.join(sb.workspace, 'done'), 'utf8'), 'done\n');
    await assert.rejects(sb.exec('true', { onOutput: 'no' }), { code: 'ERR_INVALID_ARG_TYPE' });
  } finally {
    await sb.close();
  }
});
