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

from .._platform import DIR_FLAGS
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
    # the metadata did not move, but the file was closed after writing (see diff)
    content_only: bool = False


class WorkspaceSnapshot:
    """The metadata of every file, symlink and directory under a workspace root.

    Build one with :meth:`take`, or incrementally with a
    :class:`~codeward.verification.SnapshotTracker`; compare two with
    :meth:`diff`. Paths are workspace-relative and ``/``-separated.

    The entries are kept per directory, so a snapshot derived from another
    shares every directory that did not change, and a diff between them
    looks at the changed directories only.
    """

    def __init__(
        self,
        root: str,
        dirs: dict[str, dict[str, bytes]],
        unreadable: frozenset[str],
        complete: bool,
        skipped: frozenset[str],
        *,
        lineage: tuple[_ChangeLog, int] | None = None,
        incremental: bool = False,
        fallback: str | None = None,
        directories_read: int | None = None,
        count: int | None = None,
    ) -> None:
        self._root = root
        self._dirs = dirs  # directory ("" for the root) -> {name: packed state}
        self._unreadable = unreadable
        self._complete = complete
        self._skipped = skipped
        self._lineage = lineage
        self._incremental = incremental
        self._fallback = fallback
        self._count = sum(map(len, dirs.values())) if count is None else count
        self._read = len(dirs) if directories_read is None else directories_read
        self._uncertain: str | None = None  # set by the tracker that made it
        self._standing = False  # the uncertainty is a lasting condition, not an event

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
        path, fd = open_root(root, max_entries)
        walker = _Walker(skip_top, max_entries)
        try:
            walker.walk(fd)
        finally:
            os.close(fd)
        return walker.snapshot(path)

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

    @property
    def incremental(self) -> bool:
        """True when a tracker re-read only the directories that changed since its last
        snapshot; False for a walk of the whole tree."""
        return self._incremental

    @property
    def fallback(self) -> str | None:
        """Why a tracker walked the whole tree for this snapshot instead of re-reading
        only what changed (None when it did not, and for :meth:`take`)."""
        return self._fallback

    @property
    def uncertain(self) -> str | None:
        """Why this snapshot cannot vouch that nothing changed unseen since the previous one
        of its tracker (events lost, a forced walk after lost certainty, directories no watch
        covers), or None. A caller treats the workspace as changed (fail closed)."""
        return self._uncertain

    @property
    def uncertainty_is_standing(self) -> bool:
        """True when ``uncertain`` names a lasting condition (directories no watch covers)
        rather than something that happened since the previous snapshot (lost events, a
        forced walk): it says what a writer *could* have done unseen, so it matters after a
        call that could write, not between calls."""
        return self._standing

    @property
    def directories_read(self) -> int:
        """How many directories were listed to make this snapshot."""
        return self._read

    def __len__(self) -> int:
        return self._count

    def __contains__(self, path: object) -> bool:
        if not isinstance(path, str):
            return False
        head, _, name = path.rpartition("/")
        entries = self._dirs.get(head)
        return entries is not None and name in entries

    def paths(self) -> Iterator[str]:
        """Every path seen, in walk order (a directory's entries, then its subdirectories')."""
        pending = [""]
        while pending:
            key = pending.pop()
            entries = self._dirs.get(key)
            if entries is None:
                continue
            prefix = key + "/" if key else ""
            children = []
            for name in entries:
                path = prefix + name
                yield path
                if path in self._dirs:
                    children.append(path)
            pending.extend(reversed(children))

    def state(self, path: str) -> FileState | None:
        """The metadata kept for ``path``, or None if the snapshot has no such path."""
        head, _, name = path.rpartition("/")
        packed = self._dirs.get(head, {}).get(name)
        if packed is None:
            return None
        mode, size, mtime_s, mtime_ns, ctime_s, ctime_ns, ino, dev = _STATE.unpack(packed)
        mtime, ctime = mtime_s * _NS + mtime_ns, ctime_s * _NS + ctime_ns
        return FileState(_file_type(mode), mode, size, mtime, ctime, ino, dev)

    def same_as(self, other: WorkspaceSnapshot) -> bool:
        """Whether both hold exactly the same entries, states, unreadable directories,
        skipped names and completeness (a diff ignores the last three)."""
        return (
            self._root == other._root
            and self._complete == other._complete
            and self._unreadable == other._unreadable
            and self._skipped == other._skipped
            and self._dirs == other._dirs
        )

    def diff(self, after: WorkspaceSnapshot) -> list[Change]:
        """What changed from this snapshot to ``after``, sorted by path.

        A path that is gone from ``after`` because a directory above it became
        unreadable is not reported deleted: that directory is reported modified.
        Two snapshots of one tracker are compared on the directories it re-read
        in between only; any others directory by directory, skipping those
        they share.
        """
        if after.root != self.root:
            raise SnapshotError(
                f"cannot compare snapshots of different workspaces ({self.root} and {after.root})"
            )
        keys: Iterable[str] | None = None
        written: set[str] = set()
        if self._lineage is not None and after._lineage is not None:
            log, since = self._lineage
            other_log, until = after._lineage
            if log is other_log:
                keys = log.changed_between(since, until)
                written = log.written_between(since, until)
        if keys is None:
            keys = self._dirs.keys() | after._dirs.keys()
        changes: list[Change] = []
        for path in written:
            # closed after writing, metadata unchanged: the bytes may still have changed
            # (a shared mapping written on tmpfs moves neither size, mtime nor ctime)
            head, _, name = path.rpartition("/")
            old_state = self._dirs.get(head, {}).get(name)
            same = old_state is not None and old_state == after._dirs.get(head, {}).get(name)
            if same and old_state is not None and _type_of(old_state) == "file":
                changes.append(Change(path, "modified", "file", content_only=True))
        blind = after._unreadable
        empty: dict[str, bytes] = {}
        for key in keys:
            old = self._dirs.get(key, empty)
            new = after._dirs.get(key, empty)
            if old is new:
                continue
            prefix = key + "/" if key else ""
            for name, packed in new.items():
                previous = old.get(name)
                if previous is None:
                    changes.append(Change(prefix + name, "created", _type_of(packed)))
                elif previous != packed:
                    changes.append(Change(prefix + name, "modified", _type_of(packed)))
            for name, packed in old.items():
                if name not in new:
                    path = prefix + name
                    if not (blind and _under_any(path, blind)):
                        changes.append(Change(path, "deleted", _type_of(packed)))
        changes.sort(key=lambda c: c.path)
        return changes

    def __repr__(self) -> str:
        return (
            f"WorkspaceSnapshot({self._root!r}, entries={self._count}, complete={self._complete})"
        )


class _ChangeLog:
    """Which directories each snapshot of one tracker re-read, for the last ``size`` of them.

    ``changed_between(a, b)`` is the union for the snapshots after ``a`` up to
    ``b``, or None when that is out of the window (the caller then compares
    every directory).
    """

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._entries: dict[int, frozenset[str]] = {}
        self._written: dict[int, frozenset[str]] = {}
        self._next = 1

    def add(self, keys: frozenset[str], written: frozenset[str] = frozenset()) -> int:
        generation = self._next
        self._next += 1
        self._entries[generation] = keys
        self._entries.pop(generation - self._size, None)
        if written:
            self._written[generation] = written
        self._written.pop(generation - self._size, None)
        return generation

    def written_between(self, a: int, b: int) -> set[str]:
        """Files closed after writing in the snapshots after ``a`` up to ``b``."""
        low, high = min(a, b), max(a, b)
        out: set[str] = set()
        for generation, paths in list(self._written.items()):
            if low < generation <= high:
                out |= paths
        return out

    def changed_between(self, a: int, b: int) -> set[str] | None:
        low, high = min(a, b), max(a, b)
        if high - low >= self._size:
            return None
        keys: set[str] = set()
        for generation in range(low + 1, high + 1):
            part = self._entries.get(generation)
            if part is None:
                return None
            keys |= part
        return keys


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


def open_root(root: str | os.PathLike[str], max_entries: int) -> tuple[str, int]:
    """The absolute path of a snapshot root and a descriptor of it (a directory, no symlink)."""
    if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 1:
        raise SnapshotError(f"max_entries must be a positive integer, not {max_entries!r}")
    path = os.path.abspath(os.fspath(root))
    try:
        fd = os.open(path, DIR_FLAGS)
    except OSError as exc:
        raise SnapshotError(
            f"cannot snapshot workspace {path}: {exc.strerror} (it must be an existing "
            "directory, not a symlink)"
        ) from None
    return path, fd


_DIR_STATES: dict[int, bytes] = {}


def dir_state(mode: int) -> bytes:
    """A readable directory's state: its type and permission bits only."""
    packed = _DIR_STATES.get(mode)
    if packed is None:
        packed = _DIR_STATES[mode] = _STATE.pack(mode, 0, 0, 0, 0, 0, 0, 0)
    return packed


class _Walker:
    """One walk: descriptors all the way down, never a symlink followed.

    ``entered`` is called with each directory's descriptor before its entries
    are read (the tracker watches it there, so that nothing changed after the
    read is missed).
    """

    def __init__(self, skip_top: Iterable[str], max_entries: int) -> None:
        self.skip_top = set(skip_top)
        self.max_entries = max_entries
        self.dirs: dict[str, dict[str, bytes]] = {}
        self.count = 0
        self.unreadable: set[str] = set()
        self.skipped: set[str] = set()
        self.complete = True

    def skips(self, name: str) -> bool:
        """Whether a top-level entry is left out: exactly a name the sandbox keeps read-only
        (another spelling is an ordinary name a command can write)."""
        return name in self.skip_top

    def entered(self, fd: int, key: str, st: os.stat_result) -> None:
        """Hook: the directory ``key`` is open as ``fd`` and about to be read."""

    def walk(self, root_fd: int) -> None:
        self.entered(root_fd, "", os.fstat(root_fd))
        self.scan(root_fd, "", 0)

    def snapshot(self, root: str, **extra: object) -> WorkspaceSnapshot:
        return WorkspaceSnapshot(
            root,
            self.dirs,
            frozenset(self.unreadable),
            self.complete,
            frozenset(self.skipped),
            count=self.count,
            **extra,  # type: ignore[arg-type]
        )

    def scan(self, dirfd: int, key: str, depth: int) -> bool:
        """Records the entries of the directory open as ``dirfd``, then descends; False if
        it could not be listed (the caller keeps its full metadata instead)."""
        subdirs = self.read(dirfd, key, depth)
        if subdirs is None:
            return False
        entries = self.dirs[key]
        for name, st in subdirs:
            if depth + 1 > MAX_DEPTH:
                self.complete = False
            if not self.complete:
                break  # the walk stops at the first limit it meets
            self.descend(dirfd, key, entries, name, st, depth + 1)
        return True

    def read(self, dirfd: int, key: str, depth: int) -> list[tuple[str, os.stat_result]] | None:
        """Lists one directory into ``dirs[key]``: every entry but the subdirectories, which
        are returned for the caller to open (their state depends on whether they can be)."""
        entries: dict[str, bytes] = {}
        subdirs: list[tuple[str, os.stat_result]] = []
        prefix = key + "/" if key else ""
        try:
            with os.scandir(dirfd) as listing:
                for entry in listing:
                    name = entry.name
                    if depth == 0 and self.skips(name):
                        self.skipped.add(name)
                        continue
                    if self.count + len(entries) >= self.max_entries:
                        self.complete = False
                        break
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue  # removed while we looked: absent
                    if stat.S_ISDIR(st.st_mode):
                        subdirs.append((name, st))
                    else:
                        entries[name] = _pack(st)
                        self.listed(prefix + name, st)
        except OSError:
            if not key:
                self.complete = False
            return None  # blind: the caller keeps the directory's full metadata
        self.dirs[key] = entries
        self.count += len(entries)
        return subdirs

    def listed(self, path: str, st: os.stat_result) -> None:
        """Hook: a non-directory entry was recorded."""

    def descend(
        self,
        dirfd: int,
        parent: str,
        entries: dict[str, bytes],
        name: str,
        st: os.stat_result,
        depth: int,
    ) -> None:
        """Opens the subdirectory ``name`` of ``parent`` (open as ``dirfd``, its entries
        ``entries``) and records it there: blind, with its full metadata, if it cannot be
        listed."""
        key = f"{parent}/{name}" if parent else name
        try:
            fd = os.open(name, DIR_FLAGS, dir_fd=dirfd)
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                self.complete = False  # replaced by a symlink or a file: the walk raced a writer
            else:
                entries[name] = _pack(st)
                self.count += 1
                self.unreadable.add(key)
            return
        try:
            opened = os.fstat(fd)
            if (opened.st_dev, opened.st_ino) != (st.st_dev, st.st_ino):
                # replaced between listing and opening: the walk raced a writer
                self.complete = False
                return
            self.entered(fd, key, opened)
            entries[name] = dir_state(opened.st_mode)
            self.count += 1
            if not self.scan(fd, key, depth):
                entries[name] = _pack(opened)
                self.unreadable.add(key)
        finally:
            os.close(fd)
