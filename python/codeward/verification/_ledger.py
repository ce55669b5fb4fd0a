"""The mutation ledger: the net effect of a turn on the workspace, and its digest.

Every tool that changes the workspace reports the change here (it implements
the tools' ``MutationRecorder`` protocol). The ledger keeps **one entry per
path**: the tool that changed it last and the digest of its current state.
Writing a file twice leaves one entry; restoring the bytes verified earlier
restores the digest verified earlier. The effect digest therefore describes
what the workspace looks like now, not the order in which it got there.

Canonical form of the effect digest (other bindings must reproduce it):
each entry becomes the line ``tool|path|content_digest`` in UTF-8 (paths
that are not valid UTF-8 keep their raw bytes, as ``surrogateescape``
gives them), where in the path every byte below 0x20, 0x7f, ``%`` and
``|`` is written ``%XX`` (upper-case hex) so a line never holds a newline
and always splits into three fields; the lines are sorted as bytes and
joined by ``\\n``; the effect digest is the sha256 hex of that. The empty
ledger hashes the empty string: :data:`EMPTY_EFFECT_DIGEST`.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable
from dataclasses import dataclass

from ._errors import LedgerError
from ._grammar import is_content_digest, is_tool_name, path_problem

__all__ = ["EMPTY_EFFECT_DIGEST", "LedgerEntry", "MutationLedger", "compute_effect_digest"]

EMPTY_EFFECT_DIGEST = hashlib.sha256(b"").hexdigest()

_ESCAPED = frozenset([*range(0x20), 0x7F, ord("%"), ord("|")])


def _escape_path(path: str) -> bytes:
    raw = path.encode("utf-8", "surrogateescape")
    if not _ESCAPED.intersection(raw):
        return raw
    return b"".join(b"%%%02X" % b if b in _ESCAPED else bytes((b,)) for b in raw)


@dataclass(frozen=True)
class LedgerEntry:
    """The tool that last changed ``path`` and the digest of the path's current state."""

    tool: str
    path: str
    content_digest: str

    def canonical_line(self) -> bytes:
        """This entry's line in the effect digest (see the module docstring)."""
        return b"|".join(
            (self.tool.encode("ascii"), _escape_path(self.path), self.content_digest.encode())
        )


def compute_effect_digest(entries: Iterable[LedgerEntry]) -> str:
    """The effect digest of ``entries`` (one per path), whatever their order."""
    lines = sorted(entry.canonical_line() for entry in entries)
    return hashlib.sha256(b"\n".join(lines)).hexdigest()


def _check(tool: object, path: object, content_digest: object) -> None:
    if not is_tool_name(tool):
        raise LedgerError(
            f"tool name {tool!r} refused: use 1 to 128 letters, digits or '_.:-', "
            "starting with a letter, digit or '_'"
        )
    problem = path_problem(path)
    if problem is not None:
        raise LedgerError(f"path {path!r} refused: it {problem}")
    if not is_content_digest(content_digest):
        raise LedgerError(
            f"content digest {content_digest!r} for {path!r} refused: expected the sha256 hex "
            "of the new content, 'deleted', or one of the file:/exec:/symlink:/meta:/dir: forms"
        )


class MutationLedger:
    """Thread-safe record of every path the current turn changed.

    ``record`` is what tools call (the ``MutationRecorder`` protocol); a
    malformed call raises :class:`LedgerError` instead of recording a change
    the digest could not describe exactly.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, LedgerEntry] = {}
        self._digest: str | None = EMPTY_EFFECT_DIGEST

    def record(self, tool: str, path: str, content_digest: str) -> None:
        """Notes that ``tool`` left ``path`` in the state ``content_digest``."""
        _check(tool, path, content_digest)
        entry = LedgerEntry(tool, path, content_digest)
        with self._lock:
            if self._entries.get(path) != entry:
                self._entries[path] = entry
                self._digest = None

    def entries(self) -> tuple[LedgerEntry, ...]:
        """Every entry, sorted by path."""
        with self._lock:
            return tuple(sorted(self._entries.values(), key=lambda e: e.path))

    def get(self, path: str) -> LedgerEntry | None:
        """The entry for ``path``, if the turn changed it."""
        with self._lock:
            return self._entries.get(path)

    def effect_digest(self) -> str:
        """The sha256 hex describing the turn's net effect (see the module docstring)."""
        with self._lock:
            return self._current_digest()

    def state(self) -> tuple[str, tuple[LedgerEntry, ...]]:
        """The effect digest and the entries it was computed from, read at one instant."""
        with self._lock:
            entries = tuple(sorted(self._entries.values(), key=lambda e: e.path))
            return self._current_digest(), entries

    def _current_digest(self) -> str:
        if self._digest is None:
            self._digest = compute_effect_digest(self._entries.values())
        return self._digest

    def is_empty(self) -> bool:
        """True when the turn has changed nothing (the digest is EMPTY_EFFECT_DIGEST)."""
        with self._lock:
            return not self._entries

    def clear(self) -> None:
        """Forgets every entry: the start of a new turn."""
        with self._lock:
            self._entries.clear()
            self._digest = EMPTY_EFFECT_DIGEST

    def clear_if(self, effect_digest: str) -> bool:
        """Forgets every entry if the effect digest is still ``effect_digest``; False (and
        nothing forgotten) if a change was recorded since it was read."""
        with self._lock:
            if self._current_digest() != effect_digest:
                return False
            self._entries.clear()
            self._digest = EMPTY_EFFECT_DIGEST
            return True

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __repr__(self) -> str:
        return f"MutationLedger(entries={len(self)}, effect_digest={self.effect_digest()[:12]}...)"
