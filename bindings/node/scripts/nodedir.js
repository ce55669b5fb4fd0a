'use strict';
// The install prefix whose include/node holds the headers of the Node that
// runs this script, so node-gyp can build without downloading them
// (Debian's nodejs puts them in /usr/include/node, an official tarball in
// <prefix>/include/node). Run directly, it prints that prefix (nothing if
// there is none), which CI passes to prebuildify and to a consumer's
// install as npm_config_nodedir.

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

module.exports = { localNodeDir };

if (require.main === module) {
  process.stdout.write(`${localNodeDir() || ''}\n`);
}
