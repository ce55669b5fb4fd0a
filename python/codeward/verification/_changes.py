"""Turning a snapshot diff into ledger entries: the changed paths of one bash command.

Only the paths the diff names are read, each opened component by component
with ``O_NOFOLLOW`` below the workspace root, so a symlink swapped in cannot
make the host process read a file outside the workspace. Content is hashed
(sha256, streamed) for regular files, except where reading it would be wrong
or unbounded; those get a ``meta:`` digest of their metadata instead, which
still changes whenever the snapshot sees them change:

- credential names (``.env``, ``.netrc`` ... as the workspace boundary
  defines them): the host process never reads them;
- files with more than one hard link: another name may be a credential;
- files over ``max_file_bytes``, or past ``hash_budget_bytes`` for the call
  (a command that makes a 100 GiB sparse file must not stall the session);
- files that cannot be opened, FIFOs, sockets and devices.

When a snapshot is incomplete (too many entries, too deep, or the root
unreadable) nothing can be said about which paths changed: the ledger gets
one entry for the whole workspace (``.``) with a fresh random digest, so any
earlier report is stale and the turn needs a new verification or a waiver.
"""

from __future__ import annotations

import errno
import hashlib
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from .._platform import DIR_FLAGS, O_CLOEXEC, O_NOFOLLOW, O_NONBLOCK
from ..workspace import workspace_reason
from ._errors import SnapshotError
from ._grammar import DELETED, WHOLE_WORKSPACE
from ._snapshot import Change, WorkspaceSnapshot

__all__ = [
    "BASH_TOOL",
    "DEFAULT_HASH_BUDGET_BYTES",
    "DEFAULT_MAX_FILE_BYTES",
    "Recorder",
    "file_digest",
    "path_digest",
    "record_bash_changes",
    "record_changes",
    "record_unknown_change",
    "unknown_digest",
]

BASH_TOOL = "bash"
DEFAULT_MAX_FILE_BYTES = 256 << 20
DEFAULT_HASH_BUDGET_BYTES = 1 << 30
_CHUNK = 1 << 20
_DIR_FLAGS = DIR_FLAGS
_FILE_FLAGS = os.O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC


class Recorder(Protocol):
    """Where changes go: a MutationLedger, or anything with its ``record`` (the tools'
    ``MutationRecorder`` protocol)."""

    def record(self, tool: str, path: str, content_digest: str) -> None: ...


class _Budget:
    def __init__(self, total: int, per_file: int) -> None:
        self.left = total
        self.per_file = per_file

    def allows(self, size: int) -> bool:
        return size <= self.per_file and size <= self.left


def file_digest(mode: int, sha256_hex: str) -> str:
    """A regular file's content digest as change detection records it: every permission bit
    (``chmod u-x`` or ``0200`` is a change a check can observe) and the bytes."""
    return f"file:{mode & 0o7777:04o}:{sha256_hex}"


def _meta(st: os.stat_result) -> str:
    fields = (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)
    return "meta:" + hashlib.sha256("|".join(map(str, fields)).encode()).hexdigest()


def unknown_digest() -> str:
    """A digest no other state shares: for a change whose result cannot be described."""
    return "meta:" + hashlib.sha256(secrets.token_bytes(32)).hexdigest()


_unknown = unknown_digest


@contextmanager
def _parent_fd(root_fd: int, parts: list[str]) -> Iterator[int]:
    """The directory holding ``parts[-1]``, reached without following any symlink."""
    fd = os.dup(root_fd)
    try:
        for part in parts[:-1]:
            child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def _hash_fd(fd: int, st: os.stat_result) -> str | None:
    """sha256 hex of the open file, or None if it changed while being read."""
    digest = hashlib.sha256()
    while chunk := os.read(fd, _CHUNK):
        digest.update(chunk)
    after = os.fstat(fd)
    if (after.st_size, after.st_mtime_ns, after.st_ctime_ns) != (
        st.st_size,
        st.st_mtime_ns,
        st.st_ctime_ns,
    ):
        return None
    return digest.hexdigest()


def _file_digest(dirfd: int, name: str, st: os.stat_result, budget: _Budget) -> str:
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dirfd)
    except OSError:
        return _meta(st)
    try:
        opened = os.fstat(fd)
        if (opened.st_dev, opened.st_ino) != (st.st_dev, st.st_ino) or not stat.S_ISREG(
            opened.st_mode
        ):
            return _unknown()  # swapped between lstat and open
        if opened.st_nlink > 1 or not budget.allows(opened.st_size):
            return _meta(opened)
        budget.left -= opened.st_size
        hexdigest = _hash_fd(fd, opened)
    except OSError:
        return _meta(st)
    finally:
        os.close(fd)
    if hexdigest is None:
        return _unknown()
    return file_digest(stat.S_IMODE(opened.st_mode), hexdigest)


def _digest_at(root_fd: int, path: str, budget: _Budget) -> str:
    parts = path.split("/")
    try:
        with _parent_fd(root_fd, parts) as dirfd:
            st = os.stat(parts[-1], dir_fd=dirfd, follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                return f"dir:{stat.S_IMODE(st.st_mode):04o}"
            if stat.S_ISLNK(st.st_mode):
                target = os.readlink(os.fsencode(parts[-1]), dir_fd=dirfd)
                return "symlink:" + hashlib.sha256(target).hexdigest()
            if not stat.S_ISREG(st.st_mode) or workspace_reason(parts) is not None:
                return _meta(st)
            return _file_digest(dirfd, parts[-1], st, budget)
    except FileNotFoundError:
        return DELETED
    except OSError as exc:
        if exc.errno in (errno.ENOTDIR, errno.ELOOP):
            return DELETED  # a directory on the way became a file or a symlink
        return _unknown()


def path_digest(
    root: str | os.PathLike[str],
    path: str,
    *,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
) -> str:
    """The content digest (see ``_grammar``) of workspace-relative ``path`` as it is now."""
    root_fd = _open_root(os.path.abspath(os.fspath(root)))
    try:
        return _digest_at(root_fd, path, _Budget(max_file_bytes, max_file_bytes))
    finally:
        os.close(root_fd)


def _open_root(root: str) -> int:
    try:
        return os.open(root, _DIR_FLAGS)
    except OSError as exc:
        raise SnapshotError(f"cannot open workspace {root}: {exc.strerror}") from None


def record_bash_changes(
    ledger: Recorder,
    before: WorkspaceSnapshot,
    after: WorkspaceSnapshot,
    root: str | os.PathLike[str],
    *,
    tool: str = BASH_TOOL,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    hash_budget_bytes: int = DEFAULT_HASH_BUDGET_BYTES,
) -> list[Change]:
    """Records in ``ledger`` every path that differs between ``before`` and ``after``.

    Hashes only those paths, as they are now. Returns the changes recorded;
    for an incomplete snapshot, the single whole-workspace change.
    """
    path = os.path.abspath(os.fspath(root))
    if before.root != path or after.root != path:
        raise SnapshotError(
            f"the snapshots were taken of {before.root} and {after.root}, not of {path}"
        )
    if not (before.complete and after.complete):
        return [record_unknown_change(ledger, tool=tool)]
    changes = before.diff(after)
    record_changes(
        ledger,
        path,
        changes,
        tool=tool,
        max_file_bytes=max_file_bytes,
        hash_budget_bytes=hash_budget_bytes,
    )
    return changes


def record_changes(
    ledger: Recorder,
    root: str,
    changes: list[Change],
    *,
    tool: str = BASH_TOOL,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    hash_budget_bytes: int = DEFAULT_HASH_BUDGET_BYTES,
) -> None:
    """Records ``changes`` (from a diff of snapshots of the absolute ``root``) under ``tool``."""
    if not changes:
        return
    budget = _Budget(hash_budget_bytes, max_file_bytes)
    root_fd = _open_root(root)
    try:
        for change in changes:
            if change.kind == "deleted":
                digest = DELETED
            else:
                digest = _digest_at(root_fd, change.path, budget)
                if change.content_only and digest.startswith("meta:"):
                    # its metadata did not move and its bytes were not read: only a
                    # digest no other state shares says that it may have changed
                    digest = _unknown()
            ledger.record(tool, change.path, digest)
    finally:
        os.close(root_fd)


def record_unknown_change(ledger: Recorder, *, tool: str = BASH_TOOL) -> Change:
    """Records that something in the workspace changed, where is unknown (fail closed)."""
    ledger.record(tool, WHOLE_WORKSPACE, _unknown())
    return Change(WHOLE_WORKSPACE, "modified", "directory")
