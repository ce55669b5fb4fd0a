"""A bubblewrap that does not isolate: nothing runs, and nothing of the caller's is killed.

The init used to send kill(-1, SIGKILL) on any setup failure in sandbox mode,
including "not PID 1 of a new pid namespace": with a broken or hostile
bubblewrap that is every process the caller can signal (as root, the whole
machine). Here a fake bubblewrap runs the init without isolating it (or with
a new pid namespace only). Each case runs inside a pid namespace of its own
(`unshare --fork --pid --mount-proc`), so that on a regression the kill
cannot reach beyond it; a canary process of the caller there must survive,
and the command must not run (exit 125, docs/security.md).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from codeward import _native
from codeward.sandbox._locate import find_bwrap, init_path
from codeward.sandbox._native_runner import _CoreSandbox

FAKE_BWRAP = r"""#!/bin/bash
# Runs what bubblewrap would run, with a3s-init where bubblewrap would bind it,
# but without isolating it (MODE=host), or in a new pid namespace only (pidns).
# (bubblewrap gets no environment from the C core: the mode is written in here.)
MODE=@MODE@
args=("$@")
init=
rest=()
for ((i = 0; i < ${#args[@]}; i++)); do
    if [ "${args[i]}" = --ro-bind-data ] && [ "${args[i+2]}" = /run/a3s/init ]; then
        init=/proc/self/fd/${args[i+1]}  # the core's sealed copy of the init
    elif [ "${args[i]}" = -- ]; then
        rest=("${args[@]:i+1}")
        break
    fi
done
[ "${rest[0]}" = /run/a3s/init ] && rest[0]=$init
if [ "$MODE" = pidns ]; then
    exec unshare --pid --fork --kill-child "${rest[@]}"
fi
exec "${rest[@]}"
"""

CALLER = """
import json, os, subprocess, sys
from codeward import _native
from codeward.sandbox._native_runner import _CoreSandbox
ws, init, fake = sys.argv[1], sys.argv[2], sys.argv[3]
reuse, share_net = sys.argv[4] == "1", sys.argv[5] == "1"
canary = subprocess.Popen(["sleep", "300"])
handle = _native.Sandbox(ws, init, bwrap=fake, reuse=reuse, share_net=share_net)
out = _CoreSandbox(ws, _handle=handle).exec("echo RAN > ran; echo RAN", timeout_ms=10000)
try:
    _native.Sandbox(ws, init, bwrap=fake, reuse=reuse, share_net=share_net).probe(10000)
    probe = None
except _native.NativeError as exc:
    probe = str(exc)
alive = canary.poll() is None
canary.kill()
print(json.dumps({"exit": out.exit_code, "stdout": out.stdout, "setup_error": out.setup_error,
                  "probe": probe, "canary_alive": alive}))
"""


def _fake_bwrap(where: Path, mode: str) -> Path:
    path = where / mode / "bwrap"
    path.parent.mkdir(parents=True)
    path.write_text(FAKE_BWRAP.replace("@MODE@", mode))
    path.chmod(0o755)
    return path


def _in_own_pid_namespace(ws: Path, fake: Path, reuse: bool, share_net: bool = False) -> dict:
    if shutil.which("unshare") is None:
        pytest.fail("unshare is needed")
    p = subprocess.run(
        [
            "unshare",
            "--fork",
            "--pid",
            "--mount-proc",
            sys.executable,
            "-c",
            textwrap.dedent(CALLER),
            str(ws),
            str(init_path()),
            str(fake),
            "1" if reuse else "0",
            "1" if share_net else "0",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(os.geteuid() != 0, reason="unshare --pid needs root here")
@pytest.mark.parametrize("reuse", [True, False], ids=["long-lived", "one-shot"])
@pytest.mark.parametrize(
    ("mode", "share_net"),
    [("host", False), ("pidns", False), ("pidns", True)],
    ids=["host", "pidns", "pidns-network-granted"],
)
def test_a_bwrap_that_does_not_isolate_runs_nothing_and_kills_nothing(
    mode, share_net, reuse, workspace, tmp_path, fs_boundary_ready
):
    """A network grant leaves only the network namespace unchecked: a new pid namespace
    without new user and mount namespaces still runs nothing."""
    r = _in_own_pid_namespace(workspace, _fake_bwrap(tmp_path, mode), reuse, share_net)
    assert r["canary_alive"], f"the caller's canary was killed: {r}"
    assert r["exit"] == 125 and "RAN" not in r["stdout"], r
    assert not (workspace / "ran").exists(), "the command ran without isolation"
    assert "did not isolate" in (r["setup_error"] or ""), r
    assert r["probe"] and "cannot start" in r["probe"], r


@pytest.mark.parametrize("reuse", [True, False], ids=["long-lived", "one-shot"])
def test_a_network_grant_shares_only_the_network_namespace(reuse, workspace, fs_boundary_ready):
    """With A3S_SANDBOX_SHARE_NET bubblewrap keeps the caller's network namespace on purpose:
    the init's isolation proof leaves the network out and still checks the others."""
    handle = _native.Sandbox(
        str(workspace),
        str(init_path()),
        bwrap=find_bwrap(str(workspace)),
        reuse=reuse,
        share_net=True,
    )
    sb = _CoreSandbox(workspace, _handle=handle)
    outs = [sb.exec("readlink /proc/self/ns/net /proc/self/ns/pid", timeout_ms=20_000)]
    outs.append(sb.exec("readlink /proc/self/ns/net /proc/self/ns/pid", timeout_ms=20_000))
    for out in outs:
        assert out.exit_code == 0 and out.setup_error is None, out
        net, pid = out.stdout.split()
        assert net == os.readlink("/proc/self/ns/net"), out
        assert pid != os.readlink("/proc/self/ns/pid"), out


@pytest.mark.skipif(os.geteuid() != 0, reason="unshare --pid needs root here")
def test_the_init_leaves_the_network_unchecked_only_for_a_network_grant():
    """--host-ns without the network namespace is refused unless --allow-connect says the
    host shared it (the init checks no less than the host meant)."""
    host = ",".join(f"{k}:{os.stat(f'/proc/self/ns/{k}').st_ino}" for k in ("user", "mnt", "pid"))
    errors = []
    for extra in ([], ["--allow-connect"]):
        argv = ["unshare", "--fork", "--pid", "--mount-proc", "--user", "--map-root-user"]
        argv += [str(init_path()), "--mode", "sandbox", *extra, "--host-ns", host, "--", "true"]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        assert p.returncode == 125, p
        errors.append(p.stderr)
    assert "leaves out the network namespace" in errors[0], errors
    # past that check: the next one refuses this fake (capabilities in its user namespace)
    assert "network" not in errors[1] and "capabilities" in errors[1], errors
