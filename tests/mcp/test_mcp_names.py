"""Tool names are unambiguous: two servers' tools never share ``mcp__<server>__<tool>``.

Server ``a`` with tool ``_b`` and server ``a_`` with tool ``b`` would both
be ``mcp__a___b``; a server name ending in ``_`` is refused, loudly, with
the reason (in a session and in ``codeward mcp list``). A tool whose name
another tool already holds is not registered, and the reason is kept.
"""

from __future__ import annotations

import json
import sys

import pytest
from mcpkit import SERVERS, NoBash, RecordingProvider, hostile_config

from codeward import Agent, SessionOptions, ToolCall
from codeward.cli import main
from codeward.kernel import ExternalTool, ToolAnnotations, ToolRegistry
from codeward.mcp import McpConfigError, McpServerConfig, load_mcp_config
from codeward.mcp._tools import McpServers


def _named(tool: str) -> dict[str, object]:
    return {"command": sys.executable, "args": [str(SERVERS / "hostile.py"), "named", tool]}


def test_a_server_name_ending_in_underscore_is_refused_with_the_reason(tmp_path) -> None:  # type: ignore[no-untyped-def]
    options = SessionOptions(sandbox_handle=NoBash(), confirmation_provider=RecordingProvider(True))
    with Agent().session(tmp_path, options) as session:
        names = session.add_mcp_server(
            "a", sys.executable, [str(SERVERS / "hostile.py"), "named", "_b"]
        )
        assert names == ["mcp__a___b"]
        with pytest.raises(McpConfigError, match=r"'a_'.*must not end with '_'.*ambiguous"):
            session.add_mcp_server(
                "a_", sys.executable, [str(SERVERS / "hostile.py"), "named", "b"]
            )
        assert session.mcp_servers() == ["a"]  # nothing of a_ started or registered
        outcome = session.invoke(ToolCall("c1", "mcp__a___b", {}))
        assert outcome.result.success and outcome.result.metadata["mcp_server"] == "a"
    with pytest.raises(McpConfigError, match="must not end with '_'"):
        McpServerConfig("x_", "true")
    with pytest.raises(McpConfigError, match="must not end with '_'"):
        load_mcp_config({"mcpServers": {"a": _named("_b"), "a_": _named("b")}})


def test_mcp_list_refuses_the_ambiguous_pair_and_says_why(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    config = tmp_path / ".mcp.json"
    config.write_text(json.dumps({"mcpServers": {"a": _named("_b"), "a_": _named("b")}}))
    assert main(["mcp", "list", "--config", str(config)]) != 0
    err = capsys.readouterr().err
    assert "'a_'" in err and "ambiguous" in err


def test_a_tool_name_already_held_is_not_registered_and_the_reason_is_kept(tmp_path) -> None:  # type: ignore[no-untyped-def]
    host_tool = ExternalTool(
        "mcp__x__work", lambda _a: "host", {"type": "object"}, ToolAnnotations(), ""
    )
    registry = ToolRegistry([host_tool])
    servers = McpServers(registry, str(tmp_path))
    try:
        assert servers.add(hostile_config("well", name="x")) == []
        assert registry.get("mcp__x__work") is host_tool  # calls still go to the host's tool
        assert "one of the host's own tools" in servers.refused_tools("x")["mcp__x__work"]
    finally:
        servers.close()
