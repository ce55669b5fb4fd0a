"""Reading a small workspace file on the host, as an attacker would have written it.

Host-side code that reads workspace content (a build file to detect checks,
a ``.git`` pointer, a ``commondir``) must never be steered by it: this opens
the name relative to a directory descriptor without following a symlink and
without blocking (a FIFO would hang the host, a terminal would read the
user's keyboard), takes a regular file only, and reads a bounded number of
bytes. Anything else is absent. The C core's sandbox reads the same way
(native/src/sandbox_linux.c, ``read_small_at``).
"""

from __future__ import annotations

import os
import stat

from ._platform import O_CLOEXEC, O_NOCTTY, O_NOFOLLOW, O_NONBLOCK

__all__ = ["read_small_file"]

_FLAGS = os.O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC


def read_small_file(dirfd: int, name: str, max_bytes: int) -> bytes | None:
    """The content of the regular file ``name`` in ``dirfd``, or None.

    None when it is missing, a symlink, anything but a regular file, larger
    than ``max_bytes``, or unreadable.
    """
    try:
        # checked before the open: opening a device node can act on the device
        if not stat.S_ISREG(os.stat(name, dir_fd=dirfd, follow_symlinks=False).st_mode):
            return None
        fd = os.open(name, _FLAGS, dir_fd=dirfd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:
            return None
        chunks: list[bytes] = []
        total = 0
        while total <= max_bytes:
            chunk = os.read(fd, max_bytes + 1 - total)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    return None if total > max_bytes else b"".join(chunks)
