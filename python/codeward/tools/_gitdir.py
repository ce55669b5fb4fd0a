"""Which repository the git tool may read: the workspace's own ``.git`` directory, checked first.

Host git trusts the repository it finds, but here every byte of the
workspace may have been written by the sandboxed command. Left to its own
discovery, git would take a workspace root holding ``HEAD``, ``objects`` and
``config`` (``git init --bare .``) for a bare repository whose
``core.worktree`` points anywhere on the host, and print that directory's
files. So the git tool never lets git discover anything: it names the
repository (``--git-dir``) and the working tree (``--work-tree``) itself,
and only after checking, by descriptor and without following symlinks, that

* ``<workspace>/.git`` is a real directory holding ``HEAD``, ``objects`` and
  ``refs`` (not a symlink, not a ``gitdir:`` file of a linked worktree or a
  submodule, which name a repository elsewhere);
* it has no ``commondir`` (which would share another directory's
  configuration, objects and refs);
* its configuration (``config``, ``config.worktree``), read here as regular
  files of bounded size, includes no other file (``include.path``,
  ``includeIf``: git would read any host path they name);
* every object store it borrows from (``objects/info/alternates``) lies
  inside that ``.git`` directory, with no symlink on the way.

The configuration entries are returned so the runner can switch off what
they define (clean/smudge filters by name).
"""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import time
from dataclasses import dataclass

from .._platform import DIR_FLAGS, O_CLOEXEC, O_NOFOLLOW, O_NONBLOCK
from ..workspace import Workspace
from ._base import ErrorKind
from ._failure import ToolError

__all__ = ["MAX_CONFIG_BYTES", "Repository", "open_repository"]

MAX_CONFIG_BYTES = 1 << 20
_MAX_ALTERNATES_BYTES = 64 << 10
_MAX_ALTERNATE_DEPTH = 5  # git's own limit on chained alternates
_DIR = DIR_FLAGS
_FILE = os.O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC
_CONFIG_FILES = ("config", "config.worktree")
_INCLUDES = ("include.", "includeif.")


@dataclass(frozen=True)
class Repository:
    """The checked repository: its directory and its own configuration (as git lists it)."""

    git_dir: str
    work_tree: str
    config: tuple[tuple[str, str], ...]


def open_repository(ws: Workspace, git: str, deadline: float) -> Repository:
    """Checks ``<workspace>/.git`` (see the module docstring) and reads its configuration.

    Raises ToolError: TOOL_FAILED when there is no repository at the root,
    PERMISSION_DENIED (``refused``) when what is there is not one the tool
    may read.
    """
    root_fd = os.open(ws.root, _DIR)
    try:
        git_fd = _open_git_dir(root_fd)
    finally:
        os.close(root_fd)
    try:
        for name, want_dir in (("HEAD", False), ("objects", True), ("refs", True)):
            _check_entry(git_fd, name, want_dir)
        if _exists(git_fd, "commondir"):
            raise _refused(
                ".git has a commondir file, which shares another directory's configuration, "
                "objects and refs; the git tool reads only a self-contained .git directory"
            )
        texts = [t for t in (_read_small(git_fd, n, MAX_CONFIG_BYTES) for n in _CONFIG_FILES) if t]
        git_dir = os.path.join(ws.root, ".git")
        _check_alternates(git_fd, git_dir)
    finally:
        os.close(git_fd)
    entries: list[tuple[str, str]] = []
    for name, text in zip(_CONFIG_FILES, texts, strict=False):
        entries += _parse_config(git, name, text, deadline)
    for key, _value in entries:
        if key.lower().startswith(_INCLUDES):
            raise _refused(
                f"the repository configuration includes another file ({key}); git would read "
                "whatever host path it names, so the git tool does not run on it"
            )
    return Repository(git_dir, ws.root, tuple(entries))


def _open_git_dir(root_fd: int) -> int:
    try:
        st = os.stat(".git", dir_fd=root_fd, follow_symlinks=False)
    except FileNotFoundError:
        raise _not_a_repository("there is no .git directory at the workspace root") from None
    if stat.S_ISLNK(st.st_mode):
        raise _refused(".git is a symlink; the git tool reads only a .git directory inside it")
    if stat.S_ISREG(st.st_mode):
        raise _refused(
            ".git is a file (a linked worktree or a submodule checkout, whose repository lies "
            "elsewhere); the git tool reads only a .git directory inside the workspace"
        )
    if not stat.S_ISDIR(st.st_mode):
        raise _refused(".git is neither a directory nor a file")
    try:
        return os.open(".git", _DIR, dir_fd=root_fd)
    except OSError as exc:  # swapped for a symlink since the stat
        raise _refused(f".git cannot be opened as a directory: {exc.strerror}") from None


def _check_entry(git_fd: int, name: str, want_dir: bool) -> None:
    try:
        st = os.stat(name, dir_fd=git_fd, follow_symlinks=False)
    except FileNotFoundError:
        raise _not_a_repository(f".git has no {name}") from None
    ok = stat.S_ISDIR(st.st_mode) if want_dir else stat.S_ISREG(st.st_mode)
    if not ok:
        kind = "directory" if want_dir else "regular file"
        raise _refused(f".git/{name} is not a {kind} (a symlink or another kind of file)")


def _exists(dir_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _open_below(name: str, flags: int, dir_fd: int, shown: str) -> int | None:
    """``openat`` without following a link; None when it is missing, refused when it is a
    symlink (or a file where a directory should be)."""
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise _refused(f".git/{shown} is a symlink or not what git expects there") from None
        raise ToolError(ErrorKind.IO_ERROR, f"cannot open .git/{shown}: {exc.strerror}") from None


def _read_small(dir_fd: int, name: str, limit: int) -> str | None:
    """A regular file's text, or None when it is missing; never blocks, never follows a link."""
    fd = _open_below(name, _FILE, dir_fd, name)
    if fd is None:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _refused(f".git/{name} is not a regular file")
        if st.st_size > limit:
            raise _refused(f".git/{name} is larger than {limit} bytes")
        data = os.read(fd, limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise _refused(f".git/{name} is larger than {limit} bytes")
    return data.decode("utf-8", "surrogateescape")


def _check_alternates(git_fd: int, git_dir: str) -> None:
    """Every alternate object store (and theirs, as git chains them) lies inside ``.git``."""
    work = [("objects/info", os.path.join(git_dir, "objects"), 0)]
    while work:
        info_rel, objects_dir, depth = work.pop()
        text = _read_small_at(git_fd, info_rel, "alternates")
        if text is None:
            continue
        if depth >= _MAX_ALTERNATE_DEPTH:
            raise _refused("the repository's alternate object stores are chained too deeply")
        for line in text.splitlines():
            entry = line.strip()
            if not entry or entry.startswith("#"):
                continue
            if entry.startswith('"'):
                raise _refused(f"a quoted alternate object store ({entry[:80]!r}) is not supported")
            target = os.path.normpath(os.path.join(objects_dir, entry))
            rel = os.path.relpath(target, git_dir)
            if rel == "." or rel.startswith("..") or os.path.realpath(target) != target:
                raise _refused(
                    f"the repository borrows objects from {entry!r}, outside its .git directory "
                    "(or through a symlink); the git tool reads only objects inside the workspace"
                )
            work.append((os.path.join(rel, "info"), target, depth + 1))


def _read_small_at(git_fd: int, rel_dir: str, name: str) -> str | None:
    """``_read_small`` of ``rel_dir/name`` below ``.git``, every directory opened without
    following a symlink."""
    fd = os.dup(git_fd)
    try:
        for part in rel_dir.split("/"):
            nfd = _open_below(part, _DIR, fd, rel_dir)
            if nfd is None:
                return None
            os.close(fd)
            fd = nfd
        return _read_small(fd, name, _MAX_ALTERNATES_BYTES)
    finally:
        os.close(fd)


def _parse_config(git: str, name: str, text: str, deadline: float) -> list[tuple[str, str]]:
    """The entries of one configuration file, parsed by git itself from a copy on stdin.

    git parses it without includes and outside any repository (``GIT_DIR``
    names no repository), so nothing but the text given is read.
    """
    try:
        proc = subprocess.run(
            [git, "config", "--file", "-", "--no-includes", "-z", "--list"],
            input=text.encode("utf-8", "surrogateescape"),
            cwd="/",
            env={
                "PATH": os.path.dirname(git),
                "LC_ALL": "C",
                "GIT_DIR": "/dev/null",
                "GIT_CONFIG_NOSYSTEM": "1",
                "GIT_CONFIG_GLOBAL": "/dev/null",
            },
            capture_output=True,
            timeout=max(0.1, deadline - time.monotonic()),
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ToolError(ErrorKind.TIMEOUT, f"reading .git/{name} took too long") from None
    if proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip()[:500]
        raise ToolError(ErrorKind.TOOL_FAILED, f".git/{name} does not parse: {message}")
    entries = []
    for entry in proc.stdout.split(b"\0"):
        if not entry:
            continue
        key, _nl, value = entry.decode("utf-8", "surrogateescape").partition("\n")
        entries.append((key, value))
    return entries


def _not_a_repository(why: str) -> ToolError:
    return ToolError(
        ErrorKind.TOOL_FAILED,
        f"the workspace root is not a git repository: {why} (git looks only at the "
        "workspace's own .git directory, never above it)",
    )


def _refused(why: str) -> ToolError:
    return ToolError(
        ErrorKind.PERMISSION_DENIED,
        f"refused to run git: {why}",
        refused=True,
    )
