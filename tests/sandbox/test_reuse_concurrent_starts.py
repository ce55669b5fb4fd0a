"""Many threads starting long-lived sandboxes at once, and a host killed while they do (issue 26).

Each start forks an intermediate child that starts bubblewrap and waits for the
caller's word. Those children used to keep every descriptor the host had, the
other starts' pipes included (close-on-exec does nothing in a child that never
execs): two concurrent starts each held the pipe the other waited on, and both
waited forever. These tests run the concurrency in a separate host process
(tests/sandbox/starthost.py) so that a deadlock shows as a host that never
finishes, not as a hung test run; its bound is generous (minutes against a few
seconds of work) because it only tells "forever" from "done".
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hostprocs import cgroups_made_by, new_marker, processes_with

from codeward.sandbox import NativeBashSandbox

HOST = Path(__file__).with_name("starthost.py")
FOREVER_S = 240  # a deadlocked host never finishes; a sound one takes seconds
PROTECTED = (".git", ".a3s", ".agents", ".codex", ".claude", ".vscode", ".idea", ".gitmodules")
PROTECTED += (".mcp.json", ".ripgreprc", ".bashrc", ".bash_profile", ".zshrc", ".zprofile")
PROTECTED += (".profile",)


def host_env(tmp: Path) -> dict[str, str]:
    """The host's scratch and state directories are the test's own, to check them after."""
    env = dict(os.environ, TMPDIR=str(tmp / "scratch"), XDG_STATE_HOME=str(tmp / "state"))
    (tmp / "scratch").mkdir(exist_ok=True)
    return env


def start_host(tmp: Path, threads: int, rounds: int, marker: str) -> subprocess.Popen[str]:
    root = tmp / "root"
    root.mkdir(exist_ok=True)
    return subprocess.Popen(
        [sys.executable, str(HOST), str(root), str(threads), str(rounds), marker],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=host_env(tmp),
        start_new_session=True,
    )


def leftovers(tmp: Path, marker: str) -> list[tuple[int, str]]:
    """Processes of this test's host: its marker, or its directories, on their command line."""
    return processes_with(marker) + processes_with(str(tmp))


def wait_none_left(tmp: Path, marker: str, within_s: float = 10.0) -> list[tuple[int, str]]:
    deadline = time.monotonic() + within_s
    while (left := leftovers(tmp, marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def kill_leftovers(tmp: Path, marker: str) -> None:
    for pid, _ in leftovers(tmp, marker):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def assert_clean(tmp: Path, host: int) -> None:
    """No placeholders, run directories, live journals or cgroups of a dead host are left behind
    once a fresh handle has opened (and swept) each workspace."""
    for ws in sorted((tmp / "root").glob("ws*")):
        with NativeBashSandbox(ws, reuse=True) as sb:
            assert sb.exec("echo fresh", timeout_ms=60_000).stdout == "fresh\n"
        assert [n for n in PROTECTED if os.path.lexists(ws / n)] == [], ws
    runs = sorted(p.name for p in (tmp / "scratch").glob("a3s-*"))
    assert runs == [], runs
    assert cgroups_made_by([host]) == []
    journals = sorted(
        p.name for p in (tmp / "state").rglob("placeholders-*") if not p.name.endswith("lock")
    )
    assert [j for j in journals if not j.endswith(".d")] == [], journals


@pytest.mark.parametrize("threads,rounds", [(8, 4)])
def test_concurrent_starts_never_hang(tmp_path, threads, rounds, monkeypatch) -> None:
    marker = new_marker().replace(".", "")
    host = start_host(tmp_path, threads, rounds, marker)
    try:
        out, err = host.communicate(timeout=FOREVER_S)
    except subprocess.TimeoutExpired:
        os.killpg(host.pid, signal.SIGKILL)
        host.communicate()
        kill_leftovers(tmp_path, marker)
        pytest.fail(f"{threads} threads starting sandboxes at once deadlocked")
    assert host.returncode == 0, err
    assert out.count("round ") == threads * rounds, out
    assert wait_none_left(tmp_path, marker) == []
    monkeypatch.setenv("TMPDIR", str(tmp_path / "scratch"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert_clean(tmp_path, host.pid)


@pytest.mark.parametrize("after_rounds", [0, 3, 9])
def test_host_killed_mid_start_leaves_nothing(tmp_path, after_rounds, monkeypatch) -> None:
    """SIGKILL while 8 threads start, run and close: no bubblewrap, init, intermediate or
    command survives, and the next process finds the workspaces clean."""
    marker = new_marker().replace(".", "")
    host = start_host(tmp_path, 8, 0, marker)
    try:
        seen = 0
        while seen < after_rounds:
            line = host.stdout.readline() if host.stdout else ""
            assert line and not line.startswith("failed"), (line, host.stderr)
            seen += line.startswith("round ")
        if after_rounds == 0:  # in the middle of the first starts
            time.sleep(0.2)
        os.kill(host.pid, signal.SIGKILL)
        host.wait()
    finally:
        if host.poll() is None:
            os.killpg(host.pid, signal.SIGKILL)
        host.wait()
        for stream in (host.stdout, host.stderr):
            if stream:
                stream.close()
    left = wait_none_left(tmp_path, marker)
    kill_leftovers(tmp_path, marker)
    assert left == [], "outlived their host: " + repr(left)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "scratch"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert_clean(tmp_path, host.pid)


def test_an_owned_sandboxed_process_outlives_the_thread_that_started_it(tmp_path) -> None:
    """A parent-death signal follows the thread that forked, not the process: bubblewrap's
    --die-with-parent took an owned process (an MCP server in its sandbox) down with the
    host thread that happened to start it. The lifeline and the host's pidfd tie it to the
    host instead; closing the owned process still ends it."""
    from codeward import _native
    from codeward.sandbox._locate import find_bwrap, init_path

    ws = tmp_path / "ws"
    ws.mkdir()
    marker = new_marker()
    box: dict[str, object] = {}

    def start() -> None:
        handle = _native.Sandbox(
            str(ws), init_path(), bwrap=find_bwrap(str(ws)), init_sha256=_native.INIT_SHA256
        )
        child, stdin, stdout, stderr = handle.spawn("/bin/sleep", [marker], [])
        for fd in (stdin, stdout, stderr):
            os.close(fd)
        box.update(handle=handle, child=child)

    t = threading.Thread(target=start)
    t.start()
    t.join()
    child: Any = box["child"]
    assert not child.wait(500)["exited"], "the owned process died with its starting thread"
    assert processes_with(marker)
    assert child.stop()["exited"]
    assert wait_none_left(tmp_path, marker) == []
