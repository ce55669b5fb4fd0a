'use strict';
// Runs `node-gyp rebuild` against the headers of the Node that runs this
// script, so that a machine with the headers installed (Debian's nodejs puts
// them in /usr/include/node, an official tarball in <prefix>/include/node)
// never downloads anything. Without local headers node-gyp falls back to its
// usual download. Extra arguments are passed to node-gyp (e.g. --debug).

const { spawnSync } = require('node:child_process');
const path = require('node:path');
const { localNodeDir } = require('./nodedir');

/** node-gyp's entry script: the devDependency, else the copy npm ships. */
function nodeGypScript() {
  try {
    return require.resolve('node-gyp/bin/node-gyp.js');
  } catch {
    if (process.env.npm_config_node_gyp) return process.env.npm_config_node_gyp;
    throw new Error('node-gyp not found: run `npm install` first');
  }
}

const args = [nodeGypScript(), 'rebuild', ...process.argv.slice(2)];
const nodedir = localNodeDir();
if (nodedir) args.push(`--nodedir=${nodedir}`);
const result = spawnSync(process.execPath, args, { cwd: path.join(__dirname, '..', '..', '..'), stdio: 'inherit' });
process.exit(result.status === null ? 1 : result.status);
