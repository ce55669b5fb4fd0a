"""The idle stop: a long-lived sandbox that ran nothing for idle_stop_ms is stopped whole,
and the next command starts a new one, as if nothing happened (issue 16)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from codeward import Agent, PermissionPolicy, SessionOptions, ToolCall
from codeward.sandbox import UNLIMITED, NativeBashSandbox, SandboxLimits


def _wait_stopped(sb: NativeBashSandbox, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while sb._handle.info()["running"] and time.monotonic() < deadline:
        time.sleep(0.02)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with open(f"/proc/{pid}/stat") as f:  # a zombie of someone else's is gone for us
        return f.read().split(") ")[-1].startswith("Z")


def test_an_idle_sandbox_is_stopped_whole_and_comes_back(tmp_path: Path, fs_names_emulated) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    with NativeBashSandbox(ws, reuse=True, limits=SandboxLimits(idle_stop_ms=300)) as sb:
        assert sb.exec("echo one > one.txt").exit_code == 0
        info = sb._handle.info()
        assert info["running"] and info["starts"] == 1
        init = info["pid"]
        # a placeholder while it lives, on the fallback; nothing with the emulation
        assert (ws / ".bashrc").is_dir() == (not fs_names_emulated)
        _wait_stopped(sb)
        assert not sb._handle.info()["running"]
        sb._handle.stop()  # waits for the idle stop to finish its cleanup
        assert _gone(init), "the idle sandbox's init still runs"
        assert sorted(p.name for p in ws.iterdir()) == ["one.txt"], "placeholders left"
        out = sb.exec("cat one.txt")
        assert out.exit_code == 0 and out.stdout == "one\n"
        assert sb._handle.info()["starts"] == 2
        long = sb.exec("sleep 1; echo done")  # longer than the idle time: never stopped under it
        assert long.stdout == "done\n" and sb._handle.info()["starts"] == 2


def test_unlimited_keeps_it(tmp_path: Path) -> None:
    with NativeBashSandbox(
        tmp_path, reuse=True, limits=SandboxLimits(idle_stop_ms=UNLIMITED)
    ) as sb:
        sb.exec("true")
        time.sleep(0.5)
        assert sb._handle.info()["running"]


def test_a_session_restarts_its_sandbox_transparently(tmp_path: Path) -> None:
    options = SessionOptions(
        mode="auto",
        permission_policy=PermissionPolicy(allow=["bash"]),
        sandbox_limits=SandboxLimits(idle_stop_ms=200),
    )
    with Agent().session(tmp_path, options) as session:
        first = session.invoke(ToolCall("a", "bash", {"command": "echo 1 > f"}))
        assert first.result is not None and first.result.success
        _wait_stopped(session.sandbox)  # type: ignore[arg-type]
        second = session.invoke(ToolCall("b", "bash", {"command": "cat f && echo 2 > g"}))
        assert second.result is not None and second.result.success
        assert "1" in second.result.output
        assert {e.path for e in session._ledger.entries()} == {"f", "g"}
