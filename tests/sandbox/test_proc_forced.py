"""The forced-kill path (issue 22): when the init does not answer, the host kills the sandbox
itself, and the result keeps every flag and says the workspace is uncertain.

The init is made unresponsive from the host with SIGSTOP once the command runs (as a stuck
or starved init would be): it neither times the command out nor answers. The runner's
backstop (``timeout_ms + kill_grace_ms + 3 s``) then kills it; whatever the init knew is
lost, so the result has ``timed_out``, ``hard_linked`` and ``outlived``, the command's link
(made before the stop) included, and a session books the whole workspace as uncertain.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from pathlib import Path

import pytest
from hostprocs import new_marker, processes_with, survivors

from codeward import Agent, SessionOptions
from codeward.sandbox import NativeBashSandbox

TIMEOUT_MS = 1000
GRACE_MS = 500
BACKSTOP_S = 3.0  # the runner's, past timeout + grace (session_linux.c, sandbox_linux.c)


def _program(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _stop_init_when_running(marker: str, stopped: list[int]) -> None:
    """SIGSTOPs the init whose child is `sleep MARKER` (bash execs the last command)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for pid, line in processes_with(marker):
            if not line.startswith("sleep "):
                continue  # the command itself, not bubblewrap or the init naming it
            try:
                init = _parent(pid)
                if not _program(init).endswith("init"):
                    continue
                os.kill(init, signal.SIGSTOP)
            except (OSError, ValueError):
                continue
            stopped.append(init)
            return
        time.sleep(0.01)


def _run_with_a_stopped_init(run, marker: str):
    stopped: list[int] = []
    thread = threading.Thread(target=_stop_init_when_running, args=(marker, stopped))
    thread.start()
    started = time.monotonic()
    out = run(f"ln a b && sleep {marker}")
    elapsed = time.monotonic() - started
    thread.join()
    assert stopped, "the init was not found"
    for pid in stopped:  # whatever became of it, it must not stay stopped
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
    return out, elapsed


@pytest.mark.parametrize("reuse", [True, False], ids=["long-lived", "one-shot"])
def test_a_forced_kill_keeps_every_flag(workspace: Path, reuse: bool) -> None:
    (workspace / "a").write_text("a\n")
    marker = new_marker()
    with NativeBashSandbox(workspace, reuse=reuse) as sb:
        assert sb.exec("true", timeout_ms=30_000).exit_code == 0
        out, elapsed = _run_with_a_stopped_init(
            lambda c: sb.exec(c, timeout_ms=TIMEOUT_MS, kill_grace_ms=GRACE_MS), marker
        )
        assert out.exit_code == 124 and out.timed_out, out
        # the init made no report: every flag that asks the caller for more care is set
        assert out.hard_linked and out.outlived, out
        assert out.setup_error is None, out
        assert (workspace / "b").exists()
        assert survivors(marker, within_s=10) == [], "the command outlived the forced kill"
        # bounded by the backstop (generous slack: a loaded machine)
        assert elapsed < (TIMEOUT_MS + GRACE_MS) / 1000 + BACKSTOP_S + 20, elapsed
        assert sb.exec("echo next", timeout_ms=30_000).stdout == "next\n"
        print(f"\nforced kill ({'reuse' if reuse else 'one-shot'}): {elapsed:.2f} s")


def test_a_session_marks_the_workspace_uncertain_after_a_forced_kill(workspace: Path) -> None:
    (workspace / "a").write_text("a\n")
    marker = new_marker()
    with Agent().session(workspace, SessionOptions()) as session:
        assert session.complete_turn("nothing yet").completed
        result, _ = _run_with_a_stopped_init(
            lambda c: session.bash(c, timeout_ms=TIMEOUT_MS), marker
        )
        assert result.metadata["timed_out"] is True, result.metadata
        assert result.metadata["outlived"] is True, result.metadata
        assert result.metadata["hard_linked"] is True, result.metadata
        assert result.metadata["workspace_uncertain"], result.metadata
        assert not session.complete_turn("done").completed
        assert session._ledger.get(".") is not None  # unknown where: the whole workspace
