"""Snapshots that cost what changed, not what is there: inotify marks the directories to re-read.

A :class:`SnapshotTracker` walks its workspace once, watching every directory
as it reads it (the watch is added on the open descriptor before the entries
are read, so nothing that changes after the read is missed, and a directory
created and filled before its watch is added is read whole when its parent is
re-read). Every later snapshot drains the events, re-reads only the
directories that saw one, and shares every other directory with the previous
snapshot. The result is the snapshot a full walk would have given at that
moment; the tests compare the two after thousands of random command scripts.

What a directory watch reports: an entry created, deleted, renamed, written,
truncated, closed after writing, or changed in mode, owner, times or link
count, through a name in that directory. A write through a shared mapping
sends no event, but the file's last close does, when the mapping goes (for a
command, before its end is reported). What it cannot report, and how the
tracker covers it:

- a change made through another hard link of the same file: every name of a
  file with more than one link is known (an index by inode), and all of them
  are read again when any of them is; a new hard link to a file whose other
  name lies in a directory nothing else changed in cannot be placed, so the
  tracker walks the whole tree;
- a file system without change events (network and FUSE file systems, which do
  not see other machines' changes): every directory on it is re-read at each
  snapshot, as are directories beyond the watch budget or the kernel's limit;
- a queue overflow, a mount or unmount anywhere in this process's mount table,
  the workspace directory itself replaced, a directory replaced while it was
  being read, a new process after ``fork``, or an incomplete last snapshot:
  the next snapshot is a walk of the whole tree, and says why
  (``WorkspaceSnapshot.fallback``).

A change the host makes through a hard link whose other name is outside the
workspace, created while the tracker runs, reports to no watched directory.
Only the host can make or use one: in the sandbox, every name outside the
workspace is on a read-only or separate mount.
"""

from __future__ import annotations

import os
import stat
import struct
import threading
from collections.abc import Iterable

from .. import _native
from .._platform import DIR_FLAGS
from ..workspace import PROTECTED_NAMES
from ._inotify import NoWatch, WatchHub, hub
from ._snapshot import (
    DEFAULT_MAX_ENTRIES,
    MAX_DEPTH,
    WorkspaceSnapshot,
    _ChangeLog,
    _pack,
    _Walker,
    dir_state,
    open_root,
)

__all__ = ["SnapshotTracker"]

# File systems whose inotify events cover every change a process on this machine makes
# (statfs f_type): ext2/3/4, xfs, btrfs, tmpfs, f2fs, overlayfs, zfs, bcachefs.
EVENTFUL_FILE_SYSTEMS = frozenset(
    {0xEF53, 0x58465342, 0x9123683E, 0x01021994, 0xF2F52010, 0x794C7630, 0x2FC12FC1, 0xCA451A4E}
)


_NOT_EVENTFUL = "a file system without change events"
_OVERFLOW = "the inotify queue overflowed: events were lost (fs.inotify.max_queued_events)"


def _inode(st: os.stat_result) -> int:
    return (st.st_dev << 64) | st.st_ino


_INO_DEV = struct.Struct("<36xQQ")  # the last two fields of a packed state


def _inode_of(packed: bytes) -> int:
    ino: int
    dev: int
    ino, dev = _INO_DEV.unpack(packed)
    return (dev << 64) | ino


def _depth(key: str) -> int:
    return key.count("/") + 1 if key else 0


def _join(parent: str, name: str) -> str:
    return f"{parent}/{name}" if parent else name


def _eventful(fd: int) -> bool:
    """Whether the file system of the directory open as ``fd`` reports every local change."""
    try:
        magic: int = _native.fstatfs_type(fd)
    except (AttributeError, OSError):
        return False
    return magic in EVENTFUL_FILE_SYSTEMS


class _Node:
    """A directory the tracker listed: its identity, its watch, its listed subdirectories."""

    __slots__ = ("children", "ctime", "dev", "eventful", "ino", "wd")

    def __init__(self, st: os.stat_result, eventful: bool) -> None:
        self.dev = st.st_dev
        self.ino = st.st_ino
        self.ctime = st.st_ctime_ns  # a change of mode, owner or ACL moves it
        self.eventful = eventful  # its file system reports changes
        self.wd: int | None = None
        self.children: set[str] = set()  # names of subdirectories with a node


class _State:
    """Everything the tracker knew at its last snapshot."""

    def __init__(self) -> None:
        self.dirs: dict[str, dict[str, bytes]] = {}
        self.nodes: dict[str, _Node] = {}
        self.by_wd: dict[int, list[str]] = {}  # one inode can be listed under two names
        self.unwatched: dict[str, str] = {}  # directory -> why it has no watch
        self.unreadable: set[str] = set()
        self.skipped: set[str] = set()
        self.complete = True
        self.count = 0  # entries in dirs
        self.links: dict[int, set[str]] = {}  # inode of a file with >1 link -> its names
        self.touched: set[int] = set()  # inodes of those that lost a name in this refresh
        self.root_id = (0, 0)
        self.generation = 0  # the hub's instance the watches belong to
        self.mounts = 0  # the hub's mount-table generation
        self.pid = 0
        self.last: WorkspaceSnapshot | None = None


class _Rebuild(Exception):
    """The incremental path cannot vouch for the result: walk the whole tree."""


class _TrackingWalker(_Walker):
    """The snapshot walk, watching each directory before reading it and indexing links."""

    def __init__(self, tracker: SnapshotTracker, state: _State, dirs: dict[str, dict[str, bytes]]):
        self.state = state  # first: the entry count lives in the state (see count)
        entries = state.count
        super().__init__(tracker._skip_top, tracker._max_entries)
        state.count = entries  # which the base class just reset
        self.tracker = tracker
        self.dirs = dirs
        self.unreadable = state.unreadable
        self.skipped = state.skipped
        self.read_count = 0
        self.entered_keys: list[str] = []
        self.new_links: list[tuple[int, str]] = []  # files listed with more than one link
        self.old_inodes: set[int] = set()  # of the entries the re-read directories had

    @property
    def count(self) -> int:
        return self.state.count

    @count.setter
    def count(self, value: int) -> None:
        self.state.count = value

    def entered(self, fd: int, key: str, st: os.stat_result) -> None:
        self.tracker._adopt(self.state, fd, key, st)
        self.entered_keys.append(key)
        self.read_count += 1

    def listed(self, path: str, st: os.stat_result) -> None:
        if st.st_nlink > 1:
            self.new_links.append((_inode(st), path))

    def descend(
        self,
        dirfd: int,
        parent: str,
        entries: dict[str, bytes],
        name: str,
        st: os.stat_result,
        depth: int,
    ) -> None:
        super().descend(dirfd, parent, entries, name, st, depth)
        key = _join(parent, name)
        if key in self.state.nodes:
            self.state.nodes[parent].children.add(name)


class SnapshotTracker:
    """Takes :class:`WorkspaceSnapshot` s of one workspace, re-reading only what changed.

    ``snapshot()`` returns what ``WorkspaceSnapshot.take(root, skip_top=...,
    max_entries=...)`` would return at that moment. The first one walks the
    whole tree; later ones re-read the directories inotify marked, and walk
    again when completeness cannot be proven (``snapshot.fallback`` says
    why). Thread-safe; ``close()`` releases the watches (also done when the
    tracker is collected). Without inotify (not Linux, no instance left)
    every snapshot is a walk, and says so.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        skip_top: Iterable[str] = PROTECTED_NAMES,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        watch_hub: WatchHub | None = None,
    ) -> None:
        path, fd = open_root(root, max_entries)
        os.close(fd)
        self._root = path
        self._skip_top = tuple(skip_top)
        self._max_entries = max_entries
        self._hub = watch_hub or hub()
        self._lock = threading.Lock()
        self._events = threading.Lock()  # guards what the hub tells us; taken last, never held
        self._pending: set[int] = set()
        self._gone: set[int] = set()
        self._written: set[tuple[int, str]] = set()
        self._overflowed = False
        self._forced: str | None = None
        self._state: _State | None = None
        self._log = _ChangeLog()
        self._id = self._hub.register(self)

    @property
    def root(self) -> str:
        return self._root

    @property
    def skip_top(self) -> tuple[str, ...]:
        return self._skip_top

    def close(self) -> None:
        """Releases the watches; a later snapshot walks (and watches) again."""
        with self._lock:
            self._state = None
            self._hub.release_all(self._id)
            self._id = self._hub.register(self)

    # -- what the hub tells us (any thread) --------------------------------------------

    def note_events(self, wds: set[int], gone: set[int], written: set[tuple[int, str]]) -> None:
        with self._events:
            self._pending |= wds
            self._gone |= gone
            self._written |= written

    def note_overflow(self) -> None:
        with self._events:
            self._overflowed = True

    def force_walk(self, reason: str) -> None:
        """Makes the next snapshot a walk of the whole tree, for ``reason``, and says it lost
        certainty (``snapshot.uncertain``): called when something may have changed the
        workspace where no event shows it (a snapshot that failed, a command that outlived
        its result)."""
        with self._events:
            self._forced = self._forced or reason

    # -- snapshots ---------------------------------------------------------------------

    def snapshot(self, *, walk: str | None = None) -> WorkspaceSnapshot:
        """The workspace as it is now (see the class docs); ``walk`` names a reason to walk
        the whole tree this time (the caller knows something the events cannot show, such
        as a command that made hard links)."""
        with self._lock:
            _path, root_fd = open_root(self._root, self._max_entries)
            try:
                self._hub.drain()
                with self._events:
                    pending, self._pending = self._pending, set()
                    gone, self._gone = self._gone, set()
                    written, self._written = self._written, set()
                    overflowed, self._overflowed = self._overflowed, False
                    forced, self._forced = self._forced, None
                state = self._state
                # named before the watches are renumbered by a refresh or a walk
                paths = self._written_paths(state, written)
                uncertain = forced
                if overflowed and state is not None:
                    uncertain = uncertain or _OVERFLOW
                reason = (walk or forced) if state is not None else None
                reason = reason or self._why_walk(state, root_fd, overflowed)
                snapshot = None
                if state is not None and reason is None:
                    try:
                        snapshot = self._refresh(state, root_fd, pending, gone, paths)
                    except _Rebuild as exc:
                        reason = str(exc)
                if snapshot is None:
                    snapshot = self._rebuild(root_fd, reason, paths)
                assert self._state is not None
                if uncertain is not None:
                    snapshot._uncertain = uncertain
                else:
                    snapshot._uncertain = self._blind_reason(self._state)
                    snapshot._standing = snapshot._uncertain is not None
                return snapshot
            finally:
                os.close(root_fd)

    @staticmethod
    def _written_paths(state: _State | None, written: set[tuple[int, str]]) -> frozenset[str]:
        if state is None or not written:
            return frozenset()
        return frozenset(
            _join(key, name) for wd, name in written for key in state.by_wd.get(wd, ())
        )

    @staticmethod
    def _blind_reason(state: _State) -> str | None:
        """Why some directory's files could change without any sign, or None: a directory
        past the watch budget or the kernel's limit is re-read, but a write through a shared
        mapping there changes no metadata and no watch names the file."""
        why = {r for r in state.unwatched.values() if r != _NOT_EVENTFUL}
        if not why:
            return None
        return (
            "directories without a watch (" + "; ".join(sorted(why)) + "): a write through a "
            "shared mapping there would change no metadata"
        )

    def _why_walk(self, state: _State | None, root_fd: int, overflowed: bool) -> str | None:
        """Why the last snapshot cannot be brought up to date, or None if it can."""
        if state is None:
            return None  # the first snapshot: a walk, but not a fallback
        generation, unavailable = self._hub.generation()
        if unavailable is not None:
            return f"change events are unavailable: {unavailable}"
        if state.pid != os.getpid() or state.generation != generation:
            return "the inotify instance was made anew (a new process after fork)"
        if overflowed:
            return _OVERFLOW
        if state.mounts != self._hub.mount_generation():
            return "the mount table changed: a mount or unmount sends no inotify event"
        st = os.fstat(root_fd)
        if (st.st_dev, st.st_ino) != state.root_id:
            return "the workspace directory itself was replaced"
        if not state.complete:
            return "the last snapshot was incomplete"
        return None

    def _rebuild(
        self, root_fd: int, reason: str | None, written: frozenset[str] = frozenset()
    ) -> WorkspaceSnapshot:
        """A walk of the whole tree, watching every directory again."""
        old = self._state
        state = _State()
        state.generation, unavailable = self._hub.generation()
        state.mounts = self._hub.mount_generation()
        state.pid = os.getpid()
        root_st = os.fstat(root_fd)
        state.root_id = (root_st.st_dev, root_st.st_ino)
        walker = _TrackingWalker(self, state, {})
        walker.walk(root_fd)
        state.dirs = walker.dirs
        state.complete = walker.complete
        for inode, path in walker.new_links:
            state.links.setdefault(inode, set()).add(path)
        if old is not None:  # watches of directories that are gone
            for wd in old.by_wd.keys() - state.by_wd.keys():
                self._hub.unwatch(self._id, wd)
        if reason is None and unavailable is not None and old is not None:
            reason = f"change events are unavailable: {unavailable}"
        self._state = state
        return self._publish(
            state, set(state.dirs), walker.read_count, reason, incremental=False, written=written
        )

    def _publish(
        self,
        state: _State,
        changed: set[str],
        read: int,
        reason: str | None,
        *,
        incremental: bool,
        written: frozenset[str] = frozenset(),
    ) -> WorkspaceSnapshot:
        if reason is None and state.unwatched:
            reason = self._unwatched_reason(state)
        snapshot = WorkspaceSnapshot(
            self._root,
            state.dirs,
            frozenset(state.unreadable),
            state.complete,
            frozenset(state.skipped),
            lineage=(self._log, self._log.add(frozenset(changed), written)),
            incremental=incremental,
            fallback=reason,
            directories_read=read,
            count=state.count,
        )
        state.last = snapshot
        return snapshot

    @staticmethod
    def _unwatched_reason(state: _State) -> str:
        why = sorted(set(state.unwatched.values()))
        return (
            f"{len(state.unwatched)} directories have no watch and are re-read at every "
            f"snapshot ({'; '.join(why)})"
        )

    # -- watching ----------------------------------------------------------------------

    def _adopt(self, state: _State, fd: int, key: str, st: os.stat_result) -> None:
        """Records the directory ``key`` (open as ``fd``) and watches it, before it is read."""
        parent = state.nodes.get(key.rpartition("/")[0]) if key else None
        if parent is not None and parent.dev == st.st_dev:
            eventful = parent.eventful
        else:
            eventful = _eventful(fd)
        node = _Node(st, eventful)
        self._drop(state, key)  # a directory replaced under the same name
        state.nodes[key] = node
        if not eventful:
            state.unwatched[key] = _NOT_EVENTFUL
            return
        try:
            wd = self._hub.watch(self._id, fd)
        except NoWatch as exc:
            state.unwatched[key] = str(exc)
            return
        node.wd = wd
        state.by_wd.setdefault(wd, []).append(key)

    def _drop(self, state: _State, key: str) -> set[str]:
        """Forgets the directory ``key`` and everything below it; returns the keys dropped."""
        dropped: set[str] = set()
        pending = [key]
        while pending:
            current = pending.pop()
            node = state.nodes.pop(current, None)
            state.unwatched.pop(current, None)
            state.unreadable.discard(current)
            entries = state.dirs.pop(current, None)
            if entries is not None:
                dropped.add(current)
                state.count -= len(entries)
                prefix = current + "/" if current else ""
                for name, packed in entries.items():
                    self._unlink_name(state, _inode_of(packed), prefix + name)
            if node is None:
                continue
            if node.wd is not None:
                keys = state.by_wd.get(node.wd, [])
                if current in keys:
                    keys.remove(current)
                if not keys:
                    state.by_wd.pop(node.wd, None)
                    self._hub.unwatch(self._id, node.wd)
            pending.extend(_join(current, name) for name in node.children)
        return dropped

    @staticmethod
    def _unlink_name(state: _State, inode: int, path: str) -> None:
        """``path`` no longer names ``inode``: its other names (if any) changed link count."""
        names = state.links.get(inode)
        if names is not None:
            names.discard(path)
            state.touched.add(inode)
            if not names:
                del state.links[inode]

    # -- bringing the last snapshot up to date -----------------------------------------

    def _refresh(
        self,
        state: _State,
        root_fd: int,
        pending: set[int],
        gone: set[int],
        written: frozenset[str] = frozenset(),
    ) -> WorkspaceSnapshot:
        """The last snapshot with the marked directories read again (``state`` is updated;
        every directory it publishes is a new dict, so earlier snapshots stay as they were)."""
        for wd in gone:  # the kernel dropped these watches: read them at every snapshot now
            for key in state.by_wd.pop(wd, []):
                node = state.nodes.get(key)
                if node is not None:
                    node.wd = None
                    state.unwatched[key] = "its watch was removed by the kernel"
        dirty: set[str] = set(state.unwatched)
        for wd in pending:
            dirty.update(state.by_wd.get(wd, ()))
        if not dirty:
            return self._publish(state, set(), 0, None, incremental=True, written=written)
        state.dirs = dict(state.dirs)
        state.touched = set()
        walker = _TrackingWalker(self, state, state.dirs)
        changed: set[str] = set()
        relisted: set[str] = set()
        for key in sorted(dirty, key=_depth):
            if key in state.nodes and key not in relisted:  # else dropped with a parent
                self._relist(state, walker, root_fd, key, changed, relisted)
        self._relink(state, walker, root_fd, changed, relisted)
        state.complete = walker.complete
        return self._publish(
            state, changed, walker.read_count, None, incremental=True, written=written
        )

    def _open(self, state: _State, root_fd: int, key: str) -> int:
        """A descriptor of directory ``key``, reached without following a symlink, each step
        checked to be the directory the tracker knows; raises _Rebuild otherwise."""
        fd = os.dup(root_fd)
        walked = ""
        try:
            for part in key.split("/") if key else ():
                child = os.open(part, DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = child
                walked = _join(walked, part)
                node = state.nodes.get(walked)
                st = os.fstat(fd)
                if node is None or (node.dev, node.ino) != (st.st_dev, st.st_ino):
                    raise _Rebuild("a directory was replaced while the snapshot was taken")
        except OSError:
            os.close(fd)
            raise _Rebuild("a directory changed while the snapshot was taken") from None
        except _Rebuild:
            os.close(fd)
            raise
        return fd

    def _relist(
        self,
        state: _State,
        walker: _TrackingWalker,
        root_fd: int,
        key: str,
        changed: set[str],
        relisted: set[str],
    ) -> None:
        """Reads directory ``key`` again; a subdirectory that is new, replaced, or newly
        readable is walked whole (it may have been filled before anything watched it)."""
        fd = self._open(state, root_fd, key)
        try:
            node = state.nodes[key]
            if node.wd is None and node.eventful:  # watch it again if we now can
                try:
                    node.wd = self._hub.watch(self._id, fd)
                    state.by_wd.setdefault(node.wd, []).append(key)
                    state.unwatched.pop(key, None)
                except NoWatch:
                    pass
            old_entries = state.dirs.get(key, {})
            depth = _depth(key)
            if depth == 0:
                state.skipped.clear()
            walker.count -= len(old_entries)
            walker.read_count += 1
            relisted.add(key)
            changed.add(key)
            subdirs = walker.read(fd, key, depth)
            prefix = key + "/" if key else ""
            for name, packed in old_entries.items():
                inode = _inode_of(packed)
                walker.old_inodes.add(inode)
                self._unlink_name(state, inode, prefix + name)
            if subdirs is None:
                raise _Rebuild("a directory could not be read again")
            entries = state.dirs[key]
            wanted = {name for name, _ in subdirs}
            for name in node.children - wanted:
                changed |= self._drop(state, _join(key, name))
            node.children &= wanted
            for name, st in subdirs:
                if depth + 1 > MAX_DEPTH or not walker.complete:
                    walker.complete = False
                    break
                child = _join(key, name)
                known = state.nodes.get(child)
                if (
                    known is not None
                    and (known.dev, known.ino) == (st.st_dev, st.st_ino)
                    and child not in state.unreadable
                    and self._still_listable(fd, name, entries, st, known)
                ):
                    continue  # the same directory: its watch keeps it current
                changed |= self._drop(state, child)
                first = len(walker.entered_keys)
                walker.descend(fd, key, entries, name, st, depth + 1)
                changed.update(walker.entered_keys[first:])
                if child in state.nodes:
                    node.children.add(name)
                changed.add(child)
        finally:
            os.close(fd)

    @staticmethod
    def _still_listable(
        dirfd: int, name: str, entries: dict[str, bytes], st: os.stat_result, node: _Node
    ) -> bool:
        """Records a known subdirectory's entry as a walk would (its mode after opening it);
        False if it can no longer be opened, or is not the same directory any more. Its
        change time unmoved, nothing that decides whether it opens changed: no need to try."""
        if st.st_ctime_ns == node.ctime:
            entries[name] = dir_state(st.st_mode)
            return True
        try:
            fd = os.open(name, DIR_FLAGS, dir_fd=dirfd)
        except OSError:
            return False
        try:
            opened = os.fstat(fd)
        finally:
            os.close(fd)
        if (opened.st_dev, opened.st_ino) != (st.st_dev, st.st_ino):
            return False
        entries[name] = dir_state(opened.st_mode)
        node.ctime = opened.st_ctime_ns
        return True

    def _relink(
        self,
        state: _State,
        walker: _TrackingWalker,
        root_fd: int,
        changed: set[str],
        relisted: set[str],
    ) -> None:
        """Files with several links: reads again every name of an inode seen in a re-read
        directory; a new link whose other names are unknown means walking the whole tree."""
        touched = state.touched
        for inode, path in walker.new_links:
            known = inode in state.links or inode in walker.old_inodes
            state.links.setdefault(inode, set()).add(path)
            if not known:
                raise _Rebuild(
                    f"{path} has another hard link, in a directory nothing else changed in"
                )
            touched.add(inode)
        for inode in touched:
            for path in sorted(state.links.get(inode, ())):
                parent, _, name = path.rpartition("/")
                if parent in relisted:
                    continue
                fd = self._open(state, root_fd, parent)
                try:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    raise _Rebuild(f"{path} vanished while the snapshot was taken") from None
                finally:
                    os.close(fd)
                if stat.S_ISDIR(st.st_mode) or _inode(st) != inode:
                    raise _Rebuild(f"{path} was replaced while the snapshot was taken")
                entries = dict(state.dirs[parent])
                entries[name] = _pack(st)
                state.dirs[parent] = entries
                changed.add(parent)
                if st.st_nlink <= 1:
                    self._unlink_name(state, inode, path)
