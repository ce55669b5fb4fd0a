"""Atomic file replacement in a workspace: a reader sees the old file or the new one, never half.

The new content goes to an adjacent temporary file in the same directory
(opened through the walked directory descriptor), is fsynced, then renamed
over the destination, and the directory is fsynced. Any failure, cancellation
or kill before the rename leaves the destination untouched; the temporary
file is removed on every path that can run code.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from dataclasses import dataclass
from types import TracebackType

from .._errors import DestinationExists, WorkspaceError
from ._workspace import Workspace

__all__ = ["AtomicWriter", "WriteResult", "write_atomic"]

_TEMP_SUFFIX = ".a3s-tmp"


@dataclass(frozen=True)
class WriteResult:
    """What a committed write did: the relative path, bytes written, whether it replaced a file."""

    relpath: str
    bytes: int
    overwritten: bool


class AtomicWriter:
    """Writes a file under a workspace atomically; use as a context manager.

    ``overwrite=False`` refuses an existing destination up front *and* at the
    commit, even if the file appeared while the content was being written.
    An existing file's permission bits (minus set-id bits) and, for a root
    caller, its owner are kept.

        with AtomicWriter(ws, "out/report.txt", overwrite=True) as w:
            w.write(b"...")
            result = w.commit()
    """

    def __init__(
        self,
        workspace: Workspace,
        path: str,
        *,
        overwrite: bool = True,
        create_parents: bool = True,
    ) -> None:
        self.workspace = workspace
        self.path = path
        self.overwrite = overwrite
        self.create_parents = create_parents
        self._stack = contextlib.ExitStack()
        self._dirfd = -1
        self._name = ""
        self._parts: tuple[str, ...] = ()
        self._temp = ""
        self._fd = -1
        self._existing: os.stat_result | None = None
        self._written = 0
        self._committed = False

    def __enter__(self) -> AtomicWriter:
        try:
            self._dirfd, self._name, self._parts = self._stack.enter_context(
                self.workspace.open_parent(self.path, create=self.create_parents)
            )
            self._existing = _lstat(self._name, self._dirfd)
            if self._existing is not None:
                if stat.S_ISDIR(self._existing.st_mode):
                    raise WorkspaceError(f"{self.path!r} is a directory", path=self.path)
                if not self.overwrite:
                    raise DestinationExists(
                        f"{self.path!r} already exists and overwriting was not requested",
                        path=self.path,
                    )
                if stat.S_ISREG(self._existing.st_mode):
                    self.workspace.check_links(self._existing, self._parts, self.path)
            self._open_temp()
        except BaseException:
            self._stack.close()
            raise
        return self

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Appends ``data`` to the temporary file."""
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]
            self._written += n

    @property
    def bytes_written(self) -> int:
        return self._written

    def commit(self) -> WriteResult:
        """Makes the new content durable and puts it in place; returns what happened."""
        if self._fd < 0:
            raise WorkspaceError("the writer is not open", path=self.path)
        existing = self._existing
        if existing is not None and stat.S_ISREG(existing.st_mode):
            os.fchmod(self._fd, stat.S_IMODE(existing.st_mode) & ~(stat.S_ISUID | stat.S_ISGID))
            if os.geteuid() == 0:
                with contextlib.suppress(OSError):
                    os.fchown(self._fd, existing.st_uid, existing.st_gid)
        os.fsync(self._fd)
        os.close(self._fd)
        self._fd = -1
        overwritten = False
        if self.overwrite:
            overwritten = _lstat(self._name, self._dirfd) is not None
            os.rename(self._temp, self._name, src_dir_fd=self._dirfd, dst_dir_fd=self._dirfd)
        else:
            try:  # link() never replaces: the no-clobber commit even if the name appeared meanwhile
                os.link(
                    self._temp,
                    self._name,
                    src_dir_fd=self._dirfd,
                    dst_dir_fd=self._dirfd,
                    follow_symlinks=False,
                )
            except FileExistsError:
                raise DestinationExists(
                    f"{self.path!r} appeared while it was being written; it was left as it is",
                    path=self.path,
                ) from None
            os.unlink(self._temp, dir_fd=self._dirfd)
        self._temp = ""
        self._committed = True
        with contextlib.suppress(OSError):  # some filesystems cannot fsync a directory
            os.fsync(self._dirfd)
        return WriteResult("/".join(self._parts), self._written, overwritten)

    def abort(self) -> None:
        """Drops the temporary file; the destination is untouched."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if self._temp:
            with contextlib.suppress(OSError):
                os.unlink(self._temp, dir_fd=self._dirfd)
            self._temp = ""

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if not self._committed:
                self.abort()
        finally:
            self._stack.close()

    def _open_temp(self) -> None:
        stem = self._name[:200]
        for _ in range(16):
            temp = f".{stem}.{secrets.token_hex(6)}{_TEMP_SUFFIX}"
            try:
                flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
                self._fd = os.open(temp, flags, 0o666, dir_fd=self._dirfd)
            except FileExistsError:
                continue
            self._temp = temp
            return
        raise OSError(errno.EEXIST, f"no free temporary name next to {self.path!r}")


def write_atomic(
    workspace: Workspace,
    path: str,
    data: bytes,
    *,
    overwrite: bool = True,
    create_parents: bool = True,
) -> WriteResult:
    """Writes ``data`` to ``path`` under ``workspace`` atomically (see :class:`AtomicWriter`)."""
    with AtomicWriter(
        workspace, path, overwrite=overwrite, create_parents=create_parents
    ) as writer:
        writer.write(data)
        return writer.commit()


def _lstat(name: str, dirfd: int) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dirfd, follow_symlinks=False)
    except FileNotFoundError:
        return None
