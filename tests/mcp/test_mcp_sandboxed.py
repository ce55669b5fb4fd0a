"""A server in a sandbox of its own: the workspace read-only and no network unless granted,
and nothing of it left after close()."""

from __future__ import annotations

import json
import socket
import sys

import pytest
from mcpkit import SERVERS, hostile_config, new_marker, sdk_config, sleeping, wait_for

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
