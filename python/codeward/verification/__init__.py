"""The verification gate: a turn that changed the workspace completes only on evidence.

- :class:`MutationLedger` records every change (tools call ``record``; bash
  changes come from :func:`record_bash_changes` over two
  :class:`WorkspaceSnapshot`s, taken incrementally by a :class:`SnapshotTracker`)
  and gives the turn's effect digest.
- :func:`detect_checks` finds the workspace's checks, :func:`run_checks`
  runs them through the sandbox into a :class:`VerificationReport` bound to a
  digest.
- :class:`VerificationGate` decides ``complete_turn`` from the ledger, the
  reports and the host's waivers.

docs/verification.md describes how a session wires them together.
"""

from ._changes import (
    BASH_TOOL,
    DEFAULT_HASH_BUDGET_BYTES,
    DEFAULT_MAX_FILE_BYTES,
    path_digest,
    record_bash_changes,
)
from ._checks import CheckSpec, detect_checks
from ._errors import (
    CheckSpecError,
    LedgerError,
    ReportFormatError,
    SnapshotError,
    VerificationError,
    WaiverError,
)
from ._gate import TurnOutcome, TurnStatus, VerificationGate, Waiver
from ._grammar import DELETED, WHOLE_WORKSPACE
from ._ledger import EMPTY_EFFECT_DIGEST, LedgerEntry, MutationLedger, compute_effect_digest
from ._report import REPORT_SCHEMA, CheckStatus, VerificationCheck, VerificationReport
from ._run import DEFAULT_CHECK_TIMEOUT_MS, INTEGRITY_CHECK_ID, VERIFY_TOOL, run_checks
from ._snapshot import (
    DEFAULT_MAX_ENTRIES,
    PROTECTED_NAMES,
    Change,
    ChangeKind,
    FileState,
    FileType,
    WorkspaceSnapshot,
)
from ._tracker import SnapshotTracker

__all__ = [
    "BASH_TOOL",
    "DEFAULT_CHECK_TIMEOUT_MS",
    "DEFAULT_HASH_BUDGET_BYTES",
    "DEFAULT_MAX_ENTRIES",
    "DEFAULT_MAX_FILE_BYTES",
    "DELETED",
    "EMPTY_EFFECT_DIGEST",
    "INTEGRITY_CHECK_ID",
    "PROTECTED_NAMES",
    "REPORT_SCHEMA",
    "VERIFY_TOOL",
    "WHOLE_WORKSPACE",
    "Change",
    "ChangeKind",
    "CheckSpec",
    "CheckSpecError",
    "CheckStatus",
    "FileState",
    "FileType",
    "LedgerEntry",
    "LedgerError",
    "MutationLedger",
    "ReportFormatError",
    "SnapshotError",
    "SnapshotTracker",
    "TurnOutcome",
    "TurnStatus",
    "VerificationCheck",
    "VerificationError",
    "VerificationGate",
    "VerificationReport",
    "Waiver",
    "WaiverError",
    "WorkspaceSnapshot",
    "compute_effect_digest",
    "detect_checks",
    "path_digest",
    "record_bash_changes",
    "run_checks",
]
