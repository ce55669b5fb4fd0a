"""Finding the programs the boundary needs: the system bubblewrap and our a3s-init."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

MIN_BWRAP = (0, 8, 0)
SYSTEM_BWRAP = ("/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap")
_PACKAGE_DIR = Path(__file__).resolve().parent.parent


def init_path() -> str | None:
    """The a3s-init executable shipped inside the package, if it was built."""
    candidate = _PACKAGE_DIR / "_bin" / "a3s-init"
    return str(candidate) if os.access(candidate, os.X_OK) else None


def _trusted(path: str, workspace: str | None) -> bool:
    """A bubblewrap we may run: owned by root, not writable by others, outside the workspace."""
    try:
        st = os.stat(path)
        parent = os.stat(os.path.dirname(path))
    except OSError:
        return False
    if st.st_uid != 0 or st.st_mode & 0o022 or parent.st_uid != 0 or parent.st_mode & 0o022:
        return False
    if workspace:
        # the workspace / holds every program, and no sandbox takes it (the
        # core refuses it, which selection reports), as in Node and Go
        root = os.path.realpath(workspace)
        if root != os.sep and (path + os.sep).startswith(root + os.sep):
            return False
    return True


def find_bwrap(workspace: str | None = None) -> str | None:
    """The system bubblewrap: fixed system paths first, then PATH, never one a repository ships.

    A candidate must be root-owned in a root-owned directory that others
    cannot write, and must not lie inside the workspace; nothing else is
    ever executed, not even for ``--version``.
    """
    found = [c for c in SYSTEM_BWRAP if os.access(c, os.X_OK)]
    which = shutil.which("bwrap")
    if which:
        found.append(which)
    for candidate in found:
        real = os.path.realpath(candidate)
        if os.path.isabs(real) and _trusted(real, workspace):
            return real
    return None


def bwrap_version(path: str) -> tuple[int, ...] | None:
    try:
        out = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=5, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", out)
    return tuple(int(x or 0) for x in match.groups()) if match else None
