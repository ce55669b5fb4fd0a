"""A server in a sandbox of its own: the workspace read-only and no network unless granted,
and nothing of it left after close()."""

from __future__ import annotations

import json
import socket
import sys

import pytest
from mcpkit import (
    SERVERS,
    boxed_program,
    hostile_config,
    new_marker,
    sdk_config,
    sleeping,
    wait_for,
)

from codeward.mcp import McpClient, McpSandbox, McpServerConfig, McpStartError
from codeward.sandbox import NativeBashSandbox


@pytest.fixture(autouse=True)
def native_boundary() -> None:
    """Like the sandbox suites: a missing boundary is a failure here, not a skip."""
    reason = NativeBashSandbox.probe()
    assert reason is None, f"the native boundary is unavailable: {reason}"


@pytest.fixture
def listener():  # type: ignore[no-untyped-def]
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    yield server.getsockname()[1]
    server.close()


def _probe(tmp_path, listener, sandbox: McpSandbox) -> dict:  # type: ignore[no-untyped-def]
    config = hostile_config("probe", sandbox=sandbox, env={"GIVEN": "yes"}, workspace=tmp_path)
    with McpClient(config, workspace=tmp_path) as client:
        assert client.sandboxed
        result = client.call_tool("work", {"port": listener})
    found: dict = json.loads(result.content[0]["text"])
    return found


def test_default_sandbox_is_read_only_without_network(tmp_path, listener) -> None:  # type: ignore[no-untyped-def]
    found = _probe(tmp_path, listener, McpSandbox())
    assert found["write"] == "Read-only file system"
    assert found["connect"] != "ok"
    assert found["cwd"] == str(tmp_path.resolve())
    assert found["given"] == "yes"  # the configured environment passes
    assert not (tmp_path / "probe.txt").exists()


def test_granted_workspace_and_network(tmp_path, listener) -> None:  # type: ignore[no-untyped-def]
    found = _probe(tmp_path, listener, McpSandbox(writable_workspace=True, network=True))
    assert found["write"] == "ok" and found["connect"] == "ok"
    assert (tmp_path / "probe.txt").read_text() == "written from the server"


def test_sdk_server_in_a_sandbox(tmp_path) -> None:  # type: ignore[no-untyped-def]
    config = sdk_config(sandbox=McpSandbox(), workspace=tmp_path)
    with McpClient(config, workspace=tmp_path) as client:
        assert client.call_tool("echo", {"text": "boxed"}).content[0]["text"] == "boxed"


def test_a_sandboxed_daemon_is_gone_after_close(tmp_path) -> None:  # type: ignore[no-untyped-def]
    marker = new_marker()
    config = hostile_config("daemon", marker, sandbox=McpSandbox(), workspace=tmp_path)
    client = McpClient(config, workspace=tmp_path)
    assert wait_for(lambda: len(sleeping(marker)) == 1)
    client.close()
    assert wait_for(lambda: not sleeping(marker), 3)


def test_a_sandbox_needs_a_workspace_and_reports_what_it_cannot_start(tmp_path) -> None:  # type: ignore[no-untyped-def]
    config = McpServerConfig(
        "boxed", sys.executable, (str(SERVERS / "hostile.py"), "well"), sandbox=McpSandbox()
    )
    with pytest.raises(McpStartError, match="workspace"):
        McpClient(config)
    missing = McpServerConfig("boxed", "/nonexistent/server", sandbox=McpSandbox())
    with pytest.raises(McpStartError, match="/nonexistent/server"):
        McpClient(missing, workspace=tmp_path)


def _verified_session(ws):  # type: ignore[no-untyped-def]
    from codeward import Agent, CheckSpec, SessionOptions

    check = CheckSpec("ok", "custom", "true")
    session = Agent().session(ws, SessionOptions(verification_checks=(check,), detect_checks=False))
    session.bash("echo start > start.txt")
    assert session.verify().passed
    return session


def test_a_sandboxed_server_writing_the_workspace_is_booked_to_its_tool(tmp_path, listener) -> None:  # type: ignore[no-untyped-def]
    """issue 22: a call of a server with a writable workspace is snapshotted around like bash."""
    python, script, env = boxed_program(tmp_path, "hostile.py")  # where its sandbox sees it
    with _verified_session(tmp_path) as session:
        session.add_mcp_server(
            "hostile",
            python,
            [script, "probe"],
            env,
            sandbox=McpSandbox(writable_workspace=True),
        )
        result = session.tool("mcp__hostile__work", {"port": listener})
        assert result.success, result.output
        assert (tmp_path / "probe.txt").exists()
        entry = session._ledger.get("probe.txt")
        assert entry is not None and entry.tool == "mcp__hostile__work"
        outcome = session.complete_turn("done")
        assert not outcome.completed and "stale" in outcome.reason


def test_a_server_writing_later_on_a_timer_is_seen(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """issue 22: a write after the approved call answered (a timer) is booked to 'external'."""
    python, script, env = boxed_program(tmp_path, "hostile.py")  # where its sandbox sees it
    with _verified_session(tmp_path) as session:
        session.add_mcp_server(
            "hostile",
            python,
            [script, "timer", "0.5"],
            env,
            sandbox=McpSandbox(writable_workspace=True),
        )
        assert session.tool("mcp__hostile__work", {}).success
        verified = session.verify()  # the call changed nothing yet: the same digest
        assert verified.passed
        assert wait_for(lambda: (tmp_path / "timer.txt").exists(), 30)
        outcome = session.complete_turn("done")
        assert not outcome.completed
        entry = session._ledger.get("timer.txt")
        assert entry is not None and entry.tool == "external"
