"""The grammar of ledger entries and digests, shared by the ledger, the reports and the gate.

A content digest describes the current state of one workspace path:

    <64 hex>            sha256 of a regular file's bytes (what the file tools report)
    exec:<64 hex>       the same, for a regular file with an execute bit (the
                        form of earlier versions; still accepted)
    file:<4 octal>:<64 hex>
                        a regular file's permission bits and bytes (what change
                        detection records: a chmod is a change a check can see)
    symlink:<64 hex>    sha256 of a symlink's target, which is never followed
    dir:<4 octal>       a directory and its permission bits (``dir:0755``)
    meta:<64 hex>       a file whose bytes were not read (a credential name, a
                        hard-linked file, over the hashing budget, unreadable,
                        a FIFO or device, or an unknown change): sha256 of its
                        metadata, or of a random nonce when even that is unknown
    deleted             the path no longer exists
"""

from __future__ import annotations

import re

__all__ = [
    "DELETED",
    "WHOLE_WORKSPACE",
    "is_content_digest",
    "is_sha256_hex",
    "is_tool_name",
    "path_problem",
]

DELETED = "deleted"
# The ledger path that stands for "somewhere in the workspace, we cannot say where".
WHOLE_WORKSPACE = "."

_HEX64 = re.compile(r"[0-9a-f]{64}")
_CONTENT = re.compile(
    r"(?:(?:exec:|symlink:|meta:|file:[0-7]{4}:)?[0-9a-f]{64}|dir:[0-7]{4}|deleted)"
)
_TOOL = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}")


def is_sha256_hex(value: object) -> bool:
    """True for exactly 64 lowercase hex digits."""
    return isinstance(value, str) and _HEX64.fullmatch(value) is not None


def is_content_digest(value: object) -> bool:
    """True for a content digest in the grammar of this module's docstring."""
    return isinstance(value, str) and _CONTENT.fullmatch(value) is not None


def is_tool_name(value: object) -> bool:
    """Letters, digits and ``_ . : -`` (never ``|`` or a newline), 1 to 128 characters."""
    return isinstance(value, str) and _TOOL.fullmatch(value) is not None


def path_problem(path: object) -> str | None:
    """Why ``path`` is not a normalised workspace-relative path, or None if it is.

    ``"."`` (the whole workspace) is allowed; otherwise the path is relative,
    ``/``-separated, with no empty, ``.`` or ``..`` component and no NUL.
    """
    if not isinstance(path, str):
        return f"must be a string, not {type(path).__name__}"
    if path == WHOLE_WORKSPACE:
        return None
    if not path:
        return "is empty"
    if "\0" in path:
        return "contains a NUL byte"
    if path.startswith("/"):
        return "is absolute; the ledger takes workspace-relative paths"
    for part in path.split("/"):
        if part in ("", ".", ".."):
            return f"is not normalised (component {part!r})"
    return None
