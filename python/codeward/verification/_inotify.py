"""The process's one inotify instance, shared by every SnapshotTracker (Linux).

Why one for the whole process: the kernel gives each user 128 instances by
default (``fs.inotify.max_user_instances``) and the sandbox's credential
scan already holds one per handle, so a host running fifty sessions must
not spend another fifty. A watch on a directory is the kernel's per
instance and inode, so two trackers watching one directory share it; the
hub counts who holds each watch and removes it when the last one lets go.

Events are read only when a tracker takes a snapshot (``drain``): each one
marks its watch "dirty" in every tracker that holds it, and a file closed
after being opened for writing (``IN_CLOSE_WRITE``) is named to them: a
write through a shared mapping may have changed its bytes and nothing else. A queue overflow
(``IN_Q_OVERFLOW``: the kernel dropped events) is told to every tracker,
which then walks its whole tree once. Watches are bounded by a budget (a
quarter of ``fs.inotify.max_user_watches`` by default) so that trackers
leave room for the credential scan and other programs; a directory beyond it
is re-read at every snapshot instead.

The hub also watches the mount table (``/proc/self/mountinfo`` is pollable):
a file system mounted or unmounted in the workspace produces no inotify
event, so any change to the table makes every tracker walk again.

After ``fork`` the child closes its copy of the instance (reading it would
steal the parent's events) and starts a new one on first use; trackers see
the generation change and walk again.
"""

from __future__ import annotations

import contextlib
import os
import select
import struct
import threading
import weakref
from collections.abc import Callable
from typing import Protocol

from .. import _native

__all__ = ["WATCH_MASK", "WatchHub", "hub"]

_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len (then len bytes of name)

# What changes an entry's metadata or a directory's entries. IN_EXCL_UNLINK: nothing about
# files already unlinked (a deleted log still being written to).
WATCH_MASK = (
    getattr(_native, "IN_MODIFY", 0)
    | getattr(_native, "IN_ATTRIB", 0)
    | getattr(_native, "IN_CLOSE_WRITE", 0)
    | getattr(_native, "IN_MOVED_FROM", 0)
    | getattr(_native, "IN_MOVED_TO", 0)
    | getattr(_native, "IN_CREATE", 0)
    | getattr(_native, "IN_DELETE", 0)
    | getattr(_native, "IN_DELETE_SELF", 0)
    | getattr(_native, "IN_MOVE_SELF", 0)
    | getattr(_native, "IN_ONLYDIR", 0)
    | getattr(_native, "IN_EXCL_UNLINK", 0)
)
_OVERFLOW = getattr(_native, "IN_Q_OVERFLOW", 0)
_GONE = getattr(_native, "IN_IGNORED", 0)
_CLOSE_WRITE = getattr(_native, "IN_CLOSE_WRITE", 0)
DEFAULT_BUDGET = 8192  # when fs.inotify.max_user_watches cannot be read


class Listener(Protocol):
    """A tracker, as the hub sees it."""

    def note_events(self, wds: set[int], gone: set[int], written: set[tuple[int, str]]) -> None: ...
    def note_overflow(self) -> None: ...


class NoWatch(Exception):
    """No watch could be had for a directory; the message says why."""


class WatchHub:
    """One inotify instance and the watches each tracker holds in it."""

    def __init__(self, budget: int | None = None) -> None:
        self._lock = threading.Lock()
        self._fd = -1
        self._unavailable: str | None = None
        self._generation = 0  # bumped when the instance is made anew: older watches are gone
        self._budget = _default_budget() if budget is None else budget
        self._listeners: weakref.WeakValueDictionary[int, Listener] = weakref.WeakValueDictionary()
        self._holders: dict[int, set[int]] = {}  # wd -> ids of the listeners holding it
        self._held: dict[int, set[int]] = {}  # listener id -> the wds it holds
        self._collected: list[int] = []  # ids of listeners gone (see register)
        self._mounts: select.poll | None = None
        self._mounts_file = -1
        self._mount_generation = 0
        self._next_id = 1
        os.register_at_fork(after_in_child=self._after_fork)

    # -- who listens ------------------------------------------------------------------

    def register(self, listener: Listener) -> int:
        """An id for ``listener``; its watches are released when it is collected."""
        with self._lock:
            ident = self._next_id
            self._next_id += 1
            self._listeners[ident] = listener
            self._held[ident] = set()
        weakref.finalize(listener, self._on_collected, ident)
        return ident

    def _on_collected(self, ident: int) -> None:
        """A listener was freed: its watches go now, or with the next call that takes the lock.

        Finalizers run in whatever thread frees the listener, perhaps one that holds our
        lock: the id is noted first (list.append is atomic), and released here only if the
        lock is free at once (issue 26: a dropped session's watches must not wait)."""
        self._collected.append(ident)
        if self._lock.acquire(blocking=False):
            try:
                self._forget_collected()
            finally:
                self._lock.release()

    def release_all(self, ident: int) -> None:
        """Drops every watch ``ident`` holds (a tracker closed)."""
        with self._lock:
            self._forget(ident)

    def _forget(self, ident: int) -> None:
        for wd in self._held.pop(ident, set()):
            self._let_go(ident, wd)
        self._listeners.pop(ident, None)

    def _forget_collected(self) -> None:
        """Releases the watches of listeners collected since (called with the lock held)."""
        while self._collected:
            self._forget(self._collected.pop())

    # -- the instance -----------------------------------------------------------------

    def generation(self) -> tuple[int, str | None]:
        """The instance's generation, made on first use; with why there is none, if so."""
        with self._lock:
            self._ensure()
            return self._generation, self._unavailable

    def mount_generation(self) -> int:
        """A number that changes whenever the mount table may have (or cannot be watched)."""
        with self._lock:
            self._ensure()
            if self._mounts is None:
                self._mount_generation += 1  # unknown: never the same twice
            elif self._mounts.poll(0):
                self._mount_generation += 1
            return self._mount_generation

    def _ensure(self) -> None:
        if self._fd >= 0 or self._unavailable is not None:
            return
        if not hasattr(_native, "inotify_init"):
            self._unavailable = "inotify is not available on this platform"
            return
        if not os.path.isdir("/proc/self/fd"):
            self._unavailable = "/proc is not mounted (a watch is added through /proc/self/fd)"
            return
        try:
            self._fd = _native.inotify_init()
        except OSError as exc:
            self._unavailable = (
                f"no inotify instance: {exc.strerror} (fs.inotify.max_user_instances)"
            )
            return
        self._generation += 1
        try:
            self._mounts_file = os.open("/proc/self/mountinfo", os.O_RDONLY | os.O_CLOEXEC)
            self._mounts = select.poll()
            self._mounts.register(self._mounts_file, select.POLLPRI | select.POLLERR)
        except OSError:
            self._mounts = None

    def _after_fork(self) -> None:
        self._lock = threading.Lock()
        for fd in (self._fd, self._mounts_file):
            if fd >= 0:
                os.close(fd)
        self._fd = self._mounts_file = -1
        self._mounts = None
        self._unavailable = None
        self._holders.clear()
        for ident in self._held:
            self._held[ident] = set()

    # -- watches ----------------------------------------------------------------------

    def watch(self, ident: int, dir_fd: int) -> int:
        """Watches the directory open as ``dir_fd`` (exactly that inode, through
        /proc/self/fd: no path is resolved again) for ``ident``; raises NoWatch."""
        with self._lock:
            self._forget_collected()
            self._ensure()
            if self._fd < 0:
                raise NoWatch(self._unavailable or "no inotify instance")
            if len(self._holders) >= self._budget:
                raise NoWatch(f"the watch budget ({self._budget}) is spent")
            try:
                wd = _native.inotify_add_watch(self._fd, f"/proc/self/fd/{dir_fd}", WATCH_MASK)
            except OSError as exc:
                raise NoWatch(f"inotify_add_watch: {exc.strerror}") from None
            self._holders.setdefault(wd, set()).add(ident)
            self._held.setdefault(ident, set()).add(wd)
            return wd

    def unwatch(self, ident: int, wd: int) -> None:
        """``ident`` no longer needs ``wd``."""
        with self._lock:
            held = self._held.get(ident)
            if held is not None and wd in held:
                held.discard(wd)
                self._let_go(ident, wd)

    def _let_go(self, ident: int, wd: int) -> None:
        holders = self._holders.get(wd)
        if holders is None:
            return
        holders.discard(ident)
        if not holders:
            del self._holders[wd]
            if self._fd >= 0:
                # an error: the kernel already dropped it (the directory is gone)
                with contextlib.suppress(OSError):
                    _native.inotify_rm_watch(self._fd, wd)

    def watches(self) -> int:
        """How many watches the process holds."""
        with self._lock:
            self._forget_collected()
            return len(self._holders)

    # -- events -----------------------------------------------------------------------

    def drain(self) -> None:
        """Reads every queued event and tells each tracker which of its watches saw one."""
        with self._lock:
            self._forget_collected()
            if self._fd < 0:
                return
            dirty: dict[int, set[int]] = {}
            gone: dict[int, set[int]] = {}
            # (wd, name) of every file closed after being opened for writing: its content
            # may have changed through a shared mapping without its metadata moving
            written: dict[int, set[tuple[int, str]]] = {}
            overflow = False
            while True:
                try:
                    data = os.read(self._fd, 65536)
                except BlockingIOError:
                    break
                if not data:
                    break
                offset = 0
                while offset + _EVENT.size <= len(data):
                    wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
                    raw = data[offset + _EVENT.size : offset + _EVENT.size + length]
                    offset += _EVENT.size + length
                    if mask & _OVERFLOW:
                        overflow = True
                        continue
                    name = os.fsdecode(raw.rstrip(b"\0")) if mask & _CLOSE_WRITE else ""
                    for ident in self._holders.get(wd, ()):
                        dirty.setdefault(ident, set()).add(wd)
                        if name:
                            written.setdefault(ident, set()).add((wd, name))
                        if mask & _GONE:
                            gone.setdefault(ident, set()).add(wd)
                    if mask & _GONE:  # the kernel removed the watch itself
                        for ident in self._holders.pop(wd, ()):
                            self._held.get(ident, set()).discard(wd)
            listeners = dict(self._listeners)
        notify: list[Callable[[], None]] = []
        for ident, listener in listeners.items():
            if overflow:
                notify.append(listener.note_overflow)
            if ident in dirty:
                listener.note_events(
                    dirty[ident], gone.get(ident, set()), written.get(ident, set())
                )
        for call in notify:
            call()


def _default_budget() -> int:
    try:
        with open("/proc/sys/fs/inotify/max_user_watches") as f:
            return max(1, int(f.read().strip()) // 4)
    except (OSError, ValueError):
        return DEFAULT_BUDGET


_HUB: WatchHub | None = None
_HUB_LOCK = threading.Lock()


def hub() -> WatchHub:
    """The process's hub, made on first use."""
    global _HUB
    with _HUB_LOCK:
        if _HUB is None:
            _HUB = WatchHub()
        return _HUB
