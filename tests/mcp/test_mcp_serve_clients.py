"""`codeward mcp serve` driven by the TypeScript SDK's client and by the Inspector's CLI mode.

The TypeScript client (serve_client.mjs, @modelcontextprotocol/sdk pinned in
package.json) does the whole session in one connection. The Inspector's CLI
makes one request per run and answers no elicitation, so it is checked run by
run: the tool list with annotations, a sandboxed command, a denied call, an
ask refused with the rule that asked, and nothing left after each run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from mcpkit import HERE, new_marker, npm_server
from servekit import Served


@pytest.fixture
def served(tmp_path: Path) -> Served:
    return Served(tmp_path, new_marker())


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed (ci/install-deps.sh installs it)")
    return node


def _structured(result: dict) -> dict:
    return result["structuredContent"]


def _text(result: dict) -> str:
    return "\n".join(c["text"] for c in result["content"] if c.get("type") == "text")


def test_one_session_from_the_typescript_sdk_client(served: Served) -> None:
    npm_server("mcp-inspector")  # tests/mcp's node_modules are installed (npm ci)
    config = {
        "command": served.command,
        "args": served.args,
        "env": served.env,
        "sleepTag": served.tag,
        "sleepCommand": served.sleep_command,
    }
    done = subprocess.run(
        [_node(), str(HERE / "serve_client.mjs"), json.dumps(config)],
        capture_output=True,
        cwd=HERE,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-4000:]
    report = json.loads(done.stdout)

    assert report["server"]["name"] == "codeward"
    tools = {t["name"]: t for t in report["tools"]}
    assert {"bash", "read", "write", "edit", "patch", "search", "ls", "git"} <= set(tools)
    assert {"verify", "complete_turn"} <= set(tools)
    assert tools["ls"]["annotations"]["readOnlyHint"] is True
    assert tools["patch"]["annotations"]["destructiveHint"] is True
    assert tools["bash"]["annotations"]["openWorldHint"] is True

    bash = report["bash"]
    assert "hello from the workspace" in _text(bash)
    assert "/etc/shadow: Permission denied" in _text(bash)
    assert "Read-only file system" in _text(bash)
    assert _structured(bash)["sandboxed"] is True

    assert report["denied"]["isError"] is True
    assert _structured(report["denied"])["decision"] == "deny"

    assert len(report["asked"]) == 2
    assert "touch asked-yes" in report["asked"][0]
    assert _structured(report["accepted"])["approved"] is True
    assert _structured(report["declined"])["approved"] is False
    assert (served.workspace / "asked-yes").exists()
    assert not (served.workspace / "asked-no").exists()

    assert report["sleep_seen"] is True
    assert report["progress"] > 0
    assert report["long"].startswith("rejected")  # the client's own abort
    print(f"TypeScript client: cancel of sleep 60 took {report['cancel_ms']:.0f} ms")
    assert report["cancel_ms"] < 30_000, "cancelled long before the 60 s sleep would have ended"
    assert report["after_cancel"].get("isError") is not True

    assert served.leftovers() == {"processes": [], "placeholders": [], "run_dirs": []}


def _inspector(served: Served, home: Path, *args: str) -> dict:
    inspector = npm_server("mcp-inspector")
    env = dict(served.env)
    env["HOME"] = str(home)  # the Inspector keeps a catalog and a client config there
    env["MCP_CATALOG_PATH"] = str(home / "catalog.json")
    env["MCP_CLIENT_CONFIG_PATH"] = str(home / "client.json")
    done = subprocess.run(
        [inspector, "--cli", "--format", "json", "-q", *args, "--", served.command, *served.args],
        capture_output=True,
        env=env,
        cwd=home,
        timeout=120,
    )
    # a tool result with isError is still a result: the CLI exits 0 or 1 with it on stdout
    assert done.stdout, done.stderr.decode(errors="replace")[-4000:]
    result: dict = json.loads(done.stdout)["result"]
    # every run ends its server: nothing of it, nor of its sandbox, is left
    assert served.leftovers() == {"processes": [], "placeholders": [], "run_dirs": []}
    return result


def test_the_inspector_cli(served: Served, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    listed = _inspector(served, home, "--method", "tools/list")
    tools = {t["name"]: t for t in listed["tools"]}
    assert tools["read"]["annotations"]["readOnlyHint"] is True
    assert tools["bash"]["annotations"]["destructiveHint"] is True

    command = json.dumps({"command": "cat /etc/shadow; touch /etc/codeward-probe; cat hello.txt"})
    bash = _inspector(
        served, home, "--method", "tools/call", "--tool-name", "bash", "--tool-args-json", command
    )
    assert "Permission denied" in _text(bash) and "hello from the workspace" in _text(bash)
    assert _structured(bash)["sandboxed"] is True

    denied = _inspector(
        served,
        home,
        "--method",
        "tools/call",
        "--tool-name",
        "read",
        "--tool-args-json",
        json.dumps({"file_path": "secret.txt"}),
    )
    assert _structured(denied)["decision"] == "deny"
    assert "do not read" not in _text(denied)

    # The CLI answers no elicitation: the ask fails closed and says how to allow it.
    asked = _inspector(
        served,
        home,
        "--method",
        "tools/call",
        "--tool-name",
        "bash",
        "--tool-args-json",
        json.dumps({"command": "touch asked-cli"}),
    )
    data = _structured(asked)
    assert (data["decision"], data["executed"]) == ("deny", False)
    assert data["error_kind"] == "ConfirmationUnavailable"
    assert "bash(touch asked-cli)" in data["how_to_allow"]
    assert not (served.workspace / "asked-cli").exists()
    assert not os.path.exists("/etc/codeward-probe")
