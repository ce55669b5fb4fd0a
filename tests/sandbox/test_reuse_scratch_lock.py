"""A run directory is born locked: a host killed while making it leaves nothing a sweep cannot
take, and a live owner's is never swept, from any pid namespace (issue 26).

make_run_dir (native/src/sandbox_linux.c) makes the lock file a3s-new-R.lock and locks it, then
the directory a3s-new-R, links the lock into it, renames it to a3s-run-R and removes the outer
name. A host is stopped for good at the link or the rename (tests/sandbox/pausehost.py: a seccomp
user notification nobody answers), and then either SIGKILLed there, or left alive while another
process (in this pid namespace or another) starts a sandbox over the same scratch parent, whose
first start sweeps it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hostprocs import cgroups_made_by

from codeward.sandbox import NativeBashSandbox

HOST = Path(__file__).with_name("pausehost.py")
POINTS = ["linkat", "renameat2"]  # directory made, lock not yet in it / lock in it, not renamed


def _env(tmp: Path) -> dict[str, str]:
    (tmp / "scratch").mkdir(exist_ok=True)
    return dict(os.environ, TMPDIR=str(tmp / "scratch"), XDG_STATE_HOME=str(tmp / "state"))


def _scratch(tmp: Path) -> list[str]:
    return sorted(os.listdir(tmp / "scratch"))


def _paused_host(tmp: Path, point: str, prefix: tuple[str, ...] = ()) -> subprocess.Popen[str]:
    """A host stopped at `point` of making its run directory (its scratch shows it there)."""
    ws = tmp / "owner-ws"
    ws.mkdir(exist_ok=True)
    host = subprocess.Popen(
        [*prefix, sys.executable, str(HOST), str(ws), point],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(tmp),
        start_new_session=True,
    )
    assert host.stdout is not None
    line = host.stdout.readline()
    assert line.startswith("armed"), (line, host.stderr.read() if host.stderr else "")
    want = {"linkat": 2, "renameat2": 2}[point]  # a3s-new-R.lock and a3s-new-R
    deadline = time.monotonic() + 120
    while len([n for n in _scratch(tmp) if n.startswith("a3s-new-")]) < want:
        assert host.poll() is None, host.communicate()
        assert time.monotonic() < deadline, _scratch(tmp)
        time.sleep(0.05)
    time.sleep(0.2)  # it sits in the call now; nothing moves
    return host


def _kill(host: subprocess.Popen[str]) -> None:
    if host.poll() is None:
        os.killpg(host.pid, signal.SIGKILL)
    host.communicate()


def _start_elsewhere(tmp: Path) -> None:
    """A fresh handle's first start over the same scratch parent (its sweep runs)."""
    ws = tmp / "sweeper-ws"
    ws.mkdir(exist_ok=True)
    code = (
        "import sys\n"
        "from codeward.sandbox import NativeBashSandbox\n"
        "with NativeBashSandbox(sys.argv[1], reuse=True) as sb:\n"
        "    assert sb.exec('echo ok', timeout_ms=60_000).stdout == 'ok\\n'\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code, str(ws)],
        env=_env(tmp),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr


def _new_dir_contents(tmp: Path) -> dict[str, list[str]]:
    scratch = tmp / "scratch"
    return {
        n: sorted(os.listdir(scratch / n)) if (scratch / n).is_dir() else []
        for n in _scratch(tmp)
        if n.startswith("a3s-new-")
    }


@pytest.mark.parametrize("point", POINTS)
def test_a_host_killed_making_its_run_directory_leaves_it_to_the_next_start(
    tmp_path: Path, point: str
) -> None:
    host = _paused_host(tmp_path, point)
    made = _new_dir_contents(tmp_path)
    _kill(host)
    names = sorted(made)
    assert len(names) == 2 and names[1] == names[0] + ".lock", made
    assert made[names[0]] == (["lock"] if point == "renameat2" else []), made
    _start_elsewhere(tmp_path)
    assert _scratch(tmp_path) == [], "the dead host's directory was not swept"
    assert cgroups_made_by([host.pid]) == []


@pytest.mark.parametrize("point", POINTS)
def test_a_live_owners_directory_is_never_swept(tmp_path: Path, point: str) -> None:
    host = _paused_host(tmp_path, point)
    try:
        made = _new_dir_contents(tmp_path)
        _start_elsewhere(tmp_path)
        _start_elsewhere(tmp_path)
        assert _new_dir_contents(tmp_path) == made, "a live owner's run directory was swept"
        assert host.poll() is None
    finally:
        _kill(host)
    _start_elsewhere(tmp_path)
    assert _scratch(tmp_path) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="a new pid namespace needs root")
def test_an_owner_in_another_pid_namespace_is_never_swept(tmp_path: Path) -> None:
    """Its pid means nothing here (it is 1-ish there): only its lock tells it is alive."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.fail("unshare is needed")
    host = _paused_host(tmp_path, "renameat2", (unshare, "-p", "-f", "--mount-proc"))
    try:
        made = _new_dir_contents(tmp_path)
        _start_elsewhere(tmp_path)
        assert _new_dir_contents(tmp_path) == made, "an owner in another pid namespace was swept"
    finally:
        _kill(host)
    _start_elsewhere(tmp_path)
    assert _scratch(tmp_path) == []


def test_a_sweep_between_create_and_lock_makes_the_owner_start_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lock file that a sweep takes before its owner locks it is unlinked under the sweep's
    lock: the owner sees it unlinked (st_nlink 0) and makes another. Many starts against a
    sweeper that takes every lock it can: every start succeeds, and nothing is left."""
    ws = tmp_path / "ws"
    ws.mkdir()
    env = _env(tmp_path)
    monkeypatch.setenv("TMPDIR", env["TMPDIR"])
    monkeypatch.setenv("XDG_STATE_HOME", env["XDG_STATE_HOME"])
    sweeper = subprocess.Popen(
        [sys.executable, "-c", SWEEPER, env["TMPDIR"], "600"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        for _ in range(8):
            with NativeBashSandbox(ws, reuse=False) as sb:
                assert sb.exec("echo ok", timeout_ms=60_000).stdout == "ok\n"
    finally:
        sweeper.kill()
        sweeper.communicate()
    assert _scratch(tmp_path) == []


# Takes every a3s-new-*.lock it can, as recover_new_dir does, and unlinks it while held.
SWEEPER = """
import fcntl, os, sys, time
scratch, seconds = sys.argv[1], float(sys.argv[2])
end = time.monotonic() + seconds
while time.monotonic() < end:
    for n in os.listdir(scratch):
        if n.startswith("a3s-new-") and n.endswith(".lock"):
            try:
                fd = os.open(os.path.join(scratch, n), os.O_RDONLY | os.O_NOFOLLOW)
            except OSError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                os.unlink(os.path.join(scratch, n))
            except OSError:
                pass
            finally:
                os.close(fd)
"""
