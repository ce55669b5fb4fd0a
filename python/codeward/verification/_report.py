"""Verification reports: what was checked, bound to the effect digest it was checked for.

A report is evidence, not a verdict anyone can argue with: it passes only
when every required check passed and there is at least one required check.
A report bound to an older effect digest says nothing about the workspace as
it is now (the gate calls it stale).

``to_dict``/``from_dict`` give the JSON form (schema ``codeward.verification/v1``);
``from_dict`` rejects unknown fields, missing required fields and values of
the wrong type or range with :class:`ReportFormatError`, whose ``field``
names the culprit.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal, get_args

from ._errors import ReportFormatError
from ._grammar import is_sha256_hex

__all__ = [
    "REPORT_SCHEMA",
    "CheckStatus",
    "VerificationCheck",
    "VerificationReport",
    "utc_now",
]

REPORT_SCHEMA = "codeward.verification/v1"
CheckStatus = Literal["passed", "failed", "needs_review", "skipped"]
_STATUSES: frozenset[str] = frozenset(get_args(CheckStatus))
_CHECK_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:/@+-]{0,127}")
MAX_EVIDENCE_CHARS = 65_536
MAX_TEXT_CHARS = 4_096
MAX_CHECKS = 1_000
MAX_RISKS = 1_000


def utc_now() -> str:
    """The current time as an ISO 8601 UTC timestamp with milliseconds."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _fail(name: str, message: str) -> ReportFormatError:
    return ReportFormatError(f"{name} {message}", field=name)


def _text(name: str, value: object, *, limit: int, blank: bool = False) -> str:
    if not isinstance(value, str):
        raise _fail(name, f"must be a string, not {type(value).__name__}")
    if not blank and not value.strip():
        raise _fail(name, "must not be blank")
    if len(value) > limit:
        raise _fail(name, f"is {len(value)} characters long; the limit is {limit}")
    if "\0" in value:
        raise _fail(name, "contains a NUL character")
    return value


def _optional_int(name: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(name, f"must be an integer or null, not {type(value).__name__}")
    return value


def _timestamp(name: str, value: object) -> str:
    text = _text(name, value, limit=64)
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise _fail(name, f"{text!r} is not an ISO 8601 timestamp") from None
    if parsed.tzinfo is None:
        raise _fail(name, f"{text!r} has no time zone")
    return text


@dataclass(frozen=True)
class VerificationCheck:
    """One check and its outcome.

    ``required`` checks decide whether the report passes; optional ones are
    information. ``evidence`` is a bounded excerpt (an output tail, a
    reviewer's note); ``command`` and ``exit_code`` are set for command checks.
    """

    id: str
    kind: str
    required: bool
    status: CheckStatus
    evidence: str = ""
    command: str | None = None
    exit_code: int | None = None
    duration_ms: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not _CHECK_ID.fullmatch(self.id):
            raise _fail(
                "id",
                f"{self.id!r} is not a check id (1 to 128 letters, digits or '_.:/@+-')",
            )
        _text("kind", self.kind, limit=64)
        if not isinstance(self.required, bool):
            raise _fail("required", f"must be true or false, not {self.required!r}")
        if self.status not in _STATUSES:
            raise _fail("status", f"{self.status!r} is not one of {sorted(_STATUSES)}")
        _text("evidence", self.evidence, limit=MAX_EVIDENCE_CHARS, blank=True)
        if self.command is not None:
            _text("command", self.command, limit=MAX_EVIDENCE_CHARS)
        _optional_int("exit_code", self.exit_code)
        duration = self.duration_ms
        if (
            isinstance(duration, bool)
            or not isinstance(duration, (int, float))
            or not math.isfinite(duration)
            or duration < 0
        ):
            raise _fail("duration_ms", f"must be a finite number >= 0, not {duration!r}")
        object.__setattr__(self, "duration_ms", float(duration))

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "required": self.required,
            "status": self.status,
            "evidence": self.evidence,
            "command": self.command,
            "exit_code": self.exit_code,
            "duration_ms": self.duration_ms,
        }

    @classmethod
    def from_dict(cls, data: object) -> VerificationCheck:
        """Parses the JSON form; ``evidence``, ``command``, ``exit_code`` and
        ``duration_ms`` may be left out."""
        fields = _fields(
            "check",
            data,
            required=("id", "kind", "required", "status"),
            optional=("evidence", "command", "exit_code", "duration_ms"),
        )
        return cls(**fields)


@dataclass(frozen=True)
class VerificationReport:
    """The checks run for one effect digest, and the risks they leave open."""

    effect_digest: str
    checks: tuple[VerificationCheck, ...]
    residual_risks: tuple[str, ...] = ()
    created_at: str = field(default_factory=utc_now)
    schema: str = REPORT_SCHEMA

    def __post_init__(self) -> None:
        if self.schema != REPORT_SCHEMA:
            raise _fail("schema", f"{self.schema!r} is not {REPORT_SCHEMA!r}")
        if not is_sha256_hex(self.effect_digest):
            raise _fail("effect_digest", f"{self.effect_digest!r} is not 64 lowercase hex digits")
        checks = _sequence("checks", self.checks, MAX_CHECKS)
        seen: set[str] = set()
        for check in checks:
            if not isinstance(check, VerificationCheck):
                raise _fail("checks", f"holds a {type(check).__name__}, not a VerificationCheck")
            if check.id in seen:
                raise _fail("checks", f"has two checks with the id {check.id!r}")
            seen.add(check.id)
        risks = _sequence("residual_risks", self.residual_risks, MAX_RISKS)
        for risk in risks:
            _text("residual_risks", risk, limit=MAX_TEXT_CHARS)
        _timestamp("created_at", self.created_at)
        object.__setattr__(self, "checks", tuple(checks))
        object.__setattr__(self, "residual_risks", tuple(risks))

    @property
    def required_checks(self) -> tuple[VerificationCheck, ...]:
        return tuple(c for c in self.checks if c.required)

    @property
    def passed(self) -> bool:
        """Every required check passed, and there is at least one."""
        required = self.required_checks
        return bool(required) and all(c.passed for c in required)

    def not_passed(self) -> tuple[VerificationCheck, ...]:
        """The required checks that did not pass (failed, needs review or skipped)."""
        return tuple(c for c in self.required_checks if not c.passed)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": self.schema,
            "effect_digest": self.effect_digest,
            "checks": [c.to_dict() for c in self.checks],
            "residual_risks": list(self.residual_risks),
            "created_at": self.created_at,
        }

    @classmethod
    def from_dict(cls, data: object) -> VerificationReport:
        """Parses the JSON form; ``residual_risks`` may be left out."""
        fields = _fields(
            "report",
            data,
            required=("schema", "effect_digest", "checks", "created_at"),
            optional=("residual_risks",),
        )
        raw_checks = fields["checks"]
        if not isinstance(raw_checks, list):
            raise _fail("checks", f"must be a list, not {type(raw_checks).__name__}")
        fields["checks"] = tuple(VerificationCheck.from_dict(c) for c in raw_checks)
        risks = fields.get("residual_risks", [])
        if not isinstance(risks, list):
            raise _fail("residual_risks", f"must be a list, not {type(risks).__name__}")
        fields["residual_risks"] = tuple(risks)
        return cls(**fields)


def _sequence(name: str, value: object, limit: int) -> list[Any]:
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise _fail(name, f"must be a list or tuple, not {type(value).__name__}")
    items = list(value)
    if len(items) > limit:
        raise _fail(name, f"has {len(items)} items; the limit is {limit}")
    return items


def _fields(
    what: str, data: object, *, required: tuple[str, ...], optional: tuple[str, ...]
) -> dict[str, Any]:
    if not isinstance(data, Mapping):
        raise ReportFormatError(f"a {what} must be an object, not {type(data).__name__}")
    unknown = sorted(str(k) for k in data if k not in required and k not in optional)
    if unknown:
        raise ReportFormatError(f"unknown {what} field(s): {', '.join(unknown)}", field=unknown[0])
    missing = [k for k in required if k not in data]
    if missing:
        raise ReportFormatError(f"missing {what} field(s): {', '.join(missing)}", field=missing[0])
    return {k: data[k] for k in (*required, *optional) if k in data}
