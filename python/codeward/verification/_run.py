"""Running checks through the session's sandbox into a report bound to an effect digest."""

from __future__ import annotations

import os
import time
from collections.abc import Collection, Sequence
from typing import Any

from .._errors import SandboxError
from ..sandbox import BashSandbox, CommandOutput
from ._changes import record_changes, record_unknown_change
from ._checks import CheckSpec
from ._errors import CheckSpecError, ReportFormatError, VerificationError
from ._grammar import is_sha256_hex
from ._ledger import MutationLedger
from ._report import CheckStatus, VerificationCheck, VerificationReport
from ._snapshot import PROTECTED_NAMES, Change, WorkspaceSnapshot
from ._tracker import SnapshotTracker

__all__ = [
    "DEFAULT_CHECK_TIMEOUT_MS",
    "EVIDENCE_TAIL_CHARS",
    "INTEGRITY_CHECK_ID",
    "VERIFY_TOOL",
    "run_checks",
]

DEFAULT_CHECK_TIMEOUT_MS = 600_000
EVIDENCE_TAIL_CHARS = 4_000
CHECK_OUTPUT_BYTES = 256 * 1024
INTEGRITY_CHECK_ID = "workspace-unchanged"
# The ledger's tool name for changes the checks themselves made.
VERIFY_TOOL = "verify"
_LISTED_PATHS = 20

NO_CHECKS_RISK = (
    "no checks were detected or configured for this workspace: nothing verified the change; "
    "configure a check command, or have the host waive this effect digest"
)


def _tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else "..." + text[-limit:]


def _evidence(headline: str, out: CommandOutput, limit: int) -> str:
    combined = out.stdout
    if out.stderr:
        combined = f"{combined}\n{out.stderr}" if combined else out.stderr
    if out.truncated:
        headline += f"; output truncated by the sandbox ({out.total_bytes} bytes in total)"
    tail = _tail(combined.rstrip("\n"), limit)
    return f"{headline}\n{tail}" if tail else headline


def _outcome(out: CommandOutput, timeout_ms: int) -> tuple[CheckStatus, str]:
    if out.setup_error is not None:
        return "failed", f"the sandbox refused or failed to start the check: {out.setup_error}"
    if out.timed_out:
        return "failed", f"timed out after {timeout_ms} ms (exit code {out.exit_code})"
    if out.cancelled:
        return "failed", f"cancelled before it finished (exit code {out.exit_code})"
    if out.exit_code == 0:
        return "passed", "exit code 0"
    return "failed", f"exit code {out.exit_code}"


def _run_one(
    sandbox: BashSandbox,
    spec: CheckSpec,
    timeout_ms: int,
    evidence_chars: int,
    cancel: Any,
    risks: list[str],
    linked: list[bool],
    lost: list[str],
) -> VerificationCheck:
    timeout = spec.timeout_ms or timeout_ms
    started = time.monotonic()
    try:
        out = sandbox.exec(
            spec.command, timeout_ms=timeout, max_output_bytes=CHECK_OUTPUT_BYTES, cancel=cancel
        )
    except SandboxError as exc:
        return VerificationCheck(
            spec.id,
            spec.kind,
            spec.required,
            "failed",
            _tail(f"the sandbox could not run the check: {exc}", evidence_chars),
            spec.command,
            None,
            (time.monotonic() - started) * 1000,
        )
    status, headline = _outcome(out, timeout)
    outlived = getattr(out, "outlived", False) is True
    linked.append(getattr(out, "hard_linked", False) is True or outlived)
    if outlived:
        lost.append(
            f"something of check {spec.id} may have run after its result (a process that "
            "could not be killed in time)"
        )
    if not out.sandboxed:
        risks.append(
            f"check {spec.id} ran without a sandbox (backend {out.backend}): "
            "nothing confined what it did"
        )
    return VerificationCheck(
        spec.id,
        spec.kind,
        spec.required,
        status,
        _evidence(headline, out, evidence_chars),
        spec.command,
        out.exit_code,
        out.duration_ms or (time.monotonic() - started) * 1000,
    )


_HARD_LINKED = (
    "a check called link() or linkat(): a hard link, even one removed again, can change a "
    "file where no directory watch sees it"
)


def _snapshot(
    root: str, skip_top: Collection[str], tracker: SnapshotTracker | None, *, linked: bool = False
) -> WorkspaceSnapshot:
    """Through the tracker when it tracks exactly this (it re-reads only what changed)."""
    if tracker is not None and tracker.root == root and set(tracker.skip_top) == set(skip_top):
        return tracker.snapshot(walk=_HARD_LINKED if linked else None)
    return WorkspaceSnapshot.take(root, skip_top=skip_top)


def _integrity(
    specs: Sequence[CheckSpec],
    before: WorkspaceSnapshot,
    after: WorkspaceSnapshot,
    root: str,
    ledger: MutationLedger | None,
    risks: list[str],
    outlived: list[str],
) -> VerificationCheck:
    """Whether the checks left the workspace as they found it, outside their outputs."""
    lost = [*outlived, *(s.uncertain for s in (before, after) if s.uncertain)]
    if lost:
        if ledger is not None:
            record_unknown_change(ledger, tool=VERIFY_TOOL)
        return VerificationCheck(
            INTEGRITY_CHECK_ID,
            "integrity",
            True,
            "failed",
            "what the checks changed cannot be vouched for: " + "; ".join(dict.fromkeys(lost)),
        )
    if not (before.complete and after.complete):
        if ledger is not None:
            record_unknown_change(ledger, tool=VERIFY_TOOL)
        return VerificationCheck(
            INTEGRITY_CHECK_ID,
            "integrity",
            True,
            "failed",
            "the workspace is too large or deep to compare before and after the checks; "
            "what they changed is unknown",
        )
    stray: list[Change] = []
    produced: dict[str, int] = {}
    for change in before.diff(after):
        owner = next((s for s in specs if s.owns(change.path)), None)
        if owner is None:
            stray.append(change)
        else:
            produced[owner.id] = produced.get(owner.id, 0) + 1
    for check_id, count in produced.items():
        risks.append(
            f"check {check_id} changed {count} path(s) under its declared outputs: build output, "
            "not verified"
        )
    if not stray:
        return VerificationCheck(
            INTEGRITY_CHECK_ID,
            "integrity",
            False,
            "passed",
            "the checks changed nothing in the workspace outside their declared outputs"
            + _how_compared(before, after),
        )
    if ledger is not None:
        record_changes(ledger, root, stray, tool=VERIFY_TOOL)
    listed = "\n".join(f"{c.kind} {c.path}" for c in stray[:_LISTED_PATHS])
    more = f"\n... and {len(stray) - _LISTED_PATHS} more" if len(stray) > _LISTED_PATHS else ""
    return VerificationCheck(
        INTEGRITY_CHECK_ID,
        "integrity",
        True,
        "failed",
        f"the checks changed {len(stray)} path(s) in the workspace, so what they verified is "
        f"not what is there now:\n{listed}{more}" + _how_compared(before, after),
    )


def _how_compared(before: WorkspaceSnapshot, after: WorkspaceSnapshot) -> str:
    """A note on the evidence when a tracker had to walk the whole tree (and why)."""
    reasons = [s.fallback for s in (before, after) if s.fallback]
    if not reasons:
        return ""
    return f" (compared by walking the whole workspace: {'; '.join(dict.fromkeys(reasons))})"


def run_checks(
    sandbox: BashSandbox,
    specs: Sequence[CheckSpec],
    effect_digest: str,
    timeout_ms: int = DEFAULT_CHECK_TIMEOUT_MS,
    *,
    workspace_root: str | os.PathLike[str] | None = None,
    ledger: MutationLedger | None = None,
    evidence_chars: int = EVIDENCE_TAIL_CHARS,
    cancel: Any = None,
    tracker: SnapshotTracker | None = None,
) -> VerificationReport:
    """Runs every check through ``sandbox`` and reports on them, bound to ``effect_digest``.

    A check passes on exit code 0 and fails otherwise (a timeout, a sandbox
    that could not start, a cancellation included); its evidence is the tail
    of its output. With ``workspace_root`` the workspace is snapshot before
    and after the checks: a check that changed it outside its ``outputs``
    fails the report (``workspace-unchanged``), and with ``ledger`` those
    changes are also recorded, under the tool ``verify``, so the digest moves
    and this report is stale. No specs: a report with no required check (it
    cannot pass) and a residual risk saying so. A ``tracker`` of the same
    root and skip list (PROTECTED_NAMES for a confining sandbox, nothing
    otherwise) takes those snapshots by re-reading only what changed.
    """
    if not is_sha256_hex(effect_digest):
        raise ReportFormatError(
            f"effect_digest {effect_digest!r} is not 64 lowercase hex digits",
            field="effect_digest",
        )
    if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or timeout_ms < 1:
        raise CheckSpecError(f"timeout_ms must be a positive integer, not {timeout_ms!r}")
    if ledger is not None and workspace_root is None:
        raise VerificationError("run_checks needs workspace_root to record changes in a ledger")
    specs = list(specs)
    ids = [s.id for s in specs]
    if len(set(ids)) != len(ids) or INTEGRITY_CHECK_ID in ids:
        raise CheckSpecError(
            f"check ids must be unique and not {INTEGRITY_CHECK_ID!r}: {', '.join(ids)}"
        )
    if not specs:
        return VerificationReport(effect_digest, (), (NO_CHECKS_RISK,))
    risks: list[str] = []
    root = None if workspace_root is None else os.path.abspath(os.fspath(workspace_root))
    # unconfined checks could also write the names the sandbox protects: look there too
    skip_top: Collection[str] = PROTECTED_NAMES if getattr(sandbox, "sandboxed", False) else ()
    before = None if root is None else _snapshot(root, skip_top, tracker)
    linked: list[bool] = []
    lost: list[str] = []
    checks = [
        _run_one(sandbox, s, timeout_ms, evidence_chars, cancel, risks, linked, lost) for s in specs
    ]
    if root is not None and before is not None:
        after = _snapshot(root, skip_top, tracker, linked=any(linked))
        if lost and tracker is not None:
            tracker.force_walk(lost[0])  # what outlived the checks may still write
        checks.append(_integrity(specs, before, after, root, ledger, risks, lost))
    else:
        risks.append("the workspace was not compared before and after the checks (no root given)")
    if not any(s.required for s in specs):
        risks.append("no check is required: the report cannot pass")
    return VerificationReport(effect_digest, tuple(checks), tuple(risks))
