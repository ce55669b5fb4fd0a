'use strict';
// Loads the compiled addon (binding.c + the C core) through node-gyp-build,
// which takes, from the package root, a local build (build/Release, made by
// `npm run build` or by an install that compiled from source) or else the
// prebuilt binary for this platform (prebuilds/<platform>-<arch>/). When
// there is neither, the error says how to make one.

const path = require('node:path');
const nodeGypBuild = require('node-gyp-build');

const root = path.join(__dirname, '..', '..', '..');

function load() {
  try {
    return nodeGypBuild(root);
  } catch (err) {
    if (!/^No native build was found/.test(String(err && err.message))) throw err;
    const hint = new Error(
      `codeward: no native addon for this platform in ${root} and no prebuilt one fits it ` +
        `(${err.message.split('\n')[0].replace(/^No native build was found for /, '')}); ` +
        'compile one with `npm rebuild codeward` (needs a C11 compiler, make and Python 3), ' +
        'or `npm run build` in a checkout of the repository',
    );
    hint.cause = err;
    throw hint;
  }
}

module.exports = load();
