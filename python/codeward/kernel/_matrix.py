"""The mode matrix: what each execution mode says about each kind of call, before any policy.

Rows are what the kernel knows about a call (its tool's kind, whether it
touches a protected name, whether bash is really sandboxed, an escalation);
cells are the decision. docs/kernel.md prints the same table.
"""

from __future__ import annotations

import enum

from ..policy import Decision
from ._types import Mode

__all__ = ["MODE_MATRIX", "MatrixRow", "cell"]

A, D, Q = Decision.ALLOW, Decision.DENY, Decision.ASK


class MatrixRow(str, enum.Enum):
    READ = "read, search, ls inside the workspace"
    WRITE = "write, edit, patch (ordinary path)"
    WRITE_PROTECTED = "write, edit, patch on a protected name"
    BASH_SANDBOXED = "bash, sandbox available"
    BASH_UNSANDBOXED = "bash, no sandbox (error-only handle or process host)"
    BASH_ESCALATION = "bash require_escalated / request_network_grant"
    GIT_READ = "git read-only (status, diff, log, show)"
    DOWNLOAD = "download"
    LAUNCH = "task / skill / workflow launch"
    MCP_READ_ONLY = "MCP or external tool annotated read-only"
    MCP_SIDE_EFFECT = "MCP or external tool with side effects or no annotations"
    UNKNOWN = "unknown tool"


# (default, plan, auto) per row: Auto never asks, Plan never mutates.
MODE_MATRIX: dict[MatrixRow, tuple[Decision, Decision, Decision]] = {
    MatrixRow.READ: (A, A, A),
    MatrixRow.WRITE: (A, D, A),
    MatrixRow.WRITE_PROTECTED: (Q, D, D),
    MatrixRow.BASH_SANDBOXED: (A, D, A),
    MatrixRow.BASH_UNSANDBOXED: (Q, D, D),
    MatrixRow.BASH_ESCALATION: (Q, D, D),
    MatrixRow.GIT_READ: (A, A, A),
    MatrixRow.DOWNLOAD: (Q, D, D),
    MatrixRow.LAUNCH: (A, D, A),
    MatrixRow.MCP_READ_ONLY: (A, A, A),
    MatrixRow.MCP_SIDE_EFFECT: (Q, D, D),
    MatrixRow.UNKNOWN: (Q, D, D),
}

_COLUMN = {Mode.DEFAULT: 0, Mode.PLAN: 1, Mode.AUTO: 2}


def cell(mode: Mode, row: MatrixRow) -> Decision:
    """The matrix's decision for ``row`` in ``mode``."""
    return MODE_MATRIX[row][_COLUMN[mode]]
