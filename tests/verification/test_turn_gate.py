"""Every decision of the verification gate."""

from __future__ import annotations

import hashlib
import json

import pytest

from codeward.verification import (
    EMPTY_EFFECT_DIGEST,
    MutationLedger,
    VerificationCheck,
    VerificationGate,
    VerificationReport,
    WaiverError,
)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def report(digest: str, *statuses: str, required: bool = True) -> VerificationReport:
    checks = tuple(
        VerificationCheck(f"c{i}", "command", required, s)  # type: ignore[arg-type]
        for i, s in enumerate(statuses)
    )
    return VerificationReport(digest, checks)


@pytest.fixture
def gate() -> VerificationGate:
    return VerificationGate(MutationLedger())


def change(gate: VerificationGate, content: bytes = b"v1", path: str = "a.py") -> str:
    gate.ledger.record("write", path, sha(content))
    return gate.ledger.effect_digest()


def test_no_mutation_completes(gate: VerificationGate) -> None:
    outcome = gate.complete_turn("All done, nothing to change.")
    assert outcome.completed and outcome.status == "completed"
    assert outcome.effect_digest == EMPTY_EFFECT_DIGEST
    assert outcome.missing == () and outcome.report is None and outcome.waiver is None
    assert outcome.text == "All done, nothing to change."


def test_a_change_without_a_report_is_incomplete(gate: VerificationGate) -> None:
    digest = change(gate)
    outcome = gate.complete_turn("I fixed the bug, trust me.")
    assert not outcome.completed and outcome.status == "incomplete"
    assert outcome.effect_digest == digest
    assert outcome.missing[0] == f"no verification report for effect digest {digest[:12]}"
    assert "waive" in outcome.missing[-1]


def test_a_passing_report_for_the_current_digest_completes(gate: VerificationGate) -> None:
    digest = change(gate)
    passing = report(digest, "passed", "passed")
    gate.add_report(passing)
    outcome = gate.complete_turn("done")
    assert outcome.completed and outcome.report is passing
    assert "verified" in outcome.reason


def test_a_change_after_verification_makes_the_report_stale(gate: VerificationGate) -> None:
    verified = change(gate, b"v1")
    gate.add_report(report(verified, "passed"))
    current = change(gate, b"v2")
    outcome = gate.complete_turn("done")
    assert not outcome.completed
    assert outcome.report is None
    assert outcome.missing[0] == (
        f"the latest report is stale: it is bound to effect digest {verified[:12]}, "
        f"the workspace changed since and the current digest is {current[:12]}"
    )
    # a new file next to the verified one: stale as well
    change(gate, b"v1")
    change(gate, b"new file", path="b.py")
    assert not gate.complete_turn().completed


def test_restoring_the_verified_state_makes_the_report_count_again(
    gate: VerificationGate,
) -> None:
    verified = change(gate, b"v1")
    gate.add_report(report(verified, "passed"))
    change(gate, b"v2")
    assert not gate.complete_turn().completed
    change(gate, b"v1")
    assert gate.complete_turn().completed


def test_a_waiver_for_exactly_the_digest_completes(gate: VerificationGate) -> None:
    digest = change(gate)
    waiver = gate.waive(digest, "  docs-only change, reviewed by the host  ")
    assert waiver.reason == "docs-only change, reviewed by the host"
    outcome = gate.complete_turn("done")
    assert outcome.completed and outcome.waiver == waiver and outcome.report is None
    assert "waived by the host" in outcome.reason and waiver.reason in outcome.reason


def test_a_waiver_for_another_digest_does_not(gate: VerificationGate) -> None:
    waived = change(gate, b"v1")
    gate.waive(waived, "looked at it")
    current = change(gate, b"v2")
    outcome = gate.complete_turn("done")
    assert not outcome.completed and outcome.waiver is None
    assert (
        f"a waiver exists for effect digest {waived[:12]}, not for the current {current[:12]}"
        in outcome.missing
    )
    gate.waive("f" * 64, "a digest that never happened")
    assert not gate.complete_turn().completed


def test_a_failed_check_is_incomplete_and_named(gate: VerificationGate) -> None:
    digest = change(gate)
    failed = report(digest, "passed", "failed", "needs_review", "skipped")
    gate.add_report(failed)
    outcome = gate.complete_turn("done")
    assert not outcome.completed and outcome.report is failed
    assert outcome.missing[:3] == (
        "required checks failed: c1",
        "required checks need review: c2",
        "required checks were skipped: c3",
    )
    assert "c1" in outcome.reason


def test_optional_failures_do_not_block(gate: VerificationGate) -> None:
    digest = change(gate)
    checks = (
        VerificationCheck("tests", "pytest", True, "passed"),
        VerificationCheck("lint", "command", False, "failed"),
    )
    gate.add_report(VerificationReport(digest, checks))
    assert gate.complete_turn().completed


def test_a_report_with_no_required_checks_does_not_complete(gate: VerificationGate) -> None:
    digest = change(gate)
    gate.add_report(VerificationReport(digest, (), ("no checks were detected",)))
    outcome = gate.complete_turn("done")
    assert not outcome.completed
    assert "no required check" in outcome.missing[0]
    gate.add_report(report(digest, "passed", required=False))
    assert not gate.complete_turn().completed


def test_a_later_failing_report_does_not_hide_a_passing_one_and_vice_versa(
    gate: VerificationGate,
) -> None:
    digest = change(gate)
    gate.add_report(report(digest, "failed"))
    assert not gate.complete_turn().completed
    passing = report(digest, "passed")
    gate.add_report(passing)
    gate.add_report(report(digest, "failed"))
    # a passing run for exactly this state is the evidence; a flaky rerun does not erase it
    assert gate.complete_turn().report is passing


@pytest.mark.parametrize("reason", ["", "   ", "\n\t", None, 3, "x" * 2001, "a\0b"])
def test_waivers_need_a_reason(gate: VerificationGate, reason: object) -> None:
    digest = change(gate)
    with pytest.raises(WaiverError):
        gate.waive(digest, reason)  # type: ignore[arg-type]
    assert not gate.complete_turn().completed


@pytest.mark.parametrize("digest", ["", "abc", "A" * 64, "g" * 64, None, "a" * 65])
def test_waivers_need_a_digest(gate: VerificationGate, digest: object) -> None:
    with pytest.raises(WaiverError):
        gate.waive(digest, "fine")  # type: ignore[arg-type]


def test_new_turn_starts_clean(gate: VerificationGate) -> None:
    digest = change(gate)
    old = report(digest, "passed")
    gate.add_report(old)
    gate.waive(digest, "ok")
    assert gate.new_turn() == (old,)
    assert gate.ledger.is_empty() and gate.reports() == () and gate.waivers() == ()
    # the same change in the next turn needs its own evidence
    assert change(gate) == digest
    outcome = gate.complete_turn()
    assert not outcome.completed
    assert outcome.missing[0].startswith("no verification report")


def test_summary_is_json_ready(gate: VerificationGate) -> None:
    stale = change(gate, b"v1")
    gate.add_report(report(stale, "passed"))
    digest = change(gate, b"v2")
    gate.add_report(report(digest, "failed"))
    gate.waive(stale, "old")
    summary = json.loads(json.dumps(gate.summary()))
    assert summary["effect_digest"] == digest
    assert summary["status"] == "incomplete"
    assert summary["ledger"] == {
        "empty": False,
        "count": 1,
        "entries": [{"tool": "write", "path": "a.py", "content_digest": sha(b"v2")}],
        "truncated": False,
    }
    assert [(r["current"], r["passed"]) for r in summary["reports"]] == [
        (False, True),
        (True, False),
    ]
    assert summary["reports"][1]["checks"] == {"c0": "failed"}
    assert summary["waivers"][0]["current"] is False
    assert summary["missing"][0] == "required checks failed: c0"


def test_outcomes_serialise(gate: VerificationGate) -> None:
    digest = change(gate)
    gate.add_report(report(digest, "passed"))
    data = json.loads(json.dumps(gate.complete_turn("done").to_dict()))
    assert data["completed"] is True and data["report"]["effect_digest"] == digest


def test_type_errors(gate: VerificationGate) -> None:
    with pytest.raises(TypeError):
        gate.add_report({"schema": "codeward.verification/v1"})  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        gate.complete_turn(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        VerificationGate(object())  # type: ignore[arg-type]


def test_a_completed_turn_starts_the_next_one(gate: VerificationGate) -> None:
    digest = change(gate)
    gate.add_report(report(digest, "passed"))
    outcome = gate.complete_turn("done")
    assert outcome.completed and outcome.turn == 1
    # the next turn: empty ledger, no report, no waiver
    assert gate.turn == 2 and gate.ledger.is_empty() and gate.reports() == ()
    assert change(gate) == digest  # the same change again, in a turn that did not verify it
    again = gate.complete_turn()
    assert not again.completed and again.missing[0].startswith("no verification report")


def test_a_waiver_completes_its_turn_once(gate: VerificationGate) -> None:
    digest = change(gate)
    gate.waive(digest, "reviewed")
    assert gate.complete_turn().completed and gate.turn == 2 and gate.waivers() == ()
    assert change(gate) == digest
    assert not gate.complete_turn().completed  # the waiver stayed with its turn


def test_an_empty_turn_completes_and_advances(gate: VerificationGate) -> None:
    assert gate.complete_turn().completed and gate.turn == 2
    assert gate.complete_turn().completed and gate.turn == 3


def test_reports_and_waivers_of_an_ended_turn_are_refused(gate: VerificationGate) -> None:
    turn = gate.turn
    digest = change(gate)
    gate.new_turn()
    assert gate.turn == turn + 1
    assert change(gate) == digest
    assert gate.add_report(report(digest, "passed"), turn=turn) is False
    assert gate.reports() == ()
    with pytest.raises(WaiverError, match="has ended"):
        gate.waive(digest, "seen in the old turn", turn=turn)
    assert not gate.complete_turn().completed
    assert gate.add_report(report(digest, "passed"), turn=gate.turn) is True
    assert gate.complete_turn().completed


def test_a_change_recorded_while_deciding_is_not_dropped() -> None:
    ledger = MutationLedger()
    gate = VerificationGate(ledger)
    digest = change(gate)
    gate.add_report(report(digest, "passed"))
    # a writer records between the digest being read and the ledger being cleared
    assert ledger.clear_if(EMPTY_EFFECT_DIGEST) is False and len(ledger) == 1
    ledger.record("bash", "b.py", sha(b"late"))
    outcome = gate.complete_turn()
    assert not outcome.completed and len(ledger) == 2 and gate.turn == 1


def test_the_summary_names_the_turn(gate: VerificationGate) -> None:
    assert gate.summary()["turn"] == 1
    gate.complete_turn()
    assert gate.summary()["turn"] == 2
    assert gate.complete_turn().to_dict()["turn"] == 2
