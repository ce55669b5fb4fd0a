'use strict';
// Runs `node-gyp rebuild` against the headers of the Node that runs this
// script, so that a machine with the headers installed (Debian's nodejs puts
// them in /usr/include/node, an official tarball in <prefix>/include/node)
// never downloads anything. Without local headers node-gyp falls back to its
// usual download. Extra arguments are passed to node-gyp (e.g. --debug).

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

/** The install prefix whose include/node matches the running Node, or null. */
function localNodeDir() {
  const candidates = [
    process.env.A3S_NODEDIR,
    process.config.variables.node_prefix,
    path.resolve(path.dirname(process.execPath), '..'),
    '/usr',
  ].filter(Boolean);
  const [major, minor, patch] = process.versions.node.split('.');
  for (const dir of candidates) {
    const header = path.join(dir, 'include', 'node', 'node_version.h');
    let text;
    try {
      text = fs.readFileSync(header, 'utf8');
    } catch {
      continue;
    }
    const version = (name) => (text.match(new RegExp(`#define NODE_${name}_VERSION (\\d+)`)) || [])[1];
    if (version('MAJOR') === major && version('MINOR') === minor && version('PATCH') === patch &&
        fs.existsSync(path.join(dir, 'include', 'node', 'common.gypi'))) {
      return dir;
    }
  }
  return null;
}

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
const result = spawnSync(process.execPath, args, { cwd: path.join(__dirname, '..'), stdio: 'inherit' });
process.exit(result.status === null ? 1 : result.status);
