"""Where no user namespace can be made, a host-mode server is owned by a cgroup of its own.

Each case runs a real host application under a seccomp filter that refuses
user namespaces, as Docker's default profile does (tests/sandbox/nouserns.py),
so bubblewrap cannot make the pid namespace of the first tier. The server
(servers/hostile.py) ignores SIGTERM and end of input and starts a setsid
double-forked daemon; it is owned by a cgroup (v2 with cgroup.kill where
there is one, else a cgroup v1 freezer hierarchy: forced by running the host
in a mount namespace without the cgroup2 mount), and nothing of it is alive
after close() returns, after the host is SIGKILLed, or after it killed its
own supervisor and the warden above it. Without a cgroup either (a user who
may make none), the server is refused and McpUnownedError says why.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from mcpkit import HERE, new_marker, sleeping, wait_for

NOBODY = 65534
NOUSERNS = str(HERE.parent / "sandbox" / "nouserns.py")
V1_FREEZER = Path("/sys/fs/cgroup/freezer")
V2_MOUNT = Path("/sys/fs/cgroup/unified")  # a hybrid host's cgroup2, hidden to force v1

HOST = textwrap.dedent(
    """
    import json, os, sys, time
    sys.path.insert(0, {here!r})
    from mcpkit import SERVERS, sleeping, wait_for
    from codeward.mcp import McpClient, McpServerConfig, McpUnownedError
    marker, mode, end = sys.argv[1], sys.argv[2], sys.argv[3]
    config = McpServerConfig("thief", {python!r}, (str(SERVERS / "hostile.py"), mode, marker))
    try:
        client = McpClient(config)
    except McpUnownedError as exc:
        print(json.dumps({{"refused": str(exc)}}), flush=True)
        sys.exit(0)
    started = wait_for(lambda: len(sleeping(marker)) == 1)
    daemon = sleeping(marker)
    cgroup = open(f"/proc/{{daemon[0]}}/cgroup").read() if daemon else ""
    report = {{"started": started, "ownership": client.ownership, "cgroup": cgroup,
               "host": os.getpid()}}
    if mode == "escape-all":  # what its attempts on the warden and its init got
        report["attempts"] = json.loads(client.call_tool("work", {{}}).content[0]["text"])
        report["supervisors"] = [client.pid, int(open(f"/proc/{{daemon[0]}}/stat").read()
                                                  .rsplit(") ", 1)[1].split()[1])]
    if end == "hold":  # the test SIGKILLs this host
        print(json.dumps(report), flush=True)
        time.sleep(600)
    client.close()
    report["left"] = sleeping(marker)  # at once: no waiting
    print(json.dumps(report), flush=True)
    """
)


def _argv(  # type: ignore[type-arg]
    script: Path, marker: str, mode: str, end: str, v1: bool, user: int | None, join: Path | None
) -> list:
    argv = [sys.executable, str(script), marker, mode, end]
    if user is not None:
        setpriv = shutil.which("setpriv") or "setpriv"
        argv = [setpriv, f"--reuid={user}", f"--regid={user}", "--clear-groups", *argv]
    argv = [sys.executable, NOUSERNS, *argv]
    if join is not None:  # the host starts in this cgroup
        argv = ["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(join / "cgroup.procs"), *argv]
    if v1:  # a mount namespace of its own without the cgroup2 mount (root only)
        hide = f"umount {V2_MOUNT} 2>/dev/null; exec " + " ".join(map(shlex.quote, argv))
        argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c", hide]
    return argv


def _host(mode: str, end: str, *, v1: bool = False, user: int | None = None, join=None):  # type: ignore[no-untyped-def]
    """Starts the host application; returns (process, marker, its first report)."""
    marker = new_marker()
    where = Path(tempfile.mkdtemp(prefix="codeward-cgowned-"))  # /tmp: nobody reads it too
    script = where / "host.py"
    python = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
    script.write_text(HOST.format(here=str(HERE), python=python))
    os.chmod(where, 0o755)
    os.chmod(script, 0o644)
    proc = subprocess.Popen(
        _argv(script, marker, mode, end, v1, user, join),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd="/",
    )
    try:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        if not line:
            proc.wait(timeout=60)
            pytest.fail(proc.stderr.read().decode(errors="replace")[-3000:])  # type: ignore[union-attr]
        return proc, marker, json.loads(line)
    finally:
        shutil.rmtree(where, ignore_errors=True)


def _finish(proc: subprocess.Popen, marker: str) -> None:  # type: ignore[type-arg]
    """Ends the host if it still runs; kills what a failed case left (ours: the marker's)."""
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=60)
    for pid in sleeping(marker):
        os.kill(pid, signal.SIGKILL)


def _require_cgroups(v1: bool) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root: a user without a delegated cgroup is refused (tested)")
    if v1 and not (V1_FREEZER / "cgroup.procs").exists():
        pytest.skip("no cgroup v1 freezer hierarchy here")
    if v1 and shutil.which("unshare") is None:
        pytest.skip("unshare(1) is needed to hide the cgroup2 mount")


def _started_in_a_cgroup(report: dict, v1: bool) -> None:  # type: ignore[type-arg]
    """The daemon ran, the server is owned by a cgroup, and (forced v1) a freezer one."""
    assert report["started"], f"the daemon did not start: {report}"
    assert report["ownership"] == "cgroup", report
    if v1:
        lines = report["cgroup"].splitlines()
        freezer = [ln for ln in lines if ":freezer:" in ln]
        assert freezer and "/codeward-" in freezer[0], report["cgroup"]


V1 = pytest.mark.parametrize("v1", [False, True], ids=["v2-or-v1", "v1-freezer"])


@V1
@pytest.mark.parametrize("mode", ["stubborn", "escape-all"])
def test_the_server_and_its_daemon_are_gone_when_close_returns(mode: str, v1: bool) -> None:
    """escape-all also tries to end the warden and its init (refused): close() empties it."""
    _require_cgroups(v1)
    proc, marker, report = _host(mode, "close", v1=v1)
    try:
        _started_in_a_cgroup(report, v1)
        assert report["left"] == [], f"alive after close(): {report}"
    finally:
        _finish(proc, marker)


@V1
def test_the_warden_ends_the_server_when_the_host_is_sigkilled(v1: bool) -> None:
    _require_cgroups(v1)
    proc, marker, report = _host("stubborn", "hold", v1=v1)
    try:
        _started_in_a_cgroup(report, v1)
        assert sleeping(marker), "the daemon is not running before the host dies"
        proc.kill()
        proc.wait(timeout=60)
        assert wait_for(lambda: not sleeping(marker), timeout_s=30), "the daemon outlived the host"
    finally:
        _finish(proc, marker)


def _cgroup_dirs(cgroup: str) -> list[Path]:
    """The server's own cgroup directories (v2 and/or v1 freezer) from its /proc/<pid>/cgroup."""
    v2_root = V2_MOUNT if (V2_MOUNT / "cgroup.procs").exists() else Path("/sys/fs/cgroup")
    dirs = []
    for line in cgroup.splitlines():
        _, controllers, path = line.split(":", 2)
        if "/codeward-" not in path:
            continue
        root = v2_root if controllers == "" else V1_FREEZER if "freezer" in controllers else None
        if root is not None:
            dirs.append(root / path.lstrip("/"))
    return dirs


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][0] != "Z"
    except OSError:
        return False


# the attempts that went on with SIGKILL once signal 0 (or a read) was refused
FOR_REAL = [
    name.format(who)
    for who in ("warden", "init")
    for name in ("kill({})!", "kill(-pgid {})!", "pidfd_send_signal(/proc/{})!", "prlimit({})!")
]


@V1
def test_the_server_cannot_end_its_warden_and_dies_with_the_host(v1: bool) -> None:
    """The escape of a server of the host's uid: SIGKILL the warden and the init, then
    outlive the host. Its guard filter refuses every way (servers/hostile.py, escape-all);
    the warden, alive, empties and removes the cgroup once the host is SIGKILLed."""
    _require_cgroups(v1)
    proc, marker, report = _host("escape-all", "hold", v1=v1)
    try:
        _started_in_a_cgroup(report, v1)
        attempts, supervisors = report["attempts"], report["supervisors"]
        assert sorted(attempts.pop("targets")) == sorted(supervisors), report
        assert {k: v for k, v in attempts.items() if v != "refused"} == {}, attempts
        assert {*FOR_REAL, "kill(-1)!"} <= set(attempts), attempts
        assert all(_alive(pid) for pid in supervisors), "the warden or the init was ended"
        dirs = _cgroup_dirs(report["cgroup"])
        assert dirs and all(d.is_dir() for d in dirs), report["cgroup"]
        proc.kill()
        proc.wait(timeout=60)
        assert wait_for(lambda: not sleeping(marker), timeout_s=30), "the daemon outlived the host"
        assert wait_for(lambda: not any(map(_alive, supervisors)), timeout_s=30)
        assert wait_for(lambda: not any(d.exists() for d in dirs), timeout_s=30), dirs
    finally:
        _finish(proc, marker)


@contextlib.contextmanager
def _delegated_to(user: int):  # type: ignore[no-untyped-def]
    """A v2 subtree delegated to `user` (as systemd delegates one): yields the leaf its host
    starts in; the server's cgroup is made next to it. Removed afterwards."""
    v2 = V2_MOUNT if (V2_MOUNT / "cgroup.procs").exists() else Path("/sys/fs/cgroup")
    if not (v2 / "cgroup.kill").exists() and not any(v2.glob("*/cgroup.kill")):
        pytest.skip("no cgroup v2 with cgroup.kill here")
    top = v2 / f"codeward-test-delegated-{os.getpid()}"
    leaf = top / "host"
    leaf.mkdir(parents=True)
    try:
        for path in (top, top / "cgroup.procs", top / "cgroup.subtree_control", leaf):
            os.chown(path, user, user)
        os.chown(leaf / "cgroup.procs", user, user)
        yield leaf
    finally:
        for d in sorted(top.glob("**/"), key=lambda p: -len(p.parts)):
            wait_for(lambda d=d: not (d / "cgroup.procs").read_text().strip(), timeout_s=30)
            with contextlib.suppress(OSError):
                d.rmdir()


def test_an_unprivileged_server_cannot_end_its_warden_either() -> None:
    """As nobody with a delegated cgroup: the tier a user gets from systemd's delegation."""
    if os.geteuid() != 0:
        pytest.skip("run as root, which delegates a cgroup to nobody")
    with _delegated_to(NOBODY) as leaf:
        proc, marker, report = _host("escape-all", "hold", user=NOBODY, join=leaf)
        try:
            _started_in_a_cgroup(report, False)
            attempts, supervisors = report["attempts"], report["supervisors"]
            assert sorted(attempts.pop("targets")) == sorted(supervisors), report
            assert {k: v for k, v in attempts.items() if v != "refused"} == {}, attempts
            assert set(FOR_REAL) <= set(attempts), attempts
            assert all(_alive(pid) for pid in supervisors)
            dirs = _cgroup_dirs(report["cgroup"])
            assert dirs and all(d.parent == leaf.parent for d in dirs), report["cgroup"]
            proc.kill()
            proc.wait(timeout=60)
            assert wait_for(lambda: not sleeping(marker), timeout_s=30), "it outlived the host"
            assert wait_for(lambda: not any(d.exists() for d in dirs), timeout_s=30), dirs
        finally:
            _finish(proc, marker)


def test_a_server_that_kills_its_init_takes_itself_down() -> None:
    """As a pid namespace dies with its init: the warden empties the cgroup."""
    _require_cgroups(False)
    proc, marker, _ = _host("stubborn", "hold")
    try:
        daemon = sleeping(marker)
        assert daemon
        init = int(Path(f"/proc/{daemon[0]}/stat").read_text().rsplit(") ", 1)[1].split()[1])
        assert b"--mode\0host" in Path(f"/proc/{init}/cmdline").read_bytes()  # the subreaper
        os.kill(init, signal.SIGKILL)  # as the server itself might
        assert wait_for(lambda: not sleeping(marker), timeout_s=30), "the daemon outlived its init"
        assert proc.poll() is None  # the host itself is untouched
    finally:
        _finish(proc, marker)


def test_without_a_cgroup_either_the_server_is_refused_with_the_reason() -> None:
    if os.geteuid() != 0:
        pytest.skip("run as root, which drops to nobody: a user without a delegated cgroup")
    proc, marker, report = _host("stubborn", "close", user=NOBODY)
    try:
        refused = report.get("refused", "")
        assert "cannot be owned here" in refused, report
        assert "no cgroup of its own can be made" in refused and "allow_unowned" in refused
        assert not sleeping(marker)
    finally:
        _finish(proc, marker)
