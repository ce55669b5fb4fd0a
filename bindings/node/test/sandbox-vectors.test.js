'use strict';
// Runs the shared sandbox vectors (tests/vectors/sandbox.json; its description
// states the schema) against a real sandbox, as pytest and go test run them.
//
// ci/npm_package.py runs this file against the package as a user installs it:
// CODEWARD_TEST_INSTALLED names a project whose node_modules holds it, and
// A3S_VECTORS_DIR where the vectors are (when this file was copied there).

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { after, before, describe, test } = require('node:test');

const installedIn = process.env.CODEWARD_TEST_INSTALLED;
const pkgDir = installedIn
  ? path.dirname(require.resolve('codeward/package.json', { paths: [installedIn] }))
  : path.join(__dirname, '..', '..', '..');
const codeward = require(pkgDir);
const { locator } = require(path.join(pkgDir, 'bindings', 'node', 'lib', 'locate.js'));
const { probeCache } = require(path.join(pkgDir, 'bindings', 'node', 'lib', 'sandbox.js'));
const { selectSandbox, SandboxArgumentError, SandboxUnavailableError } = codeward;

const VECTORS = path.join(
  process.env.A3S_VECTORS_DIR || path.join(__dirname, '..', '..', '..', 'tests', 'vectors'),
  'sandbox.json',
);
const data = JSON.parse(fs.readFileSync(VECTORS, 'utf8'));

const SELECT = {
  allow_process_host_sandbox: 'allowProcessHostSandbox',
  strict: 'strict',
  reuse: 'reuse',
  no_landlock: 'noLandlock',
  limits: 'limits',
};
const LIMITS = {
  memory_max_bytes: 'memoryMaxBytes',
  max_processes: 'maxProcesses',
  tmpfs_max_bytes: 'tmpfsMaxBytes',
  inotify_watch_budget: 'inotifyWatchBudget',
  idle_stop_ms: 'idleStopMs',
};
const EXEC = {
  timeout_ms: 'timeoutMs',
  kill_grace_ms: 'killGraceMs',
  max_output_bytes: 'maxOutputBytes',
  env: 'env',
  cwd: 'cwd',
  stream: 'stream',
  exec_rules: 'execRules',
  stdin: 'stdin',
  stdin_repeat: 'stdinRepeat',
};

function camel(obj, names) {
  const out = {};
  for (const [key, value] of Object.entries(obj || {})) {
    assert.ok(key in names, `unknown key ${key}: a schema change this runner does not know`);
    out[names[key]] = key === 'limits' ? camel(value, LIMITS) : value;
  }
  return out;
}

function survivors(marker) {
  const found = [];
  for (const pid of fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    let cmdline;
    try {
      cmdline = fs.readFileSync(`/proc/${pid}/cmdline`);
    } catch {
      continue;
    }
    if (cmdline.includes(marker)) found.push(`${pid}: ${cmdline.toString().replace(/\0/g, ' ')}`);
  }
  return found;
}

function forceRemove(root) {
  const walk = (dir) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) {
        fs.chmodSync(path.join(dir, e.name), 0o700);
        walk(path.join(dir, e.name));
      }
    }
  };
  try {
    walk(root);
  } catch {
    // removed below as far as it goes
  }
  fs.rmSync(root, { recursive: true, force: true });
}

/** Takes bubblewrap away from the locator, and the probe's verdict, until restored. */
function withoutBwrap() {
  const saved = { systemBwrap: locator.systemBwrap, which: locator.which };
  const cache = new Map(probeCache);
  probeCache.clear();
  locator.systemBwrap = [];
  locator.which = (name) => (name === 'bwrap' ? null : saved.which(name));
  return () => {
    Object.assign(locator, saved);
    probeCache.clear();
    for (const [k, v] of cache) probeCache.set(k, v);
  };
}

function makeFile(ws, rel, spec, outside, sub) {
  const file = path.join(ws, rel);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  if (typeof spec === 'string') fs.writeFileSync(file, sub(spec));
  else if (spec.dir) fs.mkdirSync(file);
  else if ('symlink' in spec) fs.symlinkSync(sub(spec.symlink), file);
  else if ('hardlink' in spec) fs.linkSync(path.join(ws, spec.hardlink), file);
  else if ('hardlink_outside' in spec) {
    const target = path.join(outside, `linked-${path.basename(file)}`);
    fs.writeFileSync(target, sub(spec.hardlink_outside));
    fs.linkSync(target, file);
  } else assert.fail(`unknown file spec ${JSON.stringify(spec)}`);
}

function checkError(err, expected, sub) {
  if (expected.kind === 'argument') {
    assert.ok(err instanceof SandboxArgumentError || err instanceof TypeError, `got ${err && err.stack}`);
  } else {
    assert.equal(expected.kind, 'sandbox_unavailable');
    assert.ok(err instanceof SandboxUnavailableError, `got ${err && err.stack}`);
  }
  for (const part of expected.contains || []) assert.ok(err.message.includes(sub(part)), err.message);
}

function checkOutput(out, e, sub) {
  const show = JSON.stringify(out);
  const fields = {
    exit_code: 'exitCode',
    timed_out: 'timedOut',
    truncated: 'truncated',
    total_bytes: 'totalBytes',
    sandboxed: 'sandboxed',
    backend: 'backend',
    oom_killed: 'oomKilled',
  };
  for (const [key, name] of Object.entries(fields)) {
    if (key in e) assert.equal(out[name], e[key], `${name}: ${show}`);
  }
  if ('exec_stopped' in e) {
    const want = e.exec_stopped;
    if (want === null) {
      assert.equal(out.execStopped, null, show);
    } else {
      assert.deepEqual(
        out.execStopped,
        { decision: want.decision, rule: sub(want.rule), command: sub(want.command) },
        show,
      );
    }
  }
  if ('neutralized_contains' in e) {
    assert.ok(out.neutralized.some((line) => line.includes(sub(e.neutralized_contains))), show);
  }
  if ('setup_error_contains' in e) {
    assert.ok(out.setupError && out.setupError.includes(sub(e.setup_error_contains)), show);
  } else {
    assert.equal(out.setupError, null, show);
  }
  for (const stream of ['stdout', 'stderr']) {
    const text = out[stream];
    if (stream in e) assert.equal(text, sub(e[stream]), show);
    for (const part of e[`${stream}_contains`] || []) assert.ok(text.includes(sub(part)), show);
    for (const part of e[`${stream}_lacks`] || []) assert.ok(!text.includes(sub(part)), show);
    if (`${stream}_starts` in e) assert.ok(text.startsWith(sub(e[`${stream}_starts`])), show);
    if (`${stream}_ends` in e) assert.ok(text.endsWith(sub(e[`${stream}_ends`])), show);
    if (`${stream}_max_bytes` in e) {
      assert.ok(Buffer.byteLength(text) <= e[`${stream}_max_bytes`], show);
    }
  }
}

async function runCase(c, port) {
  const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'cw-vec-')));
  const ws = path.join(base, 'ws');
  const outside = path.join(base, 'outside');
  fs.mkdirSync(ws);
  fs.mkdirSync(outside);
  const marker = `cwmark${crypto.randomBytes(6).toString('hex')}`;
  const sub = (text) =>
    text
      .replaceAll('{ws}', ws)
      .replaceAll('{outside}', outside)
      .replaceAll('{marker}', marker)
      .replaceAll('{port}', String(port));
  const savedEnv = { ...process.env };
  const restorers = [];
  const e = c.expect;
  let sb = null;
  try {
    for (const [rel, content] of Object.entries(c.outside_files || {})) {
      fs.mkdirSync(path.dirname(path.join(outside, rel)), { recursive: true });
      fs.writeFileSync(path.join(outside, rel), sub(content));
    }
    for (const [rel, spec] of Object.entries(c.files || {})) makeFile(ws, rel, spec, outside, sub);
    delete process.env.A3S_CODE_ALLOW_PROCESS_HOST_SANDBOX;
    Object.assign(process.env, c.host_env || {});
    if (c.native === 'unavailable') restorers.push(withoutBwrap());
    const workspace = sub(c.workspace || '{ws}');
    const options = camel(c.select, SELECT);
    if (e.error && e.error.at === 'select') {
      await assert.rejects(selectSandbox(workspace, options), (err) => {
        checkError(err, e.error, sub);
        return true;
      });
      return;
    }
    sb = await selectSandbox(workspace, options);
    if ('backend' in e) assert.equal(sb.backend, e.backend);
    if ('sandboxed' in e) assert.equal(sb.sandboxed, e.sandboxed);
    const { command, ...rest } = c.exec;
    const execOptions = camel(rest, EXEC);
    if (execOptions.env) {
      execOptions.env = Object.fromEntries(
        Object.entries(execOptions.env).map(([k, v]) => [sub(k), sub(v)]),
      );
    }
    if (execOptions.execRules) {
      execOptions.execRules = Object.fromEntries(
        Object.entries(execOptions.execRules).map(([k, v]) => [k, v.map(sub)]),
      );
    }
    if (e.error) {
      await assert.rejects(sb.exec(sub(command), execOptions), (err) => {
        checkError(err, e.error, sub);
        return true;
      });
    } else {
      const stream = execOptions.stream;
      delete execOptions.stream;
      if ('stdinRepeat' in execOptions) {
        // a repeated stdin goes as a Buffer, a plain one as the string itself
        execOptions.stdin = Buffer.from(sub(execOptions.stdin).repeat(execOptions.stdinRepeat));
        delete execOptions.stdinRepeat;
      } else if ('stdin' in execOptions) {
        execOptions.stdin = sub(execOptions.stdin);
      }
      const pieces = { stdout: [], stderr: [] };
      if (stream) execOptions.onOutput = (chunk, name) => pieces[name].push(chunk);
      checkOutput(await sb.exec(sub(command), execOptions), e, sub);
      if (stream) {
        const out = Buffer.concat(pieces.stdout);
        const err = Buffer.concat(pieces.stderr);
        if ('streamed_stdout_bytes' in e) assert.equal(out.length, e.streamed_stdout_bytes);
        if ('streamed_stdout_starts' in e) {
          assert.ok(out.toString('utf8').startsWith(sub(e.streamed_stdout_starts)));
        }
        if ('streamed_stderr' in e) assert.equal(err.toString('utf8'), sub(e.streamed_stderr));
      }
    }
  } finally {
    if (sb) await sb.close();
    for (const restore of restorers) restore();
    for (const key of Object.keys(process.env)) if (!(key in savedEnv)) delete process.env[key];
    Object.assign(process.env, savedEnv);
    try {
      if (e.no_survivors) {
        const deadline = Date.now() + 5000;
        while (survivors(marker).length && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 50));
        }
        assert.deepEqual(survivors(marker), []);
      }
      for (const [rel, content] of Object.entries(e.files || {})) {
        const file = path.isAbsolute(sub(rel)) ? sub(rel) : path.join(ws, sub(rel));
        if (content === null) {
          assert.ok(!fs.existsSync(file) && !isLink(file), `${file} exists`);
        } else {
          assert.ok(fs.lstatSync(file).isFile(), file);
          assert.equal(fs.readFileSync(file, 'utf8'), sub(content), file);
        }
      }
    } finally {
      forceRemove(base);
    }
  }
}

function isLink(file) {
  try {
    return fs.lstatSync(file).isSymbolicLink();
  } catch {
    return false;
  }
}

describe('sandbox vectors', { skip: process.platform !== 'linux' && 'the sandbox is Linux-only' }, () => {
  let server;
  let port;
  before(async () => {
    server = net.createServer((socket) => socket.destroy());
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = server.address().port;
  });
  after(() => server.close());

  test('the file holds enough named cases', () => {
    assert.equal(data.schema, 1);
    const names = data.cases.map((c) => c.name);
    assert.ok(names.length >= data.min_cases && data.min_cases >= 40);
    assert.equal(new Set(names).size, names.length);
  });

  test('the native boundary runs here (a security suite fails, it does not skip)', async () => {
    const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'cw-ready-'));
    try {
      const sb = await selectSandbox(ws);
      await sb.close();
      assert.equal(sb.backend, 'bwrap', String(sb));
    } finally {
      fs.rmSync(ws, { recursive: true, force: true });
    }
  });

  for (const c of data.cases) {
    test(c.name, () => runCase(c, port));
  }
});
