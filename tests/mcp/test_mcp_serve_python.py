"""`codeward mcp serve` driven by the official MCP Python SDK client (`mcp`, pinned).

One session does what an agent would: list the tools and their annotations,
run a command in the sandbox, get a denied call refused, have an ask answered
through elicitation (accepted, then declined), cancel a `sleep 60`, and leave
nothing behind once the client exits.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from mcpkit import new_marker, require_sdk
from servekit import Served, wait_for

anyio = pytest.importorskip("anyio")


@pytest.fixture
def served(tmp_path: Path) -> Served:
    require_sdk()
    return Served(tmp_path, new_marker())


def _structured(result) -> dict:  # type: ignore[no-untyped-def]
    assert result.structured_content is not None, result
    return dict(result.structured_content)


def _text(result) -> str:  # type: ignore[no-untyped-def]
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def test_one_session_from_the_python_sdk_client(served: Served) -> None:
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from mcp import types

    asked: list[str] = []
    answers = ["accept", "decline"]

    async def on_elicit(context, params):  # type: ignore[no-untyped-def]
        asked.append(params.message)
        action = answers.pop(0)
        content = {"approve": True} if action == "accept" else None
        return types.ElicitResult(action=action, content=content)

    progress: list[float] = []

    async def on_progress(value, total, message):  # type: ignore[no-untyped-def]
        progress.append(value)

    report: dict = {}

    async def main() -> None:
        params = StdioServerParameters(command=served.command, args=served.args, env=served.env)
        with open(served.tmpdir.parent / "server.err", "w") as errlog:  # a real file: the
            transport = stdio_client(params, errlog=errlog)  # SDK hands it to the server
            async with Client(transport, elicitation_callback=on_elicit) as client:
                await session(client)

    async def session(client) -> None:  # type: ignore[no-untyped-def]
        tools = {t.name: t for t in (await client.list_tools()).tools}
        report["tools"] = tools

        report["bash"] = await client.call_tool(
            "bash",
            {"command": "cat /etc/shadow; echo x > /etc/codeward-probe; cat hello.txt"},
        )
        report["denied"] = await client.call_tool("read", {"file_path": "secret.txt"})
        report["accepted"] = await client.call_tool("bash", {"command": "touch asked-yes"})
        report["declined"] = await client.call_tool("bash", {"command": "touch asked-no"})

        async with anyio.create_task_group() as group:

            async def long_call() -> None:
                await client.call_tool(
                    "bash",
                    {"command": served.sleep_command},
                    progress_callback=on_progress,
                )

            group.start_soon(long_call)
            await anyio.to_thread.run_sync(lambda: wait_for(lambda: bool(served.sleeping())))
            # one progress tick (a second) before cancelling
            await anyio.to_thread.run_sync(lambda: wait_for(lambda: bool(progress), 10))
            started = time.monotonic()
            group.cancel_scope.cancel()
        report["cancel_s"] = await anyio.to_thread.run_sync(lambda: _gone_after(served, started))
        report["after_cancel"] = await client.call_tool("ls", {})

    anyio.run(main)
    tools = report["tools"]
    expected = {"bash", "read", "write", "edit", "patch", "search", "ls", "git", "download"}
    assert expected | {"verify", "complete_turn"} <= set(tools)
    assert tools["read"].annotations.read_only_hint is True
    assert tools["read"].annotations.open_world_hint is False
    assert tools["bash"].annotations.read_only_hint is False
    assert tools["bash"].annotations.destructive_hint is True
    assert tools["write"].annotations.idempotent_hint is True
    assert tools["download"].annotations.open_world_hint is True
    assert tools["bash"].input_schema["required"] == ["command"]

    bash = report["bash"]
    text = _text(bash)
    assert "hello from the workspace" in text
    assert "/etc/shadow: Permission denied" in text
    assert "Read-only file system" in text
    assert _structured(bash)["sandboxed"] is True
    assert _structured(bash)["decision"] == "allow"

    denied = report["denied"]
    assert denied.is_error
    assert _structured(denied)["decision"] == "deny"
    assert any("read(secret*)" in r for r in _structured(denied)["denied_by"])
    assert "read(secret*)" in _text(denied)
    assert "do not read" not in _text(denied)

    assert len(asked) == 2, asked
    assert "touch asked-yes" in asked[0] and "touch asked-no" in asked[1]
    accepted, declined = _structured(report["accepted"]), _structured(report["declined"])
    assert (accepted["decision"], accepted["approved"], accepted["executed"]) == (
        "ask",
        True,
        True,
    )
    assert (served.workspace / "asked-yes").exists()
    assert (declined["decision"], declined["approved"], declined["executed"]) == (
        "ask",
        False,
        False,
    )
    assert not (served.workspace / "asked-no").exists()

    assert progress, "a long call with a progress token reports progress"
    print(f"cancel of sleep 60 took {report['cancel_s']:.3f} s")
    assert report["cancel_s"] < 30, "cancelled long before the 60 s sleep would have ended"
    assert not report["after_cancel"].is_error  # the server goes on after a cancel

    assert served.leftovers() == {"processes": [], "placeholders": [], "run_dirs": []}


def _gone_after(served: Served, started: float) -> float:
    assert wait_for(lambda: not served.sleeping(), 60), served.processes()
    return time.monotonic() - started


def test_without_elicitation_an_ask_fails_closed_and_says_how_to_allow(served: Served) -> None:
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def main():  # type: ignore[no-untyped-def]
        params = StdioServerParameters(command=served.command, args=served.args, env=served.env)
        with open(served.tmpdir.parent / "server.err", "w") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                return await client.call_tool("bash", {"command": "touch asked-here"})

    result = anyio.run(main)
    data = _structured(result)
    assert result.is_error
    assert (data["decision"], data["executed"]) == ("deny", False)
    assert data["error_kind"] == "ConfirmationUnavailable"
    assert any("bash(touch asked-*)" in reason for reason in data["asked_by"]), data
    assert "bash(touch asked-here)" in data["how_to_allow"]
    assert not (served.workspace / "asked-here").exists()
    assert served.leftovers() == {"processes": [], "placeholders": [], "run_dirs": []}
