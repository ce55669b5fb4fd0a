"""Which path arguments make a command catastrophic: the root, a home, a system tree, a disk.

Paths are judged lexically (``/usr/../`` is ``/``, ``//`` is ``/``) and a
trailing pure glob means the directory itself (``/*`` is everything in
``/``). ``~``, ``~user``, ``$HOME`` and ``${HOME}`` are a home directory; ``$PWD`` is the
working directory.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

__all__ = ["Danger", "danger", "device", "join_cwd"]

_HOME = re.compile(r"(~[^/]*|\$HOME|\$\{HOME(:?[-=?+][^}]*)?\}|\$USERPROFILE)(?=/|\Z)")
_PWD = re.compile(r"(\$PWD|\$\{PWD\})(?=/|\Z)")
_GLOB = re.compile(r"[*?\[]")
_PURE_GLOB = re.compile(r"[*?.\[\]!^]*[*?\[][*?.\[\]!^]*\Z")
# Top-level trees whose direct subdirectories are the system too (/usr/lib, /home/alice).
_SYSTEM = frozenset(
    {
        "bin",
        "boot",
        "dev",
        "etc",
        "home",
        "lib",
        "lib32",
        "lib64",
        "libx32",
        "nix",
        "opt",
        "proc",
        "root",
        "run",
        "sbin",
        "snap",
        "srv",
        "sys",
        "usr",
        "var",
        "Applications",
        "Library",
        "System",
        "Users",
        "Volumes",
        "private",
    }
)
_SAFE_DEVICES = frozenset(
    {"null", "zero", "full", "random", "urandom", "stdin", "stdout", "stderr", "tty", "ptmx"}
)
_SAFE_DEVICE_DIRS = ("fd/", "pts/", "shm/", "tcp/", "udp/", "mqueue/")
_KERNEL_TRIGGERS = frozenset({"/proc/sysrq-trigger"})


@dataclass(frozen=True)
class Danger:
    """What a path names (``what``, for the message); ``root_glob`` for ``/*``, fatal even
    without ``-r``."""

    what: str
    root_glob: bool = False


def danger(text: str, *, any_top_level: bool = True) -> Danger | None:
    """Whether removing, moving or re-owning ``text`` recursively would wreck the machine.

    Every top-level directory counts for removal (``/data`` may be the only
    copy of something); with ``any_top_level=False`` (chown, chmod, mv) only
    the system ones do, since ``chown -R app /app`` is an ordinary container step.
    """
    t = text.strip()
    if not t:
        return None
    m = _HOME.match(t)
    if m:
        kind, rest = "home", t[m.end() :]
    elif t.startswith("/"):
        kind, rest = "abs", t
    else:
        kind, rest = "rel", t
    comps: list[str] = []
    above = 0
    for c in rest.split("/"):
        if c in ("", "."):
            continue
        if c == "..":
            if comps:
                comps.pop()
            else:
                above += 1
            continue
        comps.append(c)
    glob = bool(comps) and _PURE_GLOB.match(comps[-1]) is not None
    if glob:
        comps.pop()
    if kind == "abs":
        if not comps:
            return Danger("everything in /", True) if glob else Danger("the root directory")
        top = comps[0]
        if _GLOB.search(top) or (len(comps) == 1 and (any_top_level or top in _SYSTEM)):
            return Danger(f"the top-level directory /{top}")
        if len(comps) == 2 and comps[0] in _SYSTEM:
            return Danger(f"the system directory /{comps[0]}/{comps[1]}")
        return None
    if kind == "home":
        if above:
            return Danger("a directory above the home directory")
        return None if comps else Danger("the home directory")
    if above and not comps:
        return Danger("a parent of the working directory")
    return None


def device(text: str) -> str | None:
    """The block or character device (or kernel trigger) ``text`` names, or None if harmless."""
    t = text.strip()
    if not t.startswith("/"):
        return None
    norm = "/" + posixpath.normpath(t).lstrip("/")
    if norm in _KERNEL_TRIGGERS:
        return norm
    if not norm.startswith("/dev/"):
        return None
    rest = norm[len("/dev/") :]
    if rest in _SAFE_DEVICES or rest.startswith(_SAFE_DEVICE_DIRS):
        return None
    return norm


def join_cwd(cwd: str | None, path: str) -> str:
    """``path`` as seen from a directory the command changed to (``cd /; rm -rf *``).

    ``$PWD`` and ``${PWD}`` are the working directory itself: ``$PWD/..`` is ``..``.
    """
    m = _PWD.match(path)
    if m is not None:
        path = "." + path[m.end() :]
    if cwd is None or path.startswith("/") or _HOME.match(path):
        return path
    return f"{cwd.rstrip('/')}/{path}" if cwd.rstrip("/") else f"/{path}"
