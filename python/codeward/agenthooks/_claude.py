"""Claude Code's PreToolUse and PermissionRequest hooks, answered by codeward's kernel.

Claude Code runs a hook command with one JSON object on stdin (the field names
are those of the Claude Agent SDK's ``PreToolUseHookInput`` and
``PermissionRequestHookInput``: ``hook_event_name``, ``tool_name``,
``tool_input``, ``tool_use_id``, ``cwd`` ...) and reads one JSON object from
stdout (``hookSpecificOutput`` with ``permissionDecision`` and
``permissionDecisionReason``, or for PermissionRequest a ``decision`` with a
``behavior``).

Each Claude Code tool is mapped to the codeward tool that does the same
thing (Bash to bash, Read to read, Write to write, Edit/MultiEdit/NotebookEdit
to edit, Glob and Grep to search, WebFetch and ``mcp__*`` to external tools
that declare no read-only annotation), and the call goes through a real
:class:`~codeward.kernel.InvocationKernel` with the builtin tools' own
schemas and path resolution, the guardrails, the mode matrix and the policy.
Only the last stage differs: the kernel's execution reaches a stand-in that
runs nothing (Claude Code runs the tool), and its confirmation reaches a
provider that records the question and answers no (Claude Code asks the
person). So an allow is the kernel's allow, a deny its deny with its reason,
and an ask its confirmation's reason.

Paths: a relative path is taken relative to the hook's ``cwd``; the kernel
then resolves it as it resolves every call (inside the workspace made
relative, outside refused by the path guardrail).

Anything that cannot be mapped or decided (malformed JSON, a missing field,
an unknown event, an internal error) is answered deny.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["EVENTS", "HookAnswer", "answer_claude_code", "deny_answer", "map_tool"]

EVENTS = ("PreToolUse", "PermissionRequest")
WEBFETCH = "webfetch"


class Unmappable(Exception):
    """The tool input does not have the shape Claude Code documents for that tool."""


@dataclass(frozen=True)
class HookAnswer:
    """What the kernel decided, and the JSON Claude Code reads."""

    decision: str  # allow | deny | ask
    reason: str
    output: dict[str, Any] = field(default_factory=dict)


def deny_answer(event: str, reason: str) -> HookAnswer:
    """The fail-closed answer: deny, in the shape of ``event`` (PreToolUse when unknown)."""
    reason = f"codeward: {reason}"
    if event == "PermissionRequest":
        output: dict[str, Any] = {
            "hookSpecificOutput": {
                "hookEventName": "PermissionRequest",
                "decision": {"behavior": "deny", "message": reason},
            }
        }
    else:
        output = {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        }
    return HookAnswer("deny", reason, output)


# -- mapping Claude Code's tools ------------------------------------------------------------


def _text(data: Mapping[str, Any], key: str, *, required: bool = True) -> str | None:
    value = data.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value):
        raise Unmappable(f"{key} must be a non-empty string")
    return value


def _path(data: Mapping[str, Any], key: str, cwd: str | None, *, required: bool = True) -> Any:
    value = _text(data, key, required=required)
    if value is None:
        return None
    if not os.path.isabs(value) and cwd:
        return os.path.join(cwd, value)
    return value


def map_tool(
    name: str, tool_input: Mapping[str, Any], cwd: str | None
) -> tuple[str, dict[str, Any]]:
    """Claude Code's ``(tool_name, tool_input)`` as a codeward ``(tool, args)``."""
    if name == "Bash":
        args: dict[str, Any] = {"command": _text(tool_input, "command")}
        timeout = tool_input.get("timeout")
        if isinstance(timeout, int) and not isinstance(timeout, bool) and 0 < timeout <= 600_000:
            args["timeout"] = timeout
        if tool_input.get("dangerouslyDisableSandbox") is True:
            args["sandbox_permissions"] = "require_escalated"
            args["justification"] = (
                _text(tool_input, "description", required=False)
                or "Claude Code asks to run this command outside its sandbox"
            )
        return "bash", args
    if name == "Read":
        return "read", {"file_path": _path(tool_input, "file_path", cwd)}
    if name == "Write":
        content = tool_input.get("content")
        if not isinstance(content, str):
            raise Unmappable("content must be a string")
        return "write", {"file_path": _path(tool_input, "file_path", cwd), "content": content}
    if name == "Edit":
        return _edit(_path(tool_input, "file_path", cwd), [tool_input])
    if name == "MultiEdit":
        edits = tool_input.get("edits")
        if (
            not isinstance(edits, list)
            or not edits
            or not all(isinstance(e, Mapping) for e in edits)
        ):
            raise Unmappable("edits must be a non-empty list of objects")
        return _edit(_path(tool_input, "file_path", cwd), edits)
    if name == "NotebookEdit":
        source = tool_input.get("new_source")
        if not isinstance(source, str):
            raise Unmappable("new_source must be a string")
        cell = tool_input.get("cell_id")
        return "edit", {
            "file_path": _path(tool_input, "notebook_path", cwd),
            "old_string": f"cell {cell}" if isinstance(cell, str) and cell else "cell",
            "new_string": source,
        }
    if name in ("Glob", "Grep"):
        args = {"mode": name.lower(), "query": _text(tool_input, "pattern")}
        path = _path(tool_input, "path", cwd, required=False)
        if path is not None:
            args["path"] = path
        return "search", args
    if name == "WebFetch":
        return WEBFETCH, {"url": _text(tool_input, "url")}
    if name.startswith("mcp__"):
        return name, dict(tool_input)
    return name, dict(tool_input)  # decided as an unknown tool: the matrix's unknown row


def _edit(path: Any, edits: list[Any]) -> tuple[str, dict[str, Any]]:
    """An edit of ``path``; one whose first replacement has no old text creates the file."""
    first = edits[0]
    old, new = first.get("old_string"), first.get("new_string")
    if not isinstance(old, str) or not isinstance(new, str):
        raise Unmappable("old_string and new_string must be strings")
    if not old:
        return "write", {"file_path": path, "content": new}
    args: dict[str, Any] = {"file_path": path, "old_string": old, "new_string": new}
    if isinstance(first.get("replace_all"), bool):
        args["replace_all"] = first["replace_all"]
    return "edit", args


# -- the kernel, with stand-ins for execution and confirmation ------------------------------


class _Question:
    """The confirmation provider of a hook: records the kernel's question, answers no."""

    name = "claude-code"

    def __init__(self) -> None:
        self.asked: Any = None

    def available_for(self, call: Any) -> bool:
        return True

    def request(self, confirmation: Any) -> bool:
        self.asked = confirmation
        return False


def _stand_in(real: Any) -> Any:
    """A tool with ``real``'s name, kind, schema and resolution, whose run only checks the
    credential boundary of the file it names (Claude Code's own tools do not)."""
    from ..tools import ErrorKind, Tool, ToolResult

    class StandIn(Tool):
        name = real.name
        kind = real.kind
        description = real.description
        schema = real.schema

        def paths(self, args: Mapping[str, Any]) -> list[str]:
            return list(real.paths(args))

        def resolve(self, args: Mapping[str, Any], relpath: Any) -> Any:
            return real.resolve(args, relpath)

        def run(self, args: Mapping[str, Any], ctx: Any) -> ToolResult:
            path = args.get("file_path")
            if isinstance(path, str):
                reason = ctx.workspace.credential_reason(ctx.workspace.locate(path))
                if reason is not None:
                    return ToolResult.failure(
                        self.name,
                        ErrorKind.CREDENTIAL_BOUNDARY,
                        f"{path}: {reason}",
                    )
            return ToolResult(self.name, "decided; Claude Code runs the tool")

    return StandIn()


def _kernel(workspace: str, sandbox_bash: bool, tool: str) -> Any:
    from ..hitl import ConfirmationManager, ConfirmationPolicy
    from ..hooks import HookRegistry
    from ..kernel import ExternalTool, InvocationKernel, ToolAnnotations, ToolRegistry
    from ..sandbox import ProcessHostBashSandbox, select_sandbox
    from ..tools import DownloadTool, builtin_tools
    from ..workspace import Workspace

    tools = [_stand_in(t) for t in [*builtin_tools(), DownloadTool()]]
    if tool == WEBFETCH or tool.startswith("mcp__"):
        # no annotations: a side effect (WebFetch sends data to the network, an MCP tool is
        # whatever its server does); a policy can allow it by name and arguments
        tools.append(
            ExternalTool(
                tool,
                lambda _args: "decided; Claude Code runs the tool",
                {"type": "object"},
                ToolAnnotations.from_mapping(None),
            )
        )
    # With --sandbox-bash the command runs through `codeward exec`, in the sandbox that this
    # machine gives (unavailable: bash is refused); without, Claude Code runs it on the host.
    sandbox = (
        select_sandbox(workspace, reuse=False)
        if sandbox_bash
        else ProcessHostBashSandbox(workspace)
    )
    return InvocationKernel(
        session_id="claude-code-hook",
        workspace=Workspace(workspace),
        sandbox=sandbox,
        registry=ToolRegistry(tools),
        hooks=HookRegistry(),
        confirmations=ConfirmationManager(ConfirmationPolicy()),
        recorder=None,
        host_sandbox_factory=lambda: sandbox,
    ), sandbox


def answer_claude_code(
    payload: Mapping[str, Any],
    *,
    workspace: str | None,
    policy: Any,
    mode: str,
    sandbox_bash: bool,
    codeward: list[str] | None = None,
) -> HookAnswer:
    """The kernel's answer to one hook input (raises for input it cannot map: deny it)."""
    from ..kernel import CallScope, Mode, Origin, ToolCall

    event = payload.get("hook_event_name")
    if event not in EVENTS:
        return deny_answer("PreToolUse", f"unknown hook event {str(event)[:80]!r}")
    name = payload.get("tool_name")
    tool_input = payload.get("tool_input")
    if not isinstance(name, str) or not name:
        return deny_answer(event, "the hook input has no tool_name")
    if not isinstance(tool_input, Mapping):
        return deny_answer(event, "the hook input's tool_input is not an object")
    cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
    root = workspace or os.environ.get("CLAUDE_PROJECT_DIR") or cwd
    if not root:
        return deny_answer(event, "no workspace: give --workspace, or run under Claude Code")
    root = os.path.realpath(root)
    try:
        tool, args = map_tool(name, tool_input, cwd)
    except Unmappable as exc:
        return deny_answer(event, f"{name}: {exc}")
    scope_mode = Mode.parse(mode)
    if payload.get("permission_mode") == "plan":
        scope_mode = Mode.PLAN  # Claude Code's plan mode is never widened
    question = _Question()
    kernel, sandbox = _kernel(root, sandbox_bash, tool)
    try:
        call_id = payload.get("tool_use_id")
        call = ToolCall(call_id if isinstance(call_id, str) and call_id else "hook", tool, args)
        scope = CallScope("session", scope_mode, policy, question)
        outcome = kernel.invoke(call, Origin.MODEL, [scope])
    finally:
        close = getattr(sandbox, "close", None)
        if callable(close):
            close()
    if outcome.decision.value == "deny":
        why = [t.reason for t in outcome.trace if t.verdict == "deny" and t.stage != "decision"]
        return deny_answer(event, "; ".join(dict.fromkeys([outcome.reason, *why])))
    result = outcome.result
    if outcome.executed and result is not None and not result.success:
        return deny_answer(event, result.output)  # the credential boundary
    if outcome.decision.value == "ask":
        asked = question.asked
        reason = asked.reason if asked is not None else outcome.reason
        decision = "ask"
    else:
        reason, decision = "allowed: " + _allow_reason(outcome), "allow"
    updated: dict[str, Any] | None = None
    if sandbox_bash and name == "Bash" and "sandbox_permissions" not in args:
        rewritten = _sandboxed_bash(tool_input, root, cwd, codeward)
        if isinstance(rewritten, str):
            return deny_answer(event, rewritten)
        updated = rewritten
    return _answer(event, decision, f"codeward: {reason}", updated)


def _allow_reason(outcome: Any) -> str:
    steps = [str(t.reason) for t in outcome.trace if t.stage == "mode_policy"]
    return steps[-1] if steps else str(outcome.reason)


def _answer(event: str, decision: str, reason: str, updated: dict[str, Any] | None) -> HookAnswer:
    if event == "PermissionRequest":
        if decision == "ask":
            # no decision: Claude Code shows its own dialog, and the person answers
            return HookAnswer(decision, reason, {"systemMessage": reason})
        verdict: dict[str, Any] = {"behavior": "allow"}
        if updated is not None:
            verdict["updatedInput"] = updated
        return HookAnswer(
            decision,
            reason,
            {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": verdict}},
        )
    specific: dict[str, Any] = {
        "hookEventName": "PreToolUse",
        "permissionDecision": decision,
        "permissionDecisionReason": reason,
    }
    if updated is not None:
        specific["updatedInput"] = updated
    return HookAnswer(decision, reason, {"hookSpecificOutput": specific})


def codeward_command() -> list[str]:
    """How the rewritten command starts codeward: this interpreter, ``-m codeward``."""
    return [sys.executable, "-m", "codeward"]


def _sandboxed_bash(
    tool_input: Mapping[str, Any], root: str, cwd: str | None, codeward: list[str] | None
) -> dict[str, Any] | str:
    """Bash's input with its command run by ``codeward exec`` in the workspace, or why not.

    The original command is one single-quoted word (every byte but the quote
    itself is literal inside single quotes, and a quote is closed, escaped and
    reopened), which ``codeward exec`` hands to ``bash -c`` unchanged. When
    Claude Code's shell is in a subdirectory, a ``cd`` to it comes first.
    """
    command = tool_input["command"]
    if cwd is not None:
        here = os.path.realpath(cwd)
        if here != root and not here.startswith(root + os.sep):
            return (
                f"the command would run in {cwd}, outside the workspace {root}; "
                "--sandbox-bash runs commands in the workspace only"
            )
        rel = os.path.relpath(here, root)
        if rel != ".":
            command = f"cd -- {shlex.quote(rel)} || exit 125\n{command}"
    words = [*(codeward or codeward_command()), "exec", "--workspace", root]
    timeout = tool_input.get("timeout")
    if isinstance(timeout, int) and not isinstance(timeout, bool) and timeout > 0:
        words += ["--timeout-ms", str(timeout)]
    rewritten = " ".join(shlex.quote(w) for w in words) + " -- " + shlex.quote(command)
    return {**tool_input, "command": rewritten}
