"""The verification gate: a turn that changed the workspace completes only on evidence.

``complete_turn`` completes when, for the ledger's current effect digest:

1. the ledger is empty (the turn changed nothing), or
2. a report bound to exactly that digest passed (at least one required
   check, every required check passed), or
3. the host waived exactly that digest, with a reason.

Anything else is an incomplete outcome listing what is missing. A change
after verification moves the digest, so the report becomes stale; restoring
the verified state restores the digest, and the report counts again.

Reports and waivers belong to one turn. :meth:`VerificationGate.new_turn`
clears the ledger and drops them (it returns the turn's reports for the
host's history): a report or waiver of an earlier turn vouched for the
workspace as it was then, and a later turn reaching the same digest started
from a different workspace. ``waive`` and ``add_report`` are host
operations: the session must never expose them to a model.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Literal

from ._errors import WaiverError
from ._grammar import is_sha256_hex
from ._ledger import EMPTY_EFFECT_DIGEST, MutationLedger
from ._report import VerificationReport, utc_now

__all__ = [
    "MAX_WAIVER_REASON",
    "SUMMARY_ENTRIES",
    "TurnOutcome",
    "TurnStatus",
    "VerificationGate",
    "Waiver",
]

MAX_WAIVER_REASON = 2_000
SUMMARY_ENTRIES = 1_000
_LISTED_CHECKS = 10
TurnStatus = Literal["completed", "incomplete"]


@dataclass(frozen=True)
class Waiver:
    """The host's acceptance of one exact effect digest without a passing report."""

    effect_digest: str
    reason: str
    created_at: str = field(default_factory=utc_now)

    def to_dict(self) -> dict[str, str]:
        return {
            "effect_digest": self.effect_digest,
            "reason": self.reason,
            "created_at": self.created_at,
        }


@dataclass(frozen=True)
class TurnOutcome:
    """What ``complete_turn`` decided, and why.

    ``report`` is the report bound to the current digest that decided (the
    latest passing one, else the latest one), ``waiver`` the waiver bound to
    it; ``missing`` lists, when incomplete, each thing that would have to
    change (empty when completed). ``text`` is the assistant's final text.
    """

    completed: bool
    status: TurnStatus
    effect_digest: str
    reason: str
    missing: tuple[str, ...] = ()
    report: VerificationReport | None = None
    waiver: Waiver | None = None
    text: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "completed": self.completed,
            "status": self.status,
            "effect_digest": self.effect_digest,
            "reason": self.reason,
            "missing": list(self.missing),
            "report": None if self.report is None else self.report.to_dict(),
            "waiver": None if self.waiver is None else self.waiver.to_dict(),
        }


def _ids(checks: Any) -> str:
    ids = [c.id for c in checks]
    shown = ", ".join(ids[:_LISTED_CHECKS])
    return shown + (f" and {len(ids) - _LISTED_CHECKS} more" if len(ids) > _LISTED_CHECKS else "")


def _short(digest: str) -> str:
    return digest[:12]


class VerificationGate:
    """Decides turn completion from a ledger, the turn's reports and the host's waivers."""

    def __init__(self, ledger: MutationLedger) -> None:
        if not isinstance(ledger, MutationLedger):
            raise TypeError(f"VerificationGate needs a MutationLedger, not {type(ledger).__name__}")
        self._ledger = ledger
        self._lock = threading.Lock()
        self._reports: list[VerificationReport] = []
        self._waivers: dict[str, Waiver] = {}

    @property
    def ledger(self) -> MutationLedger:
        return self._ledger

    def add_report(self, report: VerificationReport) -> None:
        """Keeps ``report`` for this turn; it counts while its digest is the current one."""
        if not isinstance(report, VerificationReport):
            raise TypeError(f"add_report needs a VerificationReport, not {type(report).__name__}")
        with self._lock:
            self._reports.append(report)

    def reports(self) -> tuple[VerificationReport, ...]:
        """This turn's reports, oldest first, stale ones included."""
        with self._lock:
            return tuple(self._reports)

    def waivers(self) -> tuple[Waiver, ...]:
        """This turn's waivers, one per digest."""
        with self._lock:
            return tuple(self._waivers.values())

    def waive(self, effect_digest: str, reason: str) -> Waiver:
        """Accepts exactly ``effect_digest`` without a passing report (host only).

        The waiver binds to that digest alone: any further change needs a new
        one. A blank reason or a malformed digest raises :class:`WaiverError`.
        """
        if not is_sha256_hex(effect_digest):
            raise WaiverError(
                f"waiver refused: effect digest {effect_digest!r} is not 64 lowercase hex digits"
            )
        if not isinstance(reason, str) or not reason.strip():
            raise WaiverError("waiver refused: give the reason the change needs no verification")
        if len(reason) > MAX_WAIVER_REASON or "\0" in reason:
            raise WaiverError(
                f"waiver refused: the reason must be at most {MAX_WAIVER_REASON} characters, "
                "without NUL"
            )
        waiver = Waiver(effect_digest, reason.strip())
        with self._lock:
            self._waivers[effect_digest] = waiver
        return waiver

    def complete_turn(self, text: str = "") -> TurnOutcome:
        """Whether the turn may complete now; never completes on ``text`` alone."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a string, not {type(text).__name__}")
        return self._complete(self._ledger.effect_digest(), text)

    def _complete(self, digest: str, text: str) -> TurnOutcome:
        empty = digest == EMPTY_EFFECT_DIGEST  # only the empty ledger hashes the empty string
        with self._lock:
            reports = list(self._reports)
            waiver = self._waivers.get(digest)
            other_waivers = [w for d, w in self._waivers.items() if d != digest]
        return _decide(digest, empty, reports, waiver, other_waivers, text)

    def summary(self) -> dict[str, Any]:
        """A JSON-ready view for the host: the ledger (its first ``SUMMARY_ENTRIES``
        entries; ``ledger.entries()`` has them all), this turn's reports and waivers, and
        what ``complete_turn`` would decide now."""
        digest, entries = self._ledger.state()
        outcome = self._complete(digest, "")
        return {
            "effect_digest": digest,
            "ledger": {
                "empty": not entries,
                "count": len(entries),
                "entries": [
                    {"tool": e.tool, "path": e.path, "content_digest": e.content_digest}
                    for e in entries[:SUMMARY_ENTRIES]
                ],
                "truncated": len(entries) > SUMMARY_ENTRIES,
            },
            "status": outcome.status,
            "reason": outcome.reason,
            "missing": list(outcome.missing),
            "reports": [
                {
                    "effect_digest": r.effect_digest,
                    "current": r.effect_digest == digest,
                    "passed": r.passed,
                    "created_at": r.created_at,
                    "checks": {c.id: c.status for c in r.checks},
                    "residual_risks": list(r.residual_risks),
                }
                for r in self.reports()
            ],
            "waivers": [
                dict(w.to_dict(), current=w.effect_digest == digest) for w in self.waivers()
            ],
        }

    def new_turn(self) -> tuple[VerificationReport, ...]:
        """Starts a new turn: clears the ledger, drops this turn's reports and waivers,
        and returns the reports for the host to archive."""
        with self._lock:
            closed = tuple(self._reports)
            self._reports.clear()
            self._waivers.clear()
            self._ledger.clear()
        return closed


def _decide(
    digest: str,
    empty: bool,
    reports: list[VerificationReport],
    waiver: Waiver | None,
    other_waivers: list[Waiver],
    text: str,
) -> TurnOutcome:
    bound = [r for r in reports if r.effect_digest == digest]
    passing = [r for r in bound if r.passed]
    report = passing[-1] if passing else (bound[-1] if bound else None)
    if empty:
        return TurnOutcome(
            True,
            "completed",
            digest,
            "the turn changed nothing in the workspace",
            (),
            report,
            waiver,
            text,
        )
    if passing:
        return TurnOutcome(
            True,
            "completed",
            digest,
            f"verified: a passing report is bound to effect digest {_short(digest)}",
            (),
            report,
            waiver,
            text,
        )
    if waiver is not None:
        return TurnOutcome(
            True,
            "completed",
            digest,
            f"waived by the host for effect digest {_short(digest)}: {waiver.reason}",
            (),
            report,
            waiver,
            text,
        )
    missing: list[str] = []
    if report is not None:
        failed = [c for c in report.required_checks if c.status == "failed"]
        review = [c for c in report.required_checks if c.status == "needs_review"]
        skipped = [c for c in report.required_checks if c.status == "skipped"]
        if not report.required_checks:
            missing.append(
                "the report for the current effect digest has no required check "
                "(no checks detected or configured?)"
            )
        if failed:
            missing.append(f"required checks failed: {_ids(failed)}")
        if review:
            missing.append(f"required checks need review: {_ids(review)}")
        if skipped:
            missing.append(f"required checks were skipped: {_ids(skipped)}")
    elif reports:
        stale = reports[-1]
        missing.append(
            f"the latest report is stale: it is bound to effect digest "
            f"{_short(stale.effect_digest)}, the workspace changed since and the current "
            f"digest is {_short(digest)}"
        )
    else:
        missing.append(f"no verification report for effect digest {_short(digest)}")
    for other in other_waivers:
        missing.append(
            f"a waiver exists for effect digest {_short(other.effect_digest)}, not for the "
            f"current {_short(digest)}"
        )
    missing.append(
        f"run the checks for effect digest {_short(digest)} (verify), or have the host waive it"
    )
    reason = "the workspace changed and the change is not verified: " + "; ".join(missing[:-1])
    return TurnOutcome(False, "incomplete", digest, reason, tuple(missing), report, None, text)
