"""Nothing outlives its result (issue 22): a process that cannot be killed does not hold the
result back, the result says so (``outlived``), and nothing of the command runs afterwards.

A process in uninterruptible sleep is made reliably with the cgroup v1 freezer: a frozen task
does not die of SIGKILL until it is thawed (the v2 freezer lets SIGKILL through, so the test
needs v1). The test freezes the command's process from the host, as a hung device or network
file system would hold it, and thaws it after the result came back: its SIGKILL is pending, so
the file it was about to write never appears.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest
from hostprocs import new_marker

from codeward import Agent, SessionOptions
from codeward.sandbox import NativeBashSandbox

FREEZER = Path("/sys/fs/cgroup/freezer")


def _pids_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline and int(entry) != os.getpid():
            found.append(int(entry))
    return found


@pytest.fixture
def freezer() -> Path:
    if os.geteuid() != 0 or not (FREEZER / "cgroup.procs").exists():
        pytest.skip("needs root and the cgroup v1 freezer (its frozen tasks ignore SIGKILL)")
    group = FREEZER / f"outlived-test-{uuid.uuid4().hex[:8]}"  # not codeward-*: swept
    group.mkdir()
    yield group
    (group / "freezer.state").write_text("THAWED")
    for _ in range(200):  # the thawed tasks die of their pending SIGKILL
        if not (group / "cgroup.procs").read_text().split():
            break
        time.sleep(0.05)
    group.rmdir()


def _freeze_when_started(group: Path, marker: str) -> list[int]:
    """Moves the command's python process into the freezer group and freezes it."""
    for _ in range(1000):
        moved = []
        for pid in _pids_with(marker):
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                if (
                    len(argv) < 2
                    or b"time.sleep" not in argv[-2]
                    or argv[0].endswith((b"bwrap", b"a3s-init", b"/init"))
                ):
                    continue  # the command, not bubblewrap or the init naming it
                (group / "cgroup.procs").write_text(str(pid))
            except (ProcessLookupError, FileNotFoundError):
                continue
            moved.append(pid)
        if moved:
            (group / "freezer.state").write_text("FROZEN")
            return moved
        time.sleep(0.01)
    raise AssertionError("the command did not start")


def _late_writer(marker: str) -> str:
    # sleeps, then writes: frozen during the sleep, it must never get to write
    return f'python3 -c \'import time; time.sleep(2.5); open("late.txt", "w").write("{marker}")\''


# the documented bound: timeout + the default kill_grace_ms (0.5 s) + the init's reap (0.25 s);
# asserted with generous slack (a loaded machine), measured precisely by bench/timeout/run.py
TIMEOUT_S = 2.0
BOUND_S = TIMEOUT_S + 0.5 + 0.25
SLACK_S = 2.5  # still below the runner's backstop (timeout + grace + 3 s), which sets hard_linked


@pytest.mark.parametrize("reuse", [True, False], ids=["long-lived", "one-shot"])
def test_a_process_that_cannot_be_killed_does_not_hold_the_result(
    workspace: Path, freezer: Path, reuse: bool
) -> None:
    import threading

    marker = new_marker()
    sandbox = NativeBashSandbox(workspace, reuse=reuse)
    try:
        first = sandbox.exec("true", timeout_ms=30_000)  # the sandbox is up
        assert first.exit_code == 0
        frozen: list[int] = []
        thread = threading.Thread(
            target=lambda: frozen.extend(_freeze_when_started(freezer, marker))
        )
        thread.start()
        started = time.monotonic()
        out = sandbox.exec(_late_writer(marker), timeout_ms=int(TIMEOUT_S * 1000))  # default grace
        elapsed = time.monotonic() - started
        thread.join()
        assert frozen, "nothing was frozen"
        assert out.timed_out and out.exit_code == 124, out
        assert out.outlived, out  # the result says something of it may have run after
        # the init answered (the runner's backstop, which would set hard_linked, did not strike)
        assert out.hard_linked == first.hard_linked, out
        assert elapsed < BOUND_S + SLACK_S, elapsed
        # the frozen process is still there: the result did not wait for it
        assert any(os.path.exists(f"/proc/{pid}") for pid in frozen)
        (freezer / "freezer.state").write_text("THAWED")
        for _ in range(200):
            if not any(os.path.exists(f"/proc/{pid}") for pid in frozen):
                break
            time.sleep(0.05)
        time.sleep(3.0)  # past the moment it would have written
        assert not (workspace / "late.txt").exists()
        assert not _pids_with(marker)
        # the handle serves the next command (the long-lived one in a new sandbox)
        assert sandbox.exec("echo next", timeout_ms=30_000).stdout == "next\n"
        print(f"\n2 s timeout, default grace, a frozen process: the result came in {elapsed:.2f} s")
    finally:
        sandbox.close()


def test_a_session_counts_an_outlived_command_as_a_change(workspace: Path, freezer: Path) -> None:
    import threading

    marker = new_marker()
    with Agent().session(workspace, SessionOptions()) as session:
        assert session.complete_turn("nothing yet").completed
        thread = threading.Thread(target=_freeze_when_started, args=(freezer, marker))
        thread.start()
        result = session.bash(_late_writer(marker), timeout_ms=2000)
        thread.join()
        assert result.metadata["outlived"] is True, result.metadata
        assert result.metadata["workspace_uncertain"], result.metadata
        outcome = session.complete_turn("done")
        assert not outcome.completed
        assert session._ledger.get(".") is not None  # unknown where: the whole workspace
