"""``check_path``: any path outside the workspace, through a symlink that leads out, or with a
backslash.

The lexical part is the workspace's own (:meth:`Workspace.parts`), so the
guardrail and the tools agree on what a path means; its refusals are
translated to rule ids by the form of the path (``path.home`` for ``~`` and
``$HOME``, ``path.windows`` for drive and UNC forms, ``path.outside_workspace``
for absolute paths elsewhere and ``..`` past the root). A backslash is refused
(``path.backslash``): Linux reads it as part of a name, the policy's lexical
form and Windows as a separator, so the path decided on and the file opened
could differ.

Symlinks are followed the way the tools will follow them
(:meth:`Workspace.resolve`: component by component, in order), so a symlink
that leads out is reported even when a later component does not exist yet.
When the workspace refuses the path for another reason before walking it (a
credential name), the existing prefix is walked here with ``os.readlink``.
A component that does not exist is not a hit: a new file may be created.
"""

from __future__ import annotations

import errno
import os
import posixpath
import re
import stat
from collections.abc import Iterable

from .._errors import PathOutsideWorkspace, WorkspaceError
from ..workspace import Workspace
from ._hit import GuardrailHit

__all__ = ["check_path", "check_paths", "walk_links"]

_MAX_HOPS = 40
# The same forms Workspace.parts refuses; used only to name the rule.
_HOME_FORMS = re.compile(
    r"^(~[^/]*|\$HOME|\$\{HOME\}|%USERPROFILE%|%HOMEPATH%)(/|\\|$)", re.IGNORECASE
)
_WINDOWS = re.compile(r"^([A-Za-z]:([\\/]|$)|\\\\|//)")


def check_path(workspace: Workspace | str | os.PathLike[str], path: str) -> GuardrailHit | None:
    """A hit when ``path`` leaves ``workspace`` lexically or through a symlink, else None.

    ``workspace`` is a :class:`~codeward.workspace.Workspace` or its directory (a path string
    or path-like, made into one; WorkspaceError if it is not a directory).
    """
    if not isinstance(workspace, Workspace):
        workspace = Workspace(workspace)
    if not isinstance(path, str):
        shown = repr(path)[:200]
        return GuardrailHit(
            "path.invalid", f"refused the path {shown}: a path must be a string", shown
        )
    try:
        parts = workspace.parts(path)
    except PathOutsideWorkspace as exc:
        return GuardrailHit(_outside_rule(path), f"refused the path {path!r}: {exc}", path)
    except WorkspaceError as exc:
        return GuardrailHit("path.invalid", f"refused the path {path!r}: {exc}", path)
    if "\\" in path:
        return GuardrailHit(
            "path.backslash",
            f"refused the path {path!r}: it contains a backslash, which names a file on this "
            "system but a directory separator elsewhere, so the path decided on and the file "
            "opened could differ; write paths with '/'",
            path,
        )
    if not parts:
        return None
    try:
        workspace.resolve(path)
    except PathOutsideWorkspace as exc:
        return GuardrailHit("path.symlink_escape", f"refused the path {path!r}: {exc}", path)
    except WorkspaceError:
        # refused before or during the walk for another reason (a credential name, a
        # symlink loop): walk it here so an escape on the way is still reported
        _resolved, hit = walk_links(workspace.root, parts, path)
        return hit
    except OSError:
        return None  # a missing component or a file used as a directory: nothing leads out
    return None


def check_paths(
    workspace: Workspace | str | os.PathLike[str], paths: Iterable[str]
) -> GuardrailHit | None:
    """The first hit of :func:`check_path` over ``paths``."""
    if not isinstance(workspace, Workspace):
        workspace = Workspace(workspace)
    for path in paths:
        hit = check_path(workspace, path)
        if hit is not None:
            return hit
    return None


def walk_links(
    root: str, parts: tuple[str, ...], path: str
) -> tuple[tuple[str, ...] | None, GuardrailHit | None]:
    """``parts`` with every existing symlink on the way resolved, or the hit for leaving ``root``.

    Components after the first missing one are kept as written. A chain of
    more than 40 links is a hit (``path.symlink_loop``): where it ends is
    unknown, so it fails closed.
    """
    pending = list(reversed(parts))
    done: list[str] = []
    hops = 0
    while pending:
        name = pending.pop()
        if name in ("", "."):
            continue
        if name == "..":
            if not done:
                return None, _escape(path, "climbs out of the workspace through a symlink")
            done.pop()
            continue
        full = os.path.join(root, *done, name)
        try:
            st = os.lstat(full)
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ENOTDIR):
                return (*done, name, *reversed(pending)), None
            return None, None  # unreadable: the tools cannot follow it either
        if stat.S_ISLNK(st.st_mode):
            hops += 1
            if hops > _MAX_HOPS:
                return None, GuardrailHit(
                    "path.symlink_loop",
                    f"refused the path {path!r}: more than {_MAX_HOPS} symbolic links on the way",
                    path,
                )
            try:
                target = os.readlink(full)
            except OSError:
                return None, None
            if os.path.isabs(target):
                norm = posixpath.normpath(target)
                if norm != root and not norm.startswith(root.rstrip("/") + "/"):
                    return None, _escape(path, f"crosses a symlink to {target!r}")
                done = []
                pending.extend(reversed(norm[len(root) :].split("/")))
            else:
                pending.extend(reversed(target.split("/")))
            continue
        done.append(name)
        if pending and not stat.S_ISDIR(st.st_mode):
            return (*done, *reversed(pending)), None
    return tuple(done), None


def _escape(path: str, why: str) -> GuardrailHit:
    return GuardrailHit(
        "path.symlink_escape", f"refused the path {path!r}: it {why}, outside the workspace", path
    )


def _outside_rule(path: str) -> str:
    if _HOME_FORMS.match(path):
        return "path.home"
    if _WINDOWS.match(path):
        return "path.windows"
    return "path.outside_workspace"
