'use strict';
// doctor(): what `codeward doctor --json` prints, as an object: can this
// machine run the native Linux sandbox, and if not, why and how to fix it.
// The checks, their names and which are required are the ones of
// python/codeward/cli/_doctor.py (tests/vectors/doctor.json pins them for
// every binding).

const native = require('./native');
const { initPath } = require('./init');
const { findBwrap, bwrapVersion, tooOld } = require('./locate');

function check(name, ok, required, detail, fix = '') {
  return Object.freeze({ name, ok, required, detail, fix });
}

function available(ok, otherwise = 'unavailable') {
  return ok ? 'available' : otherwise;
}

/**
 * Resolves with {ready, checks}: `checks` in the order `codeward doctor`
 * prints them ({name, ok, required, detail, fix}), `ready` true when every
 * required check passed, the last being a fresh self-test through the real
 * boundary (never a verdict kept from an earlier selection).
 */
async function doctor() {
  const { runProbe } = require('./sandbox'); // (sandbox.js requires this module's neighbours)
  const checks = [];
  const linux = process.platform === 'linux';
  checks.push(
    check('platform', linux, true, process.platform, linux ? '' : 'the native sandbox needs Linux'),
  );
  const bwrap = findBwrap(process.cwd());
  const version = bwrap ? await bwrapVersion(bwrap) : null;
  if (!bwrap) {
    checks.push(
      check(
        'bubblewrap',
        false,
        true,
        'not found (or not owned by root in a directory only root can write)',
        'install it: apt-get install bubblewrap',
      ),
    );
  } else if (version === null || tooOld(version)) {
    const shown = version ? version.join('.') : 'unknown';
    checks.push(
      check('bubblewrap', false, true, `${bwrap} version ${shown}`, 'bubblewrap 0.8 or newer is required'),
    );
  } else {
    checks.push(check('bubblewrap', true, true, `${bwrap} ${version.join('.')}`));
  }
  const f = native.features();
  checks.push(
    check(
      'user namespaces',
      f.userNamespaces,
      true,
      f.userNamespaces ? 'available' : 'cannot create one',
      f.userNamespaces
        ? ''
        : 'enable them: sysctl kernel.unprivileged_userns_clone=1 ' +
            '(and user.max_user_namespaces > 0), or allow them in your container runtime',
    ),
  );
  checks.push(check('pid namespaces', f.pidNamespaces, true, available(f.pidNamespaces)));
  checks.push(
    check(
      'seccomp filter',
      f.seccompFilter,
      true,
      available(f.seccompFilter),
      f.seccompFilter ? '' : 'the kernel must be built with CONFIG_SECCOMP_FILTER',
    ),
  );
  const abi = f.landlockAbi;
  checks.push(
    check(
      'landlock',
      abi > 0,
      false,
      abi > 0 ? `ABI ${abi}` : 'unavailable (optional: extra defence in depth)',
    ),
  );
  checks.push(check('pidfd', f.pidfd, false, available(f.pidfd, 'unavailable (optional)')));
  checks.push(
    check('cgroup kill', f.cgroupKill, false, available(f.cgroupKill, 'unavailable (optional)')),
    check(
      'protected names',
      true,
      false,
      f.namesEmulated && process.env.A3S_CODE_PROTECT_NAMES !== 'placeholders'
        ? 'kept missing inside the sandbox (call emulation): nothing appears in the workspace'
        : 'read-only placeholders in the workspace while a sandbox lives',
    ),
  );
  if (checks.every((c) => c.ok || !c.required)) {
    const cause = await runProbe(bwrap, initPath());
    checks.push(
      check(
        'sandbox self-test',
        cause === null,
        true,
        cause === null ? 'passed through the real boundary' : cause,
        cause === null ? '' : 'see docs/security.md (readiness)',
      ),
    );
  }
  return Object.freeze({
    ready: checks.every((c) => c.ok || !c.required),
    checks: Object.freeze(checks),
  });
}

module.exports = { doctor };
