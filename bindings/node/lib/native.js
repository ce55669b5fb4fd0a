'use strict';
// Loads the compiled addon (binding.c + the C core). A missing build is the
// usual first-run mistake, so the error says how to make one.

const path = require('node:path');

const root = path.join(__dirname, '..');
const candidates = ['build/Release/a3s_node.node', 'build/Debug/a3s_node.node'];

function load() {
  let firstError = null;
  for (const rel of candidates) {
    try {
      return require(path.join(root, rel));
    } catch (err) {
      if (err && err.code !== 'MODULE_NOT_FOUND') throw err;
      firstError = firstError || err;
    }
  }
  const err = new Error(
    `codeward: the native addon is not built (looked for ${candidates.join(', ')} in ${root}); ` +
      'run `npm run build` in bindings/node',
  );
  err.cause = firstError;
  throw err;
}

module.exports = load();
