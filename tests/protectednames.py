"""The workspace's protected top-level names, as docs/security.md ("protected names") lists them.

Written from the docs, not read from the implementation, so that the tests hold the
implementation to the documented set; one copy, so that every test holds it to the same set.
"""

from __future__ import annotations

PROTECTED_DIRS = [
    ".git",
    ".a3s",
    ".agents",
    ".codex",
    ".claude",
    ".vscode",
    ".idea",
    ".cursor",
    ".gemini",
    ".roo",
    ".kiro",
    ".continue",
    ".windsurf",
    ".amazonq",
    ".cline",
]
PROTECTED_FILES = [
    ".gitmodules",
    ".mcp.json",
    ".ripgreprc",
    ".bashrc",
    ".bash_profile",
    ".zshrc",
    ".zprofile",
    ".profile",
    ".cursorrules",
    ".windsurfrules",
    ".clinerules",
    ".roomodes",
    ".roorules",
    ".continuerc.json",
]
ALL_PROTECTED = PROTECTED_DIRS + PROTECTED_FILES
