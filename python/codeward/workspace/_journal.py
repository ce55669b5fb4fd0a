"""The journal of an :class:`AtomicBatch` and the recovery of batches a kill interrupted.

A batch renames several files into place one by one. A SIGKILL between two
renames cannot run the in-process rollback, so before its first change the
batch writes a journal naming, for every destination, its temporary file,
the hard link that keeps its original and whether it existed. The journal is
fsynced, kept while the batch runs under an exclusive ``flock``, renamed to
``.committed`` once every rename is done (the commit point), and removed when
the batch is over.

:func:`recover_interrupted_batches` finds the journals of a workspace whose
writer is dead and finishes them: a batch that had not committed is rolled
back (each original put back, each file it created removed, its temporary
files removed); one that had committed only loses its leftover kept
originals. So after a kill and a recovery every file of the batch is old, or
every file is new.

The journals live outside the workspace, in a private (0700) state directory
of the user: a sandboxed command, which can write only the workspace, can
neither forge one nor remove one. Recovery still trusts a journal only for
names it could have written (the batch's own ``.a3s-tmp``/``.a3s-orig``
names next to each destination), walks every directory through the
:class:`Workspace` by descriptor (a symlink on the way is resolved inside
the workspace or refused), renames and removes names without following
them, and touches a destination only while it is the file the journal says
(same inode, size and mtime).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import stat
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from .._errors import WorkspaceError
from .._platform import DIR_FLAGS
from ._workspace import Workspace

__all__ = [
    "FileId",
    "Journal",
    "JournalEntry",
    "Recovery",
    "file_id",
    "recover_interrupted_batches",
]

_VERSION = 1
_DIR_FLAGS = DIR_FLAGS
# <workspace key>.<pid>.<start time>.<random>.<state>; the state is the file's last suffix:
#   writing    being written (a recovery never reads one whose writer lives)
#   journal    complete and fsynced: the batch may have changed files
#   committed  every rename was done: only leftovers remain to be removed
_NAME = re.compile(
    r"([0-9a-f]{32})\.([0-9]+)\.([0-9]+)\.([0-9a-f]{16})\.(writing|journal|committed)"
)
_MAX_JOURNAL_BYTES = 4 * 1024 * 1024
_SUBDIR = "patch-journals"
# (st_dev, st_ino, st_size, st_mtime_ns): an inode number freed and reused for another file
# does not pass for the batch's own file (renames and links change neither size nor mtime).
FileId = tuple[int, int, int, int]


@dataclass(frozen=True)
class JournalEntry:
    """One destination of a batch, as the journal records it.

    ``parent`` and ``name`` are where it is (workspace-relative, as walked);
    ``temp`` the temporary file with the new content ("" for a deletion) and
    ``temp_id`` its :func:`file_id`; ``orig`` the name that keeps the original
    (a hard link, or the removed file itself for a deletion; "" when the
    destination did not exist) and ``orig_id`` the original's :func:`file_id`.
    """

    parent: tuple[str, ...]
    name: str
    temp: str
    temp_id: FileId | None
    orig: str
    orig_id: FileId | None
    existed: bool

    @property
    def path(self) -> str:
        return "/".join((*self.parent, self.name))

    def to_json(self) -> dict[str, Any]:
        return {
            "parent": list(self.parent),
            "name": self.name,
            "temp": self.temp,
            "temp_id": None if self.temp_id is None else list(self.temp_id),
            "orig": self.orig,
            "orig_id": None if self.orig_id is None else list(self.orig_id),
            "existed": self.existed,
        }

    @classmethod
    def from_json(cls, raw: Any) -> JournalEntry | None:
        """The entry, or None unless every field has the form the batch writes."""
        if not isinstance(raw, dict):
            return None
        parent, name = raw.get("parent"), raw.get("name")
        temp, orig, existed = raw.get("temp"), raw.get("orig"), raw.get("existed")
        if not isinstance(parent, list) or not all(_is_component(p) for p in parent):
            return None
        if not _is_component(name) or not isinstance(existed, bool):
            return None
        assert isinstance(name, str)
        temp_id, orig_id = _file_id(raw.get("temp_id")), _file_id(raw.get("orig_id"))
        if not (temp == "" and temp_id is None) and not (
            _is_adjacent(temp, name, ".a3s-tmp") and temp_id is not None
        ):
            return None
        if not (orig == "" and not existed) and not (
            _is_adjacent(orig, name, ".a3s-orig") and orig_id is not None and existed
        ):
            return None
        assert isinstance(temp, str) and isinstance(orig, str)
        return cls(tuple(parent), name, temp, temp_id, orig, orig_id, existed)


@dataclass(frozen=True)
class Recovery:
    """What :func:`recover_interrupted_batches` did with one interrupted batch.

    ``committed``: the batch had committed, its files stay new (only kept
    originals were removed). ``restored``: paths given their original back;
    ``removed``: paths the batch had created, removed again. ``left``: paths
    that could not be rolled back because something else changed them since
    the kill; their kept original, if any, stays next to them (``.a3s-orig``)
    and the journal is dropped. ``complete`` is False when an error stopped
    the recovery; the journal then stays for the next attempt.
    """

    journal: str
    pid: int
    committed: bool
    restored: tuple[str, ...]
    removed: tuple[str, ...]
    left: tuple[str, ...]
    complete: bool

    @property
    def changed(self) -> tuple[str, ...]:
        """The paths whose content the recovery changed."""
        return self.restored + self.removed


class Journal:
    """The open, locked journal of one running batch (see the module docstring)."""

    def __init__(self, dirfd: int, fd: int, name: str) -> None:
        self._dirfd = dirfd
        self._fd = fd
        self.name = name

    @classmethod
    def create(cls, workspace: Workspace, entries: Sequence[JournalEntry]) -> Journal:
        """Writes, fsyncs and locks the journal of a batch about to change ``entries``."""
        dirfd = _open_journal_dir(workspace.root)
        pid = os.getpid()
        start = _start_time(pid) or 0
        base = f"{_key(workspace.root)}.{pid}.{start}.{secrets.token_hex(8)}"
        writing = f"{base}.writing"
        record = {
            "version": _VERSION,
            "workspace": workspace.root,
            "pid": pid,
            "start": start,  # the name says it too: liveness is judged without opening the file
            "entries": [e.to_json() for e in entries],
        }
        fd = -1
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(writing, flags, 0o600, dir_fd=dirfd)
            import fcntl  # (POSIX: the workspace, opened before, refuses on Windows)

            fcntl.flock(fd, fcntl.LOCK_EX)  # nobody else knows the name yet: never waits
            data = json.dumps(record, separators=(",", ":")).encode()
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
            name = f"{base}.journal"
            os.rename(writing, name, src_dir_fd=dirfd, dst_dir_fd=dirfd)
            _fsync_dir(dirfd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(writing, dir_fd=dirfd)
            if fd >= 0:
                os.close(fd)
            os.close(dirfd)
            raise
        return cls(dirfd, fd, name)

    def mark_committed(self) -> None:
        """Records, durably, that every rename of the batch is done."""
        committed = self.name.rsplit(".", 1)[0] + ".committed"
        os.rename(self.name, committed, src_dir_fd=self._dirfd, dst_dir_fd=self._dirfd)
        self.name = committed
        _fsync_dir(self._dirfd)

    def close(self, *, remove: bool) -> None:
        """Removes the journal (when the batch is over) and releases its lock; idempotent.

        ``remove=False`` leaves it for :func:`recover_interrupted_batches`.
        """
        if self._fd < 0:
            return
        try:
            if remove:  # one left behind is finished (harmlessly) by the next recovery
                with contextlib.suppress(OSError):
                    os.unlink(self.name, dir_fd=self._dirfd)
        finally:
            os.close(self._fd)  # releases the lock
            os.close(self._dirfd)
            self._fd = self._dirfd = -1


def recover_interrupted_batches(workspace: Workspace) -> list[Recovery]:
    """Finishes every batch of ``workspace`` whose writer died; returns what it did.

    A journal whose writer is alive (its pid runs with the start time the
    journal names, or it still holds the journal's lock) is never touched.
    Cheap when there is nothing to do: one listing of the journal directory.
    Errors do not propagate: a journal that could not be finished stays for
    the next call.
    """
    key = _key(workspace.root)
    done: list[Recovery] = []
    for dirfd in _existing_journal_dirs(workspace.root):
        try:
            names = sorted(n for n in os.listdir(dirfd) if n.startswith(key))
            for name in names:
                m = _NAME.fullmatch(name)
                if m is None or m.group(1) != key:
                    continue
                pid, start, state = int(m.group(2)), int(m.group(3)), m.group(5)
                if pid == os.getpid():
                    if state == "writing":
                        continue  # ours, being written by another thread
                elif _is_alive(pid, start):
                    continue
                with contextlib.suppress(OSError):
                    result = _recover(workspace, dirfd, name, pid, state)
                    if result is not None:
                        done.append(result)
        except OSError:
            continue
        finally:
            os.close(dirfd)
    return done


def _recover(workspace: Workspace, dirfd: int, name: str, pid: int, state: str) -> Recovery | None:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dirfd)
    except FileNotFoundError:
        return None  # finished meanwhile
    try:
        import fcntl  # (POSIX: the workspace, opened before, refuses on Windows)

        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None  # its writer (or another recovery) holds it
        mine, now = os.fstat(fd), _lstat(name, dirfd)
        if now is None or (now.st_dev, now.st_ino) != (mine.st_dev, mine.st_ino):
            return None  # finished, or renamed to its next state, before we had the lock
        entries = _read_entries(fd, workspace.root)
        if entries is None:  # torn (a kill while it was written) or not a journal of ours
            if state == "writing" or mine.st_size == 0:
                os.unlink(name, dir_fd=dirfd)
            return None
        committed = state == "committed"
        outcomes: dict[str, list[str]] = {"restored": [], "removed": [], "left": []}
        complete = True
        for entry in entries:
            try:
                with workspace.open_dir("/".join(entry.parent) or ".") as (parent, _):
                    if committed:
                        outcome = _roll_forward(parent, entry)
                    else:
                        outcome = _roll_back(parent, entry)
                    _fsync_dir(parent)
            except FileNotFoundError:
                continue  # the directory is gone: nothing of the batch is left in it
            except (OSError, WorkspaceError):
                complete = False  # kept for the next attempt (every step can be redone)
                continue
            outcomes.get(outcome, []).append(entry.path)
        if complete:
            os.unlink(name, dir_fd=dirfd)
            _fsync_dir(dirfd)
        return Recovery(
            name,
            pid,
            committed,
            tuple(outcomes["restored"]),
            tuple(outcomes["removed"]),
            tuple(outcomes["left"]),
            complete,
        )
    finally:
        os.close(fd)


def _roll_back(dirfd: int, e: JournalEntry) -> str:
    """Puts one destination back as it was before the batch; returns what that took."""
    outcome = "unchanged"
    current = file_id(_lstat(e.name, dirfd))
    ours = current is not None and current == e.temp_id  # the batch's new content is in place
    if e.existed:
        kept = e.orig and file_id(_lstat(e.orig, dirfd)) == e.orig_id
        if kept and current == e.orig_id:
            os.unlink(e.orig, dir_fd=dirfd)  # never replaced: drop the extra link
        elif kept and ours:
            os.rename(e.orig, e.name, src_dir_fd=dirfd, dst_dir_fd=dirfd)
            outcome = "restored"
        elif kept and current is None:  # a deletion that was done
            outcome = "restored" if _link_back(dirfd, e.orig, e.name) else "left"
        elif kept or ours:
            outcome = "left"  # someone else's file is there now, or the original is gone
    elif ours:
        os.unlink(e.name, dir_fd=dirfd)
        outcome = "removed"
    _drop_temp(dirfd, e)
    return outcome


def _roll_forward(dirfd: int, e: JournalEntry) -> str:
    """Removes what a committed batch left next to one destination."""
    if e.orig and file_id(_lstat(e.orig, dirfd)) == e.orig_id:
        os.unlink(e.orig, dir_fd=dirfd)
    _drop_temp(dirfd, e)
    return "unchanged"


def _drop_temp(dirfd: int, e: JournalEntry) -> None:
    if e.temp and file_id(_lstat(e.temp, dirfd)) == e.temp_id:
        os.unlink(e.temp, dir_fd=dirfd)


def _link_back(dirfd: int, orig: str, name: str) -> bool:
    """Gives a removed file its name back unless the name was taken meanwhile."""
    try:
        os.link(orig, name, src_dir_fd=dirfd, dst_dir_fd=dirfd, follow_symlinks=False)
    except FileExistsError:
        return False
    os.unlink(orig, dir_fd=dirfd)
    return True


def _read_entries(fd: int, root: str) -> list[JournalEntry] | None:
    chunks = []
    size = 0
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
        size += len(chunk)
        if size > _MAX_JOURNAL_BYTES:
            return None
    data = b"".join(chunks)
    try:
        record = json.loads(data)
    except ValueError:
        return None
    if not isinstance(record, dict) or record.get("version") != _VERSION:
        return None
    if record.get("workspace") != root or not isinstance(record.get("entries"), list):
        return None
    entries = [JournalEntry.from_json(raw) for raw in record["entries"]]
    if any(e is None for e in entries):
        return None
    return [e for e in entries if e is not None]


# -- where the journals live -----------------------------------------------------------------


def _state_dir_candidates() -> list[str]:
    """The state directories the sandbox's placeholder journals use too (sandbox_linux.c):
    ``$XDG_STATE_HOME/codeward``, ``$HOME/.local/state/codeward``, then one in the temp dir."""
    out = []
    xdg = os.environ.get("XDG_STATE_HOME", "")
    if xdg.startswith("/"):
        out.append(os.path.join(xdg, "codeward"))
    home = os.environ.get("HOME", "")
    if home.startswith("/") and home != "/":
        out.append(os.path.join(home, ".local", "state", "codeward"))
    out.append(os.path.join(tempfile.gettempdir(), f"codeward-state-{os.getuid()}"))
    return out


def _open_journal_dir(root: str) -> int:
    """The first usable journal directory, created if needed; refuses when there is none."""
    for path in _state_dir_candidates():
        fd = _open_journals(path, root, create=True)
        if fd is not None:
            return fd
    raise WorkspaceError(
        "no private directory outside the workspace can hold the patch journal (tried "
        f"{', '.join(p + '/' + _SUBDIR for p in _state_dir_candidates())}); nothing was changed",
        path="",
    )


def _existing_journal_dirs(root: str) -> Iterator[int]:
    for path in _state_dir_candidates():
        fd = _open_journals(path, root, create=False)
        if fd is not None:
            yield fd


def _open_journals(state: str, root: str, *, create: bool) -> int | None:
    """An fd on ``state``/patch-journals if ``state`` is (or, with ``create``, becomes) a
    directory of ours outside the workspace ``root`` that no one else can write; else None."""
    parent = os.path.realpath(os.path.dirname(state))
    real = os.path.join(parent, os.path.basename(state))
    if real == root or real.startswith(root.rstrip("/") + "/"):
        return None
    try:
        if create:
            os.makedirs(parent, exist_ok=True)
            with contextlib.suppress(FileExistsError):
                os.mkdir(real, 0o700)
        state_fd = os.open(real, _DIR_FLAGS)  # a symlink at the last name fails here
    except OSError:
        return None
    try:
        st = os.fstat(state_fd)
        if st.st_uid != os.geteuid() or stat.S_IMODE(st.st_mode) & 0o022:
            return None  # someone else could swap what is below it
        if create:
            with contextlib.suppress(FileExistsError):
                os.mkdir(_SUBDIR, 0o700, dir_fd=state_fd)
        fd = os.open(_SUBDIR, _DIR_FLAGS, dir_fd=state_fd)
    except OSError:
        return None
    finally:
        os.close(state_fd)
    st = os.fstat(fd)
    if st.st_uid != os.geteuid():
        os.close(fd)
        return None
    if stat.S_IMODE(st.st_mode) & 0o077:
        try:
            os.fchmod(fd, 0o700)
        except OSError:
            os.close(fd)
            return None
    return fd


def _key(root: str) -> str:
    return hashlib.sha256(os.fsencode(root)).hexdigest()[:32]


# -- whether a writer lives ------------------------------------------------------------------


def _start_time(pid: int) -> int | None:
    """The start time (clock ticks since boot) of ``pid`` from /proc, or None if unknown."""
    fields = _proc_stat(pid)
    if fields is None:
        return None
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def _proc_stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (state first), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    return raw[raw.rfind(b")") + 1 :].decode("ascii", "replace").split()


def _is_alive(pid: int, start: int) -> bool:
    """Whether the writer ``pid`` that started at ``start`` still runs (a zombie does not).

    A pid that runs with another start time is a reused pid, not the writer.
    Without /proc only the pid's existence can be checked.
    """
    if pid <= 0:
        return False
    if os.path.isdir("/proc/self"):
        fields = _proc_stat(pid)
        if fields is None or not fields or fields[0] in ("Z", "X"):
            return False
        return start == 0 or _start_time(pid) == start
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# -- small helpers ---------------------------------------------------------------------------


def _is_component(value: object) -> bool:
    return (
        isinstance(value, str)
        and value not in ("", ".", "..")
        and "/" not in value
        and "\x00" not in value
    )


def _is_adjacent(value: object, name: str, suffix: str) -> bool:
    """Whether ``value`` is a name the batch gives a file next to ``name``."""
    if not isinstance(value, str):
        return False
    pattern = re.escape(f".{name[:200]}.") + "[0-9a-f]{12}" + re.escape(suffix)
    return re.fullmatch(pattern, value) is not None


def _file_id(raw: object) -> FileId | None:
    if (
        isinstance(raw, list)
        and len(raw) == 4
        and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in raw)
    ):
        return raw[0], raw[1], raw[2], raw[3]
    return None


def file_id(st: os.stat_result | None) -> FileId | None:
    """What identifies the file ``st`` describes to a recovery (None for no file)."""
    return None if st is None else (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _lstat(name: str, dirfd: int) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dirfd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _fsync_dir(fd: int) -> None:
    with contextlib.suppress(OSError):  # some filesystems cannot fsync a directory
        os.fsync(fd)
