"""Protected names: the top-level entries a write must be confirmed for.

The names (:data:`PROTECTED_NAMES`, :func:`is_protected_name`) live in
:mod:`codeward.workspace`, the one list the sandbox and the verification
snapshot use too; this module adds the path test. A write to one of them is
a mode-matrix row of its own (ask in Default, deny in Plan and Auto).

A name is compared the way a case-insensitive file system would (``.GIT``,
``.Git``), ignoring what HFS+ ignores (zero-width characters) and what
Windows drops (trailing dots and blanks); the path is also followed through
symlinks inside the workspace (``link -> .git``), and the real gitdir of a
worktree or submodule (``.git`` is a file ``gitdir: ...``) is protected
when it lies inside the workspace.
"""

from __future__ import annotations

import os

from .._errors import WorkspaceError
from .._untrusted import read_small_file
from ..workspace import (
    PROTECTED_DIRS,
    PROTECTED_FILES,
    PROTECTED_NAMES,
    Workspace,
    is_protected_name,
)
from ._paths import walk_links

__all__ = [
    "PROTECTED_DIRS",
    "PROTECTED_FILES",
    "PROTECTED_NAMES",
    "is_protected_name",
    "is_protected_path",
    "protected_depth",
]

_MAX_POINTER_BYTES = 4096


def is_protected_path(workspace: Workspace, path: str) -> bool:
    """True when ``path`` is, or lies under, a protected name or a worktree's gitdir.

    A path that cannot be placed in the workspace at all counts as protected
    (fail closed): the path guardrail refuses it anyway.
    """
    try:
        parts = workspace.parts(path)
    except WorkspaceError:
        return True
    if not parts:
        return False
    if is_protected_name(parts[0]):
        return True
    resolved, hit = walk_links(workspace.root, parts, path)
    if hit is not None or resolved is None:
        return True  # leads out, loops, or cannot be followed: fail closed
    if resolved and is_protected_name(resolved[0]):
        return True
    return any(resolved[: len(g)] == g for g in _gitdirs(workspace))


def protected_depth(workspace: Workspace, path: str) -> int | None:
    """How many leading components of ``path`` spell the protected name it is under.

    None: ``path`` is not protected. 1: it is, or lies under, a protected name
    (``.mcp.json``, ``.git/config``); more: under a worktree's gitdir named by
    that many components. 0: it is protected but its spelling does not name
    the protected object (it reaches it through a symlink, or cannot be placed
    in the workspace), so no allow rule can be said to name it (fail closed).
    """
    if not is_protected_path(workspace, path):
        return None
    try:
        parts = workspace.parts(path)
    except WorkspaceError:
        return 0
    if parts and is_protected_name(parts[0]):
        return 1
    resolved, hit = walk_links(workspace.root, parts, path)
    if hit is not None or resolved is None or resolved != parts:
        return 0
    for gitdir in _gitdirs(workspace):
        if parts[: len(gitdir)] == gitdir:
            return len(gitdir)
    return 0


def _gitdirs(workspace: Workspace) -> list[tuple[str, ...]]:
    """The real gitdir (and its common dir) named by a ``.git`` file, as parts inside the root."""
    gitdir = _read_pointer(workspace.root, ".git", "gitdir: ", workspace.root)
    if gitdir is None:
        return []
    candidates = [gitdir]
    common = _read_pointer(gitdir, "commondir", "", gitdir)
    if common is not None:
        candidates.append(common)
    found: list[tuple[str, ...]] = []
    for real in candidates:
        rel = os.path.relpath(real, workspace.root)
        if rel not in (".", "..") and not rel.startswith("../"):
            found.append(tuple(rel.split(os.sep)))
    return found


def _read_pointer(directory: str, name: str, prefix: str, base: str) -> str | None:
    """The directory a one-line pointer file names (``gitdir: PATH``), resolved, if it is one.

    The file is workspace content: read without following a symlink or blocking (a
    FIFO there must not hang the host), a regular file only, a few KiB at most.
    """
    try:
        dirfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        data = read_small_file(dirfd, name, _MAX_POINTER_BYTES)
    finally:
        os.close(dirfd)
    if data is None:
        return None
    text = os.fsdecode(data.split(b"\n", 1)[0]).strip()
    if not text.startswith(prefix):
        return None
    target = text[len(prefix) :].strip()
    if not target or "\0" in target:
        return None
    real = os.path.realpath(os.path.join(base, target))
    return real if os.path.isdir(real) else None
