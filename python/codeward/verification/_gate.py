"""The verification gate: a turn that changed the workspace completes only on evidence.

``complete_turn`` completes when, for the ledger's current effect digest:

1. the ledger is empty (the turn changed nothing), or
2. a report bound to exactly that digest passed (at least one required
   check, every required check passed), or
3. the host waived exactly that digest, with a reason.

Anything else is an incomplete outcome listing what is missing. A change
after verification moves the digest, so the report becomes stale; restoring
the verified state restores the digest, and the report counts again.

Turns are explicit and numbered (``turn``, from 1). A turn ends when
``complete_turn`` completes it (nothing changed, a passing report, or a
waiver): the same call starts the next turn, atomically with the decision
(the ledger is cleared only if it still holds exactly the state decided on).
:meth:`VerificationGate.new_turn` ends a turn without completing it. Either
way the turn's reports and waivers are dropped (``new_turn`` returns the
reports for the host's history): a report or waiver of an earlier turn
vouched for the workspace as it was then, and a later turn reaching the same
digest started from a different workspace. A report or waiver made for one
turn (``turn=``) is refused in another. ``waive`` and ``add_report`` are
host operations: the session must never expose them to a model.
"""

from __future__ import annotations

import dataclasses
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
    turn: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "effect_digest": self.effect_digest,
            "reason": self.reason,
            "created_at": self.created_at,
            "turn": self.turn,
        }


@dataclass(frozen=True)
class TurnOutcome:
    """What ``complete_turn`` decided, and why.

    ``report`` is the report bound to the current digest that decided (the
    latest passing one, else the latest one), ``waiver`` the waiver bound to
    it; ``missing`` lists, when incomplete, each thing that would have to
    change (empty when completed). ``text`` is the assistant's final text.
    ``turn`` is the turn decided on; a completed outcome started turn + 1.
    """

    completed: bool
    status: TurnStatus
    effect_digest: str
    reason: str
    missing: tuple[str, ...] = ()
    report: VerificationReport | None = None
    waiver: Waiver | None = None
    text: str = ""
    turn: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "completed": self.completed,
            "status": self.status,
            "effect_digest": self.effect_digest,
            "reason": self.reason,
            "missing": list(self.missing),
            "report": None if self.report is None else self.report.to_dict(),
            "waiver": None if self.waiver is None else self.waiver.to_dict(),
            "turn": self.turn,
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
        self._turn = 1

    @property
    def ledger(self) -> MutationLedger:
        return self._ledger

    @property
    def turn(self) -> int:
        """The current turn's number (1 for the first; each completed or new turn adds one)."""
        with self._lock:
            return self._turn

    def add_report(self, report: VerificationReport, *, turn: int | None = None) -> bool:
        """Keeps ``report`` for this turn; it counts while its digest is the current one.

        ``turn`` is the turn the checks ran in (``gate.turn`` read before they
        started): a report that arrives after that turn ended is dropped and
        False returned, since it vouches for a workspace the new turn did not
        start from.
        """
        if not isinstance(report, VerificationReport):
            raise TypeError(f"add_report needs a VerificationReport, not {type(report).__name__}")
        with self._lock:
            if turn is not None and turn != self._turn:
                return False
            self._reports.append(report)
            return True

    def reports(self) -> tuple[VerificationReport, ...]:
        """This turn's reports, oldest first, stale ones included."""
        with self._lock:
            return tuple(self._reports)

    def waivers(self) -> tuple[Waiver, ...]:
        """This turn's waivers, one per digest."""
        with self._lock:
            return tuple(self._waivers.values())

    def waive(self, effect_digest: str, reason: str, *, turn: int | None = None) -> Waiver:
        """Accepts exactly ``effect_digest`` without a passing report (host only).

        The waiver binds to that digest alone, in this turn alone: any further
        change needs a new one, and the next turn starts without it. ``turn``
        (the number the host saw in ``summary()``) refuses the waiver when that
        turn has ended meanwhile. A blank reason, a malformed digest or another
        turn raises :class:`WaiverError`.
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
        with self._lock:
            if turn is not None and turn != self._turn:
                raise WaiverError(
                    f"waiver refused: turn {turn} has ended, the current turn is {self._turn}"
                )
            waiver = Waiver(effect_digest, reason.strip(), turn=self._turn)
            self._waivers[effect_digest] = waiver
        return waiver

    def complete_turn(self, text: str = "") -> TurnOutcome:
        """Whether the turn may complete now; never completes on ``text`` alone.

        A completed outcome ends the turn and starts the next one: an empty
        ledger, no reports, no waivers. The ledger is cleared only if it still
        holds the state decided on (a change recorded meanwhile is decided
        again), so no change is dropped unverified.
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a string, not {type(text).__name__}")
        while True:
            digest = self._ledger.effect_digest()
            with self._lock:
                outcome = self._decide_locked(digest, text)
                if not outcome.completed:
                    return outcome
                if self._ledger.clear_if(digest):
                    self._end_turn_locked()
                    return outcome

    def _decide_locked(self, digest: str, text: str) -> TurnOutcome:
        empty = digest == EMPTY_EFFECT_DIGEST  # only the empty ledger hashes the empty string
        waiver = self._waivers.get(digest)
        other_waivers = [w for d, w in self._waivers.items() if d != digest]
        outcome = _decide(digest, empty, list(self._reports), waiver, other_waivers, text)
        return dataclasses.replace(outcome, turn=self._turn)

    def _complete(self, digest: str, text: str) -> TurnOutcome:
        with self._lock:
            return self._decide_locked(digest, text)

    def _end_turn_locked(self) -> tuple[VerificationReport, ...]:
        closed = tuple(self._reports)
        self._reports.clear()
        self._waivers.clear()
        self._turn += 1
        return closed

    def summary(self) -> dict[str, Any]:
        """A JSON-ready view for the host: the ledger (its first ``SUMMARY_ENTRIES``
        entries; ``ledger.entries()`` has them all), this turn's reports and waivers, and
        what ``complete_turn`` would decide now."""
        digest, entries = self._ledger.state()
        outcome = self._complete(digest, "")
        return {
            "turn": outcome.turn,
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
        """Ends the turn without completing it and starts the next: clears the ledger,
        drops this turn's reports and waivers, and returns the reports for the host to
        archive. (A completed ``complete_turn`` does this itself.)"""
        with self._lock:
            self._ledger.clear()
            return self._end_turn_locked()


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
