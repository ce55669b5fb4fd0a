'use strict';
// The timeout bounds when the result comes, also with a process in D state
// (issue 22; the C core's exec, as Python's tests/sandbox/test_proc_outlived.py
// measures it): a process frozen by the cgroup v1 freezer does not die of
// SIGKILL until thawed, and the result comes without it, saying outlived.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { test } = require('node:test');

const installedIn = process.env.CODEWARD_TEST_INSTALLED;
const pkgDir = installedIn
  ? path.dirname(require.resolve('codeward/package.json', { paths: [installedIn] }))
  : path.join(__dirname, '..', '..', '..');
const { selectSandbox } = require(pkgDir);

const FREEZER = '/sys/fs/cgroup/freezer';
const canFreeze = process.getuid?.() === 0 && fs.existsSync(path.join(FREEZER, 'cgroup.procs'));
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The pids of the command itself (python3 naming the marker). */
function commandPids(marker) {
  return fs.readdirSync('/proc').filter((pid) => {
    if (!/^\d+$/.test(pid)) return false;
    try {
      const argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1');
      // python3, maybe by its full path; not bubblewrap, the init or bash naming it
      return path.basename(argv.split('\0')[0]).startsWith('python') && argv.includes(marker);
    } catch {
      return false;
    }
  });
}

async function freezeWhenStarted(group, marker) {
  for (let i = 0; i < 3000; i++) {
    const moved = commandPids(marker).filter((pid) => {
      try {
        fs.writeFileSync(path.join(group, 'cgroup.procs'), pid);
        return true;
      } catch {
        return false;
      }
    });
    if (moved.length) {
      fs.writeFileSync(path.join(group, 'freezer.state'), 'FROZEN');
      return moved;
    }
    await sleep(10);
  }
  return [];
}

test('a 2 s timeout answers without a process in D state, which writes nothing later', {
  skip: canFreeze ? false : 'needs root and the cgroup v1 freezer (its frozen tasks ignore SIGKILL)',
}, async () => {
  const ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'cw-node-')));
  // not codeward-*: a handle's first start sweeps those
  const group = path.join(FREEZER, `outlived-node-${process.pid}-${Date.now()}`);
  fs.mkdirSync(group);
  const sb = await selectSandbox(ws);
  try {
    assert.equal(sb.backend, 'bwrap');
    await sb.exec('true');
    const marker = `cwnode${process.pid}x${Math.random().toString(36).slice(2)}`;
    const frozen = freezeWhenStarted(group, marker);
    const start = Date.now();
    const out = await sb.exec(
      `python3 -c 'import time; time.sleep(2.5); open("late.txt", "w").write("${marker}")'`,
      { timeoutMs: 2000 }, // the default grace
    );
    const elapsed = Date.now() - start;
    assert.ok((await frozen).length, 'nothing was frozen');
    assert.ok(out.timedOut && out.exitCode === 124 && out.outlived, JSON.stringify(out));
    // timeout + grace (0.5 s) + the init's reap (0.25 s), with generous slack
    assert.ok(elapsed < 2750 + 2500, `the result took ${elapsed} ms`);
    console.log(`2 s timeout, a frozen process: the result came in ${elapsed} ms`);
    fs.writeFileSync(path.join(group, 'freezer.state'), 'THAWED');
    for (let i = 0; i < 200 && commandPids(marker).length; i++) await sleep(50);
    await sleep(3000); // past the moment it would have written
    assert.ok(!fs.existsSync(path.join(ws, 'late.txt')), 'the frozen process wrote after the result');
  } finally {
    fs.writeFileSync(path.join(group, 'freezer.state'), 'THAWED');
    for (let i = 0; i < 200; i++) {
      if (!fs.readFileSync(path.join(group, 'cgroup.procs'), 'utf8').trim()) break;
      await sleep(50);
    }
    fs.rmdirSync(group);
    await sb.close();
    fs.rmSync(ws, { recursive: true, force: true });
  }
});
