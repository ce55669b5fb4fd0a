"""Finding the programs the boundary needs: the system bubblewrap and our a3s-init."""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

MIN_BWRAP = (0, 8, 0)
SYSTEM_BWRAP = ("/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap")
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))


def init_path() -> str | None:
    """The a3s-init executable shipped inside the package, if it was built."""
    candidate = os.path.join(_PACKAGE_DIR, "_bin", "a3s-init")
    return candidate if os.access(candidate, os.X_OK) else None


def _which(name: str) -> str | None:
    """The first executable ``name`` on PATH (``shutil.which`` without importing shutil, which
    costs `codeward exec` more start-up time than the sandbox itself)."""
    for directory in os.get_exec_path():
        candidate = os.path.join(directory, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


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
    for candidate in _candidates():
        real = os.path.realpath(candidate)
        if os.path.isabs(real) and _trusted(real, workspace):
            return real
    return None


def _candidates() -> Iterator[str]:
    """The fixed system paths, then (only if none of them will do) the one on PATH."""
    yield from (c for c in SYSTEM_BWRAP if os.access(c, os.X_OK))
    which = _which("bwrap")
    if which:
        yield which


def bwrap_version(path: str) -> tuple[int, ...] | None:
    import re
    import subprocess

    try:
        out = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=5, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", out)
    return tuple(int(x or 0) for x in match.groups()) if match else None
