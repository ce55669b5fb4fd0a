"""The ``task`` tool: a model's request to hand work to a sub-agent, run as a governed delegation.

The host decides whether sub-agents exist: only a host that registers a task
runner (``session.register_task_runner``) gets the tool, and without one the
model is never shown it. A call is a launch (the mode matrix's row for task,
skill and workflow launches: Default allow, Plan deny, Auto allow); once
admitted, the calling session delegates a child run (``Session.delegate``)
with the narrowing the host chose, hands it and the prompt to the runner,
and closes it afterwards. Every call the runner makes through the child
comes back through the kernel as a delegated call, checked against the
child's scope and every scope above it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from ..policy import PermissionPolicy
from ..tools import ErrorKind, Tool, ToolContext, ToolKind, ToolResult

if TYPE_CHECKING:
    from ._session import Session

__all__ = ["MAX_TASK_DEPTH", "TaskRunner", "TaskTool"]

TaskRunner = Callable[["Session", str], Any]
MAX_TASK_DEPTH = 8  # delegated runs nested in delegated runs, at most


class TaskTool(Tool):
    """``task {description, prompt}``: the host's runner drives a delegated child session."""

    name: ClassVar[str] = "task"
    kind: ClassVar[ToolKind] = ToolKind.LAUNCH
    description: ClassVar[str] = (
        "Hand a self-contained piece of work to a sub-agent. `description` names it in a few "
        "words; `prompt` is everything the sub-agent needs to know. The sub-agent works in the "
        "same workspace under the same (or narrower) permissions; its answer is returned."
    )
    schema: ClassVar[Mapping[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "required": ["description", "prompt"],
        "properties": {
            "description": {"type": "string", "minLength": 1, "maxLength": 200},
            "prompt": {"type": "string", "minLength": 1, "maxLength": 100_000},
        },
    }

    def __init__(
        self,
        runner: TaskRunner,
        *,
        permission_policy: PermissionPolicy | None,
        mode: str | None,
        confirmation_inheritance: str,
    ) -> None:
        self.runner = runner
        self.permission_policy = permission_policy
        self.mode = mode
        self.confirmation_inheritance = confirmation_inheritance

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        from ._session import Session

        caller = ctx.caller
        if not isinstance(caller, Session):
            return ToolResult.failure(
                self.name, ErrorKind.TOOL_FAILED, "a task can only be started by a session's call"
            )
        depth = _depth(caller)
        if depth >= MAX_TASK_DEPTH:
            return ToolResult.failure(
                self.name,
                ErrorKind.PERMISSION_DENIED,
                f"refused the task: delegated runs are already nested {depth} deep "
                f"(at most {MAX_TASK_DEPTH})",
            )
        child = caller.delegate(
            f"task: {args['description']}",
            self.permission_policy,
            self.mode,
            self.confirmation_inheritance,
        )
        try:
            value = self.runner(child, args["prompt"])
        except Exception as exc:  # the host's runner failing is the call's failure
            return ToolResult.failure(
                self.name, ErrorKind.TOOL_FAILED, f"the task failed: {type(exc).__name__}: {exc}"
            )
        finally:
            child.close()
        return _result(self.name, value)


def _depth(session: Session) -> int:
    depth = 0
    node = session.parent
    while node is not None:
        depth += 1
        node = node.parent
    return depth


def _result(name: str, value: Any) -> ToolResult:
    if isinstance(value, ToolResult):
        return value
    if value is None:
        return ToolResult(name, "")
    return ToolResult(name, value if isinstance(value, str) else str(value))
