"""Verification reports: when they pass, and their validated JSON form."""

from __future__ import annotations

import json
from typing import Any

import pytest

from codeward.verification import (
    REPORT_SCHEMA,
    ReportFormatError,
    VerificationCheck,
    VerificationReport,
)

DIGEST = "ab" * 32


def check(id: str = "pytest", status: str = "passed", required: bool = True) -> VerificationCheck:
    return VerificationCheck(id, "pytest", required, status, "ok")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("checks", "passed"),
    [
        ((), False),  # nothing required: nothing verified
        ((check(required=False),), False),
        ((check(),), True),
        ((check(), check("lint", required=False, status="failed")), True),
        ((check(), check("npm", status="failed")), False),
        ((check(status="needs_review"),), False),
        ((check(status="skipped"),), False),
    ],
)
def test_passed(checks: tuple[VerificationCheck, ...], passed: bool) -> None:
    assert VerificationReport(DIGEST, checks).passed is passed


def test_round_trip_through_json() -> None:
    report = VerificationReport(
        DIGEST,
        (
            VerificationCheck(
                "pytest", "pytest", True, "passed", "3 passed", "pytest -q", 0, 812.5
            ),
            VerificationCheck("review", "manual", False, "needs_review"),
        ),
        ("check pytest ran without a sandbox",),
    )
    data = json.loads(json.dumps(report.to_dict()))
    assert data["schema"] == REPORT_SCHEMA == "codeward.verification/v1"
    again = VerificationReport.from_dict(data)
    assert again == report
    assert again.checks[0].duration_ms == 812.5
    assert again.not_passed() == ()


def test_optional_fields_may_be_left_out() -> None:
    report = VerificationReport.from_dict(
        {
            "schema": REPORT_SCHEMA,
            "effect_digest": DIGEST,
            "created_at": "2026-01-02T03:04:05Z",
            "checks": [{"id": "ci", "kind": "command", "required": True, "status": "passed"}],
        }
    )
    assert report.passed and report.residual_risks == ()
    assert report.checks[0].command is None and report.checks[0].exit_code is None


def good() -> dict[str, Any]:
    return VerificationReport(DIGEST, (check(),), ("risk",)).to_dict()


def mutate(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    data = good()
    target: Any = data
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return data


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        (("extra",), 1, "extra"),
        (("checks", 0, "extra"), 1, "extra"),
        (("schema",), "codeward.verification/v2", "schema"),
        (("schema",), KeyError, "schema"),
        (("effect_digest",), "AB" * 32, "effect_digest"),
        (("effect_digest",), "ab" * 31, "effect_digest"),
        (("effect_digest",), None, "effect_digest"),
        (("created_at",), "yesterday", "created_at"),
        (("created_at",), "2026-01-02T03:04:05", "created_at"),  # no time zone
        (("created_at",), KeyError, "created_at"),
        (("checks",), {"id": "x"}, "checks"),
        (("checks",), "pytest", "checks"),
        (("residual_risks",), "one risk", "residual_risks"),
        (("residual_risks",), [""], "residual_risks"),
        (("residual_risks",), [3], "residual_risks"),
        (("checks", 0, "status"), "ok", "status"),
        (("checks", 0, "status"), "PASSED", "status"),
        (("checks", 0, "required"), 1, "required"),
        (("checks", 0, "required"), "true", "required"),
        (("checks", 0, "required"), KeyError, "required"),
        (("checks", 0, "id"), "", "id"),
        (("checks", 0, "id"), "has space", "id"),
        (("checks", 0, "id"), "x" * 129, "id"),
        (("checks", 0, "kind"), " ", "kind"),
        (("checks", 0, "exit_code"), True, "exit_code"),
        (("checks", 0, "exit_code"), 1.0, "exit_code"),
        (("checks", 0, "duration_ms"), -1, "duration_ms"),
        (("checks", 0, "duration_ms"), float("nan"), "duration_ms"),
        (("checks", 0, "duration_ms"), "5", "duration_ms"),
        (("checks", 0, "evidence"), None, "evidence"),
        (("checks", 0, "evidence"), "x" * 70_000, "evidence"),
        (("checks", 0, "command"), "", "command"),
    ],
)
def test_malformed_reports_are_rejected(path: tuple[Any, ...], value: Any, field: str) -> None:
    with pytest.raises(ReportFormatError) as info:
        VerificationReport.from_dict(mutate(path, value))
    assert info.value.field == field
    assert isinstance(info.value, ValueError)


def test_duplicate_check_ids_and_non_objects() -> None:
    data = good()
    data["checks"].append(dict(data["checks"][0]))
    with pytest.raises(ReportFormatError, match="two checks"):
        VerificationReport.from_dict(data)
    for bad in (None, [], "report", 3):
        with pytest.raises(ReportFormatError):
            VerificationReport.from_dict(bad)
    with pytest.raises(ReportFormatError):
        VerificationReport(DIGEST, ("not a check",))  # type: ignore[arg-type]


def test_construction_validates_too() -> None:
    with pytest.raises(ReportFormatError):
        VerificationCheck("x", "k", True, "done")  # type: ignore[arg-type]
    with pytest.raises(ReportFormatError):
        VerificationReport("not a digest", ())
    report = VerificationReport(DIGEST, [check()], ["r"])  # type: ignore[arg-type]
    assert isinstance(report.checks, tuple) and isinstance(report.residual_risks, tuple)
    with pytest.raises(AttributeError):
        report.effect_digest = "0" * 64  # type: ignore[misc]
