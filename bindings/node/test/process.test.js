'use strict';
// Owned processes (sandbox.startProcess): a long-lived program in a sandbox
// of its own, talked to over its standard streams, and owned whole: a daemon
// it forks with setsid is gone after close(), and so is everything when the
// host process dies (Go's StartProcess, bindings/go/process_test.go).

const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');
const { test } = require('node:test');

const { pkgDir, codeward, scratch, newMarker, pidsWhere, running, firstLine } = require('./sandboxkit.js');

const { selectSandbox, OwnedProcess, SandboxArgumentError, SandboxClosedError, NativeCoreError } = codeward;
const { workspace, nativeSandbox } = scratch('cw-proc-');

const marker = () => newMarker('cwproc');

/** The live pids on this machine whose argv[0] starts with `m` (a sandbox's pids are visible here). */
function survivors(m) {
  return pidsWhere((pid) => running(pid) && fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1').startsWith(m));
}

async function gone(m, ms = 30_000) {
  for (let waited = 0; waited < ms && survivors(m).length; waited += 50) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return survivors(m);
}

/** A program that forks a setsid daemon and runs on: both carry `m` in their argv[0]. */
function daemonizing(m) {
  return `setsid bash -c 'exec -a ${m}-daemon sleep 1000' </dev/null >/dev/null 2>&1 & echo started; exec -a ${m}-main sleep 1000`;
}

test('stdio round trip: a line-echo program answers each line, then ends with its input', async () => {
  const sb = await nativeSandbox();
  const p = await sb.startProcess('/bin/bash', ['-c', 'while IFS= read -r l; do echo "echo: $l"; done; echo bye >&2; exit 7']);
  assert.ok(p instanceof OwnedProcess);
  assert.ok(p.pid > 0);
  assert.equal(p.exitCode, null);
  const lines = readline.createInterface({ input: p.stdout });
  const it = lines[Symbol.asyncIterator]();
  for (const text of ['one', 'twó', 'x'.repeat(10_000)]) {
    p.stdin.write(`${text}\n`);
    assert.equal((await it.next()).value, `echo: ${text}`);
  }
  let stderr = '';
  p.stderr.on('data', (d) => {
    stderr += d;
  });
  p.stdin.end();
  assert.equal(await p.wait(), 7);
  assert.equal(p.exitCode, 7);
  assert.equal(await p.close(), 7);
  assert.equal(stderr, 'bye\n');
  assert.equal(await p.close(), 7); // idempotent
});

test('close() ends a long-running program and the setsid daemon it forked', async () => {
  const sb = await nativeSandbox();
  const m = marker();
  const p = await sb.startProcess('/bin/bash', ['-c', daemonizing(m)], { killGraceMs: 500 });
  assert.equal(await firstLine(p.stdout), 'started');
  for (let i = 0; i < 200 && survivors(m).length < 2; i++) await new Promise((r) => setTimeout(r, 50));
  assert.equal(survivors(m).length, 2, 'the program and its daemon run');
  const code = await p.close();
  assert.ok(code > 128, `ended by a signal, not ${code}`);
  assert.deepEqual(survivors(m), [], 'nothing of it is left once close() resolves');
});

test('kill() and closing the sandbox end the program; the sandbox closes its processes', async () => {
  const sb = await nativeSandbox();
  const m = marker();
  const p = await sb.startProcess('/bin/bash', ['-c', daemonizing(m)]);
  assert.equal(await firstLine(p.stdout), 'started');
  const code = await p.kill();
  assert.equal(await p.wait(), code);
  assert.deepEqual(await gone(m, 1000), []);
  await p.close();

  const m2 = marker();
  const q = await sb.startProcess('/bin/bash', ['-c', daemonizing(m2)]);
  assert.equal(await firstLine(q.stdout), 'started');
  await sb.close();
  assert.deepEqual(survivors(m2), []);
  assert.notEqual(q.exitCode, null);
  await assert.rejects(sb.startProcess('/bin/true'), SandboxClosedError);
});

test('when the host process dies, nothing of its programs is left', async () => {
  const ws = workspace();
  const m = marker();
  const script = `
    const { selectSandbox } = require(${JSON.stringify(pkgDir)});
    (async () => {
      const sb = await selectSandbox(${JSON.stringify(ws)});
      const p = await sb.startProcess('/bin/bash', ['-c', ${JSON.stringify(daemonizing(m))}]);
      p.stdout.once('data', () => console.log('ready'));
    })();
  `;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const ready = await firstLine(child.stdout);
  assert.equal(ready, 'ready');
  for (let i = 0; i < 200 && survivors(m).length < 2; i++) await new Promise((r) => setTimeout(r, 50));
  assert.equal(survivors(m).length, 2);
  const exited = new Promise((resolve) => child.on('exit', resolve));
  child.kill('SIGKILL');
  await exited;
  assert.deepEqual(await gone(m), [], 'the programs died with their host');
});

// A sandbox's init takes no signal from outside its pid namespace: the stop's TERM is
// sent by the init, asked over its lifeline. A grace far longer than the test could
// wait: only the program's own handler can make kill() resolve 0.
const LONG_GRACE_MS = 120_000;
const TRAPPING = [
  `trap 'echo stopped > "$0.term"; exit 0' TERM`,
  `trap 'echo usr1 >> "$0.usr1"' USR1`,
  `trap 'exit 3' INT`,
  'echo ready',
  'while :; do sleep 1; done',
].join('\n');

async function trapping(reuse) {
  const sb = await nativeSandbox({ reuse });
  const script = path.join(sb.workspace, 'server.sh');
  fs.writeFileSync(script, TRAPPING, { mode: 0o755 });
  const start = async () => {
    const p = await sb.startProcess('/bin/sh', [script], { killGraceMs: LONG_GRACE_MS });
    assert.equal(await firstLine(p.stdout), 'ready');
    return p;
  };
  return { sb, script, start };
}

for (const reuse of [false, true]) {
  const kind = reuse ? 'long-lived' : 'one-shot';
  test(`kill() sends TERM first and resolves with the handler's status (${kind} sandbox)`, async () => {
    const { script, start } = await trapping(reuse);
    const p = await start();
    const started = Date.now();
    assert.equal(await p.kill(), 0, 'TERM did not reach the program');
    assert.ok(Date.now() - started < LONG_GRACE_MS);
    assert.equal(fs.readFileSync(`${script}.term`, 'utf8'), 'stopped\n');
    assert.equal(await p.close(), 0);

    const q = await start();
    assert.equal(await q.kill('SIGINT'), 3, 'the first signal is the caller\'s');
    await q.close();
  });

  test(`sendSignal() reaches the program without ending it (${kind} sandbox)`, async () => {
    const { script, start } = await trapping(reuse);
    const p = await start();
    p.sendSignal('SIGUSR1');
    for (let i = 0; i < 600 && !fs.existsSync(`${script}.usr1`); i++) await new Promise((r) => setTimeout(r, 50));
    assert.equal(fs.readFileSync(`${script}.usr1`, 'utf8'), 'usr1\n');
    assert.equal(p.exitCode, null, 'a signal is not a stop');
    p.sendSignal(os.constants.signals.SIGTERM);
    assert.equal(await p.wait(), 0);
    p.sendSignal('SIGTERM'); // ended: nothing to signal
    assert.equal(await p.close(), 0);
    p.sendSignal('SIGTERM'); // closed: nothing either
  });
}

test('a program ignoring TERM is killed after the grace, with its daemon', async () => {
  const sb = await nativeSandbox();
  const m = marker();
  // an ignored signal stays ignored in children and across exec
  const script = `trap '' TERM; ${daemonizing(m)}`;
  const p = await sb.startProcess('/bin/bash', ['-c', script], { killGraceMs: 300 });
  assert.equal(await firstLine(p.stdout), 'started');
  for (let i = 0; i < 200 && survivors(m).length < 2; i++) await new Promise((r) => setTimeout(r, 50));
  assert.equal(survivors(m).length, 2, 'the program and its daemon run');
  const started = Date.now();
  assert.equal(await p.close(), 128 + 9);
  assert.ok(Date.now() - started >= 250, 'killed only after the grace');
  assert.deepEqual(survivors(m), [], 'nothing of it is left once close() resolves');
});

test('kill() and sendSignal() refuse what is no signal', async () => {
  const { start } = await trapping(true);
  const p = await start();
  for (const bad of ['SIGNOPE', 0, 65, 1.5]) {
    await assert.rejects(p.kill(bad), { code: 'ERR_CODEWARD_SANDBOX_ARGUMENT' });
    assert.throws(() => p.sendSignal(bad), { code: 'ERR_CODEWARD_SANDBOX_ARGUMENT' });
  }
  await assert.rejects(p.kill({}), { code: 'ERR_INVALID_ARG_TYPE' });
  assert.throws(() => p.sendSignal(null), { code: 'ERR_INVALID_ARG_TYPE' });
  assert.equal(p.exitCode, null);
  assert.equal(await p.close(), 0);
});

test('startProcess refuses what it cannot run, with the package errors', async () => {
  const sb = await nativeSandbox();
  await assert.rejects(sb.startProcess('bash'), { code: 'ERR_CODEWARD_SANDBOX_ARGUMENT' });
  await assert.rejects(sb.startProcess('/bin/bash', 'not an array'), { code: 'ERR_INVALID_ARG_TYPE' });
  await assert.rejects(sb.startProcess('/bin/bash', [], { timeoutMs: 5 }), { code: 'ERR_INVALID_ARG_TYPE' });
  await assert.rejects(sb.startProcess('/bin/bash', [], { killGraceMs: 0 }), SandboxArgumentError);
  await assert.rejects(sb.startProcess('/no/such/program'), (err) => {
    assert.ok(err instanceof NativeCoreError, String(err));
    assert.equal(err.code, 'ERR_CODEWARD_CORE');
    assert.match(err.message, /no\/such\/program/);
    return true;
  });
  // env and cwd reach the program
  fs.mkdirSync(path.join(sb.workspace, 'sub'));
  const p = await sb.startProcess('/bin/bash', ['-c', 'echo "$TOKEN $(pwd)"'], { env: { TOKEN: 't0k' }, cwd: 'sub' });
  assert.equal(await firstLine(p.stdout), `t0k ${path.join(sb.workspace, 'sub')}`);
  assert.equal(await p.wait(), 0); // its end, not a race with close()'s TERM (143)
  assert.equal(await p.close(), 0);
  const unavailable = await selectSandbox(workspace(), { sandboxHandle: { exec() {} } });
  assert.equal(typeof unavailable.startProcess, 'undefined');
});
