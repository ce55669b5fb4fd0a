"""The field names the hook reads and writes, against the Claude Agent SDK's published types.

The SDK's types come from tests/agenthooks/sdk (pinned in its package-lock.json),
installed by the nox `tests` session with ``npm ci --omit=optional``: the package
is a 1.6 MB tarball, its optional dependencies the ~480 MB Claude Code binaries
this check does not need. CODEWARD_CLAUDE_AGENT_SDK may point at another
installed copy (the directory holding sdk.d.ts), e.g. a newer SDK to check against.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

SDK_PROJECT = Path(__file__).parent / "sdk"
SDK = Path(
    os.environ.get("CODEWARD_CLAUDE_AGENT_SDK")
    or SDK_PROJECT / "node_modules" / "@anthropic-ai" / "claude-agent-sdk"
)

# type name in sdk.d.ts -> the fields the hook relies on
HOOK_TYPES = {
    "BaseHookInput": ["session_id", "transcript_path", "cwd", "permission_mode"],
    "PreToolUseHookInput": ["hook_event_name", "tool_name", "tool_input", "tool_use_id"],
    "PermissionRequestHookInput": ["hook_event_name", "tool_name", "tool_input"],
    "PreToolUseHookSpecificOutput": [
        "hookEventName",
        "permissionDecision",
        "permissionDecisionReason",
        "updatedInput",
    ],
    "PermissionRequestHookSpecificOutput": [
        "hookEventName",
        "decision",
        "behavior",
        "updatedInput",
        "message",
    ],
    "SyncHookJSONOutput": ["systemMessage", "hookSpecificOutput"],
}
# interface name in sdk-tools.d.ts -> the input fields the mapping reads
TOOL_INPUTS = {
    "BashInput": ["command", "timeout", "description", "dangerouslyDisableSandbox"],
    "FileReadInput": ["file_path"],
    "FileWriteInput": ["file_path", "content"],
    "FileEditInput": ["file_path", "old_string", "new_string", "replace_all"],
    "GlobInput": ["pattern", "path"],
    "GrepInput": ["pattern", "path"],
    "WebFetchInput": ["url"],
    "NotebookEditInput": ["notebook_path", "cell_id", "new_source"],
}


def _block(text: str, head: str) -> str:
    start = text.index(head)
    depth, i = 0, text.index("{", start)
    for j in range(i, len(text)):
        depth += {"{": 1, "}": -1}.get(text[j], 0)
        if depth == 0:
            return text[i : j + 1]
    raise AssertionError(f"unbalanced {head}")


def _fields(block: str) -> set[str]:
    return set(re.findall(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\??:", block, re.MULTILINE))


def test_the_hook_uses_the_names_the_sdk_publishes() -> None:
    root = SDK
    if not (root / "sdk.d.ts").is_file():
        pytest.fail(
            f"the Claude Agent SDK's types are not installed at {root}: run "
            f"`npm ci --omit=optional --ignore-scripts` in {SDK_PROJECT} (the nox tests "
            "session does)"
        )
    sdk = (root / "sdk.d.ts").read_text()
    for name, fields in HOOK_TYPES.items():
        found = _fields(_block(sdk, f"export declare type {name} ="))
        assert set(fields) <= found, (name, sorted(set(fields) - found))
    assert "'allow' | 'deny' | 'ask'" in sdk  # HookPermissionDecision
    tools = (root / "sdk-tools.d.ts").read_text()
    for name, fields in TOOL_INPUTS.items():
        found = _fields(_block(tools, f"export interface {name} "))
        assert set(fields) <= found, (name, sorted(set(fields) - found))


def _emitted_keys(output: object, path: str = "") -> set[str]:
    """Every object key in the hook's answer, as dotted paths (``hookSpecificOutput.decision``)."""
    keys: set[str] = set()
    if isinstance(output, dict):
        for key, value in output.items():
            keys.add(f"{path}{key}")
            if key != "updatedInput":  # the tool's own input (BashInput's fields, checked above)
                keys |= _emitted_keys(value, f"{path}{key}.")
    return keys


def test_every_key_the_hook_answers_with_is_declared_by_the_sdk(tmp_path: Path) -> None:
    """What the hook really prints for each fixture, not a list kept by hand, against the SDK."""
    import json
    import subprocess
    import sys

    root = SDK
    if not (root / "sdk.d.ts").is_file():
        pytest.fail(f"the Claude Agent SDK's types are not installed at {root} (see above)")
    sdk = (root / "sdk.d.ts").read_text()
    declared = {
        "": _fields(_block(sdk, "export declare type SyncHookJSONOutput =")),
        "PreToolUse": _fields(_block(sdk, "export declare type PreToolUseHookSpecificOutput =")),
        "PermissionRequest": _fields(
            _block(sdk, "export declare type PermissionRequestHookSpecificOutput =")
        ),
    }
    ws = tmp_path / "app"
    ws.mkdir()
    fixtures = sorted((Path(__file__).parent / "claude_code").glob("*.json"))
    assert fixtures
    for fixture in fixtures:
        payload = fixture.read_text().replace("${WS}", str(ws))
        for extra in ([], ["--sandbox-bash"]):
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "codeward",
                    "hook",
                    "claude-code",
                    "--workspace",
                    str(ws),
                    *extra,
                ],
                input=payload.encode(),
                capture_output=True,
                timeout=60,
            )
            answer = json.loads(done.stdout)
            event = json.loads(payload)["hook_event_name"]
            for key in _emitted_keys(answer):
                head, _, rest = key.partition(".")
                if not rest:
                    assert head in declared[""], (fixture.name, key)
                elif head == "hookSpecificOutput" and "." not in rest:
                    assert rest in declared[event], (fixture.name, key)
                else:
                    assert rest.split(".")[-1] in declared[event], (fixture.name, key)
