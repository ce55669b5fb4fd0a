'use strict';
// What the test files that run commands in a real sandbox share, so that each
// states only what it tests: the package under test, scratch workspaces and
// the sandboxes over them (closed and removed after the file's tests), and the
// host's view of the processes a sandbox runs. Not a test file: package.json
// runs test/*.test.js, and ci/npm_package.py copies this file along with the
// test files it runs as an unprivileged user.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');
const { after } = require('node:test');

// This checkout, or the package installed in the project CODEWARD_TEST_INSTALLED
// names (ci/npm_package.py runs the tests against each kind of install).
const installedIn = process.env.CODEWARD_TEST_INSTALLED;
const pkgDir = installedIn
  ? path.dirname(require.resolve('codeward/package.json', { paths: [installedIn] }))
  : path.join(__dirname, '..', '..', '..');
const codeward = require(pkgDir);

/**
 * Scratch space for one test file: `workspace()` makes a fresh directory
 * (its real path) named `${prefix}…` under the host's temp directory, and
 * `nativeSandbox(options)` selects a sandbox over a fresh one and fails the
 * test unless it is the native (bwrap) sandbox. After the file's tests every
 * sandbox is closed (close() is safe to call again on one a test closed), then
 * each function given to `closeAfter` is awaited, then the directories go.
 */
function scratch(prefix) {
  const dirs = [];
  const closers = [];
  const closeAfter = (close) => closers.push(close);
  function workspace() {
    const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
    dirs.push(dir);
    return dir;
  }
  async function nativeSandbox(options) {
    const sb = await codeward.selectSandbox(workspace(), options);
    assert.equal(sb.backend, 'bwrap', `the native sandbox cannot run here: ${sb}`);
    closeAfter(() => sb.close());
    return sb;
  }
  after(async () => {
    for (const close of closers) await close();
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });
  return { workspace, nativeSandbox, closeAfter };
}

/** A word no other process on the machine carries: `${tag}`, this pid and a random part. */
const newMarker = (tag) => `${tag}${process.pid}x${Math.random().toString(36).slice(2)}`;

/**
 * The pids on this machine (a sandbox's processes are visible from the host)
 * for which `holds(pid)` is true; a process that ends while `holds` reads its
 * /proc entry, so that the read throws, is left out.
 */
function pidsWhere(holds) {
  return fs
    .readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n))
    .filter((pid) => {
      try {
        return holds(pid);
      } catch {
        return false;
      }
    });
}

/** Whether pid runs (a zombie, or a pid that is gone, does not). */
function running(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/* The first line a program writes on `stream`, or null if it ends without one. */
async function firstLine(stream) {
  const lines = readline.createInterface({ input: stream });
  for await (const line of lines) {
    lines.close();
    return line;
  }
  return null;
}

module.exports = { pkgDir, codeward, scratch, newMarker, pidsWhere, running, firstLine };
