'use strict';
// The Node side of the sandbox: the event loop, AbortSignal, options, close,
// and the caller's death (a worker that exits or is terminated, a process
// killed with SIGKILL). The shared vectors (sandbox-vectors.test.js) hold the
// boundary itself.

const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { describe, test } = require('node:test');
const { Worker } = require('node:worker_threads');

const { pkgDir, codeward, scratch, newMarker, pidsWhere, running } = require('./sandboxkit.js');

const { kInfo } = require(path.join(pkgDir, 'bindings', 'node', 'lib', 'sandbox.js'));
const { initPath } = require(path.join(pkgDir, 'bindings', 'node', 'lib', 'init.js'));
const { selectSandbox, SandboxArgumentError } = codeward;
const native = require(path.join(pkgDir, 'bindings', 'node', 'lib', 'native.js'));
// missing protected names kept missing inside the sandbox (Linux 5.14), not by placeholders
const namesEmulated =
  native.features().namesEmulated && process.env.A3S_CODE_PROTECT_NAMES !== 'placeholders';

/** The host's view of a workspace: each entry with its mode and inode, and an lstat of every
 * protected name (null where it is missing). */
function hostListing(ws) {
  const view = {};
  for (const name of fs.readdirSync(ws).sort()) {
    const st = fs.lstatSync(path.join(ws, name));
    view[name] = [st.mode, st.ino];
  }
  for (const name of ['.git', '.vscode', '.claude', '.mcp.json', '.bashrc', '.gitmodules', '.profile']) {
    try {
      const st = fs.lstatSync(path.join(ws, name));
      view[`lstat ${name}`] = [st.mode, st.ino];
    } catch {
      view[`lstat ${name}`] = null;
    }
  }
  return view;
}

const { workspace, nativeSandbox } = scratch('cw-node-');

const marker = () => newMarker('cwnode');

/** The pids on this machine whose command line holds `m` (a sandbox's pids are visible here). */
function survivors(m) {
  return pidsWhere((pid) => fs.readFileSync(`/proc/${pid}/cmdline`).includes(m));
}

async function eventually(check, what, ms = 10000) {
  const deadline = Date.now() + ms;
  while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  assert.ok(check(), what);
}

const linuxOnly = { skip: process.platform !== 'linux' && 'the sandbox is Linux-only' };

describe('the sandbox from Node', linuxOnly, () => {
  test('the init ships next to the loaded addon', () => {
    const init = initPath();
    assert.ok(init && path.isAbsolute(init), `no a3s-init in ${pkgDir}`);
    const addon = require('node-gyp-build').path(pkgDir);
    assert.equal(path.dirname(init), path.dirname(fs.realpathSync(addon)));
  });

  test('an init in the workspace runs only with the bytes the addon was built with', async () => {
    // a project with codeward in its node_modules, where a command can rewrite the init
    const native = require(path.join(pkgDir, 'bindings', 'node', 'lib', 'native.js'));
    const ws = workspace();
    const copy = path.join(ws, 'node_modules', 'codeward', 'a3s-init');
    fs.mkdirSync(path.dirname(copy), { recursive: true });
    fs.copyFileSync(initPath(), copy);
    fs.chmodSync(copy, 0o755);
    const limits = [0n, 0n, 0n, 0n, 0n];
    const h = new native.NativeSandbox(ws, copy, null, native.SANDBOX_PROCESS_HOST, limits, []);
    h.close();
    const bytes = fs.readFileSync(copy);
    bytes[bytes.length - 1] ^= 1;
    fs.writeFileSync(copy, bytes);
    assert.throws(
      () => new native.NativeSandbox(ws, copy, null, native.SANDBOX_PROCESS_HOST, limits, []),
      (err) => err.message.includes(copy) && err.message.includes('changed since the package was built'),
    );
  });

  test('a 2 s command runs off the event loop: a timer keeps ticking', async () => {
    const sb = await nativeSandbox();
    try {
      let ticks = 0;
      const timer = setInterval(() => ticks++, 50);
      const out = await sb.exec('sleep 2; echo done');
      clearInterval(timer);
      assert.equal(out.stdout, 'done\n');
      // a blocked loop would tick once, at most, when the command is over
      assert.ok(ticks >= 10, `the event loop ticked ${ticks} times in 2 s`);
    } finally {
      await sb.close();
    }
  });

  test('an AbortSignal kills the whole tree, a setsid daemon included', async () => {
    for (const reuse of [true, false]) {
      const sb = await nativeSandbox({ reuse });
      try {
        const m = marker();
        const ac = new AbortController();
        const run = sb.exec(
          `touch started; setsid bash -c '(exec -a ${m} sleep 60) &'; exec -a ${m} sleep 60`,
          { signal: ac.signal, killGraceMs: 200 },
        );
        await eventually(() => fs.existsSync(path.join(sb.workspace, 'started')), 'not started');
        ac.abort();
        await assert.rejects(run, (err) => {
          assert.equal(err.name, 'AbortError');
          assert.ok(err.output.cancelled && err.output.exitCode === 124, JSON.stringify(err.output));
          return true;
        });
        await eventually(() => survivors(m).length === 0, `survivors: ${survivors(m)}`);
        assert.equal((await sb.exec('echo next')).stdout, 'next\n');
      } finally {
        await sb.close();
      }
    }
  });

  test('an aborted signal runs nothing', async () => {
    const sb = await nativeSandbox();
    try {
      await assert.rejects(sb.exec('touch ran', { signal: AbortSignal.abort() }), { name: 'AbortError' });
      assert.ok(!fs.existsSync(path.join(sb.workspace, 'ran')));
    } finally {
      await sb.close();
    }
  });

  test('unknown option keys are a TypeError, naming the camelCase key', async () => {
    const ws = workspace();
    await assert.rejects(selectSandbox(ws, { allow_process_host_sandbox: true }), {
      name: 'TypeError',
      message: /did you mean 'allowProcessHostSandbox'/,
    });
    await assert.rejects(selectSandbox(ws, { limits: { memory: 1 } }), TypeError);
    await assert.rejects(selectSandbox(ws, { reuse: 'yes' }), TypeError);
    await assert.rejects(selectSandbox(ws, { limits: { maxProcesses: -1 } }), SandboxArgumentError);
    const sb = await nativeSandbox();
    try {
      await assert.rejects(sb.exec('true', { timeout_ms: 5 }), /did you mean 'timeoutMs'/);
      await assert.rejects(sb.exec('true', { cancel: null }), /signal/);
      await assert.rejects(sb.exec('true', { timeoutMs: '5' }), TypeError);
      await assert.rejects(sb.exec('true', { timeoutMs: 0 }), SandboxArgumentError);
      await assert.rejects(sb.exec('true', { env: { A: 1 } }), TypeError);
      await assert.rejects(sb.exec(42), TypeError);
      await assert.rejects(sb.exec('cat', { stdin: 42 }), { code: 'ERR_INVALID_ARG_TYPE' });
      await assert.rejects(sb.exec('cat', { stdin: [1, 2] }), TypeError);
    } finally {
      await sb.close();
    }
  });

  test('stdin is copied when exec is called: changing the Buffer afterwards changes nothing', async () => {
    const sb = await nativeSandbox();
    try {
      const input = Buffer.from('before\n');
      const running = sb.exec('sleep 0.2; cat', { stdin: input });
      input.write('after!\n');
      assert.equal((await running).stdout, 'before\n');
      const bytes = new Uint8Array([0, 255, 10]);
      const out = await sb.exec('od -An -tu1', { stdin: bytes });
      assert.deepEqual(out.stdout.trim().split(/\s+/), ['0', '255', '10']);
    } finally {
      await sb.close();
    }
  });

  test('the exec check stops a denied program and says so in execStopped', async () => {
    const sb = await nativeSandbox();
    try {
      const line =
        "mkdir -p bin && printf '#!/bin/sh\\ntouch ran\\n' > bin/git && chmod +x bin/git && " +
        'PATH="$PWD/bin:$PATH"; x="git push"; $x';
      const out = await sb.exec(line, { execRules: { deny: ['git push**'] } });
      assert.equal(out.exitCode, 126, out.stderr);
      assert.deepEqual(out.execStopped, {
        decision: 'deny',
        rule: 'bash(git push**)',
        command: 'git push',
      });
      assert.match(out.stderr, /codeward: stopped exec of `git push`/);
      const ran = await sb.exec('test -e ran && echo ran || echo never');
      assert.equal(ran.stdout, 'never\n');
      assert.equal(ran.execStopped, null);
      const asked = await sb.exec('PATH="$PWD/bin:$PATH" bash -c "git push"', {
        execRules: { ask: ['git push**'], approved: ['git push'] },
      });
      assert.equal(asked.exitCode, 0, asked.stderr);
      assert.equal(asked.execStopped, null);
      await assert.rejects(
        sb.exec('true', { execRules: { deny: 'git push**' } }),
        TypeError,
      );
      await assert.rejects(sb.exec('true', { execRules: { nope: [] } }), TypeError);
    } finally {
      await sb.close();
    }
  });

  test('commands run side by side in one sandbox', async () => {
    const sb = await nativeSandbox();
    try {
      const outs = await Promise.all(
        Array.from({ length: 12 }, (_, i) => sb.exec(`sleep 0.$((RANDOM % 3)); echo ${i}`)),
      );
      outs.forEach((out, i) => assert.equal(out.stdout, `${i}\n`));
    } finally {
      await sb.close();
    }
  });

  // Sandboxes of their own started, used and closed at once (issue 26): each exec
  // runs on a thread of libuv's pool, and every start forks an intermediate child
  // that used to hold the other starts' pipes and wait on them forever.
  test('many sandboxes start at once on the thread pool', async () => {
    const rounds = await Promise.all(
      Array.from({ length: 8 }, async (_, i) => {
        for (let r = 0; r < 3; r++) {
          const sb = await nativeSandbox();
          try {
            const out = await sb.exec(`echo ${i}-${r}`);
            assert.equal(out.stdout, `${i}-${r}\n`);
          } finally {
            await sb.close();
          }
        }
        return i;
      }),
    );
    assert.equal(rounds.length, 8);
  });

  test('close cancels running commands, is final and can be repeated', async () => {
    const sb = await nativeSandbox();
    const m = marker();
    const runs = [0, 1].map((i) =>
      sb.exec(`touch s${i}; exec -a ${m} sleep 60`, { killGraceMs: 200 }).then(
        (out) => assert.fail(`not cancelled: ${JSON.stringify(out)}`),
        (err) => err,
      ),
    );
    await eventually(
      () => fs.existsSync(path.join(sb.workspace, 's0')) && fs.existsSync(path.join(sb.workspace, 's1')),
      'not started',
    );
    const { pid } = sb[kInfo]();
    await sb.close();
    for (const err of await Promise.all(runs)) {
      assert.ok(err.code === 'ERR_SANDBOX_CLOSED' && err.output.cancelled, err.stack);
    }
    assert.deepEqual(survivors(m), []);
    assert.ok(!running(pid), 'the long-lived sandbox outlived close()');
    assert.ok(!fs.existsSync(path.join(sb.workspace, '.bashrc')), 'a placeholder outlived close()');
    await assert.rejects(sb.exec('true'), { code: 'ERR_SANDBOX_CLOSED' });
    await sb.close();
  });

  // A worker that selects a sandbox, runs a command and posts the bubblewrap
  // pid, then either exits without closing or starts a long command.
  const WORKER = `
    const { parentPort, workerData } = require('node:worker_threads');
    const { selectSandbox } = require(workerData.pkg);
    const { kInfo } = require(workerData.pkg + '/bindings/node/lib/sandbox.js');
    (async () => {
      const sb = await selectSandbox(workerData.ws);
      await sb.exec('true');
      if (workerData.long) sb.exec('touch started; exec -a ' + workerData.marker + ' sleep 120');
      parentPort.postMessage(sb[kInfo]().pid);
      // then it ends when told (the exec above keeps it up until it is terminated)
      parentPort.once('message', () => parentPort.close());
    })();
  `;

  test('a worker that exits without closing leaves nothing behind', async () => {
    const ws = workspace();
    const worker = new Worker(WORKER, { eval: true, workerData: { pkg: pkgDir, ws } });
    const pid = await new Promise((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    assert.ok(running(pid));
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    worker.postMessage('go');
    await exited;
    await eventually(() => !running(pid), `the sandbox (init ${pid}) outlived its worker`);
    assert.ok(!fs.existsSync(path.join(ws, '.bashrc')), 'the worker left a placeholder');
  });

  test('worker.terminate() during a command takes it down', async () => {
    const ws = workspace();
    const m = marker();
    const worker = new Worker(WORKER, { eval: true, workerData: { pkg: pkgDir, ws, long: true, marker: m } });
    const pid = await new Promise((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    await eventually(() => fs.existsSync(path.join(ws, 'started')), 'not started');
    assert.ok(survivors(m).length > 0);
    await worker.terminate();
    await eventually(() => survivors(m).length === 0, `survivors: ${survivors(m)}`);
    await eventually(() => !running(pid), `the sandbox (init ${pid}) outlived its worker`);
  });

  test("the host's own code inside the workspace is read-only in the sandbox", async () => {
    const ws = workspace();
    fs.mkdirSync(path.join(ws, 'app'));
    const main = path.join(ws, 'app', 'main.js');
    fs.writeFileSync(
      main,
      `const { selectSandbox } = require(${JSON.stringify(pkgDir)});
      (async () => {
        const sb = await selectSandbox(${JSON.stringify(ws)});
        const out = await sb.exec("echo 'process.exit(9)' >> app/main.js; echo app=$?; " +
          'echo mine > project.txt; echo project=$?');
        console.log(JSON.stringify({ stdout: out.stdout }));
        await sb.close();
      })();`,
    );
    const before = fs.readFileSync(main, 'utf8');
    const child = spawn(process.execPath, [main], { stdio: ['ignore', 'pipe', 'inherit'] });
    let text = '';
    child.stdout.on('data', (d) => (text += d));
    await new Promise((resolve) => child.once('exit', resolve));
    const out = JSON.parse(text);
    assert.equal(out.stdout, 'app=1\nproject=0\n');
    assert.equal(fs.readFileSync(main, 'utf8'), before);
    assert.equal(fs.readFileSync(path.join(ws, 'project.txt'), 'utf8'), 'mine\n');
  });

  test("the host's listing of the workspace is the same while a sandbox is open", { skip: !namesEmulated }, async () => {
    for (const reuse of [true, false]) {
      const ws = workspace();
      fs.mkdirSync(path.join(ws, 'sub'));
      fs.writeFileSync(path.join(ws, 'README'), 'mine\n');
      const before = hostListing(ws);
      const sb = await selectSandbox(ws, { reuse });
      assert.equal(sb.backend, 'bwrap');
      await sb.exec('true');
      assert.deepEqual(hostListing(ws), before, `reuse=${reuse}: the open sandbox shows`);
      const pending = sb.exec('echo go > sub/started; sleep 2; echo x > .mcp.json; mkdir .vscode');
      await eventually(() => fs.existsSync(path.join(ws, 'sub', 'started')), 'not started');
      assert.deepEqual(hostListing(ws), before, `reuse=${reuse}: a running command shows`);
      const out = await pending;
      assert.match(out.stderr, /\.mcp\.json: Permission denied/);
      await sb.close();
      assert.deepEqual(hostListing(ws), before, `reuse=${reuse}: something was left`);
    }
  });

  test('a process killed with SIGKILL leaves no process and no placeholder behind', async () => {
    const ws = workspace();
    const m = marker();
    const script = `
      const { selectSandbox } = require(${JSON.stringify(pkgDir)});
      const { kInfo } = require(${JSON.stringify(path.join(pkgDir, 'bindings/node/lib/sandbox.js'))});
      (async () => {
        const sb = await selectSandbox(${JSON.stringify(ws)});
        await sb.exec('true');
        sb.exec('touch started; exec -a ${m} sleep 120');
        console.log(sb[kInfo]().pid);
      })();`;
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const pid = await new Promise((resolve) => child.stdout.once('data', (d) => resolve(Number(d))));
    await eventually(() => fs.existsSync(path.join(ws, 'started')), 'not started');
    // a placeholder while it runs on the fallback; nothing at all with the emulation
    assert.equal(fs.existsSync(path.join(ws, '.bashrc')), !namesEmulated);
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    await eventually(() => survivors(m).length === 0, `survivors: ${survivors(m)}`);
    await eventually(() => !running(pid), `the sandbox (init ${pid}) outlived its caller`);
    // its janitor removes the placeholders once the sandbox is gone (milliseconds)
    await eventually(
      () => fs.readdirSync(ws).join(' ') === 'started',
      `left in the workspace: ${fs.readdirSync(ws)}`
    );
  });
});
