'use strict';
// Every js example of the READMEs and docs/*.md runs as written, with `require('codeward')`
// resolving to this package (tests/test_doc_examples.py runs the python and sh ones and
// explains the `<!-- example: not run (reason) -->` mark).

const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { test } = require('node:test');

const ROOT = path.join(__dirname, '..', '..', '..');
const installedIn = process.env.CODEWARD_TEST_INSTALLED;
const pkgDir = installedIn
  ? path.dirname(require.resolve('codeward/package.json', { paths: [installedIn] }))
  : ROOT;
const FILES = [
  'README.md',
  ...fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`),
  'bindings/node/README.md',
].filter((f) => fs.existsSync(path.join(ROOT, f)));

function jsBlocks() {
  const found = [];
  for (const file of FILES) {
    const lines = fs.readFileSync(path.join(ROOT, file), 'utf8').split('\n');
    for (let i = 0; i < lines.length; i++) {
      if (lines[i] !== '```js') continue;
      const end = lines.indexOf('```', i + 1);
      const marked = i > 0 && /^<!-- example: not run \(.+\) -->$/.test(lines[i - 1].trim());
      if (!marked) found.push({ id: `${file}:${i + 1}`, code: lines.slice(i + 1, end).join('\n') });
      i = end;
    }
  }
  return found;
}

const blocks = jsBlocks();

test('the js examples are found', () => {
  assert.ok(blocks.length >= 3, JSON.stringify(blocks.map((b) => b.id)));
});

for (const block of blocks) {
  test(`${block.id} runs as written`, () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cw-doc-'));
    try {
      fs.mkdirSync(path.join(dir, 'node_modules'));
      fs.symlinkSync(pkgDir, path.join(dir, 'node_modules', 'codeward'));
      fs.writeFileSync(path.join(dir, 'example.js'), block.code);
      const r = spawnSync(process.execPath, ['example.js'], {
        cwd: dir,
        encoding: 'utf8',
        timeout: 600_000, // a hang guard only
      });
      assert.equal(r.status, 0, `${block.id}:\n${r.stdout}\n${r.stderr}`);
      assert.equal(r.stderr.includes('Unhandled'), false, r.stderr);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
}
