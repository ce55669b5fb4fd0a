"""MCP tools inside a session: the kernel decides each call with the server's annotations.

Against the official Python SDK's server (servers/sdk_server.py) for the
decisions, and against a ``.mcp.json`` with the two npm reference servers
and the SDK server for the whole story: load, list, call through the
kernel, list-changed, and no process left after close() or the host's
SIGKILL.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from mcpkit import (
    SERVERS,
    NoBash,
    RecordingProvider,
    marked,
    new_marker,
    npm_server,
    require_sdk,
    wait_for,
)

from codeward import (
    Agent,
    Decision,
    Mode,
    PermissionPolicy,
    SessionClosed,
    SessionOptions,
    ToolCall,
)
from codeward.mcp import McpConfigError


def _session(ws: Path, mode: str = "default", answer: bool = False, policy=None):  # type: ignore[no-untyped-def]
    provider = RecordingProvider(answer)
    options = SessionOptions(
        mode=mode, confirmation_provider=provider, sandbox_handle=NoBash(), permission_policy=policy
    )
    return Agent().session(ws, options), provider


def _call(session, name: str, args=None):  # type: ignore[no-untyped-def]
    return session.invoke(ToolCall(f"c{os.urandom(4).hex()}", name, args or {}))


@pytest.fixture(scope="module")
def sdk_session(tmp_path_factory):  # type: ignore[no-untyped-def]
    """One session with the SDK server: its mode and answers change per test."""
    require_sdk()
    ws = tmp_path_factory.mktemp("ws")
    session, provider = _session(ws)
    names = session.add_mcp_server("sdk", sys.executable, [str(SERVERS / "sdk_server.py")])
    assert "mcp__sdk__echo" in names and "mcp__sdk__add" in names
    yield session, provider
    session.close()


def test_annotations_decide_in_each_mode(sdk_session) -> None:  # type: ignore[no-untyped-def]
    session, provider = sdk_session
    expected = {  # tool -> (default, plan, auto)
        "mcp__sdk__echo": ("allow", "allow", "allow"),  # readOnlyHint true
        "mcp__sdk__add": ("ask", "deny", "deny"),  # no annotations
        "mcp__sdk__write_note": ("ask", "deny", "deny"),  # destructive
        "mcp__sdk__contradictory": ("ask", "deny", "deny"),  # read-only yet destructive
    }
    args = {
        "mcp__sdk__echo": {"text": "hi"},
        "mcp__sdk__add": {"a": 2, "b": 3},
        "mcp__sdk__write_note": {"name": "n", "text": "t"},
        "mcp__sdk__contradictory": {},
    }
    try:
        for column, mode in enumerate(("default", "plan", "auto")):
            session.set_mode(mode)
            for tool, decisions in expected.items():
                provider.asked.clear()
                outcome = _call(session, tool, args[tool])
                want = decisions[column]
                assert outcome.decision.value == want, (tool, mode, outcome.trace)
                assert outcome.executed == (want == "allow"), (tool, mode)
                assert provider.asked == ([tool] if want == "ask" else [])
    finally:
        session.set_mode(Mode.DEFAULT)


def test_an_allowed_call_returns_the_servers_result(sdk_session) -> None:  # type: ignore[no-untyped-def]
    session, provider = sdk_session
    outcome = _call(session, "mcp__sdk__echo", {"text": "héllo"})
    assert outcome.result.success and outcome.result.output == "héllo"
    assert outcome.result.metadata["mcp_server"] == "sdk"
    assert outcome.result.metadata["structured_content"] == {"result": "héllo"}
    provider.answer = True
    try:
        outcome = _call(session, "mcp__sdk__add", {"a": 2, "b": 3})
    finally:
        provider.answer = False
    assert outcome.decision is Decision.ASK and outcome.approved and outcome.result.output == "5"


def test_a_tool_error_is_a_failed_result(sdk_session) -> None:  # type: ignore[no-untyped-def]
    session, _ = sdk_session
    result = _call(session, "mcp__sdk__fail", {"message": "boom"}).result
    assert not result.success and result.error_kind.value == "ToolFailed"
    assert "boom" in result.output


def test_results_are_escaped_and_capped(sdk_session) -> None:  # type: ignore[no-untyped-def]
    session, _ = sdk_session
    out = _call(session, "mcp__sdk__evil_text").result.output
    assert "\x1b" not in out and "\u202e" not in out
    assert "\\x1b[2J" in out and "\\u202e" in out
    assert "\nsecond line\ttab" in out  # line breaks and tabs stay
    big = _call(session, "mcp__sdk__big", {"size": 300_000}).result
    assert big.metadata["truncated"] is True
    assert len(big.output.encode()) < 102_400 + 100
    assert "bytes omitted" in big.output
    assert big.metadata.get("structured_content_truncated") is True


def test_the_policy_decides_mcp_calls(tmp_path) -> None:  # type: ignore[no-untyped-def]
    require_sdk()
    policy = PermissionPolicy(
        deny=["mcp__sdk__big"], allow=["mcp__sdk__echo", "mcp__sdk__add"], default_decision="deny"
    )
    session, provider = _session(tmp_path, policy=policy)
    with session:
        session.add_mcp_server("sdk", sys.executable, [str(SERVERS / "sdk_server.py")])
        assert _call(session, "mcp__sdk__big", {"size": 1}).decision is Decision.DENY
        assert _call(session, "mcp__sdk__evil_text").decision is Decision.DENY  # the default
        assert _call(session, "mcp__sdk__echo", {"text": "x"}).decision is Decision.ALLOW
        # an allow rule does not waive the side effect's confirmation
        outcome = _call(session, "mcp__sdk__add", {"a": 1, "b": 1})
        assert outcome.decision is Decision.ASK and provider.asked == ["mcp__sdk__add"]
        assert any(t.stage == "escalation" for t in outcome.trace)
        schemas = {s["name"]: s for s in session.tool_schemas()}
        assert "mcp__sdk__big" not in schemas  # denied outright: never shown to the model
        assert schemas["mcp__sdk__add"]["parameters"]["required"] == ["a", "b"]


def test_list_changed_registers_new_tools(tmp_path) -> None:  # type: ignore[no-untyped-def]
    require_sdk()
    session, _ = _session(tmp_path, answer=True)
    with session:
        session.add_mcp_server("sdk", sys.executable, [str(SERVERS / "sdk_server.py")])
        assert "mcp__sdk__fresh" not in session.tool_names()
        assert _call(session, "mcp__sdk__add_tool", {"name": "fresh"}).result.success
        assert wait_for(lambda: "mcp__sdk__fresh" in session.tool_names(), 10)
        outcome = _call(session, "mcp__sdk__fresh")
        assert outcome.decision is Decision.ALLOW  # registered with its read-only annotation
        assert outcome.result.output == "I am fresh"


def test_close_ends_the_server_and_later_calls_fail(tmp_path) -> None:  # type: ignore[no-untyped-def]
    require_sdk()
    session, _ = _session(tmp_path)
    session.add_mcp_server("sdk", sys.executable, [str(SERVERS / "sdk_server.py")])
    supervisor = session.mcp_client("sdk").pid
    assert session.mcp_servers() == ["sdk"]
    session.close()
    assert not os.path.exists(f"/proc/{supervisor}")
    with pytest.raises(SessionClosed):
        _call(session, "mcp__sdk__echo", {"text": "x"})


def test_a_server_name_must_be_plain(tmp_path) -> None:  # type: ignore[no-untyped-def]
    session, _ = _session(tmp_path)
    with session, pytest.raises(McpConfigError, match="no '__'"):
        session.add_mcp_server("a__b", "true")


def _three_servers(ws: Path, marker: str) -> Path:
    require_sdk()
    env = {"CODEWARD_TEST_MARK": marker}
    config = {
        "mcpServers": {
            "files": {
                "command": npm_server("mcp-server-filesystem"),
                "args": [str(ws)],
                "env": env,
            },
            "everything": {"command": npm_server("mcp-server-everything"), "env": env},
            "sdk": {
                "command": sys.executable,
                "args": [str(SERVERS / "sdk_server.py")],
                "env": env,
            },
        }
    }
    path = ws.parent / f"{ws.name}.mcp.json"
    path.write_text(json.dumps(config))
    return path


def test_done_a_session_with_two_npm_servers_and_one_sdk_server(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("from the workspace\n")
    marker = new_marker()
    config = _three_servers(ws, marker)
    session, provider = _session(ws)
    try:
        loaded = session.load_mcp_config(config)
        assert sorted(loaded) == ["everything", "files", "sdk"]
        assert "mcp__files__read_text_file" in loaded["files"]
        assert "mcp__everything__echo" in loaded["everything"]
        assert len(marked(marker)) >= 3
        # read-only tools run; side effects ask (rejected here) and do not run
        read = _call(session, "mcp__files__read_text_file", {"path": str(ws / "notes.txt")})
        assert read.decision is Decision.ALLOW and "from the workspace" in read.result.output
        write = _call(
            session, "mcp__files__write_file", {"path": str(ws / "x.txt"), "content": "no"}
        )
        assert write.decision is Decision.ASK and not write.executed
        assert not (ws / "x.txt").exists()
        echo = _call(session, "mcp__everything__echo", {"message": "hi"})
        assert echo.decision is Decision.ALLOW and "hi" in echo.result.output
        total = _call(session, "mcp__everything__get-sum", {"a": 2, "b": 40})
        assert total.decision is Decision.ALLOW and "42" in total.result.output
        logging_toggle = _call(session, "mcp__everything__toggle-simulated-logging")
        assert logging_toggle.decision is Decision.ASK  # readOnlyHint false
        assert _call(session, "mcp__sdk__echo", {"text": "ok"}).result.output == "ok"
        assert provider.asked == [
            "mcp__files__write_file",
            "mcp__everything__toggle-simulated-logging",
        ]
    finally:
        session.close()
    assert wait_for(lambda: not marked(marker), 3), f"left after close(): {marked(marker)}"


def test_done_no_server_process_survives_the_hosts_sigkill(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ws = tmp_path / "ws"
    ws.mkdir()
    marker = new_marker()
    config = _three_servers(ws, marker)
    host = tmp_path / "host.py"
    host.write_text(
        textwrap.dedent(
            f"""
            import sys, time
            sys.path.insert(0, {str(SERVERS.parent)!r})
            from mcpkit import NoBash
            from codeward import Agent, SessionOptions
            session = Agent().session({str(ws)!r}, SessionOptions(sandbox_handle=NoBash()))
            session.load_mcp_config({str(config)!r})
            print("ready", flush=True)
            time.sleep(600)
            """
        )
    )
    proc = subprocess.Popen([sys.executable, str(host)], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        assert len(marked(marker)) >= 3
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert wait_for(lambda: not marked(marker), 3), f"left after SIGKILL: {marked(marker)}"
