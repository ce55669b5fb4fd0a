"""The field names the hook reads and writes, against the Claude Agent SDK's published types.

The SDK (`npm install @anthropic-ai/claude-agent-sdk`) is not a test dependency:
with the Claude Code binary it bundles it is about 480 MB. Point
CODEWARD_CLAUDE_AGENT_SDK at an installed copy (the directory holding sdk.d.ts)
to run this check; without it the test is skipped, saying so.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

SDK = os.environ.get("CODEWARD_CLAUDE_AGENT_SDK")

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


@pytest.mark.skipif(
    not SDK,
    reason="the Claude Agent SDK is not a test dependency (about 480 MB with its bundled "
    "binary): set CODEWARD_CLAUDE_AGENT_SDK to its installed directory to check the names",
)
def test_the_hook_uses_the_names_the_sdk_publishes() -> None:
    root = Path(str(SDK))
    sdk = (root / "sdk.d.ts").read_text()
    for name, fields in HOOK_TYPES.items():
        found = _fields(_block(sdk, f"export declare type {name} ="))
        assert set(fields) <= found, (name, sorted(set(fields) - found))
    assert "'allow' | 'deny' | 'ask'" in sdk  # HookPermissionDecision
    tools = (root / "sdk-tools.d.ts").read_text()
    for name, fields in TOOL_INPUTS.items():
        found = _fields(_block(tools, f"export interface {name} "))
        assert set(fields) <= found, (name, sorted(set(fields) - found))
