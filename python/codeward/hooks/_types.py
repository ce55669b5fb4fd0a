"""The data of hooks: events, configuration, what a handler sees and what it answers."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .._errors import CodewardError
from ..hitl._frozen import freeze, thaw
from ..hitl._policy import check_timeout_ms

__all__ = [
    "GATING_EVENTS",
    "HOOK_ACTIONS",
    "HookConfig",
    "HookContext",
    "HookError",
    "HookEvent",
    "HookOutcome",
    "HookResult",
    "HookTrace",
]

HOOK_ACTIONS = ("continue", "block", "skip")
_RESULT_KEYS = ("action", "args", "reason")
MAX_PRIORITY = 1_000_000_000


class HookError(CodewardError, ValueError):
    """A hook registration or a hook's data is malformed (bad id, event, matcher, config)."""


class HookEvent(str, enum.Enum):
    """When a hook runs."""

    PRE_TOOL_USE = "pre_tool_use"  # before the permission decision; may block or rewrite args
    POST_TOOL_USE = "post_tool_use"  # after execution, with the result
    PERMISSION_REQUEST = "permission_request"  # before a confirmation request is emitted
    ON_ERROR = "on_error"  # a call failed or was refused
    SESSION_START = "session_start"
    SESSION_END = "session_end"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def parse(cls, value: HookEvent | str) -> HookEvent:
        if isinstance(value, HookEvent):
            return value
        try:
            return cls(value)
        except ValueError:
            names = ", ".join(e.value for e in cls)
            raise HookError(f"unknown hook event {value!r}; events are: {names}") from None


# A handler that fails on one of these blocks the call: hooks there fail closed.
GATING_EVENTS = frozenset({HookEvent.PRE_TOOL_USE, HookEvent.PERMISSION_REQUEST})


@dataclass(frozen=True)
class HookConfig:
    """``priority``: lower runs first (ties run in registration order). ``timeout_ms``: how
    long one handler may take before it counts as failed (1 ms to one hour)."""

    priority: int = 100
    timeout_ms: int = 30_000

    def __post_init__(self) -> None:
        if type(self.priority) is not int:
            raise HookError(f"priority must be an integer, not {type(self.priority).__name__}")
        if not -MAX_PRIORITY <= self.priority <= MAX_PRIORITY:
            raise HookError(f"priority must be within ±{MAX_PRIORITY}, not {self.priority}")
        check_timeout_ms(self.timeout_ms, "hook timeout_ms", HookError)


def _frozen_mapping(value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise HookError(f"{what} must be a mapping, not {type(value).__name__}")
    try:
        frozen: Mapping[str, Any] = freeze(value)
    except ValueError as exc:
        raise HookError(f"{what}: {exc}") from None
    return frozen


@dataclass(frozen=True)
class HookContext:
    """What a handler sees. ``args`` and ``extra`` are read-only deep copies (mappings are
    read-only views, lists are tuples): change arguments by returning
    ``HookResult.proceed(new_args)``, never by mutation. ``paths`` are the call's
    workspace-relative paths; ``result`` is set on post_tool_use, ``error`` on on_error."""

    event: HookEvent
    session_id: str | None = None
    call_id: str | None = None
    tool: str | None = None
    args: Mapping[str, Any] = field(default_factory=dict)
    paths: tuple[str, ...] = ()
    origin: str | None = None
    result: object | None = None
    error: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "event", HookEvent.parse(self.event))
        object.__setattr__(self, "args", _frozen_mapping(self.args, "hook context args"))
        object.__setattr__(self, "extra", _frozen_mapping(self.extra, "hook context extra"))
        paths: object = self.paths
        if isinstance(paths, str) or not isinstance(paths, Iterable):
            raise HookError("hook context paths must be a sequence of strings")
        items = tuple(paths)
        if not all(isinstance(p, str) for p in items):
            raise HookError("hook context paths must be strings")
        object.__setattr__(self, "paths", items)
        origin = getattr(self.origin, "value", self.origin)  # an Origin enum member
        if origin is not None and not isinstance(origin, str):
            raise HookError(f"hook context origin must be a string, not {type(origin).__name__}")
        object.__setattr__(self, "origin", origin)
        for name in ("session_id", "call_id", "tool", "error"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise HookError(f"hook context {name} must be a string or None")


@dataclass(frozen=True)
class HookResult:
    """A handler's answer. Build it with :meth:`proceed`, :meth:`block` or :meth:`skip`;
    a handler may also return None, which means proceed unchanged, or a plain mapping with
    the same fields (``{"action": "continue", "args": {...}}``), read by
    :meth:`from_mapping`."""

    action: str
    args: Mapping[str, Any] | None = None
    reason: str | None = None

    def __post_init__(self) -> None:
        if self.action not in HOOK_ACTIONS:
            raise HookError(
                f"hook action must be one of {', '.join(HOOK_ACTIONS)}, not {self.action!r}"
            )
        if self.args is not None:
            if self.action != "continue":
                raise HookError("only a 'continue' hook result may carry modified arguments")
            object.__setattr__(self, "args", _frozen_mapping(self.args, "modified arguments"))
        if self.reason is not None and not isinstance(self.reason, str):
            raise HookError("a hook result's reason must be a string")
        if self.action == "block" and (self.reason is None or not self.reason.strip()):
            raise HookError("a blocking hook result needs a non-blank reason")

    @classmethod
    def from_mapping(cls, value: Mapping[str, Any]) -> HookResult:
        """The result a plain mapping spells (``{"action": "block", "reason": ...}``), checked
        exactly as the constructor checks it; unknown or missing keys are a HookError."""
        unknown = sorted(str(k) for k in value if k not in _RESULT_KEYS)
        if unknown:
            raise HookError(
                f"a hook result mapping has unknown key(s) {', '.join(unknown)}; "
                f"its keys are {', '.join(_RESULT_KEYS)}"
            )
        if "action" not in value:
            raise HookError("a hook result mapping needs an 'action'")
        return cls(value["action"], value.get("args"), value.get("reason"))

    @classmethod
    def proceed(cls, args: Mapping[str, Any] | None = None) -> HookResult:
        """Continue, optionally with new arguments (the whole new argument object)."""
        return cls("continue", args)

    @classmethod
    def block(cls, reason: str) -> HookResult:
        """Stop the call; ``reason`` is shown to the model and the user."""
        return cls("block", None, reason)

    @classmethod
    def skip(cls) -> HookResult:
        """Abstain: as if this hook had not matched."""
        return cls("skip")


@dataclass(frozen=True)
class HookTrace:
    """One hook that ran: what it answered, why, how long it took, whether it failed."""

    id: str
    action: str
    reason: str | None
    duration_ms: float
    failed: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "action": self.action,
            "reason": self.reason,
            "duration_ms": self.duration_ms,
            "failed": self.failed,
        }


@dataclass(frozen=True)
class HookOutcome:
    """What the hooks of one event said together.

    ``action`` is "block" if a hook blocked (or failed on a gating event),
    else "continue". ``args`` is a fresh, plain (mutable) copy of the final
    arguments when a hook changed them, else None. ``blocked_by`` is the id of
    the blocking hook. ``trace`` lists every hook that ran, in order.
    """

    action: str = "continue"
    args: Mapping[str, Any] | None = None
    reason: str | None = None
    blocked_by: str | None = None
    trace: tuple[HookTrace, ...] = ()

    @property
    def blocked(self) -> bool:
        return self.action == "block"

    @property
    def modified(self) -> bool:
        return self.args is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "args": None if self.args is None else thaw(self.args),
            "reason": self.reason,
            "blocked_by": self.blocked_by,
            "trace": [t.to_dict() for t in self.trace],
        }
