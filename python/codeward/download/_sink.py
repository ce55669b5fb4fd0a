"""Where the bytes go: the workspace's atomic temporary file, written by descriptor.

The file is an :class:`~codeward.workspace.AtomicWriter` (walk with
``O_NOFOLLOW``, credential boundary, adjacent temporary file, fsync, rename or
no-clobber link, directory fsync); the download writes through its
``fileno()`` (positionally, for ranged parts) and hashes what landed through a
second, read-only descriptor from ``open_reader()``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import os
import sys
import threading
from collections.abc import Callable

from ._deadline import Deadline
from ._errors import WriteError

__all__ = ["StreamSink", "TrailingHash", "write_at"]

HASH_CHUNK = 1 << 20
WRITEBACK_CHUNK = 8 << 20  # start the disk write-out of every 8 MiB hashed
_SYNC_FILE_RANGE_WRITE = 2


def _load_sync_file_range() -> Callable[[int, int, int], None] | None:
    """Linux's sync_file_range(2), which Python's os module lacks; None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        fn = libc.sync_file_range
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    fn.restype = ctypes.c_int

    def start_writeback(fd: int, offset: int, length: int) -> None:
        fn(fd, offset, length, _SYNC_FILE_RANGE_WRITE)  # advisory: a failure only costs time

    return start_writeback


# The cached probe of the one platform call this module needs.
_start_writeback = _load_sync_file_range()


def write_at(fd: int, view: memoryview, offset: int | None, path: str) -> None:
    """Writes all of ``view`` (at ``offset``, or at the file position when None)."""
    try:
        while view:
            n = os.write(fd, view) if offset is None else os.pwrite(fd, view, offset)
            view = view[n:]
            if offset is not None:
                offset += n
    except OSError as exc:
        raise WriteError(
            f"writing the download of {path!r} failed: {exc.strerror or exc}", errno=exc.errno or 0
        ) from None


class StreamSink:
    """Appends body bytes to the file and tells the hasher how far the file is written."""

    def __init__(self, fd: int, path: str, written: Callable[[], None]) -> None:
        self.fd = fd
        self.path = path
        self.written = written
        self.count = 0

    def __call__(self, view: memoryview) -> None:
        write_at(self.fd, view, None, self.path)
        self.count += len(view)
        self.written()


class TrailingHash:
    """SHA-256 of the temporary file from offset 0, computed in its own thread just behind
    the writers, by reading back what they wrote (from the page cache).

    Hashing runs on another core while the connection keeps receiving (hashlib
    and the reads release the GIL), so a download with a digest is not slower
    than one without; and the digest is of the bytes in the file that will be
    committed. ``frontier()`` says up to which offset the file is complete.
    Behind the hash, the thread also starts the disk write-out of what it
    hashed (``sync_file_range``), so the fsync at the commit finds little left
    to write instead of the whole file.

        hasher = TrailingHash(temp.open_reader())
        try:
            hasher.start(frontier)  # writers call hasher.poke() after each write
            ...
            digest = hasher.digest(total, deadline)
        finally:
            hasher.close()
    """

    def __init__(self, reader_fd: int) -> None:
        self._fd = reader_fd
        self._frontier: Callable[[], int] = lambda: 0
        self._hash = hashlib.sha256()
        self._pos = 0
        self._goal: int | None = None
        self._stop = False
        self._error: BaseException | None = None
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._run, name="a3s-download-hash", daemon=True)

    def start(self, frontier: Callable[[], int]) -> None:
        self._frontier = frontier
        self._thread.start()

    def poke(self) -> None:
        """More bytes are in the file."""
        self._wake.set()

    def digest(self, total: int, deadline: Deadline) -> str:
        """The hex digest once ``total`` bytes are hashed; raises what the thread hit."""
        self._goal = total
        self._wake.set()
        while self._thread.is_alive():
            self._thread.join(deadline.slice())
        if self._error is not None:
            raise self._error
        return self._hash.hexdigest()

    def close(self) -> None:
        """Stops the thread (on success it has already ended) and closes the reader."""
        self._stop = True
        self._wake.set()
        if self._thread.ident is not None:
            self._thread.join()
        os.close(self._fd)

    def _run(self) -> None:
        buf = bytearray(HASH_CHUNK)
        view = memoryview(buf)
        flushed = 0
        try:
            while not self._stop:
                self._wake.clear()
                end = self._frontier()
                if end > self._pos:
                    n = _pread_into(self._fd, view[: min(end - self._pos, HASH_CHUNK)], self._pos)
                    if n <= 0:
                        raise WriteError("the temporary file is shorter than what was written")
                    self._hash.update(view[:n])
                    self._pos += n
                    if _start_writeback is not None and self._pos - flushed >= WRITEBACK_CHUNK:
                        _start_writeback(self._fd, flushed, self._pos - flushed)
                        flushed = self._pos
                elif self._goal is not None and self._pos >= self._goal:
                    return
                else:
                    self._wake.wait(0.25)
        except BaseException as exc:  # handed to digest()
            self._error = exc


def _pread_into(fd: int, view: memoryview, offset: int) -> int:
    """``preadv`` into a reused buffer where the platform has it, else ``pread`` and a copy."""
    if hasattr(os, "preadv"):
        return os.preadv(fd, [view], offset)
    data = os.pread(fd, len(view), offset)
    view[: len(data)] = data
    return len(data)
