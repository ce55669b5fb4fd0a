"""A call's cancel token reaches the running tool through the kernel (issue 26).

``Session.invoke(call, cancel=event)``: once the event is set, the running
tool stops at once (a command's whole process tree is killed) and the outcome
says ``cancelled``, in its flag, its result and its trace. The bound on each
wait below only tells "stopped" from "ran to its own end" (minutes away).
"""

from __future__ import annotations

import os
import random
import subprocess
import threading
import time
from pathlib import Path

import pytest

from codeward import CheckSpec
from codeward.kernel import ToolCall
from codeward.session import Agent, SessionOptions
from codeward.tools import ErrorKind
from codeward.tools._failure import ToolError
from codeward.tools._gitrun import run_git
from codeward.workspace import Workspace

NEVER_S = 120  # what the cancelled work would take; a cancel ends it long before


def marker() -> str:
    return f"5{random.randint(100000, 999999)}"


def processes_with(token: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                if token.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(int(entry))
            except OSError:
                continue
    return found


def sleepers(token: str) -> list[int]:
    """The ``sleep`` processes carrying ``token``."""
    return [p for p in processes_with(token) if _cmdline(p).startswith(b"sleep\0")]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def set_when(event: threading.Event, ready: callable) -> threading.Thread:  # type: ignore[valid-type]
    """Sets ``event`` once ``ready()`` holds (the work to cancel has started)."""

    def watch() -> None:
        deadline = time.monotonic() + NEVER_S
        while not ready() and time.monotonic() < deadline:
            time.sleep(0.02)
        event.set()

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    return t


def test_a_cancelled_bash_call_kills_its_tree_and_says_cancelled(tmp_path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    m = marker()
    cancel = threading.Event()
    with Agent().session(ws, SessionOptions(mode="auto")) as s:
        command = f"(sleep {NEVER_S}.{m} &) ; setsid sleep {NEVER_S}.{m} & sleep {NEVER_S}.{m}"
        set_when(cancel, lambda: len(sleepers(m)) >= 3)
        started = time.monotonic()
        out = s.invoke(ToolCall("c1", "bash", {"command": command}), cancel=cancel)
        took = time.monotonic() - started
        assert took < NEVER_S
        assert out.executed and out.cancelled and out.result is not None
        assert out.result.cancelled and out.result.error_kind is ErrorKind.CANCELLED
        assert out.to_dict()["cancelled"] is True
        assert [t.verdict for t in out.trace if t.stage == "execution"] == ["cancelled"]
        deadline = time.monotonic() + 5
        while processes_with(m) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert processes_with(m) == []
        # the session goes on: the next call runs normally, with or without a token
        again = s.invoke(ToolCall("c2", "bash", {"command": "echo next"}), cancel=threading.Event())
        assert again.result is not None and again.result.output.startswith("next")
        assert not again.cancelled


def test_a_call_cancelled_before_it_starts_does_not_run(tmp_path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    cancel = threading.Event()
    cancel.set()
    with Agent().session(ws, SessionOptions(mode="auto")) as s:
        out = s.invoke(ToolCall("c", "write", {"file_path": "f", "content": "x"}), cancel=cancel)
        assert out.cancelled and not (ws / "f").exists()


def test_a_cancelled_verification_check_fails_at_once(tmp_path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    m = marker()
    check = CheckSpec("slow", "custom", f"sleep {NEVER_S}.{m}")
    options = SessionOptions(verification_checks=(check,), detect_checks=False)
    cancel = threading.Event()
    with Agent().session(ws, options) as s:
        set_when(cancel, lambda: bool(sleepers(m)))
        report = s.verify(cancel=cancel)
    assert not report.passed
    slow = next(c for c in report.checks if c.id == "slow")
    assert slow.status == "failed" and "cancelled" in slow.evidence
    assert processes_with(m) == []


def test_git_stops_when_cancelled(tmp_path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(ToolError) as caught:
        run_git(Workspace(ws), ["status"], cancel=cancel)
    assert caught.value.kind is ErrorKind.CANCELLED
