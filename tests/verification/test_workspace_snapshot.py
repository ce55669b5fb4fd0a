"""Workspace snapshots: what a command changed, from metadata alone."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest

from codeward.verification import (
    PROTECTED_NAMES,
    Change,
    MutationLedger,
    SnapshotError,
    WorkspaceSnapshot,
    _snapshot,
    record_bash_changes,
)
from codeward.workspace import PROTECTED_DIRS


def take(root: Path, **kwargs: object) -> WorkspaceSnapshot:
    return WorkspaceSnapshot.take(root, **kwargs)  # type: ignore[arg-type]


def changes(before: WorkspaceSnapshot, root: Path) -> list[tuple[str, str, str]]:
    return [(c.path, c.kind, c.file_type) for c in before.diff(take(root))]


def test_a_snapshot_lists_files_symlinks_and_directories(workspace: Path) -> None:
    (workspace / "src" / "pkg").mkdir(parents=True)
    (workspace / "src" / "pkg" / "mod.py").write_text("x = 1\n")
    (workspace / "link").symlink_to("src/pkg/mod.py")
    os.mkfifo(workspace / "pipe")
    snap = take(workspace)
    assert snap.complete and not snap.unreadable
    assert sorted(snap.paths()) == ["link", "pipe", "src", "src/pkg", "src/pkg/mod.py"]
    state = snap.state("src/pkg/mod.py")
    assert state is not None and state.file_type == "file" and state.size == 6
    assert snap.state("link").file_type == "symlink"  # type: ignore[union-attr]
    assert snap.state("pipe").file_type == "other"  # type: ignore[union-attr]
    assert snap.state("src").file_type == "directory"  # type: ignore[union-attr]
    assert snap.state("missing") is None
    assert snap.root == str(workspace)


def test_create_modify_delete(workspace: Path) -> None:
    (workspace / "keep.txt").write_text("same")
    (workspace / "edit.txt").write_text("old")
    (workspace / "gone.txt").write_text("bye")
    before = take(workspace)
    assert before.diff(take(workspace)) == []
    (workspace / "new.txt").write_text("hello")
    (workspace / "edit.txt").write_text("new content")
    (workspace / "gone.txt").unlink()
    assert changes(before, workspace) == [
        ("edit.txt", "modified", "file"),
        ("gone.txt", "deleted", "file"),
        ("new.txt", "created", "file"),
    ]


def test_rename_is_a_deletion_and_a_creation(workspace: Path) -> None:
    (workspace / "a.txt").write_text("content")
    (workspace / "b.txt").write_text("other")
    before = take(workspace)
    os.rename(workspace / "a.txt", workspace / "c.txt")
    assert changes(before, workspace) == [
        ("a.txt", "deleted", "file"),
        ("c.txt", "created", "file"),
    ]
    # rename over an existing file: same name, another inode
    before = take(workspace)
    os.rename(workspace / "c.txt", workspace / "b.txt")
    assert changes(before, workspace) == [
        ("b.txt", "modified", "file"),
        ("c.txt", "deleted", "file"),
    ]


def test_mode_changes_are_changes(workspace: Path) -> None:
    script = workspace / "run.sh"
    script.write_text("echo hi\n")
    script.chmod(0o644)
    (workspace / "dir").mkdir()
    before = take(workspace)
    script.chmod(0o755)
    (workspace / "dir").chmod(0o700)
    assert changes(before, workspace) == [
        ("dir", "modified", "directory"),
        ("run.sh", "modified", "file"),
    ]


def test_same_size_and_mtime_is_caught_by_ctime(workspace: Path) -> None:
    """A rewrite that restores size and mtime (``touch -r``) still moves the ctime."""
    target = workspace / "data.bin"
    target.write_bytes(b"A" * 64)
    st = target.stat()
    before = take(workspace)
    with open(target, "r+b") as f:  # same inode, same size
        f.write(b"B" * 64)
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    after_st = target.stat()
    assert (after_st.st_size, after_st.st_mtime_ns, after_st.st_ino) == (
        st.st_size,
        st.st_mtime_ns,
        st.st_ino,
    )
    if after_st.st_ctime_ns == st.st_ctime_ns:
        pytest.skip("this file system's ctime did not move (coarse timestamps)")
    assert changes(before, workspace) == [("data.bin", "modified", "file")]


def test_the_documented_limit_same_metadata_is_no_change(workspace: Path) -> None:
    """The limit, pinned: two snapshots with identical metadata compare equal, whatever
    the bytes. Only the ctime tick makes a real rewrite visible (see the module docs)."""
    target = workspace / "data.bin"
    target.write_bytes(b"A" * 8)
    before = take(workspace)
    packed = before._states["data.bin"]  # the 52 bytes a path is compared by
    assert len(packed) == _snapshot._STATE.size == 52
    after = WorkspaceSnapshot(before.root, dict(before._states), frozenset(), True, frozenset())
    target.write_bytes(b"B" * 8)  # bytes differ, metadata in `after` does not
    assert before.diff(after) == []


def test_append_and_truncate(workspace: Path) -> None:
    log = workspace / "log.txt"
    log.write_text("line\n")
    before = take(workspace)
    with open(log, "a") as f:
        f.write("more\n")
    assert changes(before, workspace) == [("log.txt", "modified", "file")]
    before = take(workspace)
    os.truncate(log, 0)
    assert changes(before, workspace) == [("log.txt", "modified", "file")]


def test_symlinks_are_never_followed(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s3cret")
    (workspace / "out").symlink_to(outside)
    (workspace / "f").symlink_to("a")
    before = take(workspace)
    assert sorted(before.paths()) == ["f", "out"]
    (outside / "secret.txt").write_text("changed outside")
    (outside / "new.txt").write_text("x")
    assert changes(before, workspace) == []  # nothing inside the workspace changed
    # a retargeted symlink is a new inode: modified
    (workspace / "f").unlink()
    (workspace / "f").symlink_to("b")
    assert changes(before, workspace) == [("f", "modified", "symlink")]


def test_a_file_replaced_by_a_directory(workspace: Path) -> None:
    (workspace / "x").write_text("file")
    before = take(workspace)
    (workspace / "x").unlink()
    (workspace / "x").mkdir()
    (workspace / "x" / "inner").write_text("i")
    assert changes(before, workspace) == [
        ("x", "modified", "directory"),
        ("x/inner", "created", "file"),
    ]


def test_empty_directories_count(workspace: Path) -> None:
    before = take(workspace)
    (workspace / "empty").mkdir()
    assert changes(before, workspace) == [("empty", "created", "directory")]
    before = take(workspace)
    (workspace / "empty").rmdir()
    assert changes(before, workspace) == [("empty", "deleted", "directory")]


@pytest.mark.parametrize("name", sorted(PROTECTED_NAMES))
def test_protected_top_level_names_are_skipped(workspace: Path, name: str) -> None:
    before = take(workspace)
    target = workspace / name
    if name in PROTECTED_DIRS:
        target.mkdir()
        (target / "config").write_text("x")
    else:
        target.write_text("x")
    after = take(workspace)
    assert before.diff(after) == []
    assert after.skipped == {name}
    assert len(after) == 0


@pytest.mark.parametrize("name", [".GIT", ".Git", ".Vscode", ".BashRC", ".MCP.json"])
def test_other_spellings_of_protected_names_are_seen(workspace: Path, name: str) -> None:
    """Only the exact names are read-only in the sandbox: a command can write `.Vscode/x`,
    so the snapshot must see it (skipping it left the effect digest unchanged)."""
    before = take(workspace)
    target = workspace / name
    if name.lower() in PROTECTED_DIRS:
        target.mkdir()
        (target / "tasks.sh").write_text("x")
        expected = [(name, "created", "directory"), (f"{name}/tasks.sh", "created", "file")]
    else:
        target.write_text("x")
        expected = [(name, "created", "file")]
    assert changes(before, workspace) == expected
    assert take(workspace).skipped == set()


def test_protected_names_only_at_the_top(workspace: Path) -> None:
    (workspace / "sub").mkdir()
    before = take(workspace)
    (workspace / "sub" / ".git").mkdir()
    (workspace / "sub" / ".bashrc").write_text("x")
    assert changes(before, workspace) == [
        ("sub/.bashrc", "created", "file"),
        ("sub/.git", "created", "directory"),
    ]


def test_the_list_is_the_sandboxs() -> None:
    from codeward import _native, workspace

    assert PROTECTED_NAMES is workspace.PROTECTED_NAMES
    dirs, files = _native.protected_names()
    assert frozenset(dirs + files) == PROTECTED_NAMES


def test_custom_skip_list(workspace: Path) -> None:
    (workspace / "node_modules").mkdir()
    (workspace / ".git").mkdir()
    snap = take(workspace, skip_top=("node_modules",))
    assert sorted(snap.paths()) == [".git"]


def test_too_many_entries_makes_it_incomplete(workspace: Path) -> None:
    for i in range(20):
        (workspace / f"f{i}").write_text("x")
    snap = take(workspace, max_entries=10)
    assert not snap.complete
    assert len(snap) <= 10
    ledger = MutationLedger()
    recorded = record_bash_changes(ledger, take(workspace), snap, workspace)
    assert recorded == [Change(".", "modified", "directory")]
    (entry,) = ledger.entries()
    assert entry.path == "." and entry.content_digest.startswith("meta:")
    # fail closed: the same incomplete comparison again is another unknown change
    first = ledger.effect_digest()
    record_bash_changes(ledger, take(workspace), snap, workspace)
    assert ledger.effect_digest() != first


def test_too_deep_makes_it_incomplete(workspace: Path) -> None:
    fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(_snapshot.MAX_DEPTH + 2):  # deeper than a path can name
            os.mkdir("d", dir_fd=fd)
            child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
    finally:
        os.close(fd)
    snap = take(workspace)
    assert not snap.complete
    assert len(snap) == _snapshot.MAX_DEPTH


def test_bad_roots_are_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    (tmp_path / "dir").mkdir()
    (tmp_path / "link").symlink_to("dir")
    for root in (tmp_path / "missing", tmp_path / "file", tmp_path / "link"):
        with pytest.raises(SnapshotError):
            take(root)
    with pytest.raises(SnapshotError):
        take(tmp_path / "dir", max_entries=0)
    with pytest.raises(SnapshotError):
        take(tmp_path / "dir").diff(take(tmp_path))


@pytest.mark.skipif(not hasattr(os, "fork") or os.geteuid() != 0, reason="needs root to drop")
def test_an_unreadable_directory_is_blind_not_deleted() -> None:
    """As an unprivileged user: a directory made unreadable is reported modified, and
    the files inside are neither listed nor reported deleted."""
    base = Path(tempfile.mkdtemp(prefix="a3s-verif-"))  # /tmp itself: nobody can enter
    os.chmod(base, 0o777)
    try:
        _unreadable_directory_as_nobody(base)
    finally:
        shutil.rmtree(base)


def _unreadable_directory_as_nobody(base: Path) -> None:
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop to nobody, build, compare, report through the pipe
        code = 1
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            root = base / "ws"
            root.mkdir()
            (root / "locked").mkdir()
            (root / "locked" / "a.txt").write_text("a")
            before = WorkspaceSnapshot.take(root)
            os.chmod(root / "locked", 0)
            after = WorkspaceSnapshot.take(root)
            again = WorkspaceSnapshot.take(root)
            result = repr(
                (
                    [(c.path, c.kind) for c in before.diff(after)],
                    sorted(after.unreadable),
                    after.complete,
                    after.diff(again),
                )
            )
            os.write(write_fd, result.encode())
            os.chmod(root / "locked", 0o755)
            code = 0
        except BaseException as exc:
            os.write(write_fd, repr(exc).encode())
        finally:
            os._exit(code)
    os.close(write_fd)
    with os.fdopen(read_fd) as pipe:
        result = pipe.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, result
    assert result == repr(([("locked", "modified")], ["locked"], True, []))


def test_files_without_read_permission_are_compared(workspace: Path) -> None:
    """Only metadata: a file without read permission is still listed and compared."""
    secret = workspace / "noread"
    secret.write_text("x")
    secret.chmod(0)
    before = take(workspace)
    assert "noread" in before
    secret.chmod(0o600)
    after = take(workspace)
    assert [(c.path, c.kind) for c in before.diff(after)] == [("noread", "modified")]
    assert stat.S_IMODE(after.state("noread").mode) == 0o600  # type: ignore[union-attr]


def test_timestamps_beyond_64_bit_nanoseconds(workspace: Path) -> None:
    """``touch -d 2400-01-01`` is legal and must not break the walk."""
    far = workspace / "far"
    far.write_text("x")
    try:
        os.utime(far, ns=(2**63 + 5, 2**63 + 5))
    except OSError:
        pytest.skip("this file system refuses such times")
    before = take(workspace)
    state = before.state("far")
    assert state is not None and state.mtime_ns == far.stat().st_mtime_ns
    os.utime(far, ns=(-(2**63) - 7, -(2**63) - 7))
    assert changes(before, workspace) == [("far", "modified", "file")]


def test_a_directory_swapped_for_a_symlink_during_walks(workspace: Path, tmp_path: Path) -> None:
    """Race: a writer flips a directory and a symlink out of the workspace while snapshots
    and hashing run. Nothing outside is ever listed or read."""
    import hashlib
    import threading

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside secret")
    secret_digest = hashlib.sha256(b"outside secret").hexdigest()
    for i in range(30):
        (workspace / f"pad{i}").write_text("x")
    swap, parked = workspace / "swap", workspace / "parked"
    parked.mkdir()
    (parked / "secret.txt").write_text("inside")
    stop = threading.Event()

    def flip() -> None:
        while not stop.is_set():
            try:
                os.rename(parked, swap)
                os.rename(swap, parked)
                os.symlink(outside, swap)
                os.unlink(swap)
            except OSError:
                pass

    writer = threading.Thread(target=flip)
    writer.start()
    try:
        for _ in range(200):
            before = take(workspace)
            after = take(workspace)
            ledger = MutationLedger()
            record_bash_changes(ledger, before, after, workspace)
            for snap in (before, after):
                if "swap/secret.txt" in snap:
                    assert snap.state("swap/secret.txt").size == len("inside")  # type: ignore[union-attr]
            assert secret_digest not in {e.content_digest for e in ledger.entries()}
    finally:
        stop.set()
        writer.join()
