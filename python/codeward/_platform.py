"""What the operating system offers the package, named in one place.

The in-process file access walks a path one component at a time relative to directory
descriptors (``dir_fd``), with ``O_NOFOLLOW`` and ``O_DIRECTORY``, so that a symlink swapped in
during a call cannot lead outside the workspace. Linux and macOS have all of it; Windows has none
of it. There the flags below are 0 only so that the modules import (the policy needs no file);
:func:`safe_open_unsupported` is what the workspace checks, and it refuses before a file is
opened.
"""

from __future__ import annotations

import os
import sys

O_CLOEXEC: int = getattr(os, "O_CLOEXEC", 0)
O_NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
O_DIRECTORY: int = getattr(os, "O_DIRECTORY", 0)
O_NONBLOCK: int = getattr(os, "O_NONBLOCK", 0)
O_NOCTTY: int = getattr(os, "O_NOCTTY", 0)
DIR_FLAGS = os.O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC

_NAMES = {"darwin": "macOS", "win32": "Windows", "cygwin": "Cygwin"}


def platform_name() -> str:
    """The operating system's name as its users say it (Linux, macOS, Windows, freebsd14 ...)."""
    if sys.platform.startswith("linux"):
        return "Linux"
    return _NAMES.get(sys.platform, sys.platform)


def safe_open_unsupported() -> str | None:
    """Why this system cannot open files race-free inside a workspace, or None where it can."""
    if hasattr(os, "O_NOFOLLOW") and hasattr(os, "O_DIRECTORY") and os.open in os.supports_dir_fd:
        return None
    return (
        f"in-process file access is not supported on {platform_name()} in this version: it "
        "needs O_NOFOLLOW, O_DIRECTORY and opens relative to a directory (dir_fd), which this "
        "system lacks"
    )
