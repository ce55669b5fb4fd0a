"""What the server lists (tool definitions with MCP annotations) and returns (content and
structuredContent) for each call.

The annotations say what each tool really does, for a client that decides
how careful to be from them: read, ls, search and git only read the
workspace; write, edit and patch change files and can overwrite what was
there; bash runs anything the sandbox lets it, and can reach one host once a
network grant is approved; download fetches from the network into the
workspace. A tool this table does not know gets the most careful hints.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["GATE_TOOLS", "allow_hint", "annotations_for", "call_result", "tool_definitions"]

# readOnlyHint, destructiveHint, idempotentHint, openWorldHint, title
_HINTS: Mapping[str, tuple[bool, bool, bool, bool, str]] = {
    "read": (True, False, True, False, "Read workspace files"),
    "ls": (True, False, True, False, "List a workspace directory"),
    "search": (True, False, True, False, "Search the workspace (grep or glob)"),
    "git": (True, False, True, False, "Read-only git: status, diff, log, show"),
    "write": (False, True, True, False, "Write a workspace file"),
    "edit": (False, True, False, False, "Edit a workspace file"),
    "patch": (False, True, False, False, "Apply a unified diff to the workspace"),
    "bash": (False, True, False, True, "Run a bash command in the sandbox"),
    "download": (False, True, False, True, "Download a URL into the workspace"),
    "verify": (False, False, True, False, "Run the workspace's checks in the sandbox"),
    "complete_turn": (True, False, True, False, "Complete the turn through the gate"),
}
_UNKNOWN = (False, True, False, True, "")

GATE_TOOLS: Sequence[dict[str, Any]] = (
    {
        "name": "verify",
        "description": (
            "Run the workspace's checks (detected from the project, or configured by the host) "
            "inside the sandbox. The report is bound to the digest of everything this turn "
            "changed; a later change needs a new verify. `timeout_ms` bounds the whole run."
        ),
        "inputSchema": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "timeout_ms": {"type": "integer", "minimum": 1000, "maximum": 3_600_000}
            },
        },
    },
    {
        "name": "complete_turn",
        "description": (
            "Ask the verification gate to complete the turn. It completes only when the turn "
            "changed nothing or its change passed verify; otherwise the result says what is "
            "missing. A completed turn starts a new one."
        ),
        "inputSchema": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"text": {"type": "string", "maxLength": 100_000}},
        },
    },
)


def annotations_for(name: str) -> dict[str, Any]:
    read_only, destructive, idempotent, open_world, title = _HINTS.get(name, _UNKNOWN)
    hints: dict[str, Any] = {
        "readOnlyHint": read_only,
        "destructiveHint": destructive,
        "idempotentHint": idempotent,
        "openWorldHint": open_world,
    }
    if title:
        hints["title"] = title
    return hints


def tool_definitions(schemas: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """MCP tool definitions from the session's model schemas, then the gate's two tools."""
    tools = []
    for schema in schemas:
        name = str(schema["name"])
        parameters = dict(schema.get("parameters") or {"type": "object"})
        parameters.setdefault("type", "object")
        hints = annotations_for(name)
        tool = {
            "name": name,
            "description": str(schema.get("description", "")),
            "inputSchema": parameters,
            "annotations": hints,
        }
        if "title" in hints:
            tool["title"] = hints["title"]
        tools.append(tool)
    for gate in GATE_TOOLS:
        hints = annotations_for(gate["name"])
        tools.append({**gate, "title": hints["title"], "annotations": hints})
    return tools


def allow_hint(tool: str, args: Mapping[str, Any]) -> str:
    """How a policy could allow such a call: the argument string an allow rule must match."""
    from ..policy import argument_string

    try:
        name, subject = argument_string(tool, args)
    except Exception:
        return f"add an allow rule for {tool} to the policy"
    return (
        f"add an allow rule matching {name}({subject}) to the policy given with --policy "
        "(in default mode an allow rule lowers the mode's ask), or connect with a client "
        "that supports MCP elicitation so a person can answer"
    )


def call_result(
    outcome: Any, args: Mapping[str, Any], *, cancelled: bool = False
) -> dict[str, Any]:
    """A tools/call result for one InvocationOutcome of a call with ``args``: text content and
    structuredContent."""
    result = outcome.result
    metadata: Mapping[str, Any] = result.metadata if result is not None else {}
    withheld = {
        key: metadata[key]
        for key in ("withheld_by_policy", "omitted_by_policy", "omitted")
        if isinstance(metadata.get(key), int) and metadata[key]
    }
    cancelled = cancelled or getattr(outcome, "cancelled", False) is True
    structured: dict[str, Any] = {
        "trace_id": outcome.call_id,
        "tool": outcome.tool,
        "decision": outcome.decision.value,
        "approved": outcome.approved,
        "executed": outcome.executed,
        "success": result is not None and result.success,
        "exit_code": result.exit_code if result is not None else None,
        "truncated": bool(metadata.get("truncated", False)),
        "withheld": withheld,
        "sandboxed": metadata.get("sandboxed"),
        "cancelled": cancelled,
        "error_kind": None if outcome.error_kind is None else outcome.error_kind.value,
        "reason": outcome.reason,
        "trace": [entry.to_dict() for entry in outcome.trace],
    }
    if result is not None:
        text = result.output
    else:
        text = f"refused: {outcome.reason}"
        denied = [t.reason for t in outcome.trace if t.verdict == "deny" and t.stage != "decision"]
        if denied:
            structured["denied_by"] = denied
            text += "\ndenied by: " + "; ".join(denied)
        asked = [t.reason for t in outcome.trace if t.verdict == "ask"]
        if asked and structured["error_kind"] == "ConfirmationUnavailable":
            how = allow_hint(outcome.tool, args)
            structured["asked_by"] = asked
            structured["how_to_allow"] = how
            text += "\nasked by: " + "; ".join(asked) + "\nto allow it: " + how
    return {
        "content": [{"type": "text", "text": text}],
        "structuredContent": structured,
        "isError": not structured["success"],
    }
