"""What a bash command changed: the workspace's file metadata before and after, compared.

A snapshot reads metadata only (one ``lstat`` per entry, no file content),
so it stays cheap on large trees: its cost is close to ``find -printf`` on
the same tree (bench/verification/run.py measures both). Per path it keeps
the file type and permission bits, size, mtime, ctime, inode and device,
packed into 52 bytes.

Why ctime: a command can write a file and put its size and mtime back
(``touch -r``), but it cannot set the ctime, which the kernel moves to
"now" on every write, chmod, rename or link change. The limit that remains:
a path whose content changes, keeping size, mtime and inode, within the same
ctime tick as a change made just before the first snapshot is missed. On
file systems with nanosecond timestamps (ext4, xfs, btrfs, tmpfs, APFS) the
tick is a scheduler tick (a few ms) or less, while starting the sandbox
alone takes longer, so a command cannot hit it; on coarse file systems
(FAT's 2 s, some network mounts) the window is real.

Directories are kept by type and permission bits only (their mtime moves
with every entry change, which the entries already show). A directory that
cannot be listed is kept by its full metadata and named in ``unreadable``;
what is inside it is not seen (nor reported deleted). The walk goes by
file descriptor and never follows a symlink; it stops at ``max_entries``
entries or ``MAX_DEPTH`` levels, and then says so with ``complete=False``.
"""

from __future__ import annotations

import errno
import os
import stat
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

from ..workspace import PROTECTED_NAMES
from ._errors import SnapshotError

__all__ = [
    "DEFAULT_MAX_ENTRIES",
    "MAX_DEPTH",
    "PROTECTED_NAMES",
    "Change",
    "ChangeKind",
    "FileState",
    "FileType",
    "WorkspaceSnapshot",
]

# PROTECTED_NAMES (from the workspace layer, which reads the C core's list): the exact
# top-level names the sandbox keeps read-only, which bash cannot change; a snapshot skips
# them by default, and only them: another spelling (.GIT, .Vscode) is an ordinary name a
# command can write, so it is seen.
DEFAULT_MAX_ENTRIES = 1_000_000
MAX_DEPTH = 256

ChangeKind = Literal["created", "modified", "deleted"]
FileType = Literal["file", "symlink", "directory", "other"]

# mode, size, mtime (s, ns), ctime (s, ns), ino, dev: a time in ns alone may not fit
# 64 bits (``touch -d 2400-01-01``), in seconds it does.
_STATE = struct.Struct("<IQqIqIQQ")
_NS = 1_000_000_000
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _file_type(mode: int) -> FileType:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISDIR(mode):
        return "directory"
    return "other"


def _pack(st: os.stat_result) -> bytes:
    return _STATE.pack(
        st.st_mode,
        st.st_size,
        *divmod(st.st_mtime_ns, _NS),
        *divmod(st.st_ctime_ns, _NS),
        st.st_ino,
        st.st_dev,
    )


@dataclass(frozen=True)
class FileState:
    """The metadata a snapshot kept for one path (zeros for a readable directory's times)."""

    file_type: FileType
    mode: int
    size: int
    mtime_ns: int
    ctime_ns: int
    ino: int
    dev: int


@dataclass(frozen=True)
class Change:
    """One path that differs between two snapshots; ``file_type`` is its type after
    the change, or before it for a deletion."""

    path: str
    kind: ChangeKind
    file_type: FileType


class WorkspaceSnapshot:
    """The metadata of every file, symlink and directory under a workspace root.

    Build one with :meth:`take`; compare two with :meth:`diff`. Paths are
    workspace-relative and ``/``-separated.
    """

    def __init__(
        self,
        root: str,
        states: dict[str, bytes],
        unreadable: frozenset[str],
        complete: bool,
        skipped: frozenset[str],
    ) -> None:
        self._root = root
        self._states = states
        self._unreadable = unreadable
        self._complete = complete
        self._skipped = skipped

    @classmethod
    def take(
        cls,
        root: str | os.PathLike[str],
        *,
        skip_top: Iterable[str] = PROTECTED_NAMES,
        max_entries: int = DEFAULT_MAX_ENTRIES,
    ) -> WorkspaceSnapshot:
        """Walks ``root`` (an absolute or relative directory path, not a symlink).

        ``skip_top`` names top-level entries to leave out, compared exactly,
        as the sandbox protects them (a command cannot write them; any other
        spelling it can, so that is walked). Raises :class:`SnapshotError`
        when the root itself cannot be opened.
        """
        if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 1:
            raise SnapshotError(f"max_entries must be a positive integer, not {max_entries!r}")
        path = os.path.abspath(os.fspath(root))
        try:
            fd = os.open(path, _DIR_FLAGS)
        except OSError as exc:
            raise SnapshotError(
                f"cannot snapshot workspace {path}: {exc.strerror} (it must be an existing "
                "directory, not a symlink)"
            ) from None
        walker = _Walker(set(skip_top), max_entries)
        try:
            walker.scan(fd, "", 0)
        finally:
            os.close(fd)
        return cls(
            path,
            walker.states,
            frozenset(walker.unreadable),
            walker.complete,
            frozenset(walker.skipped),
        )

    @property
    def root(self) -> str:
        """The absolute path of the workspace this snapshot walked."""
        return self._root

    @property
    def complete(self) -> bool:
        """False when the walk stopped at ``max_entries`` or ``MAX_DEPTH``: a diff
        against this snapshot cannot be trusted."""
        return self._complete

    @property
    def unreadable(self) -> frozenset[str]:
        """Directories that could not be listed; their content is unknown."""
        return self._unreadable

    @property
    def skipped(self) -> frozenset[str]:
        """The top-level names present in the workspace and left out (``skip_top``)."""
        return self._skipped

    def __len__(self) -> int:
        return len(self._states)

    def __contains__(self, path: object) -> bool:
        return path in self._states

    def paths(self) -> Iterator[str]:
        """Every path seen, in walk order."""
        return iter(self._states)

    def state(self, path: str) -> FileState | None:
        """The metadata kept for ``path``, or None if the snapshot has no such path."""
        packed = self._states.get(path)
        if packed is None:
            return None
        mode, size, mtime_s, mtime_ns, ctime_s, ctime_ns, ino, dev = _STATE.unpack(packed)
        mtime, ctime = mtime_s * _NS + mtime_ns, ctime_s * _NS + ctime_ns
        return FileState(_file_type(mode), mode, size, mtime, ctime, ino, dev)

    def diff(self, after: WorkspaceSnapshot) -> list[Change]:
        """What changed from this snapshot to ``after``, sorted by path.

        A path that is gone from ``after`` because a directory above it became
        unreadable is not reported deleted: that directory is reported modified.
        """
        if after.root != self.root:
            raise SnapshotError(
                f"cannot compare snapshots of different workspaces ({self.root} and {after.root})"
            )
        changes: list[Change] = []
        old, new = self._states, after._states
        for path, packed in new.items():
            previous = old.get(path)
            if previous is None:
                changes.append(Change(path, "created", _type_of(packed)))
            elif previous != packed:
                changes.append(Change(path, "modified", _type_of(packed)))
        blind = after._unreadable
        for path, packed in old.items():
            if path not in new and not (blind and _under_any(path, blind)):
                changes.append(Change(path, "deleted", _type_of(packed)))
        changes.sort(key=lambda c: c.path)
        return changes

    def __repr__(self) -> str:
        return (
            f"WorkspaceSnapshot({self._root!r}, entries={len(self._states)}, "
            f"complete={self._complete})"
        )


def _type_of(packed: bytes) -> FileType:
    return _file_type(_STATE.unpack_from(packed)[0])


def _under_any(path: str, dirs: frozenset[str]) -> bool:
    cut = path.rfind("/")
    while cut > 0:
        path = path[:cut]
        if path in dirs:
            return True
        cut = path.rfind("/")
    return False


class _Walker:
    """One walk: descriptors all the way down, never a symlink followed."""

    def __init__(self, skip_top: set[str], max_entries: int) -> None:
        self.skip_top = skip_top
        self.max_entries = max_entries
        self.states: dict[str, bytes] = {}
        self.unreadable: set[str] = set()
        self.skipped: set[str] = set()
        self.complete = True
        self._dir_states: dict[int, bytes] = {}

    def _dir_state(self, mode: int) -> bytes:
        packed = self._dir_states.get(mode)
        if packed is None:
            packed = self._dir_states[mode] = _STATE.pack(mode, 0, 0, 0, 0, 0, 0, 0)
        return packed

    def scan(self, dirfd: int, prefix: str, depth: int) -> None:
        """Records the entries of the directory open as ``dirfd``, then descends."""
        subdirs: list[tuple[str, str, os.stat_result]] = []
        states = self.states
        try:
            with os.scandir(dirfd) as entries:
                for entry in entries:
                    name = entry.name
                    if depth == 0 and name in self.skip_top:
                        self.skipped.add(name)
                        continue
                    if len(states) >= self.max_entries:
                        self.complete = False
                        return
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue  # removed while we looked: absent
                    path = prefix + name
                    if stat.S_ISDIR(st.st_mode):
                        subdirs.append((name, path, st))
                    else:
                        states[path] = _pack(st)
        except OSError:
            # listed in part at most: the directory is blind, keep its full metadata
            if prefix:
                self.unreadable.add(prefix[:-1])
                states[prefix[:-1]] = _pack(os.fstat(dirfd))
            else:
                self.complete = False
            return
        for name, path, st in subdirs:
            if depth + 1 > MAX_DEPTH:
                self.complete = False
                return
            self._descend(dirfd, name, path, st, depth + 1)

    def _descend(self, dirfd: int, name: str, path: str, st: os.stat_result, depth: int) -> None:
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=dirfd)
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                self.complete = False  # replaced by a symlink or a file: the walk raced a writer
            else:
                self.states[path] = _pack(st)
                self.unreadable.add(path)
            return
        try:
            opened = os.fstat(fd)
            if (opened.st_dev, opened.st_ino) != (st.st_dev, st.st_ino):
                # replaced between listing and opening: the walk raced a writer
                self.complete = False
                return
            self.states[path] = self._dir_state(opened.st_mode)
            self.scan(fd, path + "/", depth)
        finally:
            os.close(fd)
