"""What a call carries through the kernel: where it came from, what it asks, what was decided."""

from __future__ import annotations

import copy
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..policy import Decision
from ..tools import ErrorKind, ToolResult

__all__ = ["InvocationOutcome", "Mode", "Origin", "ToolCall", "TraceEntry"]


class Origin(str, enum.Enum):
    """Who made a call. Set by the entry point the call came through, never by its arguments."""

    HOST_DIRECT = "host_direct"  # session.tool()/bash(): privileged, no policy, same boundary
    HOST_GOVERNED = "host_governed"  # session.governed_tool(): the host asks for the full kernel
    MODEL = "model"
    SKILL = "skill"
    WORKFLOW = "workflow"
    DELEGATED = "delegated"  # a call of a delegated child session


class Mode(str, enum.Enum):
    """The session's execution mode: Auto never asks, Plan never mutates."""

    DEFAULT = "default"
    PLAN = "plan"
    AUTO = "auto"

    @classmethod
    def parse(cls, value: Mode | str) -> Mode:
        try:
            return cls(value.value if isinstance(value, Mode) else str(value).strip().lower())
        except ValueError:
            raise ValueError(f"mode must be 'default', 'plan' or 'auto', not {value!r}") from None


@dataclass(frozen=True)
class ToolCall:
    """One tool call: an id unique within the session, the tool's name, its arguments."""

    id: str
    name: str
    args: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id.strip():
            raise ValueError("a tool call needs a non-blank string id")
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"tool call {self.id!r}: the tool name must be a non-blank string")
        if not isinstance(self.args, Mapping):
            raise ValueError(
                f"tool call {self.id!r}: args must be an object, not {type(self.args).__name__}"
            )
        object.__setattr__(self, "args", copy.deepcopy(dict(self.args)))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolCall:
        """From ``{"id": ..., "name": ..., "args": {...}}`` (a transcript line)."""
        unknown = set(data) - {"id", "name", "args", "arguments"}
        if unknown:
            raise ValueError(f"tool call has unknown field(s): {', '.join(sorted(unknown))}")
        args = data.get("args", data.get("arguments", {}))
        return cls(str(data.get("id", "")), str(data.get("name", "")), args)


@dataclass(frozen=True)
class TraceEntry:
    """One stage of the pipeline: its name, its verdict (allow, deny, ask ...), and why."""

    stage: str
    verdict: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"stage": self.stage, "verdict": self.verdict, "reason": self.reason}


@dataclass(frozen=True)
class InvocationOutcome:
    """What the kernel did with one call.

    ``decision`` is the verdict before execution (``ask`` when a confirmation
    was requested); ``approved`` is the answer to that ask (None when nothing
    was asked); ``executed`` says whether the tool ran, and then ``result``
    holds its ToolResult. ``trace`` lists every stage that ran, in order.
    ``cancelled`` says the call's cancel token stopped it (its trace's
    execution stage says ``cancelled``).
    """

    call_id: str
    tool: str
    origin: Origin
    decision: Decision
    approved: bool | None
    executed: bool
    result: ToolResult | None
    reason: str
    trace: tuple[TraceEntry, ...]
    error_kind: ErrorKind | None = None
    cancelled: bool = False

    @property
    def allowed(self) -> bool:
        """True when the call was let through (allowed outright or approved)."""
        return self.decision is Decision.ALLOW or (
            self.decision is Decision.ASK and self.approved is True
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (what ``codeward replay --json`` prints)."""
        return {
            "call_id": self.call_id,
            "tool": self.tool,
            "origin": self.origin.value,
            "decision": self.decision.value,
            "approved": self.approved,
            "executed": self.executed,
            "reason": self.reason,
            "error_kind": None if self.error_kind is None else self.error_kind.value,
            "cancelled": self.cancelled,
            "result": None if self.result is None else self.result.to_dict(),
            "trace": [t.to_dict() for t in self.trace],
        }
