"""Running checks through the real sandbox into reports bound to an effect digest."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import pytest

from codeward.sandbox import BashSandbox, ProcessHostBashSandbox, UnavailableBashSandbox
from codeward.verification import (
    CheckSpec,
    CheckSpecError,
    MutationLedger,
    ReportFormatError,
    VerificationError,
    VerificationGate,
    detect_checks,
    run_checks,
)

Sandbox = Callable[[Path], BashSandbox]


def digest_of(ledger: MutationLedger, path: str, data: bytes) -> str:
    ledger.record("write", path, hashlib.sha256(data).hexdigest())
    return ledger.effect_digest()


def test_passing_and_failing_checks(workspace: Path, real_sandbox: Sandbox) -> None:
    sandbox = real_sandbox(workspace)
    digest = "0" * 64
    specs = [
        CheckSpec("ok", "command", "python3 -c \"print('all good')\""),
        CheckSpec("bad", "command", "python3 -c \"import sys; print('boom'); sys.exit(3)\""),
        CheckSpec("warn", "command", "echo style >&2; exit 1", required=False),
    ]
    report = run_checks(sandbox, specs, digest, workspace_root=workspace)
    assert report.effect_digest == digest
    by_id = {c.id: c for c in report.checks}
    assert by_id["ok"].status == "passed" and by_id["ok"].exit_code == 0
    assert "all good" in by_id["ok"].evidence
    assert by_id["bad"].status == "failed" and by_id["bad"].exit_code == 3
    assert "boom" in by_id["bad"].evidence and "exit code 3" in by_id["bad"].evidence
    assert by_id["warn"].status == "failed" and not by_id["warn"].required
    assert "style" in by_id["warn"].evidence
    assert by_id["bad"].command == specs[1].command
    assert by_id["workspace-unchanged"].status == "passed"
    assert not by_id["workspace-unchanged"].required
    assert not report.passed
    assert report.residual_risks == ()


def test_a_timeout_fails_with_evidence(workspace: Path, real_sandbox: Sandbox) -> None:
    sandbox = real_sandbox(workspace)
    spec = CheckSpec("slow", "command", "echo started; sleep 30", timeout_ms=3000)
    (check, _) = run_checks(sandbox, [spec], "1" * 64, workspace_root=workspace).checks
    assert check.status == "failed"
    assert "timed out after 3000 ms" in check.evidence
    assert "started" in check.evidence


def test_evidence_is_a_bounded_tail(workspace: Path, real_sandbox: Sandbox) -> None:
    sandbox = real_sandbox(workspace)
    spec = CheckSpec("loud", "command", "seq 1 200000; echo LAST LINE")
    report = run_checks(sandbox, [spec], "2" * 64, evidence_chars=500)
    (check,) = report.checks
    assert check.status == "passed"
    assert len(check.evidence) < 700
    assert check.evidence.rstrip().endswith("LAST LINE")
    assert "truncated" in check.evidence
    assert any("not compared" in r for r in report.residual_risks)


def test_checks_that_change_the_workspace_fail_the_report(
    workspace: Path, real_sandbox: Sandbox
) -> None:
    """A test that rewrites the code it just verified must not leave a passing report."""
    sandbox = real_sandbox(workspace)
    (workspace / "app.py").write_text("SAFE = True\n")
    ledger = MutationLedger()
    digest = digest_of(ledger, "app.py", b"SAFE = True\n")
    sneaky = CheckSpec("tests", "command", "echo 'SAFE = False' > app.py; mkdir -p target; true")
    report = run_checks(sandbox, [sneaky], digest, workspace_root=workspace, ledger=ledger)
    checks = {c.id: c for c in report.checks}
    assert checks["tests"].status == "passed"
    integrity = checks["workspace-unchanged"]
    assert integrity.required and integrity.status == "failed"
    assert "modified app.py" in integrity.evidence and "created target" in integrity.evidence
    assert not report.passed
    # the change is in the ledger under "verify": the digest moved, the report is stale
    assert ledger.get("app.py").tool == "verify"  # type: ignore[union-attr]
    assert ledger.effect_digest() != digest
    gate = VerificationGate(ledger)
    gate.add_report(report)
    outcome = gate.complete_turn("done")
    assert not outcome.completed and "stale" in outcome.reason


def test_declared_outputs_are_a_residual_risk(workspace: Path, real_sandbox: Sandbox) -> None:
    sandbox = real_sandbox(workspace)
    ledger = MutationLedger()
    digest = digest_of(ledger, "src/lib.rs", b"fn main() {}\n")
    build = CheckSpec(
        "cargo-test",
        "cargo",
        "mkdir -p target/debug && echo bin > target/debug/app",
        outputs=("target",),
    )
    report = run_checks(sandbox, [build], digest, workspace_root=workspace, ledger=ledger)
    assert report.passed
    assert ledger.effect_digest() == digest
    assert any("cargo-test changed 3 path(s)" in r for r in report.residual_risks)


def test_no_checks_cannot_pass(workspace: Path, real_sandbox: Sandbox) -> None:
    report = run_checks(real_sandbox(workspace), detect_checks(workspace), "3" * 64)
    assert report.checks == ()
    assert not report.passed
    assert any("no checks were detected" in r for r in report.residual_risks)


def test_only_optional_checks_cannot_pass(workspace: Path, real_sandbox: Sandbox) -> None:
    spec = CheckSpec("lint", "command", "true", required=False)
    report = run_checks(real_sandbox(workspace), [spec], "3" * 64, workspace_root=workspace)
    assert not report.passed
    assert any("no check is required" in r for r in report.residual_risks)


def test_outside_a_sandbox_is_a_residual_risk(workspace: Path) -> None:
    sandbox = ProcessHostBashSandbox(workspace)
    report = run_checks(sandbox, [CheckSpec("ok", "command", "true")], "4" * 64)
    assert report.passed
    assert any("ran without a sandbox (backend process-host)" in r for r in report.residual_risks)


def test_an_unavailable_sandbox_fails_the_checks(workspace: Path) -> None:
    sandbox = UnavailableBashSandbox(workspace, "bubblewrap is missing")
    report = run_checks(sandbox, [CheckSpec("ok", "command", "true")], "5" * 64)
    (check,) = report.checks
    assert check.status == "failed" and check.exit_code is None
    assert "bubblewrap is missing" in check.evidence
    assert not report.passed


def test_arguments_are_validated(workspace: Path) -> None:
    sandbox = ProcessHostBashSandbox(workspace)
    spec = CheckSpec("ok", "command", "true")
    with pytest.raises(ReportFormatError):
        run_checks(sandbox, [spec], "not a digest")
    with pytest.raises(CheckSpecError):
        run_checks(sandbox, [spec, spec], "6" * 64)
    with pytest.raises(CheckSpecError):
        run_checks(sandbox, [CheckSpec("workspace-unchanged", "x", "true")], "6" * 64)
    with pytest.raises(CheckSpecError):
        run_checks(sandbox, [spec], "6" * 64, timeout_ms=0)
    with pytest.raises(VerificationError):
        run_checks(sandbox, [spec], "6" * 64, ledger=MutationLedger())


# ---- a real pytest project, detected and run inside the sandbox -------------------------------


def _pytest_project(root: Path, body: str) -> None:
    (root / "pyproject.toml").write_text("[tool.pytest.ini_options]\naddopts = '-p no:randomly'\n")
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_calc.py").write_text(f"from calc import add\n\n\n{body}")


@pytest.fixture
def pytest_sandbox(real_sandbox: Sandbox) -> Callable[[Path], BashSandbox]:
    def make(root: Path) -> BashSandbox:
        sandbox = real_sandbox(root)
        probe = sandbox.exec("python3 -m pytest --version", timeout_ms=30_000)
        if probe.exit_code != 0:
            pytest.skip(f"pytest is not importable by python3 inside the sandbox: {probe.stderr}")
        return sandbox

    return make


@pytest.mark.parametrize("passing", [True, False])
def test_a_detected_pytest_project(
    workspace: Path, pytest_sandbox: Callable[[Path], BashSandbox], passing: bool
) -> None:
    expected = "3" if passing else "4"
    _pytest_project(workspace, f"def test_add():\n    assert add(1, 2) == {expected}\n")
    (workspace / "conftest.py").write_text("import sys, os\nsys.path.insert(0, os.getcwd())\n")
    sandbox = pytest_sandbox(workspace)
    specs = detect_checks(workspace)
    assert [s.id for s in specs] == ["pytest"]
    ledger = MutationLedger()
    digest = digest_of(ledger, "calc.py", b"def add(a, b):\n    return a + b\n")
    report = run_checks(sandbox, specs, digest, workspace_root=workspace, ledger=ledger)
    checks = {c.id: c for c in report.checks}
    # -B and no cache plugin: verifying wrote nothing into the workspace
    assert checks["workspace-unchanged"].status == "passed", checks["workspace-unchanged"]
    assert not (workspace / ".pytest_cache").exists()
    assert not list(workspace.rglob("__pycache__"))
    assert ledger.effect_digest() == digest
    if passing:
        assert report.passed, checks["pytest"].evidence
        assert "1 passed" in checks["pytest"].evidence
    else:
        assert not report.passed
        assert checks["pytest"].exit_code == 1
        assert "1 failed" in checks["pytest"].evidence
    gate = VerificationGate(ledger)
    gate.add_report(report)
    assert gate.complete_turn("done").completed is passing


def test_unconfined_checks_are_watched_everywhere(workspace: Path) -> None:
    """Outside the sandbox nothing protects .git: the comparison covers it too."""
    (workspace / ".git").mkdir()
    ledger = MutationLedger()
    digest = digest_of(ledger, "a.py", b"a")
    spec = CheckSpec("hook", "command", "echo evil > .git/hooks-pre-commit")
    report = run_checks(
        ProcessHostBashSandbox(workspace), [spec], digest, workspace_root=workspace, ledger=ledger
    )
    assert not report.passed
    assert ledger.get(".git/hooks-pre-commit") is not None


def test_a_tracker_that_cannot_vouch_fails_the_integrity_check(
    workspace: Path, real_sandbox: Sandbox
) -> None:
    """Directories past the watch budget: a check writing through a mapping there would
    change no metadata and no watch would name the file, so the comparison cannot pass."""
    from codeward.verification import SnapshotTracker, _inotify

    sandbox = real_sandbox(workspace)
    for d in range(4):
        (workspace / f"d{d}").mkdir()
    tracker = SnapshotTracker(workspace, watch_hub=_inotify.WatchHub(budget=2))
    try:
        ledger = MutationLedger()
        spec = CheckSpec("ok", "command", "true")
        report = run_checks(
            sandbox, [spec], "0" * 64, workspace_root=workspace, ledger=ledger, tracker=tracker
        )
    finally:
        tracker.close()
    integrity = {c.id: c for c in report.checks}["workspace-unchanged"]
    assert integrity.status == "failed" and integrity.required
    assert "cannot be vouched for" in integrity.evidence and "watch budget" in integrity.evidence
    assert not report.passed
    entry = ledger.get(".")
    assert entry is not None and entry.tool == "verify"
