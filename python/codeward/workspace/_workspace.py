"""The credential boundary for in-process file access: one way in, walked by file descriptor.

The file tools (read, write, edit, patch, search, ls) and the download tool run
in the host process, outside the bash sandbox, so no mount protects the host
from them. Every path they touch goes through a :class:`Workspace`:

* the path is normalised lexically and refused if it leaves the workspace
  (absolute elsewhere, ``..`` past the root, ``~``, Windows drive or UNC forms);
* it is then walked one component at a time with ``O_NOFOLLOW`` opens relative
  to the previous directory's descriptor. A symlink on the way is resolved by
  hand and must stay inside the workspace; the resolved path is checked again.
  Because every step is an ``openat`` on a descriptor, a symlink swapped in
  after the check cannot redirect the final open (no time-of-check gap);
* credential names (``.env*``, ``.netrc``, agent auth files ...) and home
  credential stores are refused, case-insensitively;
* a regular file with more than one hard link is refused unless it lies in a
  package or build store and does not alias a credential file.
"""

from __future__ import annotations

import copy
import errno
import os
import re
import stat
import time
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass

from .._errors import (
    CredentialBoundaryError,
    HardLinkRefused,
    PathOutsideWorkspace,
    WorkspaceError,
)
from .._platform import DIR_FLAGS, safe_open_unsupported
from ._credentials import (
    HOME_STORES,
    home_directories,
    home_store_reason,
    is_package_store,
    workspace_reason,
)

__all__ = ["Resolved", "WalkDir", "Workspace"]

_MAX_SYMLINK_HOPS = 40
_DIR_FLAGS = DIR_FLAGS
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:([\\/]|$)")
_HOME_FORMS = re.compile(
    r"^(~[^/]*|\$HOME|\$\{HOME\}|%USERPROFILE%|%HOMEPATH%)(/|\\|$)", re.IGNORECASE
)
# How long a discovered set of credential inodes is trusted before it is rebuilt.
_INODE_CACHE_SECONDS = 2.0
_INODE_SCAN_LIMIT = 200_000  # directory entries visited per discovery, at most
_MAX_WALK_DEPTH = 128  # directories nested deeper are not descended (and each level holds an fd)


@dataclass(frozen=True)
class Resolved:
    """A path after the walk: its components below the root and ``st`` of what is there, or None."""

    parts: tuple[str, ...]
    st: os.stat_result | None

    @property
    def relpath(self) -> str:
        """The workspace-relative path, ``"."`` for the root."""
        return "/".join(self.parts) or "."


@dataclass
class WalkDir:
    """One directory of :meth:`Workspace.walk`, listed through its descriptor.

    ``fd`` is open only until the walk resumes. Remove names from ``dirs`` to
    keep the walk out of them. ``links`` are symlinks, never followed by the
    walk: open them by path through the workspace, which refuses those that
    leave it. ``omitted`` counts the credential entries left out (never named).
    """

    parts: tuple[str, ...]
    fd: int
    dirs: list[str]
    files: list[str]
    links: list[str]
    omitted: int

    @property
    def relpath(self) -> str:
        """The workspace-relative path of this directory, ``"."`` for the root."""
        return "/".join(self.parts) or "."


class Workspace:
    """A directory that in-process tools may touch, and the only way they touch it.

    ``credential_boundary=False`` turns off the credential-name and hard-link
    rules (a host decision, never a model's); the workspace confinement and the
    symlink rules always apply.
    """

    def __init__(self, root: str | os.PathLike[str], *, credential_boundary: bool = True) -> None:
        given = os.fspath(root)
        unsupported = safe_open_unsupported()
        if unsupported is not None:  # fail closed: no race-free walk, no file access
            raise WorkspaceError(f"workspace {given!r} refused: {unsupported}", path=given)
        real = os.path.realpath(given)
        if not os.path.isdir(real):
            raise WorkspaceError(f"workspace {given!r} is not a directory", path=given)
        self.root = real
        self._given_root = os.path.abspath(given)
        self.credential_boundary = credential_boundary
        self._all_homes = home_directories()  # hard-link aliases may point into any of them
        self._homes = [h for h in self._all_homes if _stores_reachable(self.root, h)]
        self._inodes: frozenset[tuple[int, int]] = frozenset()
        self._inodes_at = -_INODE_CACHE_SECONDS
        self._pins: Mapping[str, str] = {}

    def __repr__(self) -> str:
        return f"Workspace({self.root!r}, credential_boundary={self.credential_boundary})"

    def pinned(self, pins: Mapping[str, str]) -> Workspace:
        """This workspace, refusing to reach anything but ``pins[path]`` through a pinned path.

        ``pins`` maps workspace-relative paths a call was decided on to where
        they led then (their symlinks followed, see :meth:`locate`). Opening
        a pinned path (:meth:`open_parent`, :meth:`open_dir` and what uses
        them) that now leads elsewhere, because a symlink was swapped between
        the decision and the use, raises PathOutsideWorkspace instead of
        reaching a place nobody decided on. Other paths open as before.
        """
        view = copy.copy(self)
        view._pins = dict(pins)
        return view

    # -- lexical ---------------------------------------------------------------------------

    def parts(self, path: str) -> tuple[str, ...]:
        """The components of ``path`` below the root, normalised without touching the disk.

        Raises PathOutsideWorkspace for anything that names a place outside,
        and WorkspaceError for a path no filesystem can hold.
        """
        if not isinstance(path, str):
            raise WorkspaceError(
                f"a path must be a string, not {type(path).__name__}", path=repr(path)
            )
        if "\x00" in path:
            raise WorkspaceError("a path cannot contain a NUL byte", path=path)
        if not path.strip():
            raise WorkspaceError("the path is empty", path=path)
        if _HOME_FORMS.match(path):
            raise PathOutsideWorkspace(
                f"{path!r} names the home directory, outside the workspace", path=path
            )
        if _WINDOWS_DRIVE.match(path) or path.startswith(("\\\\", "//")):
            raise PathOutsideWorkspace(
                f"{path!r} is a Windows drive or UNC path, outside the workspace", path=path
            )
        if os.path.isabs(path):
            for base in (self.root, self._given_root):
                rel = _below(os.path.normpath(path), base)
                if rel is not None:
                    return _normalise(rel.split("/") if rel else [], path)
            raise PathOutsideWorkspace(
                f"{path!r} is outside the workspace {self.root!r}", path=path
            )
        return _normalise(path.split("/"), path)

    def relpath(self, path: str) -> str:
        """``path`` as a normalised workspace-relative path ("." for the root)."""
        return "/".join(self.parts(path)) or "."

    def locate(self, path: str, *, follow_last: bool = True) -> tuple[str, ...]:
        """The components the tools reach for ``path``, without opening anything.

        Every symlink on the way is followed as the walk of :meth:`open_parent`
        and :meth:`open_dir` follows it (the last one only with
        ``follow_last``: a deletion removes the link itself); components after
        a missing one are kept as written, since a write creates them there. On
        a file system that folds case or Unicode normalization, each existing
        name is the one on disk, so ``SECRETS/key`` is located as ``secrets/key``.
        Raises PathOutsideWorkspace for a symlink leading out and
        WorkspaceError for a loop, as the walk does.
        """
        pending = list(self.parts(path))
        done: list[str] = []
        here = self.root  # the directory of done, as a path
        hops = 0
        while pending:
            name = pending.pop(0)
            full = f"{here}/{name}"
            try:
                st = os.lstat(full)
            except OSError:  # missing, or under a file: created or refused as written
                return (*done, name, *pending)
            if not stat.S_ISLNK(st.st_mode) or (not pending and not follow_last):
                name = _on_disk_name(here, name, st)
                done.append(name)
                here = f"{here}/{name}"
                continue
            hops += 1
            if hops > _MAX_SYMLINK_HOPS:
                raise WorkspaceError(f"{path!r}: too many levels of symbolic links", path=path)
            pending = list(self._follow(tuple(done), os.readlink(full), tuple(pending), path))
            done = []
            here = self.root
        return tuple(done)

    def credential_reason(self, parts: Sequence[str]) -> str | None:
        """Why ``parts`` is off limits as a credential, or None (always None with it off)."""
        if not self.credential_boundary:
            return None
        reason = workspace_reason(parts)
        if reason is None:
            reason = home_store_reason(os.path.join(self.root, *parts), self._homes)
        return reason

    # -- walking ---------------------------------------------------------------------------

    @contextmanager
    def open_parent(
        self, path: str, *, create: bool = False
    ) -> Iterator[tuple[int, str, tuple[str, ...]]]:
        """Yields ``(dirfd, name, parts)`` for ``path``'s parent directory, walked safely.

        A symlink at the final name is resolved too (to a path inside the
        workspace), so ``name`` is never a symlink at the time of the walk.
        ``create`` makes missing parent directories (mode 0777 & ~umask).
        """
        parts = self.parts(path)
        if not parts:
            raise WorkspaceError("the workspace root itself is not a file", path=path)
        self._check_credentials(parts, path)  # before touching the disk, then again once resolved
        lexical = parts
        fd, parts = self._walk(parts, path, create=create, resolve_last=True)
        try:
            self._check_pin(lexical, parts, path)
            self._check_credentials(parts, path)
            yield fd, parts[-1], parts
        finally:
            os.close(fd)

    @contextmanager
    def open_dir(self, path: str, *, create: bool = False) -> Iterator[tuple[int, tuple[str, ...]]]:
        """Yields ``(dirfd, parts)`` of the directory at ``path`` (the root for ``"."``)."""
        parts = self.parts(path)
        self._check_credentials(parts, path)
        lexical = parts
        fd, parts = self._walk((*parts, ""), path, create=create, resolve_last=False)
        parts = parts[:-1]
        try:
            self._check_pin(lexical, parts, path)
            self._check_credentials(parts, path)
            yield fd, parts
        finally:
            os.close(fd)

    def resolve(self, path: str) -> Resolved:
        """Walks ``path`` and says what is there, without opening it for reading."""
        with self.open_parent(path) as (fd, name, parts):
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                st = None
        return Resolved(parts, st)

    def open_file(
        self, path: str, flags: int = os.O_RDONLY, mode: int = 0o666
    ) -> tuple[int, Resolved]:
        """Opens a regular file in the workspace; returns ``(fd, resolved)``; the caller closes fd.

        The final open has ``O_NOFOLLOW`` and the opened inode is checked (a
        regular file, the hard-link rule), so nothing swapped in after the
        walk can be what gets read or written.
        """
        with self.open_parent(path) as (dirfd, name, parts):
            fd, st = self._open_final(dirfd, name, parts, path, flags, mode)
        return fd, Resolved(parts, st)

    def open_entry(self, dirfd: int, parts: tuple[str, ...]) -> tuple[int, os.stat_result]:
        """Opens the regular file ``parts[-1]`` for reading in a directory :meth:`walk` yielded.

        ``dirfd`` is the walked directory of ``parts[:-1]``. The same rules as
        :meth:`open_file` apply: credential names, ``O_NOFOLLOW``, a regular
        file, the hard-link rule.
        """
        path = "/".join(parts)
        self._check_credentials(parts, path)
        return self._open_final(dirfd, parts[-1], parts, path, os.O_RDONLY, 0)

    def walk(self, path: str = ".") -> Iterator[WalkDir]:
        """Walks the tree at ``path`` top-down, by descriptor, names sorted, without following
        symlinks, leaving out credential entries (counted in ``omitted``).

        Each subdirectory is opened with ``O_NOFOLLOW`` relative to its
        parent's descriptor, so a directory swapped for a symlink during the
        walk is skipped, never followed out of the workspace. Closing the
        generator early closes every descriptor.
        """
        with self.open_dir(path) as (fd, parts):
            yield from self._walk_tree(fd, parts, 0)

    def _walk_tree(self, fd: int, parts: tuple[str, ...], depth: int) -> Iterator[WalkDir]:
        step = WalkDir(parts, fd, [], [], [], 0)
        with os.scandir(fd) as entries:
            listed = sorted(entries, key=lambda e: e.name)
        for entry in listed:
            if self.credential_reason((*parts, entry.name)) is not None:
                step.omitted += 1
            elif entry.is_symlink():
                step.links.append(entry.name)
            elif entry.is_dir(follow_symlinks=False):
                step.dirs.append(entry.name)
            elif entry.is_file(follow_symlinks=False):
                step.files.append(entry.name)
        yield step
        if depth >= _MAX_WALK_DEPTH:
            return
        for name in list(step.dirs):
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError:  # gone, or swapped for a symlink or a file since the listing
                continue
            try:
                yield from self._walk_tree(child, (*parts, name), depth + 1)
            finally:
                os.close(child)

    def _open_final(
        self,
        dirfd: int,
        name: str,
        parts: Sequence[str],
        path: str,
        flags: int,
        mode: int,
    ) -> tuple[int, os.stat_result]:
        try:
            fd = os.open(
                name, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, mode, dir_fd=dirfd
            )
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise PathOutsideWorkspace(
                    f"{path!r} was replaced by a symlink while it was being opened", path=path
                ) from None
            raise
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
                raise WorkspaceError(f"{path!r} is {kind}", path=path)
            self.check_links(st, parts, path)
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return fd, st

    def check_links(self, st: os.stat_result, parts: Sequence[str], path: str) -> None:
        """Refuses a file with extra hard links outside package stores or aliasing a credential."""
        if not self.credential_boundary or not stat.S_ISREG(st.st_mode) or st.st_nlink <= 1:
            return
        if not is_package_store(parts):
            raise HardLinkRefused(
                f"{path!r} has {st.st_nlink} hard links and lies outside a package or build store: "
                "another name may be a file the tools must not touch",
                path=path,
            )
        if (st.st_dev, st.st_ino) in self.credential_inodes():
            raise HardLinkRefused(f"{path!r} is a hard link to a credential file", path=path)

    def credential_inodes(self) -> frozenset[tuple[int, int]]:
        """(device, inode) of every credential file found in the workspace and the home stores.

        Only consulted for hard-linked files inside package stores, and cached
        for a short while: a full walk per call would cost too much on a large
        repository.
        """
        now = time.monotonic()
        if now - self._inodes_at >= _INODE_CACHE_SECONDS:
            self._inodes = frozenset(_discover_credential_inodes(self.root, self._all_homes))
            self._inodes_at = now
        return self._inodes

    def _check_pin(self, lexical: Sequence[str], reached: Sequence[str], path: str) -> None:
        want = self._pins.get("/".join(lexical) or ".")
        got = "/".join(reached) or "."
        if want is not None and got != want and not self._same_entry(want, got):
            raise PathOutsideWorkspace(
                f"{path!r} now leads to {got!r}, not to {want!r} as when the call was decided "
                "on: a symlink on the way changed since",
                path=path,
            )

    def _same_entry(self, a: str, b: str) -> bool:
        """Whether two spellings reach the same entry (a file system folding case does that)."""
        try:
            first = os.lstat(os.path.join(self.root, a))
        except OSError:
            return False
        return _same_entry(os.path.join(self.root, b), first)

    def _check_credentials(self, parts: Sequence[str], path: str) -> None:
        reason = self.credential_reason(parts)
        if reason is not None:
            raise CredentialBoundaryError(
                f"refused {path!r}: {reason}; the credential boundary keeps it from the tools",
                path=path,
            )

    def _walk(
        self, parts: tuple[str, ...], path: str, *, create: bool, resolve_last: bool
    ) -> tuple[int, tuple[str, ...]]:
        """Opens the directory holding ``parts[-1]``; returns its fd and the resolved parts."""
        hops = 0
        while True:
            fd = os.open(self.root, _DIR_FLAGS)
            try:
                restart = None
                for i, name in enumerate(parts[:-1]):
                    try:
                        nfd = os.open(name, _DIR_FLAGS, dir_fd=fd)
                    except FileNotFoundError:
                        if not create:
                            raise
                        _mkdir_at(name, fd)
                        nfd = os.open(name, _DIR_FLAGS, dir_fd=fd)
                    except OSError as exc:
                        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                            raise
                        target = _readlink(name, fd)
                        if target is None:
                            where = "/".join(parts[: i + 1])
                            raise NotADirectoryError(
                                errno.ENOTDIR, f"{where!r} is not a directory"
                            ) from exc
                        restart = self._follow(parts[:i], target, parts[i + 1 :], path)
                        break
                    os.close(fd)
                    fd = nfd
                if restart is None and resolve_last and parts[-1]:
                    target = _readlink(parts[-1], fd)
                    if target is not None:
                        restart = self._follow(parts[:-1], target, (), path)
                if restart is None:
                    return fd, parts
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)
            hops += 1
            if hops > _MAX_SYMLINK_HOPS:
                raise WorkspaceError(f"{path!r}: too many levels of symbolic links", path=path)
            parts = restart + (("",) if not parts[-1] else ())

    def _follow(
        self, base: tuple[str, ...], target: str, rest: tuple[str, ...], path: str
    ) -> tuple[str, ...]:
        """The components after replacing a symlink under ``base`` by its ``target``."""
        if os.path.isabs(target):
            rel = _below(os.path.normpath(target), self.root)
            if rel is None:
                rel = _below(os.path.normpath(target), self._given_root)
            if rel is None:
                raise PathOutsideWorkspace(
                    f"{path!r} crosses a symlink to {target!r}, outside the workspace", path=path
                )
            combined = (rel.split("/") if rel else []) + list(rest)
        else:
            combined = list(base) + target.split("/") + list(rest)
        try:
            return _normalise(combined, path)
        except PathOutsideWorkspace:
            raise PathOutsideWorkspace(
                f"{path!r} crosses a symlink to {target!r}, which leads outside the workspace",
                path=path,
            ) from None


def _on_disk_name(directory: str, name: str, st: os.stat_result) -> str:
    """The name of the entry ``name`` (whose ``lstat`` is ``st``) reaches in ``directory``, as
    the directory lists it.

    The same as ``name`` unless the file system folds case or Unicode
    normalization and another spelling of the name reaches the same entry.
    """
    variants = {name.swapcase()}
    if not name.isascii():
        variants |= {unicodedata.normalize("NFC", name), unicodedata.normalize("NFD", name)}
    variants.discard(name)
    try:
        folds = any(_same_entry(f"{directory}/{v}", st) for v in variants)
        if not folds:
            return name
        folded = _fold(name)
        for entry in os.listdir(directory):
            if _fold(entry) == folded and _same_entry(os.path.join(directory, entry), st):
                return entry
    except OSError:
        pass
    return name


def _fold(name: str) -> str:
    return unicodedata.normalize("NFC", name).casefold()


def _same_entry(path: str, st: os.stat_result) -> bool:
    try:
        other = os.lstat(path)
    except OSError:
        return False
    return (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino)


def _stores_reachable(root: str, home: str) -> bool:
    """Whether a path below ``root`` can lie in a credential store of ``home``.

    Only when the root is the home, above it, or inside it on the way to a
    store (``~/.config`` holds ``~/.config/gh``); a project under ``~/src``
    never reaches one, and its paths then skip the home check.
    """
    if _below(home, root) is not None:
        return True
    rel = _below(root, home)
    if rel is None:
        return False
    first = rel.split("/", 1)[0].casefold()
    return any(store.split("/", 1)[0] == first for store in HOME_STORES)


def _normalise(components: Sequence[str], path: str) -> tuple[str, ...]:
    out: list[str] = []
    for c in components:
        if c in ("", "."):
            continue
        if c == "..":
            if not out:
                raise PathOutsideWorkspace(
                    f"{path!r} climbs out of the workspace with '..'", path=path
                )
            out.pop()
        else:
            out.append(c)
    return tuple(out)


def _below(path: str, base: str) -> str | None:
    """``path`` relative to ``base`` ("" for base itself), or None when it is not below it."""
    if path == base:
        return ""
    prefix = base.rstrip("/") + "/"
    return path[len(prefix) :] if path.startswith(prefix) else None


def _readlink(name: str, dirfd: int) -> str | None:
    try:
        return os.readlink(name, dir_fd=dirfd)
    except OSError as exc:
        if exc.errno in (errno.EINVAL, errno.ENOENT):
            return None
        raise


def _mkdir_at(name: str, dirfd: int) -> None:
    with suppress(FileExistsError):
        os.mkdir(name, 0o777, dir_fd=dirfd)


def _discover_credential_inodes(root: str, homes: Sequence[str]) -> Iterator[tuple[int, int]]:
    """Walks the workspace (pruning generated trees) and the home stores for credential files."""
    budget = _INODE_SCAN_LIMIT
    skip = {".git", "node_modules", "target", ".venv", "__pycache__"}
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        rel_parts = [] if rel == "." else rel.split(os.sep)
        dirnames[:] = [d for d in dirnames if d not in skip]
        for f in filenames:
            if workspace_reason([*rel_parts, f]) is not None:
                yield from _inode(os.path.join(dirpath, f))
        budget -= len(filenames) + len(dirnames)
        if budget <= 0:
            break
    for home in homes:
        for dirpath, dirnames, filenames in os.walk(home):
            inside = home_store_reason(dirpath, [home]) is not None
            if not inside:  # a directory on the way to a store: only the stores below it
                dirnames[:] = [
                    d for d in dirnames if _leads_to_store(os.path.join(dirpath, d), home)
                ]
            for f in filenames:
                full = os.path.join(dirpath, f)
                if inside or home_store_reason(full, [home]) is not None:
                    yield from _inode(full)
            budget -= len(filenames) + len(dirnames)
            if budget <= 0:
                return


def _leads_to_store(path: str, home: str) -> bool:
    if home_store_reason(path, [home]) is not None:
        return True
    rel = os.path.relpath(path, home).casefold() + "/"
    return any(store.startswith(rel) for store in HOME_STORES)


def _inode(path: str) -> Iterator[tuple[int, int]]:
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return
    if stat.S_ISREG(st.st_mode):
        yield st.st_dev, st.st_ino
