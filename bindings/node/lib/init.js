'use strict';
// a3s-init, the sandbox's PID 1, ships with the addon: node-gyp builds it next
// to the addon (build/Release/a3s-init) and the linux-x64 prebuild carries one
// (prebuilds/linux-x64/a3s-init, static), so the init is always the one that
// belongs to the addon that was loaded, with nothing to download, configure
// or put on PATH (docs/architecture.md, "The init in each package").

const fs = require('node:fs');
const path = require('node:path');
const nodeGypBuild = require('node-gyp-build');

const root = path.join(__dirname, '..', '..', '..');

/** The absolute path of the a3s-init next to the loaded addon, or null. */
function initPath() {
  let addon;
  try {
    addon = nodeGypBuild.path(root);
  } catch {
    return null;
  }
  const candidate = path.join(path.dirname(fs.realpathSync(addon)), 'a3s-init');
  try {
    fs.accessSync(candidate, fs.constants.X_OK);
    return fs.statSync(candidate).isFile() ? candidate : null;
  } catch {
    return null;
  }
}

module.exports = { initPath };
