"""Protected names: the top-level entries of a workspace that configure the repository or the agent.

One list for every layer: the sandbox binds these names read-only
(native/src/sandbox_linux.c holds the same arrays, checked by the tests), the
verification snapshot skips them because a sandboxed command cannot change
them, and the guardrail asks before a tool writes to one. The directories
are the repository and agent configuration; the files are those that would
run code for the user (shell start-up files) or reconfigure a tool.
"""

from __future__ import annotations

import unicodedata

__all__ = ["PROTECTED_DIRS", "PROTECTED_FILES", "PROTECTED_NAMES", "is_protected_name"]

# In the order of sandbox_linux.c, which the sandbox's profile follows.
PROTECTED_DIRS: tuple[str, ...] = (
    ".git",
    ".a3s",
    ".agents",
    ".codex",
    ".claude",
    ".vscode",
    ".idea",
)
PROTECTED_FILES: tuple[str, ...] = (
    ".gitmodules",
    ".mcp.json",
    ".ripgreprc",
    ".bashrc",
    ".bash_profile",
    ".zshrc",
    ".zprofile",
    ".profile",
)
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
