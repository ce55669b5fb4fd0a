'use strict';
// What the boundary needs on the host, found as python/codeward/sandbox/_locate.py
// finds it: the system bubblewrap (never one a repository ships) and its version.

const { execFile } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const MIN_BWRAP = [0, 8, 0];

// The fixed places bubblewrap is looked for before PATH, and how PATH is
// searched: properties of one object so that the tests can take bubblewrap away.
const locator = {
  systemBwrap: ['/usr/bin/bwrap', '/usr/local/bin/bwrap', '/bin/bwrap'],
  which(name) {
    for (const dir of (process.env.PATH || '').split(path.delimiter)) {
      if (!dir) continue;
      const candidate = path.join(dir, name);
      if (executable(candidate)) return candidate;
    }
    return null;
  },
};

function executable(file) {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** A bubblewrap we may run: root-owned, not writable by others, outside the workspace. */
function trusted(file, workspace) {
  let st, parent;
  try {
    st = fs.statSync(file);
    parent = fs.statSync(path.dirname(file));
  } catch {
    return false;
  }
  if (st.uid !== 0 || st.mode & 0o022 || parent.uid !== 0 || parent.mode & 0o022) return false;
  if (workspace) {
    let root;
    try {
      root = fs.realpathSync(workspace);
    } catch {
      root = path.resolve(workspace);
    }
    // the workspace / holds every program, and no sandbox takes it (the core
    // refuses it, which selection reports), as in Python and Go
    const inside = (file + path.sep).startsWith(root.replace(/\/+$/, '') + path.sep);
    if (root !== path.sep && inside) return false;
  }
  return true;
}

/**
 * The system bubblewrap: the fixed system paths first, then PATH. A candidate
 * must be root-owned in a root-owned directory others cannot write, and lie
 * outside the workspace; nothing else is ever executed. null if there is none.
 */
function findBwrap(workspace) {
  const found = locator.systemBwrap.filter(executable);
  const which = locator.which('bwrap');
  if (which) found.push(which);
  for (const candidate of found) {
    let real;
    try {
      real = fs.realpathSync(candidate);
    } catch {
      continue;
    }
    if (path.isAbsolute(real) && trusted(real, workspace)) return real;
  }
  return null;
}

/** `bwrap --version` as [major, minor, patch], or null if it cannot tell (5 s at most). */
function bwrapVersion(file) {
  return new Promise((resolve) => {
    execFile(file, ['--version'], { timeout: 5000 }, (err, stdout) => {
      const m = /(\d+)\.(\d+)(?:\.(\d+))?/.exec(String(stdout || ''));
      resolve(m ? [Number(m[1]), Number(m[2]), Number(m[3] || 0)] : null);
    });
  });
}

/** Whether version is older than MIN_BWRAP. */
function tooOld(version) {
  for (let i = 0; i < 3; i++) {
    if (version[i] !== MIN_BWRAP[i]) return version[i] < MIN_BWRAP[i];
  }
  return false;
}

module.exports = { locator, findBwrap, bwrapVersion, tooOld, MIN_BWRAP };
