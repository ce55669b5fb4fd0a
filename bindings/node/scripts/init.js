'use strict';
// What binding.gyp needs to build a3s-init, the sandbox's PID 1, next to the
// addon (build/Release/a3s-init):
//   node init.js sources   its sources, relative to the package root: the same
//                          list as setup.py and native/Makefile (a test compares
//                          them: tests/test_init_embed.py);
//   node init.js ldflags   -static when the compiler can link a static program
//                          (the init then depends on nothing of the root it
//                          starts in), else nothing: the sandbox binds the host's
//                          root read-only, so a dynamic init finds its C library
//                          there (docs/packaging.md). Stripped either way.

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const INIT_SOURCES = [
  'native/init/a3s_init.c',
  'native/init/server.c',
  'native/init/probe_seccomp.c',
  'native/init/limits.c',
  'native/init/grant.c',
  'native/src/error.c',
  'native/src/landlock_linux.c',
  'native/src/seccomp_linux.c',
  'native/src/session_msg_linux.c',
];

/** Whether $CC (else cc) links a trivial program with -static. */
function linksStatic() {
  const cc = (process.env.CC || 'cc').split(/\s+/).filter(Boolean);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'codeward-static-'));
  try {
    const src = path.join(dir, 'probe.c');
    fs.writeFileSync(src, 'int main(void) { return 0; }\n');
    const run = spawnSync(cc[0], [...cc.slice(1), '-static', src, '-o', path.join(dir, 'probe')], {
      stdio: 'ignore',
    });
    return run.status === 0;
  } catch {
    return false;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

module.exports = { INIT_SOURCES };

if (require.main === module) {
  const what = process.argv[2];
  if (what === 'sources') process.stdout.write(INIT_SOURCES.join('\n') + '\n');
  else if (what === 'ldflags') process.stdout.write((linksStatic() ? '-static -s' : '-s') + '\n');
  else {
    process.stderr.write('usage: node init.js sources|ldflags\n');
    process.exit(2);
  }
}
