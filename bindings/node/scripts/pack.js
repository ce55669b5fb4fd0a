'use strict';
// npm's pack hooks (package.json "prepack", "postpack"), so that `npm pack`
// and `npm publish` make the tarball CI tests, from any checkout:
//
//   prepack   refuses, naming the one command to run, unless prebuilds/
//             holds the linux-x64 prebuild and its a3s-init built from these
//             very sources (a stamp written when they were built says which);
//             then puts bindings/node/README.md in place of the repository's
//             README.md (npm always ships the root README; the Node one is
//             the package's), its relative links made absolute;
//   postpack  puts the repository's README.md back.
//   stamp     writes the stamp (ci/npm_package.py, after building the prebuild).
//
// A pack that died between the two leaves .pack-saved-readme.md behind; the
// next prepack or postpack restores it first.

const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.join(__dirname, '..', '..', '..');
const PREBUILD_DIR = path.join(ROOT, 'prebuilds', 'linux-x64');
const PREBUILD = ['codeward.glibc.node', 'a3s-init'];
const STAMP = path.join(PREBUILD_DIR, 'SOURCES.sha256');
const README = path.join(ROOT, 'README.md');
const SAVED = path.join(ROOT, '.pack-saved-readme.md'); // not README*: npm ships those
const NODE_README = path.join(ROOT, 'bindings', 'node', 'README.md');
const REPO_BLOB = 'https://github.com/codeward/codeward/blob/main/';
const BUILD_COMMAND = 'python3 ci/npm_package.py --prebuild-only';

/** The files the addon and its init are compiled from, relative to the root, sorted. */
function sources() {
  const out = ['binding.gyp', 'package.json'];
  const walk = (rel) => {
    for (const entry of fs.readdirSync(path.join(ROOT, rel), { withFileTypes: true })) {
      const child = `${rel}/${entry.name}`;
      if (entry.isDirectory()) walk(child);
      else if (/\.(c|h)$/.test(entry.name)) out.push(child);
    }
  };
  ['bindings/node', 'native/src', 'native/include', 'native/init'].forEach(walk);
  return out.filter((f) => !f.startsWith('bindings/node/test/')).sort();
}

/** sha256 over each source's path and bytes. */
function digest() {
  const h = crypto.createHash('sha256');
  for (const rel of sources()) {
    h.update(`${rel}\0`);
    h.update(fs.readFileSync(path.join(ROOT, rel)));
    h.update('\0');
  }
  return h.digest('hex');
}

function restoreReadme() {
  if (fs.existsSync(SAVED)) fs.renameSync(SAVED, README);
}

function prepack() {
  restoreReadme();
  const missing = PREBUILD.filter((f) => !fs.existsSync(path.join(PREBUILD_DIR, f)));
  let why = null;
  if (missing.length) why = `prebuilds/linux-x64/ lacks ${missing.join(', ')}`;
  else if (!fs.existsSync(STAMP) || fs.readFileSync(STAMP, 'utf8').trim() !== digest()) {
    why = 'the prebuild in prebuilds/linux-x64/ was built from other sources than these';
  }
  if (why) {
    process.stderr.write(
      `codeward: npm pack refused: ${why}. The package ships a prebuilt addon (a plain ` +
        `\`npm install --ignore-scripts\` loads it); build it first with:\n\n    ${BUILD_COMMAND}\n\n` +
        '(it needs zig: pip install ziglang), then run npm pack (or npm publish) again.\n',
    );
    process.exit(1);
  }
  const text = fs
    .readFileSync(NODE_README, 'utf8')
    .replace(/\]\(\.\.\/\.\.\/([^)]+)\)/g, (_m, target) => `](${REPO_BLOB}${target})`);
  fs.renameSync(README, SAVED);
  fs.writeFileSync(README, text);
}

const command = process.argv[2];
if (command === 'prepack') prepack();
else if (command === 'postpack') restoreReadme();
else if (command === 'stamp') fs.writeFileSync(STAMP, `${digest()}\n`);
else {
  process.stderr.write('usage: node bindings/node/scripts/pack.js prepack|postpack|stamp\n');
  process.exit(2);
}
