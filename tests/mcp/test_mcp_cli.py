"""``codeward mcp list`` against real servers: tools, annotations, each mode's decision, stop."""

from __future__ import annotations

import json
import subprocess
import sys

from mcpkit import SERVERS, new_marker, require_sdk, sleeping, wait_for

from codeward.cli import main


def _config(tmp_path, servers) -> str:  # type: ignore[no-untyped-def]
    path = tmp_path / ".mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return str(path)


def test_list_shows_tools_and_decisions_and_stops_the_servers(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    require_sdk()
    marker = new_marker()
    policy = tmp_path / "policy.yaml"
    policy.write_text("deny: ['mcp__sdk__big']\ndefault_decision: allow\n")
    config = _config(
        tmp_path,
        {
            "sdk": {"command": sys.executable, "args": [str(SERVERS / "sdk_server.py")]},
            "daemon": {
                "command": sys.executable,
                "args": [str(SERVERS / "hostile.py"), "daemon", marker],
            },
            "gone": {"command": "/nonexistent/server"},
            "web": {"type": "sse", "url": "http://127.0.0.1:1/sse"},
        },
    )
    assert main(["mcp", "list", "--config", config, "--policy", str(policy), "--json"]) == 1
    report = {entry["server"]: entry for entry in json.loads(capsys.readouterr().out)}
    tools = {t["name"]: t for t in report["sdk"]["tools"]}
    assert tools["mcp__sdk__echo"]["decisions"] == {
        "default": "allow",
        "plan": "allow",
        "auto": "allow",
    }
    assert tools["mcp__sdk__add"]["decisions"] == {"default": "ask", "plan": "deny", "auto": "deny"}
    assert tools["mcp__sdk__big"]["decisions"]["default"] == "deny"  # the policy applies
    assert tools["mcp__sdk__write_note"]["annotations"] == {
        "readOnlyHint": False,
        "destructiveHint": True,
    }
    assert report["daemon"]["tools"][0]["name"] == "mcp__daemon__work"
    assert report["daemon"]["owned"] is True and report["sdk"]["owned"] is True
    assert "execve /nonexistent/server" in report["gone"]["error"]
    assert "not supported" in report["web"]["skipped"]
    assert wait_for(lambda: not sleeping(marker), 3), "a server's daemon outlived the listing"


def test_list_prints_a_table_through_the_console_script(tmp_path) -> None:  # type: ignore[no-untyped-def]
    config = _config(
        tmp_path,
        {"h": {"command": sys.executable, "args": [str(SERVERS / "hostile.py"), "paginate"]}},
    )
    out = subprocess.run(
        [sys.executable, "-m", "codeward", "mcp", "list", "--config", config],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "server h: hostile-paginate 1, protocol 2025-06-18, on the host (owned), 6 tools" in out
    assert (
        "mcp__h__tool_2_1" in out and "ask     deny    deny    side effects (no annotations)" in out
    )


def test_a_missing_file_is_a_clear_error(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["mcp", "list", "--config", str(tmp_path / "none.json")]) == 2
    assert "cannot read" in capsys.readouterr().err
