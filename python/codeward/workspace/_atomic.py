"""Atomic file replacement in a workspace: a reader sees the old file or the new one, never half.

The new content goes to an adjacent temporary file in the same directory
(opened through the walked directory descriptor), is fsynced, then renamed
over the destination, and the directory is fsynced. Any failure, cancellation
or kill before the rename leaves the destination untouched; the temporary
file is removed on every path that can run code. A SIGKILL can leave that one
temporary file behind (``.<name>.<random>.a3s-tmp``), never a half-written
destination.

:class:`AtomicBatch` lands several files together (the patch tool): every
new content is written and fsynced first, then the files are renamed into
place one by one; if a rename fails, the ones already done are put back from
the originals it kept (hard links named ``.<name>.<random>.a3s-orig``). A
journal outside the workspace (``_journal``) makes this hold across a
SIGKILL too: :func:`recover_interrupted_batches` rolls an interrupted batch
back, or, past its commit point, forward.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from types import TracebackType

from .._errors import CredentialBoundaryError, DestinationExists, WorkspaceError
from ._journal import (
    FileId,
    Journal,
    JournalEntry,
    Recovery,
    file_id,
    recover_interrupted_batches,
)
from ._workspace import Workspace

__all__ = [
    "AtomicBatch",
    "AtomicWriter",
    "BatchChange",
    "Entry",
    "FileChanged",
    "Recovery",
    "WriteResult",
    "entry_lstat",
    "recover_interrupted_batches",
    "write_atomic",
]

_TEMP_SUFFIX = ".a3s-tmp"
_ORIG_SUFFIX = ".a3s-orig"


class FileChanged(WorkspaceError):
    """The file changed between the read a new content was computed from and the write.

    Raised when ``expect`` (the ``stat`` of that read) no longer describes the
    file: another process wrote it meanwhile, and writing would lose its change.
    """


@dataclass(frozen=True)
class WriteResult:
    """What a committed write did: the relative path, bytes written, whether it replaced a file."""

    relpath: str
    bytes: int
    overwritten: bool


class AtomicWriter:
    """Writes a file under a workspace atomically; use as a context manager.

    ``overwrite=False`` refuses an existing destination up front *and* at the
    commit, even if the file appeared while the content was being written.
    An existing file's permission bits (minus set-id bits) and, for a root
    caller, its owner are kept. ``expect`` (the ``stat`` of the file the new
    content was computed from) makes the write fail with :class:`FileChanged`
    if the destination is no longer that file, checked on entry and again
    just before the rename.

        with AtomicWriter(ws, "out/report.txt", overwrite=True) as w:
            w.write(b"...")
            result = w.commit()
    """

    def __init__(
        self,
        workspace: Workspace,
        path: str,
        *,
        overwrite: bool = True,
        create_parents: bool = True,
        expect: os.stat_result | None = None,
    ) -> None:
        self.workspace = workspace
        self.path = path
        self.overwrite = overwrite
        self.create_parents = create_parents
        self.expect = expect
        self._stack = contextlib.ExitStack()
        self._dirfd = -1
        self._name = ""
        self._parts: tuple[str, ...] = ()
        self._temp = ""
        self._fd = -1
        self._existing: os.stat_result | None = None
        self._temp_id: FileId | None = None
        self._temp_inode: tuple[int, int] | None = None  # what abort() may remove
        self._written = 0
        self._committed = False

    def __enter__(self) -> AtomicWriter:
        try:
            self._dirfd, self._name, self._parts = self._stack.enter_context(
                self.workspace.open_parent(self.path, create=self.create_parents)
            )
            self._existing = _lstat(self._name, self._dirfd)
            if self._existing is not None:
                if stat.S_ISDIR(self._existing.st_mode):
                    raise WorkspaceError(f"{self.path!r} is a directory", path=self.path)
                if not self.overwrite:
                    raise DestinationExists(
                        f"{self.path!r} already exists and overwriting was not requested",
                        path=self.path,
                    )
                if stat.S_ISREG(self._existing.st_mode):
                    self.workspace.check_links(self._existing, self._parts, self.path)
            self._check_expected(self._existing)
            self._open_temp()
        except BaseException:
            self._stack.close()
            raise
        return self

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Appends ``data`` to the temporary file."""
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]
            self._written += n

    @property
    def bytes_written(self) -> int:
        return self._written

    @property
    def parts(self) -> tuple[str, ...]:
        """The destination's components after the walk (symlinks inside the workspace resolved).

        Empty before the writer is entered. A caller that must not write through
        a symlink compares them with :meth:`Workspace.parts` of the path it gave.
        """
        return self._parts

    def fileno(self) -> int:
        """The temporary file's write descriptor, for positional writes (``os.pwrite``).

        It belongs to the writer: do not close it. Valid until :meth:`prepare`,
        :meth:`commit` or :meth:`abort`.
        """
        if self._fd < 0:
            raise WorkspaceError("the writer is not open", path=self.path)
        return self._fd

    def open_reader(self) -> int:
        """A new read-only descriptor on the temporary file, which the caller must close.

        It is opened by name in the walked directory and checked to be the
        inode being written, so it reads back exactly what was written (to hash
        it while the writing goes on, for instance).
        """
        ours = os.fstat(self.fileno())
        fd = os.open(self._temp, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=self._dirfd)
        try:
            theirs = os.fstat(fd)
            same = (ours.st_dev, ours.st_ino) == (theirs.st_dev, theirs.st_ino)
            if not same or not stat.S_ISREG(theirs.st_mode):
                raise WorkspaceError(
                    f"the temporary file of {self.path!r} was replaced while it was being written",
                    path=self.path,
                )
        except BaseException:
            os.close(fd)
            raise
        return fd

    def commit(self) -> WriteResult:
        """Makes the new content durable and puts it in place; returns what happened."""
        self.prepare()
        overwritten = False
        if self.overwrite:
            current = _lstat(self._name, self._dirfd)
            self._check_expected(current)
            overwritten = current is not None
            os.rename(self._temp, self._name, src_dir_fd=self._dirfd, dst_dir_fd=self._dirfd)
        else:
            self._link_no_clobber()
        self._temp = ""
        self._committed = True
        self.sync_dir()
        return WriteResult("/".join(self._parts), self._written, overwritten)

    def prepare(self) -> None:
        """Gives the temporary file the kept mode and owner, fsyncs and closes it (idempotent)."""
        if self._fd < 0:
            if not self._temp:
                raise WorkspaceError("the writer is not open", path=self.path)
            return
        existing = self._existing
        if existing is not None and stat.S_ISREG(existing.st_mode):
            os.fchmod(self._fd, stat.S_IMODE(existing.st_mode) & ~(stat.S_ISUID | stat.S_ISGID))
            if os.geteuid() == 0:
                with contextlib.suppress(OSError):
                    os.fchown(self._fd, existing.st_uid, existing.st_gid)
        os.fsync(self._fd)
        self._temp_id = file_id(os.fstat(self._fd))
        os.close(self._fd)
        self._fd = -1

    @property
    def temp_id(self) -> FileId | None:
        """The temporary file's identity (device, inode, size, mtime) once :meth:`prepare` ran."""
        return self._temp_id

    def sync_dir(self) -> None:
        """fsyncs the destination's directory, where the filesystem allows it."""
        with contextlib.suppress(OSError):  # some filesystems cannot fsync a directory
            os.fsync(self._dirfd)

    def _link_no_clobber(self) -> None:
        try:  # link() never replaces: the no-clobber commit even if the name appeared meanwhile
            os.link(
                self._temp,
                self._name,
                src_dir_fd=self._dirfd,
                dst_dir_fd=self._dirfd,
                follow_symlinks=False,
            )
        except FileExistsError:
            raise DestinationExists(
                f"{self.path!r} appeared while it was being written; it was left as it is",
                path=self.path,
            ) from None
        os.unlink(self._temp, dir_fd=self._dirfd)

    def _check_expected(self, current: os.stat_result | None) -> None:
        if self.expect is not None and not same_file_state(self.expect, current):
            raise FileChanged(
                f"{self.path!r} changed since it was read; read it again and redo the change",
                path=self.path,
            )

    def abort(self) -> None:
        """Drops the temporary file; the destination is untouched.

        Only the file this writer created is removed: a name that now holds
        another file (a sandboxed command may have replaced it) is left alone.
        """
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if self._temp:
            with contextlib.suppress(OSError):
                now = _lstat(self._temp, self._dirfd)
                if now is not None and (now.st_dev, now.st_ino) == self._temp_inode:
                    os.unlink(self._temp, dir_fd=self._dirfd)
            self._temp = ""

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if not self._committed:
                self.abort()
        finally:
            self._stack.close()

    def _open_temp(self) -> None:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        for temp in _adjacent_names(self._name, _TEMP_SUFFIX):
            try:
                self._fd = os.open(temp, flags, 0o666, dir_fd=self._dirfd)
            except FileExistsError:
                continue
            self._temp = temp
            st = os.fstat(self._fd)
            self._temp_inode = (st.st_dev, st.st_ino)
            return
        raise OSError(errno.EEXIST, f"no free temporary name next to {self.path!r}")


def write_atomic(
    workspace: Workspace,
    path: str,
    data: bytes,
    *,
    overwrite: bool = True,
    create_parents: bool = True,
    expect: os.stat_result | None = None,
) -> WriteResult:
    """Writes ``data`` to ``path`` under ``workspace`` atomically (see :class:`AtomicWriter`)."""
    with AtomicWriter(
        workspace, path, overwrite=overwrite, create_parents=create_parents, expect=expect
    ) as writer:
        writer.write(data)
        return writer.commit()


class _Deletion:
    """A staged removal: the walked parent directory, held open until the batch ends."""

    def __init__(self, dirfd: int, name: str, parts: tuple[str, ...], path: str) -> None:
        self.dirfd = dirfd
        self.name = name
        self.parts = parts
        self.path = path
        self.expect: os.stat_result | None = None
        self.kept = ""  # the name the removed file has until the batch ends


@dataclass(frozen=True)
class BatchChange:
    """One file a committed batch changed: its relative path and what happened to it."""

    relpath: str
    action: str  # "created", "replaced" or "deleted"
    bytes: int


# Called with the name of each step of AtomicBatch.commit ("journaled", "kept", "renamed:<i>",
# "committed", "cleaned:<i>"): the kill tests stop a child there. None in production.
_step_hook: Callable[[str], None] | None = None


def _step(name: str) -> None:
    if _step_hook is not None:
        _step_hook(name)


class AtomicBatch:
    """Several file changes that land together or not at all; use as a context manager.

    Stage every change first (:meth:`write`, :meth:`delete`): new contents go
    to fsynced temporary files, deletions hold their directory open. Nothing
    is visible until :meth:`commit`, which re-checks each file, writes a
    journal outside the workspace, keeps each original under a hard link,
    renames everything into place, and, if any step fails, puts the originals
    back before re-raising. Leaving the block without a commit drops
    everything staged.

    A SIGKILL in the middle of the renames cannot run the restore: the
    journal lets :func:`recover_interrupted_batches` (which the patch tool
    calls before each run) finish the batch later: every file old again, or,
    if the kill came after the commit point, every file new.
    """

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self._stack = contextlib.ExitStack()
        self._order: list[AtomicWriter | _Deletion] = []
        self._kept: set[int] = set()  # indices of the changes whose original was linked
        self._committed = False

    def __enter__(self) -> AtomicBatch:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stack.close()

    @staticmethod
    def recover(workspace: Workspace) -> list[Recovery]:
        """Finishes the batches of ``workspace`` a kill interrupted (see
        :func:`recover_interrupted_batches`)."""
        return recover_interrupted_batches(workspace)

    def write(
        self, path: str, data: bytes, *, expect: os.stat_result | None = None, create: bool = False
    ) -> None:
        """Stages ``data`` for ``path``; ``create`` requires that no file is there."""
        writer = AtomicWriter(
            self.workspace, path, overwrite=not create, create_parents=True, expect=expect
        )
        self._stack.enter_context(writer)
        writer.write(data)
        writer.prepare()
        self._order.append(writer)

    def delete(self, path: str, *, expect: os.stat_result | None = None) -> None:
        """Stages the removal of the name ``path``: a regular file or a symlink.

        A symlink is removed itself, never its target; one that leads out of
        the workspace, or to a credential, is refused like any path through
        it. ``expect`` is the ``lstat`` of the name as it was read.
        """
        dirfd, name, parts = self._stack.enter_context(_open_entry_parent(self.workspace, path))
        st = _lstat(name, dirfd)
        if st is None:
            raise FileNotFoundError(errno.ENOENT, f"{path!r} does not exist", path)
        if stat.S_ISLNK(st.st_mode):
            self.workspace.resolve(path)  # refuses a link leading outside or to a credential
        elif not stat.S_ISREG(st.st_mode):
            raise WorkspaceError(f"{path!r} is not a regular file or a symlink", path=path)
        else:
            self.workspace.check_links(st, parts, path)
        deletion = _Deletion(dirfd, name, parts, path)
        deletion.expect = st if expect is None else expect
        if not same_file_state(deletion.expect, st):
            raise FileChanged(f"{path!r} changed since it was read", path=path)
        self._order.append(deletion)

    def commit(self) -> list[BatchChange]:
        """Puts every staged change in place, or none of them; returns what changed."""
        if self._committed:
            raise WorkspaceError("the batch was already committed", path="")
        entries, originals = self._check_and_plan()
        if not entries:
            self._committed = True
            return []
        journal = Journal.create(self.workspace, entries)
        done: list[tuple[AtomicWriter | _Deletion, str]] = []
        try:
            _step("journaled")
            self._keep_originals(entries, originals)
            _step("kept")
            for i, item in enumerate(self._order):
                entry = entries[i]
                if isinstance(item, AtomicWriter):
                    if item.overwrite:
                        os.rename(
                            item._temp, item._name, src_dir_fd=item._dirfd, dst_dir_fd=item._dirfd
                        )
                    else:
                        item._link_no_clobber()
                    item._temp = ""
                    item._committed = True
                else:
                    item.kept = entry.orig
                    os.rename(item.name, item.kept, src_dir_fd=item.dirfd, dst_dir_fd=item.dirfd)
                done.append((item, entry.orig))
                _step(f"renamed:{i}")
            _sync_dirs(self._order)
            journal.mark_committed()  # the commit point: from here on, the batch stands
        except BaseException:
            clean = self._roll_back(done, entries)
            journal.close(remove=clean)  # left behind, a later recovery finishes the rollback
            raise
        self._committed = True
        clean = True
        try:
            _step("committed")
            for i, (item, original) in enumerate(done):
                if original:
                    try:
                        os.unlink(original, dir_fd=_dirfd_of(item))
                    except FileNotFoundError:
                        pass
                    except OSError:
                        clean = False
                _step(f"cleaned:{i}")
            _sync_dirs(self._order)
        except BaseException:
            clean = False
            raise
        finally:
            journal.close(remove=clean)
        changes = []
        for item, original in done:
            if isinstance(item, AtomicWriter):
                action = "replaced" if original else "created"
                changes.append(BatchChange("/".join(item.parts), action, item.bytes_written))
            else:
                changes.append(BatchChange("/".join(item.parts), "deleted", 0))
        return changes

    def _check_and_plan(self) -> tuple[list[JournalEntry], dict[int, os.stat_result]]:
        """Re-checks every staged change and names what the journal must record.

        Returns one entry per staged change, in order, and the ``lstat`` of
        each original that is to be kept, by the index of its change.
        """
        entries: list[JournalEntry] = []
        originals: dict[int, os.stat_result] = {}
        for i, item in enumerate(self._order):
            if isinstance(item, AtomicWriter):
                current = _lstat(item._name, item._dirfd)
                if item.overwrite:
                    item._check_expected(current)
                elif current is not None:
                    raise DestinationExists(
                        f"{item.path!r} appeared meanwhile; the patch was not applied",
                        path=item.path,
                    )
                orig = ""
                if current is not None:
                    orig = _free_name(item._name, item._dirfd, _ORIG_SUFFIX)
                    originals[i] = current
                entries.append(
                    JournalEntry(
                        item.parts[:-1],
                        item._name,
                        item._temp,
                        item.temp_id,
                        orig,
                        file_id(current),
                        current is not None,
                    )
                )
            else:
                current = _lstat(item.name, item.dirfd)
                if item.expect is None or not same_file_state(item.expect, current):
                    raise FileChanged(f"{item.path!r} changed since it was read", path=item.path)
                orig = _free_name(item.name, item.dirfd, _ORIG_SUFFIX)
                entries.append(
                    JournalEntry(item.parts[:-1], item.name, "", None, orig, file_id(current), True)
                )
        return entries, originals

    def _keep_originals(
        self, entries: list[JournalEntry], originals: dict[int, os.stat_result]
    ) -> None:
        """Hard-links each original to be replaced under the name the journal gave it."""
        for i, current in originals.items():
            item = self._order[i]
            assert isinstance(item, AtomicWriter)
            kept = entries[i].orig
            os.link(
                item._name,
                kept,
                src_dir_fd=item._dirfd,
                dst_dir_fd=item._dirfd,
                follow_symlinks=False,
            )
            self._kept.add(i)
            if file_id(_lstat(kept, item._dirfd)) != file_id(current):  # swapped since the check
                raise FileChanged(
                    f"{item.path!r} changed while the patch was being applied", path=item.path
                )
        _sync_dirs([self._order[i] for i in originals])

    def _roll_back(
        self, done: list[tuple[AtomicWriter | _Deletion, str]], entries: list[JournalEntry]
    ) -> bool:
        """Undoes the renames done and drops the kept originals; True if nothing failed."""
        clean = True
        for item, original in reversed(done):
            clean = _undo(item, original) and clean
        renamed = {id(item) for item, _ in done}
        for i in self._kept:
            item = self._order[i]
            if id(item) not in renamed:
                try:
                    os.unlink(entries[i].orig, dir_fd=_dirfd_of(item))
                except FileNotFoundError:
                    pass  # never made
                except OSError:
                    clean = False
        return clean


@dataclass(frozen=True)
class Entry:
    """A name in the workspace as it is, not followed: its walked components, its ``lstat``
    (None when missing) and, for a symlink, the link's text."""

    parts: tuple[str, ...]
    st: os.stat_result | None
    link: str | None


def entry_lstat(workspace: Workspace, path: str) -> Entry:
    """What is at ``path`` itself: unlike :meth:`Workspace.resolve`, a symlink at the last
    name is not followed (it is what a deletion removes)."""
    with _open_entry_parent(workspace, path) as (dirfd, name, parts):
        st = _lstat(name, dirfd)
        link = None
        if st is not None and stat.S_ISLNK(st.st_mode):
            link = os.readlink(name, dir_fd=dirfd)
        return Entry(parts, st, link)


@contextlib.contextmanager
def _open_entry_parent(
    workspace: Workspace, path: str
) -> Iterator[tuple[int, str, tuple[str, ...]]]:
    """Like :meth:`Workspace.open_parent`, but the last name stays as given (never resolved)."""
    parts = workspace.parts(path)
    if not parts:
        raise WorkspaceError("the workspace root itself is not a file", path=path)
    _refuse_credential(workspace, parts, path)
    with workspace.open_dir("/".join(parts[:-1]) or ".") as (dirfd, parent):
        walked = (*parent, parts[-1])
        _refuse_credential(workspace, walked, path)
        yield dirfd, parts[-1], walked


def _refuse_credential(workspace: Workspace, parts: tuple[str, ...], path: str) -> None:
    reason = workspace.credential_reason(parts)
    if reason is not None:
        raise CredentialBoundaryError(
            f"refused {path!r}: {reason}; the credential boundary keeps it from the tools",
            path=path,
        )


def _undo(item: AtomicWriter | _Deletion, original: str) -> bool:
    """Puts back what one committed step of a batch replaced; False if that failed (the
    step's own error is the one raised, and the journal stays for a later recovery)."""
    try:
        if isinstance(item, _Deletion):
            os.rename(original, item.name, src_dir_fd=item.dirfd, dst_dir_fd=item.dirfd)
        elif original:
            os.rename(original, item._name, src_dir_fd=item._dirfd, dst_dir_fd=item._dirfd)
        else:
            os.unlink(item._name, dir_fd=item._dirfd)
    except OSError:
        return False
    return True


def _dirfd_of(item: AtomicWriter | _Deletion) -> int:
    return item._dirfd if isinstance(item, AtomicWriter) else item.dirfd


def _sync_dirs(items: Iterable[AtomicWriter | _Deletion]) -> None:
    """fsyncs each distinct directory of ``items`` once."""
    seen: set[tuple[int, int]] = set()
    for item in items:
        fd = _dirfd_of(item)
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) not in seen:
            seen.add((st.st_dev, st.st_ino))
            with contextlib.suppress(OSError):  # some filesystems cannot fsync a directory
                os.fsync(fd)


def _free_name(name: str, dirfd: int, suffix: str) -> str:
    for candidate in _adjacent_names(name, suffix):
        if _lstat(candidate, dirfd) is None:
            return candidate
    raise OSError(errno.EEXIST, f"no free name next to {name!r}")


def _adjacent_names(name: str, suffix: str) -> list[str]:
    """Sixteen random hidden names next to ``name`` (bounded so a long name still fits)."""
    stem = name[:200]
    return [f".{stem}.{secrets.token_hex(6)}{suffix}" for _ in range(16)]


def same_file_state(expect: os.stat_result, current: os.stat_result | None) -> bool:
    """Whether ``current`` is still the file ``expect`` described: same inode, size and times."""
    if current is None:
        return False
    return (
        expect.st_dev == current.st_dev
        and expect.st_ino == current.st_ino
        and expect.st_size == current.st_size
        and expect.st_mtime_ns == current.st_mtime_ns
        and expect.st_ctime_ns == current.st_ctime_ns
    )


def _lstat(name: str, dirfd: int) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dirfd, follow_symlinks=False)
    except FileNotFoundError:
        return None
