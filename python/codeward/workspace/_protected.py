"""Protected names: the top-level entries of a workspace that configure the repository or the agent.

One list for every layer, read from the C core (native/src/protected.c): the
Linux sandbox keeps each exact name read-only (bound, or held by a read-only
placeholder), the verification snapshot skips exactly those names because a
sandboxed command cannot change them, and the guardrail asks before a tool
writes to one (there in any spelling a file system may equate). The
directories are the repository and agent configuration; the files are those
that would run code for the user (shell start-up files) or reconfigure a tool.
"""

from __future__ import annotations

import unicodedata

from .. import _native

__all__ = ["PROTECTED_DIRS", "PROTECTED_FILES", "PROTECTED_NAMES", "is_protected_name"]

# In the C core's order, which the sandbox's profile follows.
PROTECTED_DIRS: tuple[str, ...]
PROTECTED_FILES: tuple[str, ...]
PROTECTED_DIRS, PROTECTED_FILES = _native.protected_names()
PROTECTED_NAMES: frozenset[str] = frozenset(PROTECTED_DIRS + PROTECTED_FILES)


def _fold(name: str) -> str:
    """A name as a case-insensitive, normalising file system compares it."""
    name = unicodedata.normalize("NFC", name)
    name = "".join(ch for ch in name if unicodedata.category(ch) != "Cf")
    return name.rstrip(". ").casefold()


_FOLDED = frozenset(_fold(n) for n in PROTECTED_NAMES)


def is_protected_name(name: str) -> bool:
    """Whether one path component is a protected name, in any variant a file system may equate.

    Compared the way a case-insensitive file system would (``.GIT``,
    ``.Git``), ignoring what HFS+ ignores (zero-width characters) and what
    Windows drops (trailing dots and blanks).
    """
    return _fold(name) in _FOLDED
