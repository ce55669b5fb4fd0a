"""The credential boundary for the tools that run in the host process.

Every in-process file access (read, write, edit, patch, search, ls, download)
goes through a :class:`Workspace`: confined to the workspace, walked by file
descriptor with no symlink leading out, credential files refused, and writes
made atomic by :class:`AtomicWriter`. It also names the protected top-level
entries (:data:`PROTECTED_NAMES`) that the sandbox, the verification snapshot
and the guardrails all treat specially.
"""

from ._atomic import AtomicWriter, WriteResult, write_atomic
from ._credentials import is_package_store, workspace_reason
from ._protected import PROTECTED_DIRS, PROTECTED_FILES, PROTECTED_NAMES, is_protected_name
from ._workspace import Resolved, Workspace

__all__ = [
    "PROTECTED_DIRS",
    "PROTECTED_FILES",
    "PROTECTED_NAMES",
    "AtomicWriter",
    "Resolved",
    "Workspace",
    "WriteResult",
    "is_package_store",
    "is_protected_name",
    "workspace_reason",
    "write_atomic",
]
