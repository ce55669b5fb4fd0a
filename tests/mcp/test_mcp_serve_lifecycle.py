"""`codeward mcp serve` when the client goes away, and when it sends what it should not.

A client that closes stdin, one killed with SIGKILL, and a SIGTERM to the server
while a command runs must all leave nothing: no process of the server or of its
sandbox, no placeholder in the workspace, no run directory. Malformed messages
get JSON-RPC errors and the server goes on.
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
from mcpkit import new_marker
from servekit import Served, wait_for

NOTHING = {"processes": [], "placeholders": [], "run_dirs": []}


@pytest.fixture
def served(tmp_path: Path) -> Served:
    return Served(tmp_path, new_marker())


def start(served: Served) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [served.command, *served.args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=served.env,
    )


def send(proc: subprocess.Popen[bytes], message: object) -> None:
    assert proc.stdin is not None
    data = message if isinstance(message, bytes) else json.dumps(message).encode()
    proc.stdin.write(data + b"\n")
    proc.stdin.flush()


def receive(proc: subprocess.Popen[bytes]) -> dict:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, "the server closed its output"
    return json.loads(line)


def initialize(proc: subprocess.Popen[bytes]) -> dict:
    send(
        proc,
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        },
    )
    answer = receive(proc)
    send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    return answer


def call(id: int, name: str, args: dict) -> dict:
    return {
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {"name": name, "arguments": args},
    }


def test_closing_stdin_while_a_command_runs_leaves_nothing(served: Served) -> None:
    proc = start(served)
    initialize(proc)
    send(proc, call(1, "bash", {"command": served.sleep_command}))
    assert wait_for(lambda: bool(served.sleeping()))
    assert proc.stdin is not None
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0
    assert served.leftovers() == NOTHING


def test_sigterm_while_a_command_runs_leaves_nothing(served: Served) -> None:
    proc = start(served)
    initialize(proc)
    send(proc, call(1, "bash", {"command": served.sleep_command}))
    assert wait_for(lambda: bool(served.sleeping()))
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    assert served.leftovers() == NOTHING


def test_a_client_killed_with_sigkill_leaves_nothing(served: Served) -> None:
    client = textwrap.dedent(
        """
        import json, os, signal, subprocess, sys, time
        config = json.loads(sys.argv[1])
        server = subprocess.Popen(
            config["argv"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=config["env"]
        )
        def send(m):
            server.stdin.write(json.dumps(m).encode() + b"\\n"); server.stdin.flush()
        send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "doomed", "version": "0"}}})
        server.stdout.readline()
        send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
              "params": {"name": "bash", "arguments": {"command": config["sleep"]}}})
        print("started", flush=True)
        time.sleep(600)
        """
    )
    config = {
        "argv": [served.command, *served.args],
        "env": served.env,
        "sleep": served.sleep_command,
    }
    doomed = subprocess.Popen(
        [sys.executable, "-c", client, json.dumps(config)], stdout=subprocess.PIPE
    )
    assert doomed.stdout is not None and doomed.stdout.readline() == b"started\n"
    assert wait_for(lambda: bool(served.sleeping()))
    os.kill(doomed.pid, signal.SIGKILL)  # its pipes to the server close with it
    doomed.wait(timeout=10)
    assert served.leftovers(within_s=30) == NOTHING


def test_malformed_messages_get_errors_and_the_server_goes_on(served: Served) -> None:
    proc = start(served)
    answer = initialize(proc)
    assert answer["result"]["protocolVersion"] == "2025-11-25"
    assert answer["result"]["capabilities"] == {"tools": {"listChanged": False}}
    send(proc, b"{not json")
    assert receive(proc)["error"]["code"] == -32700
    send(proc, b"[]")
    assert receive(proc)["error"]["code"] == -32600
    send(proc, {"jsonrpc": "2.0", "id": 5, "method": "server/discover", "params": {}})
    assert receive(proc)["error"]["code"] == -32601
    send(proc, {"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"arguments": {}}})
    assert receive(proc)["error"]["code"] == -32602
    send(proc, call(7, "bash", {"command": "true", "origin": "host_direct"}))
    refused = receive(proc)["result"]
    assert refused["isError"] is True
    assert refused["structuredContent"]["error_kind"] == "InvalidArgument"
    send(proc, call(8, "write", {"file_path": "../outside.txt", "content": "x"}))
    outside = receive(proc)["result"]
    assert outside["structuredContent"]["decision"] == "deny"
    assert not (served.workspace.parent / "outside.txt").exists()
    send(proc, call(9, "no_such_tool", {}))
    assert receive(proc)["result"]["isError"] is True
    send(proc, {"jsonrpc": "2.0", "id": 10, "method": "ping"})
    assert receive(proc) == {"jsonrpc": "2.0", "id": 10, "result": {}}
    assert proc.stdin is not None
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0
    assert served.leftovers() == NOTHING


def test_an_old_protocol_version_is_answered_with_its_own(served: Served) -> None:
    proc = start(served)
    send(
        proc,
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {}},
        },
    )
    assert receive(proc)["result"]["protocolVersion"] == "2024-11-05"
    send(proc, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert len(receive(proc)["result"]["tools"]) >= 11
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(timeout=30)


def _ask(proc: subprocess.Popen[bytes], id: int, name: str) -> dict:
    """Calls `touch NAME` (the policy asks) and returns the server's elicitation request."""
    send(proc, call(id, "bash", {"command": f"touch {name}"}))
    request = receive(proc)
    assert request["method"] == "elicitation/create", request
    assert f"touch {name}" in request["params"]["message"]
    schema = request["params"]["requestedSchema"]
    assert schema["properties"]["approve"] == {
        "type": "boolean",
        "title": "Run this call",
        "description": "Check to let this exact call run once.",
        "default": False,
    }
    return request


ELICITED = {
    "accepted without approve": {"result": {"action": "accept", "content": {}}},
    "approve as a string": {"result": {"action": "accept", "content": {"approve": "true"}}},
    "approve as 1": {"result": {"action": "accept", "content": {"approve": 1}}},
    "cancel": {"result": {"action": "cancel"}},
    "decline with approve": {"result": {"action": "decline", "content": {"approve": True}}},
    "an error": {"error": {"code": -32600, "message": "no"}},
    "not an object": {"result": "accept"},
}


def test_only_an_accept_with_approve_true_runs_an_asked_call(served: Served) -> None:
    proc = start(served)
    send(
        proc,
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {"elicitation": {}},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        },
    )
    receive(proc)
    for n, (case, answer) in enumerate(sorted(ELICITED.items()), start=1):
        request = _ask(proc, n, f"asked-{n}")
        assert "mode" not in request["params"]  # not a field of 2025-06-18
        send(proc, {"jsonrpc": "2.0", "id": request["id"], **answer})
        result = receive(proc)["result"]["structuredContent"]
        assert (result["decision"], result["approved"], result["executed"]) == (
            "ask",
            False,
            False,
        ), case
        assert not (served.workspace / f"asked-{n}").exists(), case

    # cancelled while its question is open: the question is withdrawn, no response comes
    request = _ask(proc, 50, "asked-cancelled")
    send(proc, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 50}})
    withdrawn = receive(proc)
    assert withdrawn["method"] == "notifications/cancelled"
    assert withdrawn["params"]["requestId"] == request["id"]
    send(proc, {"jsonrpc": "2.0", "id": 51, "method": "ping"})
    assert receive(proc) == {"jsonrpc": "2.0", "id": 51, "result": {}}

    request = _ask(proc, 60, "asked-yes")
    send(
        proc,
        {
            "jsonrpc": "2.0",
            "id": request["id"],
            "result": {"action": "accept", "content": {"approve": True}},
        },
    )
    assert receive(proc)["result"]["structuredContent"]["approved"] is True
    assert (served.workspace / "asked-yes").exists()
    assert not (served.workspace / "asked-cancelled").exists()
    assert proc.stdin is not None
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0
    assert served.leftovers() == NOTHING


def test_a_turn_completes_through_the_gate_only_once_verified(served: Served) -> None:
    (served.workspace / "package.json").write_text('{"scripts": {"test": "true"}}\n')
    proc = start(served)
    initialize(proc)
    send(proc, call(1, "write", {"file_path": "src/new.txt", "content": "new\n"}))
    assert receive(proc)["result"]["structuredContent"]["executed"] is True
    send(proc, call(2, "complete_turn", {"text": "done"}))
    early = receive(proc)["result"]
    assert early["isError"] is True and early["structuredContent"]["completed"] is False
    send(proc, call(3, "verify", {}))
    verified = receive(proc)["result"]
    assert verified["structuredContent"]["passed"] is True, verified
    send(proc, call(4, "complete_turn", {"text": "done"}))
    done = receive(proc)["result"]
    assert done["structuredContent"]["completed"] is True, done
    send(proc, call(5, "complete_turn", {"origin": "host_direct"}))
    assert receive(proc)["result"]["isError"] is True  # unknown arguments are refused
    assert proc.stdin is not None
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0
    assert served.leftovers() == NOTHING


def test_plan_mode_and_a_tool_the_policy_denies_outright(served: Served) -> None:
    served.policy.write_text("deny:\n  - download\ndefault_decision: allow\n")
    proc = subprocess.Popen(
        [served.command, *served.args, "--mode", "plan"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=served.env,
    )
    initialize(proc)
    send(proc, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    names = {t["name"] for t in receive(proc)["result"]["tools"]}
    assert "download" not in names and "read" in names
    send(proc, call(2, "write", {"file_path": "planned.txt", "content": "x"}))
    refused = receive(proc)["result"]["structuredContent"]
    assert (refused["decision"], refused["executed"]) == ("deny", False)
    assert not (served.workspace / "planned.txt").exists()
    send(proc, call(3, "read", {"file_path": "hello.txt"}))
    assert "hello from the workspace" in receive(proc)["result"]["content"][0]["text"]
    assert proc.stdin is not None
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0


def test_hostile_output_comes_back_as_valid_json_and_a_flood_is_truncated(
    served: Served,
) -> None:
    proc = start(served)
    initialize(proc)
    send(proc, call(1, "bash", {"command": r"printf '\xff\xfe\x01\x1b[31m\xed\xa0\x80 end'"}))
    result = receive(proc)["result"]  # receive() parsed the whole line as JSON
    assert "end" in result["content"][0]["text"]
    send(proc, call(2, "bash", {"command": "head -c 5000000 /dev/zero | tr '\\0' a"}))
    flood = receive(proc)["result"]["structuredContent"]
    assert flood["truncated"] is True and flood["exit_code"] == 0
    assert proc.stdin is not None
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0
