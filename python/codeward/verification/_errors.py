"""The errors of the verification package: every one is a caller's mistake, named by type.

CodewardError
└── VerificationError          anything this package refuses
    ├── LedgerError            record() got a tool, path or digest outside the grammar
    ├── SnapshotError          a workspace snapshot cannot start (root missing, a symlink ...)
    ├── ReportFormatError      a report or check is malformed (has .field)
    ├── CheckSpecError         a check specification or host-configured command is invalid
    └── WaiverError            a waiver with a blank reason or a malformed digest
"""

from __future__ import annotations

from .._errors import CodewardError

__all__ = [
    "CheckSpecError",
    "LedgerError",
    "ReportFormatError",
    "SnapshotError",
    "VerificationError",
    "WaiverError",
]


class VerificationError(CodewardError):
    """Base class of every error the verification package raises."""


class LedgerError(VerificationError, ValueError):
    """A mutation was reported with a tool name, path or content digest the ledger refuses.

    The ledger fails closed: a change it cannot describe exactly is an error,
    never a silently normalised entry.
    """


class SnapshotError(VerificationError):
    """A workspace snapshot cannot be taken: the root is missing, not a directory, or a symlink."""


class ReportFormatError(VerificationError, ValueError):
    """A verification report or check is malformed; ``field`` names the offending field."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class CheckSpecError(VerificationError, ValueError):
    """A check specification (id, command, outputs ...) is invalid, or two share an id."""


class WaiverError(VerificationError, ValueError):
    """A waiver was refused: blank reason, or an effect digest that is not 64 hex digits."""
