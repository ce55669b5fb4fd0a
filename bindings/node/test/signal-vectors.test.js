'use strict';
// The shared owned-process signal vectors (tests/vectors/owned_signals.json;
// its description states the schema): what OwnedProcess.sendSignal and kill
// take as a signal, the error of what they refuse, and how a stop whose first
// signal is the caller's ends a real sandboxed program, as pytest
// (tests/mcp/test_signal_vectors.py) and go test (signal_vectors_test.go) run
// the same file.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { test } = require('node:test');

const { codeward, scratch, pidsWhere, running, firstLine } = require('./sandboxkit.js');

const { SandboxArgumentError, ArgumentTypeError } = codeward;
const { nativeSandbox } = scratch('cw-sigvec-');

const VECTORS = process.env.A3S_VECTORS_DIR || path.join(__dirname, '..', '..', '..', 'tests', 'vectors');
const { signals, behaviour } = JSON.parse(fs.readFileSync(path.join(VECTORS, 'owned_signals.json'), 'utf8'));
const ERRORS = { argument: SandboxArgumentError, type: ArgumentTypeError };

/** The live pids whose command line holds `text` (the workspace is this test's own). */
function holding(text) {
  return pidsWhere((pid) => running(pid) && fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes(text));
}

test('the vectors are well formed', () => {
  const names = [...signals, ...behaviour].map((c) => c.name);
  assert.equal(new Set(names).size, names.length);
  assert.ok(signals.length >= 12 && behaviour.length >= 3);
});

test('what each signal is (sendSignal and kill of a program that has ended)', async () => {
  const sb = await nativeSandbox();
  const p = await sb.startProcess('/bin/sh', ['-c', 'exit 5']);
  assert.equal(await p.wait(), 5);
  for (const c of signals) {
    const expect = c.node ?? c.expect;
    if (expect === 'not_representable') continue;
    if (expect.refused) {
      const error = ERRORS[expect.refused];
      assert.throws(() => p.sendSignal(c.signal), error, c.name);
      await assert.rejects(p.kill(c.signal), error, c.name);
    } else {
      p.sendSignal(c.signal); // nothing to signal, no error
      assert.equal(await p.kill(c.signal), 5, c.name);
    }
  }
  await p.close();
});

for (const c of behaviour) {
  test(`how a stop ends a program: ${c.name}`, async () => {
    const sb = await nativeSandbox();
    const script = path.join(sb.workspace, `${c.name}.sh`);
    fs.writeFileSync(script, c.script, { mode: 0o755 });
    const p = await sb.startProcess('/bin/sh', [script], { killGraceMs: c.kill_grace_ms });
    try {
      assert.equal(await firstLine(p.stdout), 'ready');
      for (let waited = 0; waited < 30_000 && holding(script).length < c.running; waited += 20) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.ok(holding(script).length >= c.running, `${c.running} processes of it run`);
      const started = performance.now();
      assert.equal(await p.kill(c.stop), c.expect.status);
      const elapsed = performance.now() - started;
      if (c.expect.before_grace) assert.ok(elapsed < c.kill_grace_ms, 'the stop waited the grace');
      else assert.ok(elapsed >= c.kill_grace_ms - 50, `killed before the grace (${elapsed} ms)`);
      const marker = `${script}.marker`;
      if (c.expect.marker === null) assert.equal(fs.existsSync(marker), false);
      else assert.equal(fs.readFileSync(marker, 'utf8'), c.expect.marker);
      assert.equal(holding(script).length, c.expect.left, 'what is left once the stop resolved');
    } finally {
      await p.close();
    }
  });
}
