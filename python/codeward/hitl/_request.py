"""What a confirmation asks (ConfirmationRequest, Risk) and how it was answered (Answer)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .._redact import safe_text, visible
from ._errors import ConfirmationRequestError
from ._frozen import freeze, thaw
from ._policy import check_timeout_ms
from ._summary import summarize_operation, summarize_value

__all__ = [
    "ANSWER_KINDS",
    "RISK_LEVELS",
    "Answer",
    "ConfirmationRequest",
    "Risk",
]

RISK_LEVELS = ("low", "medium", "high", "critical")
ANSWER_KINDS = (
    "provider",  # the provider returned (True approves; anything else rejects)
    "host",  # the host answered through confirm()
    "timeout",  # nobody answered in time (rejects unless the host chose auto_approve)
    "cancelled",  # cancel_all()
    "duplicate",  # a second request with the same id arrived while this one was pending
    "provider_error",  # the provider raised, or could not be started
    "unavailable",  # no provider, or confirmations disabled
)


def _text(value: object, what: str, *, blank: bool = False) -> str:
    if not isinstance(value, str):
        raise ConfirmationRequestError(f"{what} must be a string, not {type(value).__name__}")
    if not blank and not value.strip():
        raise ConfirmationRequestError(f"{what} must not be blank")
    return value


@dataclass(frozen=True)
class Risk:
    """How dangerous a call is: a level and the reasons for it, most important first."""

    level: str
    reasons: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.level not in RISK_LEVELS:
            raise ConfirmationRequestError(
                f"risk level must be one of {', '.join(RISK_LEVELS)}, not {self.level!r}"
            )
        reasons: object = self.reasons
        if isinstance(reasons, str) or not isinstance(reasons, Iterable):
            raise ConfirmationRequestError("risk reasons must be a sequence of strings")
        items = tuple(reasons)
        for item in items:
            _text(item, "a risk reason")
        object.__setattr__(self, "reasons", items)

    @property
    def rank(self) -> int:
        """0 for low up to 3 for critical, to compare levels."""
        return RISK_LEVELS.index(self.level)

    def to_dict(self) -> dict[str, Any]:
        return {"level": self.level, "reasons": list(self.reasons)}


@dataclass(frozen=True)
class Answer:
    """The settlement of one confirmation request: approved or not, how, why, and by whom."""

    approved: bool
    how: str
    reason: str
    answered_by: str | None = None

    def __post_init__(self) -> None:
        if type(self.approved) is not bool:
            raise ConfirmationRequestError("Answer.approved must be True or False")
        if self.how not in ANSWER_KINDS:
            raise ConfirmationRequestError(
                f"Answer.how must be one of {', '.join(ANSWER_KINDS)}, not {self.how!r}"
            )
        _text(self.reason, "Answer.reason", blank=True)

    def to_dict(self) -> dict[str, Any]:
        return {
            "approved": self.approved,
            "how": self.how,
            "reason": self.reason,
            "answered_by": self.answered_by,
        }


class _Settlement:
    """The one answer a request gets; the first settle() wins."""

    __slots__ = ("_done", "_lock", "answer")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._done = threading.Event()
        self.answer: Answer | None = None

    def settle(self, answer: Answer) -> bool:
        with self._lock:
            if self.answer is not None:
                return False
            self.answer = answer
        self._done.set()
        return True

    def is_set(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None) -> bool:
        return self._done.wait(timeout)


@dataclass(frozen=True)
class ConfirmationRequest:
    """One call waiting for a human: what it does, why it needs approval, its scope and risk.

    ``id`` is the exact invocation id (one pending request per id). ``args``
    and ``scope`` are read-only deep copies: mappings are read-only views and
    lists are tuples, so nothing a provider does to them reaches the call.
    ``created_at`` is wall-clock time (``time.time()``), for display.

    The fields never change; ``answer`` is filled in once, when the request is
    settled, so a provider that is still waiting can see that someone else
    (the host, a timeout, a cancel) already settled it. A request object is
    asked once: asking it again returns a duplicate rejection.
    """

    id: str
    tool: str
    operation: str
    reason: str
    scope: Mapping[str, Any]
    risk: Risk
    args: Mapping[str, Any]
    origin: str
    timeout_ms: int
    created_at: float
    session_id: str | None = None
    _settlement: _Settlement = field(
        default_factory=_Settlement, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        _text(self.id, "the request id")
        _text(self.tool, "the tool name")
        _text(self.operation, "the operation")
        _text(self.reason, "the reason")
        origin = getattr(self.origin, "value", self.origin)  # an Origin enum member
        object.__setattr__(self, "origin", _text(origin, "the origin"))
        if not isinstance(self.risk, Risk):
            raise ConfirmationRequestError(f"risk must be a Risk, not {type(self.risk).__name__}")
        check_timeout_ms(self.timeout_ms, "the request timeout", ConfirmationRequestError)
        if isinstance(self.created_at, bool) or not isinstance(self.created_at, (int, float)):
            raise ConfirmationRequestError("created_at must be a time in seconds")
        if self.session_id is not None:
            _text(self.session_id, "the session id")
        for name in ("args", "scope"):
            value = getattr(self, name)
            if not isinstance(value, Mapping):
                raise ConfirmationRequestError(
                    f"{name} must be a mapping, not {type(value).__name__}"
                )
            try:
                object.__setattr__(self, name, freeze(value))
            except ValueError as exc:
                raise ConfirmationRequestError(f"{name}: {exc}") from None

    @classmethod
    def create(
        cls,
        *,
        id: str,
        tool: str,
        args: Mapping[str, Any],
        reason: str,
        risk: Risk,
        origin: str,
        timeout_ms: int,
        scope: Mapping[str, Any] | None = None,
        session_id: str | None = None,
        operation: str | None = None,
    ) -> ConfirmationRequest:
        """A request with its operation summarized from the arguments, created now.

        ``scope`` gets ``timeout_ms`` and ``origin`` added when it lacks them.
        """
        if scope is not None and not isinstance(scope, Mapping):
            raise ConfirmationRequestError(f"scope must be a mapping, not {type(scope).__name__}")
        full_scope = dict(scope or {})
        full_scope.setdefault("timeout_ms", timeout_ms)
        full_scope.setdefault("origin", getattr(origin, "value", origin))
        return cls(
            id=id,
            tool=tool,
            operation=summarize_operation(tool, args) if operation is None else operation,
            reason=reason,
            scope=full_scope,
            risk=risk,
            args=args,
            origin=origin,
            timeout_ms=timeout_ms,
            created_at=time.time(),
            session_id=session_id,
        )

    # -- settlement -------------------------------------------------------------------------

    @property
    def settled(self) -> bool:
        """True once the request has its answer (from anyone)."""
        return self._settlement.is_set()

    @property
    def answer(self) -> Answer | None:
        """The answer, once settled; None while pending."""
        return self._settlement.answer

    def wait_settled(self, timeout: float | None = None) -> bool:
        """Blocks until settled or ``timeout`` seconds pass; True if settled."""
        return self._settlement.wait(timeout)

    # -- presentation -----------------------------------------------------------------------

    def to_dict(self, include_args: bool = True) -> dict[str, Any]:
        """A JSON-ready form. ``args`` are the raw arguments (unredacted: the host needs them
        to show a diff or a file); pass ``include_args=False`` to leave them out."""
        data: dict[str, Any] = {
            "id": self.id,
            "tool": self.tool,
            "operation": self.operation,
            "reason": self.reason,
            "scope": thaw(self.scope),
            "risk": self.risk.to_dict(),
            "origin": self.origin,
            "timeout_ms": self.timeout_ms,
            "created_at": self.created_at,
            "session_id": self.session_id,
        }
        if include_args:
            data["args"] = thaw(self.args)
        return data

    def render(self, color: bool = False) -> str:
        """A multi-line explanation for a human: Operation, Why, Scope, Risk.

        Every piece of text is escaped (no control sequence from the model
        reaches the terminal). The operation is shown whole, wrapped, with
        runs of spaces counted and line breaks marked: what is approved is
        exactly what runs. Elsewhere credential-looking text is masked.
        """
        paint = _Painter(color)
        header = (
            f"Confirmation required · call {_show(self.id, 80)} · from {_show(self.origin, 40)}"
        )
        if self.session_id is not None:
            header += f" · session {_show(self.session_id, 40)}"
        lines = [paint.bold(header)]
        lines.append(_row(paint, "Operation", _whole_lines(self.operation)))
        lines.append(_row(paint, "Why", [_show(self.reason, 240)]))
        lines.append(_row(paint, "Scope", _scope_lines(self, paint)))
        level = paint.risk(self.risk.level)
        reasons = "; ".join(_show(r, 120) for r in self.risk.reasons[:6])
        lines.append(_row(paint, "Risk", [f"{level} — {reasons}" if reasons else level]))
        return "\n".join(lines)


_LABEL_WIDTH = len("Operation:") + 1


def _row(paint: _Painter, label: str, values: list[str]) -> str:
    head = "  " + paint.label(f"{label}:".ljust(_LABEL_WIDTH))
    pad = "\n  " + " " * _LABEL_WIDTH
    return head + pad.join(values)


def _show(text: str, limit: int) -> str:
    return safe_text(text, limit)


_WRAP = 100  # columns of the operation before it continues on the next line


def _whole_lines(text: str) -> list[str]:
    """``text`` made visible and wrapped, never cut: a line break shows as ``⏎`` and a
    wrapped line continues after ``↪``."""
    out: list[str] = []
    lines = visible(text).split("\n")
    for number, line in enumerate(lines):
        if number < len(lines) - 1:
            line += " ⏎"
        chunks = [line[i : i + _WRAP] for i in range(0, len(line), _WRAP)] or [""]
        out.append(chunks[0])
        out.extend("↪ " + chunk for chunk in chunks[1:])
    return out


def _seconds(ms: int) -> str:
    if ms < 1000:
        return f"{ms} ms"
    seconds = ms / 1000
    return f"{seconds:g} s" if seconds < 120 else f"{seconds / 60:g} min"


def _scope_lines(request: ConfirmationRequest, paint: _Painter) -> list[str]:
    scope = request.scope
    lines: list[str] = []
    paths = scope.get("paths")
    if isinstance(paths, (list, tuple)) and paths:  # every one, whole: what the call touches
        lines.append("paths: " + ", ".join(visible(str(p)).replace("\n", "\\n") for p in paths))
    elif isinstance(paths, str) and paths:
        lines.append(f"paths: {visible(paths)}".replace("\n", "\\n"))
    host_port = scope.get("host_port")
    if isinstance(host_port, (list, tuple)) and host_port:
        lines.append("network: " + ", ".join(_show(str(h), 80) for h in host_port[:5]))
    elif isinstance(host_port, str) and host_port:
        lines.append(f"network: {_show(host_port, 80)}")
    sandboxed = scope.get("sandboxed")
    runs = scope.get("runs")
    where = _show(runs, 200) if isinstance(runs, str) and runs else ""
    if sandboxed is True:
        lines.append(f"sandboxed: yes ({where or 'inside the sandbox'})")
    elif sandboxed is False:
        lines.append(
            "sandboxed: " + paint.warn(f"NO — {where or 'runs on the host, outside the sandbox'}")
        )
    elif where:
        lines.append(f"runs: {where}")
    digest = scope.get("policy_digest")
    if isinstance(digest, str) and digest:  # a network grant is approved against it
        lines.append(f"sandbox policy: {_show(digest, 80)}")
    known = {"paths", "host_port", "sandboxed", "timeout_ms", "origin", "runs", "policy_digest"}
    for key, value in scope.items():
        if key not in known:
            lines.append(f"{_show(str(key), 40)}: {summarize_value(value, 80)}")
    run_timeout = scope.get("timeout_ms")
    if type(run_timeout) is int and run_timeout > 0 and run_timeout != request.timeout_ms:
        lines.append(f"runs for at most: {_seconds(run_timeout)}")
    lines.append(f"time to answer: {_seconds(request.timeout_ms)}")
    return lines


class _Painter:
    """ANSI styling, or none."""

    _RISK: ClassVar[dict[str, str]] = {
        "low": "32",
        "medium": "33",
        "high": "1;31",
        "critical": "1;97;41",
    }

    def __init__(self, color: bool) -> None:
        self.color = color

    def _wrap(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text

    def bold(self, text: str) -> str:
        return self._wrap(text, "1")

    def label(self, text: str) -> str:
        return self._wrap(text, "1;36")

    def warn(self, text: str) -> str:
        return self._wrap(text, "1;33")

    def risk(self, level: str) -> str:
        return self._wrap(level.upper(), self._RISK.get(level, "1"))
