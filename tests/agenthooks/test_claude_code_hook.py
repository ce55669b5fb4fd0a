"""`codeward hook claude-code`, run as Claude Code runs it: a process, JSON in, JSON out.

The fixtures in claude_code/ are hook inputs with the field names of the Claude
Agent SDK's PreToolUseHookInput and PermissionRequestHookInput (one per mapped
tool and event); ${WS} stands for the test's workspace.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "claude_code"
POLICY = """\
deny:
  - bash(rm -rf**)
  - read(secret*)
  - webfetch({"url":"http://**"})
ask:
  - bash(git push**)
default_decision: allow
"""


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "app"
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.py").write_text("def main():\n    print('hello')\n")
    (root / "secret.txt").write_text("s3cret\n")
    (root / ".env").write_text("TOKEN=abc\n")
    (tmp_path / "policy.yaml").write_text(POLICY)
    return root


def hook(
    payload: object, ws: Path, *extra: str, policy: bool = True, raw: bytes | None = None
) -> dict:
    args = [sys.executable, "-m", "codeward", "hook", "claude-code", "--workspace", str(ws)]
    if policy:
        args += ["--policy", str(ws.parent / "policy.yaml")]
    data = raw if raw is not None else json.dumps(payload).encode()
    done = subprocess.run(args + list(extra), input=data, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def fixture(name: str, ws: Path, **changes: object) -> dict:
    text = (FIXTURES / f"{name}.json").read_text().replace("${WS}", str(ws))
    data = json.loads(text)
    for key, value in changes.items():
        if key == "tool_input":
            data["tool_input"] = {**data["tool_input"], **value}  # type: ignore[dict-item]
        else:
            data[key] = value
    return data


def decision(answer: dict) -> tuple[str, str]:
    out = answer["hookSpecificOutput"]
    assert out["hookEventName"] == "PreToolUse"
    assert set(out) <= {
        "hookEventName",
        "permissionDecision",
        "permissionDecisionReason",
        "updatedInput",
    }
    return out["permissionDecision"], out["permissionDecisionReason"]


# -- one fixture per mapped tool --------------------------------------------------------

EXPECTED = {
    "pre_bash": "ask",  # without --sandbox-bash Claude Code runs it on the host
    "pre_read": "allow",
    "pre_write": "allow",
    "pre_edit": "allow",
    "pre_multiedit": "allow",
    "pre_glob": "allow",
    "pre_grep": "allow",
    "pre_webfetch": "ask",  # it sends data to the network: Claude Code asks the person
    "pre_notebookedit": "allow",
    "pre_mcp": "ask",  # an MCP tool declares no read-only annotation here
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_mapped_tool_gets_the_kernels_decision(name: str, ws: Path) -> None:
    verdict, reason = decision(hook(fixture(name, ws), ws))
    assert verdict == EXPECTED[name], reason
    assert reason.startswith("codeward: ")


def test_with_sandbox_bash_an_allowed_command_is_rewritten_and_runs_sandboxed(ws: Path) -> None:
    answer = hook(
        fixture("pre_bash", ws, tool_input={"command": "cat /etc/shadow; echo done"}),
        ws,
        "--sandbox-bash",
    )
    verdict, _ = decision(answer)
    assert verdict == "allow"
    updated = answer["hookSpecificOutput"]["updatedInput"]
    assert updated["description"] == "Run the tests" and updated["timeout"] == 60000
    assert " exec --workspace " in updated["command"] and "--timeout-ms 60000" in updated["command"]
    done = subprocess.run(["bash", "-c", updated["command"]], capture_output=True, timeout=60)
    assert done.stdout == b"done\n"
    assert b"Permission denied" in done.stderr


def test_plan_mode_and_the_policy_deny(ws: Path) -> None:
    write = fixture("pre_write", ws)
    assert decision(hook(write, ws, "--mode", "plan"))[0] == "deny"
    assert decision(hook({**write, "permission_mode": "plan"}, ws))[0] == "deny"
    verdict, reason = decision(
        hook(fixture("pre_read", ws, tool_input={"file_path": str(ws / "secret.txt")}), ws)
    )
    assert verdict == "deny" and "read(secret*)" in reason
    http = fixture("pre_webfetch", ws, tool_input={"url": "http://example.com/x"})
    assert decision(hook(http, ws))[0] == "deny"
    rm = fixture("pre_bash", ws, tool_input={"command": "rm -rf build"})
    assert decision(hook(rm, ws, "--sandbox-bash"))[0] == "deny"
    push = fixture("pre_bash", ws, tool_input={"command": "git push origin main"})
    answer = hook(push, ws, "--sandbox-bash")
    assert decision(answer)[0] == "ask"
    assert "exec --workspace" in answer["hookSpecificOutput"]["updatedInput"]["command"]


def test_paths_are_resolved_as_the_kernel_resolves_them(ws: Path, tmp_path: Path) -> None:
    outside = fixture("pre_read", ws, tool_input={"file_path": "/etc/passwd"})
    verdict, reason = decision(hook(outside, ws))
    assert verdict == "deny" and "path.outside_workspace" in reason
    dotdot = fixture("pre_write", ws, tool_input={"file_path": f"{ws}/src/../../escape.txt"})
    assert decision(hook(dotdot, ws))[0] == "deny"
    (ws / "link").symlink_to(tmp_path)
    linked = fixture("pre_write", ws, tool_input={"file_path": f"{ws}/link/x.txt"})
    assert decision(hook(linked, ws))[0] == "deny"
    relative = fixture("pre_read", ws, cwd=str(ws / "src"), tool_input={"file_path": "main.py"})
    assert decision(hook(relative, ws))[0] == "allow"
    protected = fixture("pre_write", ws, tool_input={"file_path": f"{ws}/.git/config"})
    assert decision(hook(protected, ws))[0] == "ask"
    env = fixture("pre_read", ws, tool_input={"file_path": f"{ws}/.env"})
    verdict, reason = decision(hook(env, ws))
    assert verdict == "deny" and ".env" in reason
    assert (
        decision(hook(fixture("pre_bash", ws, tool_input={"command": "rm -rf /"}), ws))[0] == "deny"
    )


def test_permission_request_answers_in_its_own_shape(ws: Path) -> None:
    allowed = hook(fixture("permission_bash", ws), ws, "--sandbox-bash")
    out = allowed["hookSpecificOutput"]
    assert out["hookEventName"] == "PermissionRequest"
    assert out["decision"]["behavior"] == "allow"
    assert "exec --workspace" in out["decision"]["updatedInput"]["command"]
    denied = hook(fixture("permission_read_outside", ws), ws)["hookSpecificOutput"]
    assert denied["decision"]["behavior"] == "deny"
    assert "outside" in denied["decision"]["message"]
    asked = hook(fixture("permission_write_protected", ws), ws)
    assert "hookSpecificOutput" not in asked  # no decision: Claude Code's dialog asks
    assert "protected" in asked["systemMessage"]


MALFORMED = {
    "not json": b"{not json",
    "empty": b"",
    "array": b"[]",
    "no event": json.dumps({"tool_name": "Read", "tool_input": {}}).encode(),
    "unknown event": json.dumps(
        {"hook_event_name": "PostToolUse", "tool_name": "Read", "tool_input": {"file_path": "a"}}
    ).encode(),
    "no tool": json.dumps({"hook_event_name": "PreToolUse", "tool_input": {}}).encode(),
    "input not object": json.dumps(
        {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": "ls"}
    ).encode(),
    "bash without command": json.dumps(
        {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {}}
    ).encode(),
    "read path not string": json.dumps(
        {"hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": {"file_path": 7}}
    ).encode(),
    "multiedit no edits": json.dumps(
        {
            "hook_event_name": "PreToolUse",
            "tool_name": "MultiEdit",
            "tool_input": {"file_path": "a", "edits": []},
        }
    ).encode(),
    "invalid utf-8": b'{"hook_event_name": "PreToolUse", "tool_name": "\xff"}',
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_input_is_denied(case: str, ws: Path) -> None:
    answer = hook(None, ws, raw=MALFORMED[case])
    assert decision(answer)[0] == "deny"


def test_a_policy_that_cannot_be_read_is_a_deny(ws: Path) -> None:
    (ws.parent / "policy.yaml").write_text("deny: [\n")
    assert decision(hook(fixture("pre_read", ws), ws))[0] == "deny"


def test_malformed_permission_request_is_denied_in_its_shape(ws: Path) -> None:
    bad = {
        "hook_event_name": "PermissionRequest",
        "tool_name": "Bash",
        "tool_input": {"command": 1},
    }
    out = hook(bad, ws)["hookSpecificOutput"]
    assert out["hookEventName"] == "PermissionRequest"
    assert out["decision"]["behavior"] == "deny"


# -- the rewrite keeps every byte of the command ------------------------------------------

HOSTILE = [
    "echo \"it's\"; echo 'a\"b'",
    "printf '%s\\n' $'tab\\there' \"$((1+2))\"",
    "echo one\necho two # unbalanced ' in a comment\n",
    "x='$(echo injected)'; echo \"$x\"; echo '$(id -u)'",
    "echo '\\'' ; echo \\'",
    "printf '%s' '" + "".join(chr(i) for i in range(1, 32) if i != 39) + "\x7f\u00e9\u202e'",
    "echo a; exit 3",
    "echo trailing \\",
    'echo `echo back`ticks; echo "$(printf \'%q\' "a b")"',
    "cat <<'EOF'\n$HOME stays literal 'here'\nEOF",
]


@pytest.mark.parametrize("command", HOSTILE)
def test_the_rewritten_command_means_what_the_original_meant(command: str, ws: Path) -> None:
    payload = fixture("pre_bash", ws, tool_input={"command": command})
    payload["tool_input"].pop("timeout")
    answer = hook(payload, ws, "--sandbox-bash", policy=False)
    verdict, reason = decision(answer)
    assert verdict == "allow", reason
    rewritten = answer["hookSpecificOutput"]["updatedInput"]["command"]
    words = shlex.split(rewritten)
    assert words[-1] == command and words[-2] == "--"  # one word, byte for byte
    env = {k: v for k, v in os.environ.items() if k != "BASH_ENV"}
    direct = subprocess.run(
        ["bash", "-c", command], capture_output=True, cwd=ws, env=env, timeout=30
    )
    through = subprocess.run(
        ["bash", "-c", rewritten], capture_output=True, cwd=ws, env=env, timeout=60
    )
    assert (through.stdout, through.returncode) == (direct.stdout, direct.returncode)


def test_a_shell_in_a_subdirectory_keeps_its_directory(ws: Path) -> None:
    payload = fixture("pre_bash", ws, cwd=str(ws / "src"), tool_input={"command": "cat main.py"})
    answer = hook(payload, ws, "--sandbox-bash", policy=False)
    rewritten = answer["hookSpecificOutput"]["updatedInput"]["command"]
    done = subprocess.run(["bash", "-c", rewritten], capture_output=True, timeout=60)
    assert done.stdout == (ws / "src" / "main.py").read_bytes()
    elsewhere = fixture("pre_bash", ws, cwd="/", tool_input={"command": "ls"})
    assert decision(hook(elsewhere, ws, "--sandbox-bash", policy=False))[0] == "deny"
