"""SnapshotTracker: every snapshot equals a full walk, and it says when it had to walk.

Each case changes a real tree on the host, then checks that the tracker's
snapshot holds exactly what ``WorkspaceSnapshot.take`` sees, how many
directories it read (proportional to the change), and the fallback it names
when completeness cannot be proven (the watch budget, a queue overflow, a
mount, a hard link it cannot place, a fork, no inotify at all). The same
comparison through a real session and sandbox, after thousands of random
command scripts, is tests/verification/test_tracker_differential.py.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from codeward import _native
from codeward.verification import (
    MutationLedger,
    SnapshotTracker,
    WorkspaceSnapshot,
    _inotify,
    _tracker,
    record_bash_changes,
)

pytestmark = pytest.mark.skipif(
    not hasattr(_native, "inotify_init"), reason="the tracker's events need Linux inotify"
)


def tree(root: Path, dirs: int = 6, files: int = 4) -> None:
    for d in range(dirs):
        sub = root / f"d{d}" / "inner"
        sub.mkdir(parents=True)
        for f in range(files):
            (sub / f"f{f}.txt").write_text(f"{d}-{f}\n")
        (root / f"d{d}" / "top.txt").write_text("t\n")
    (root / "README.md").write_text("r\n")


def assert_same(tracker: SnapshotTracker, root: Path, **take: object) -> WorkspaceSnapshot:
    snap = tracker.snapshot()
    full = WorkspaceSnapshot.take(root, **take)  # type: ignore[arg-type]
    if not snap.same_as(full):
        inc = {p: snap.state(p) for p in snap.paths()}
        walk = {p: full.state(p) for p in full.paths()}
        differ = sorted(p for p in inc.keys() & walk.keys() if inc[p] != walk[p])
        pytest.fail(
            f"tracker and walk differ: only tracked {sorted(inc.keys() - walk.keys())}, "
            f"only walked {sorted(walk.keys() - inc.keys())}, states {differ}, "
            f"unreadable {snap.unreadable} vs {full.unreadable}, "
            f"complete {snap.complete} vs {full.complete}"
        )
    assert [(c.path, c.kind) for c in snap.diff(full)] == []
    return snap


@pytest.fixture
def tracked(workspace: Path) -> tuple[SnapshotTracker, Path]:
    tree(workspace)
    tracker = SnapshotTracker(workspace)
    first = tracker.snapshot()
    assert not first.incremental and first.fallback is None
    assert first.directories_read == 1 + 6 * 2
    yield tracker, workspace
    tracker.close()


def _keep_mtime_rewrite(path: Path) -> None:
    """The same size and mtime, other bytes: only the ctime tells."""
    st = path.stat()
    data = path.read_bytes()
    path.write_bytes(bytes([data[0] ^ 1]) + data[1:])
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


MUTATIONS: dict[str, Callable[[Path], object]] = {
    "nothing": lambda r: None,
    "append": lambda r: (r / "d1/inner/f0.txt").open("a").write("more"),
    "create": lambda r: (r / "d2/new.txt").write_text("n"),
    "delete": lambda r: (r / "d3/inner/f1.txt").unlink(),
    "rename across directories": lambda r: os.rename(r / "d1/top.txt", r / "d4/inner/moved"),
    "move a directory": lambda r: os.rename(r / "d1/inner", r / "d5/inner/nested"),
    "chmod a file": lambda r: os.chmod(r / "d0/top.txt", 0o600),
    "chmod a directory": lambda r: os.chmod(r / "d0/inner", 0o700),
    "same size and mtime": lambda r: _keep_mtime_rewrite(r / "d2/inner/f2.txt"),
    "symlink": lambda r: os.symlink("d0", r / "link"),
    "directory replaced by a file": lambda r: (
        shutil.rmtree(r / "d3"),
        (r / "d3").write_text("a file now"),
    ),
    "file replaced by a directory": lambda r: (
        (r / "README.md").unlink(),
        (r / "README.md").mkdir(),
        (r / "README.md/x").write_text("x"),
    ),
    "deep new tree": lambda r: (
        (r / "n/a/b/c/d/e").mkdir(parents=True),
        (r / "n/a/b/c/d/e/leaf").write_text("l"),
        (r / "n/a/b/side").write_text("s"),
    ),
    "fifo": lambda r: os.mkfifo(r / "d4/pipe"),
    "truncate": lambda r: os.truncate(r / "d5/inner/f3.txt", 0),
    "protected name at the top": lambda r: (
        (r / ".git").mkdir(),
        (r / ".git/HEAD").write_text("x"),
    ),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_one_change_is_read_where_it_happened(tracked, name: str) -> None:
    tracker, root = tracked
    MUTATIONS[name](root)
    snap = assert_same(tracker, root)
    assert snap.incremental and snap.fallback is None
    assert snap.directories_read <= 8, snap.directories_read  # not the 13 of the tree
    again = assert_same(tracker, root)  # nothing changed since: nothing is read
    assert again.directories_read == 0 and again.incremental


def test_many_changes_in_a_row(tracked) -> None:
    tracker, root = tracked
    for name in sorted(MUTATIONS):
        MUTATIONS[name](root)
        assert_same(tracker, root)


def test_a_symlink_flip_and_a_directory_moved_out_and_back(tracked, tmp_path: Path) -> None:
    tracker, root = tracked
    os.symlink("d0", root / "flip")
    assert_same(tracker, root)
    os.unlink(root / "flip")
    os.symlink("d1", root / "flip")
    assert_same(tracker, root)
    outside = tmp_path / "outside"
    os.rename(root / "d2", outside)  # out of the workspace: its watches stay in the kernel
    assert_same(tracker, root)
    (outside / "inner" / "changed-outside").write_text("x")
    (outside / "top.txt").write_text("changed outside")
    os.rename(outside, root / "d2-back")  # and back in, changed: read whole again
    snap = assert_same(tracker, root)
    assert "d2-back/inner/changed-outside" in snap


def test_hard_links(tracked) -> None:
    """A write or chmod through one name changes every name: all are read again."""
    tracker, root = tracked
    os.link(root / "d0/inner/f0.txt", root / "d0/inner/same-dir-link")  # other name is read
    snap = assert_same(tracker, root)
    assert snap.fallback is None
    (root / "d0/inner/same-dir-link").open("a").write("through the link")
    assert_same(tracker, root)
    os.link(root / "d0/inner/f0.txt", root / "d1/far-link")  # a known multi-link inode
    assert assert_same(tracker, root).fallback is None
    (root / "d1/far-link").open("a").write("far")  # no event reaches d0/inner's watch
    snap = assert_same(tracker, root)
    assert snap.fallback is None and snap.directories_read == 1  # d1; d0/inner/f0.txt by lstat
    os.chmod(root / "d1/far-link", 0o640)
    assert_same(tracker, root)
    os.unlink(root / "d0/inner/same-dir-link")  # the others' link count and ctime change
    assert_same(tracker, root)
    os.unlink(root / "d1/far-link")
    assert_same(tracker, root)


def test_a_new_link_to_a_file_in_a_quiet_directory_walks_the_tree(tracked) -> None:
    tracker, root = tracked
    os.link(root / "d5/inner/f3.txt", root / "d0/new-link")  # d5/inner saw no event
    snap = assert_same(tracker, root)
    assert not snap.incremental
    assert snap.fallback is not None and "hard link" in snap.fallback
    assert assert_same(tracker, root).incremental  # and back to incremental


def test_the_watch_budget_falls_back_to_reading_those_directories(workspace: Path) -> None:
    tree(workspace)
    tracker = SnapshotTracker(workspace, watch_hub=_inotify.WatchHub(budget=3))
    try:
        first = tracker.snapshot()
        assert first.fallback is not None and "10 directories have no watch" in first.fallback
        for d in range(6):  # changes in watched and in unwatched directories
            (workspace / f"d{d}/inner/f0.txt").write_text("changed")
        snap = assert_same(tracker, workspace)
        assert snap.incremental and "watch budget (3) is spent" in (snap.fallback or "")
        assert snap.directories_read >= 10  # the unwatched ones, every time
        # no watch there names a file written through a shared mapping: not certain
        assert snap.uncertain is not None and "shared mapping" in snap.uncertain
        assert assert_same(tracker, workspace).directories_read >= 10
    finally:
        tracker.close()


def test_a_queue_overflow_walks_the_tree(tracked) -> None:
    """More events than fs.inotify.max_queued_events: the kernel drops some, says so."""
    tracker, root = tracked
    with open("/proc/sys/fs/inotify/max_queued_events") as f:
        limit = int(f.read())
    if limit > 100_000:
        pytest.skip(f"max_queued_events is {limit}: too many files to make here")
    flood = root / "d0" / "flood"
    flood.mkdir()
    assert_same(tracker, root)  # watched from here on
    for i in range(limit // 2 + 100):  # IN_CREATE and IN_CLOSE_WRITE each
        os.close(os.open(flood / f"{i}", os.O_CREAT | os.O_WRONLY, 0o600))
    snap = assert_same(tracker, root)
    assert not snap.incremental and "overflowed" in (snap.fallback or "")
    assert snap.uncertain is not None and "overflowed" in snap.uncertain  # events were lost
    again = assert_same(tracker, root)
    assert again.incremental and again.uncertain is None


def test_no_inotify_instance_means_a_walk_every_time(workspace: Path, monkeypatch) -> None:
    """As when fs.inotify.max_user_instances is spent (not exhausted here: the limit is the
    machine user's, shared with everything else it runs)."""

    def refuse() -> int:
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(_native, "inotify_init", refuse)
    tree(workspace)
    tracker = SnapshotTracker(workspace, watch_hub=_inotify.WatchHub())
    tracker.snapshot()
    (workspace / "d0" / "new").write_text("x")
    snap = assert_same(tracker, workspace)
    assert not snap.incremental and "no inotify instance" in (snap.fallback or "")
    assert snap.directories_read == 13


def test_a_new_process_after_fork_walks_and_leaves_the_parent_its_events(tracked) -> None:
    tracker, root = tracked
    (root / "d0/before-fork").write_text("x")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its copy of the instance is closed, a walk, equal anyway
        code = 1
        try:
            snap = tracker.snapshot()
            full = WorkspaceSnapshot.take(root)
            ok = snap.same_as(full) and "fork" in (snap.fallback or "")
            (root / "d1/from-child").write_text("x")
            os.write(write, b"ok" if ok else repr(snap.fallback).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    message = os.read(read, 4096)
    os.close(read)
    assert status == 0 and message == b"ok", message
    snap = assert_same(tracker, root)  # the parent still got every event
    assert snap.incremental and "d1/from-child" in snap and "d0/before-fork" in snap


def test_a_writer_racing_the_snapshots(tracked) -> None:
    """Directories created and filled while snapshots run (before their watch exists): once
    the writer stops, the tracker's next snapshot equals a walk."""
    tracker, root = tracked
    stop = threading.Event()

    def writer() -> None:
        n = 0
        while not stop.is_set():
            deep = root / "race" / f"r{n % 7}" / f"s{n}"
            deep.mkdir(parents=True, exist_ok=True)
            for i in range(5):
                (deep / f"f{i}").write_text(str(n))
            if n % 3 == 0:
                shutil.rmtree(root / "race" / f"r{(n + 3) % 7}", ignore_errors=True)
            n += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for _ in range(60):
            tracker.snapshot()
    finally:
        stop.set()
        thread.join()
    assert_same(tracker, root)
    assert assert_same(tracker, root).directories_read == 0


def test_incomplete_snapshots_are_walked_again(workspace: Path) -> None:
    tree(workspace)
    tracker = SnapshotTracker(workspace, max_entries=10)
    try:
        first = tracker.snapshot()
        assert not first.complete
        snap = tracker.snapshot()
        assert "incomplete" in (snap.fallback or "") and not snap.complete
        assert snap.same_as(WorkspaceSnapshot.take(workspace, max_entries=10))
    finally:
        tracker.close()


def test_the_workspace_directory_replaced(workspace: Path, tmp_path: Path) -> None:
    tree(workspace)
    tracker = SnapshotTracker(workspace)
    try:
        tracker.snapshot()
        os.rename(workspace, tmp_path / "old")
        workspace.mkdir()
        (workspace / "fresh").write_text("x")
        snap = assert_same(tracker, workspace)
        assert "replaced" in (snap.fallback or "")
    finally:
        tracker.close()


def test_diffs_between_tracked_snapshots_look_only_at_what_was_read(tracked) -> None:
    tracker, root = tracked
    a = tracker.snapshot()
    (root / "d0/x").write_text("x")
    b = tracker.snapshot()
    (root / "d1/inner/f0.txt").unlink()
    c = tracker.snapshot()
    full_a = WorkspaceSnapshot.take(root)  # now: equal to c
    assert [(x.path, x.kind) for x in a.diff(c)] == [
        ("d0/x", "created"),
        ("d1/inner/f0.txt", "deleted"),
    ]
    assert a.diff(c) == [x for x in a.diff(full_a)]
    assert [(x.path, x.kind) for x in c.diff(a)] == [
        ("d0/x", "deleted"),
        ("d1/inner/f0.txt", "created"),
    ]
    assert b.diff(b) == []


def test_the_tracker_holds_its_watches_in_the_shared_instance(workspace: Path) -> None:
    tree(workspace)
    hub = _inotify.WatchHub()
    one = SnapshotTracker(workspace, watch_hub=hub)
    two = SnapshotTracker(workspace, watch_hub=hub)
    one.snapshot()
    two.snapshot()
    assert hub.watches() == 13  # one watch per directory, shared by both trackers
    (workspace / "d0/new").write_text("x")
    assert assert_same(one, workspace).directories_read == 1
    assert assert_same(two, workspace).directories_read == 1  # each saw the event
    one.close()
    assert hub.watches() == 13
    two.close()
    assert hub.watches() == 0


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="mounts need root")
def test_a_mount_and_a_file_system_without_events(tmp_path: Path) -> None:
    """In a mount namespace of its own (nothing leaks to the machine): a tmpfs mounted in
    the workspace makes the tracker walk; a ramfs, which the tracker does not trust to
    report every change, is re-read at every snapshot from then on."""
    root = tmp_path / "ws"
    root.mkdir()
    tree(root)
    script = textwrap.dedent(
        f"""
        import os, subprocess, sys
        from pathlib import Path
        from codeward.verification import SnapshotTracker, WorkspaceSnapshot
        root = Path({str(root)!r})
        tracker = SnapshotTracker(root)
        tracker.snapshot()
        (root / "d0/mnt").mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "none", str(root / "d0/mnt")], check=True)
        (root / "d0/mnt/inside").write_text("x")
        snap = tracker.snapshot()
        assert snap.same_as(WorkspaceSnapshot.take(root)), "after the mount"
        assert "mount table changed" in (snap.fallback or ""), snap.fallback
        (root / "d1/ram").mkdir()
        subprocess.run(["mount", "-t", "ramfs", "none", str(root / "d1/ram")], check=True)
        tracker.snapshot()
        (root / "d1/ram/sub").mkdir()
        (root / "d1/ram/sub/f").write_text("x")
        snap = tracker.snapshot()
        assert snap.same_as(WorkspaceSnapshot.take(root)), "in the ramfs"
        assert snap.incremental and "without change events" in (snap.fallback or "")
        assert snap.directories_read >= 2
        print("ok")
        """
    )
    out = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.stdout.strip() == "ok", out.stderr[-3000:]
    assert _tracker.EVENTFUL_FILE_SYSTEMS  # ext4 and tmpfs are trusted, ramfs is not


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to become another user")
def test_a_directory_made_unreadable_and_readable_again_as_an_ordinary_user() -> None:
    """As nobody (root reads everything): a directory chmod 0 is blind to the walk, and
    must be to the tracker, which cannot tell that from the directory's own listing."""
    base = Path(tempfile.mkdtemp(prefix="a3s-tracker-"))  # pytest's own tmp is root's only
    try:
        os.chown(base, 65534, 65534)
        _unreadable_as_nobody(base)
    finally:
        shutil.rmtree(base)


def _unreadable_as_nobody(base: Path) -> None:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            root = base / "ws"
            root.mkdir()
            tree(root)
            tracker = SnapshotTracker(root, watch_hub=_inotify.WatchHub())
            tracker.snapshot()
            results = []
            for mode in (0, 0o700, 0o300, 0o755):
                os.chmod(root / "d2" / "inner", mode)
                snap = tracker.snapshot()
                full = WorkspaceSnapshot.take(root)
                same = snap.same_as(full) and snap.incremental
                results.append((mode, same, sorted(snap.unreadable)))
            os.write(write, repr(results).encode())
            code = 0
        except BaseException as exc:
            os.write(write, repr(exc).encode())
        finally:
            os._exit(code)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    message = os.read(read, 4096).decode()
    os.close(read)
    assert status == 0, message
    assert message == repr(
        [(0, True, ["d2/inner"]), (0o700, True, []), (0o300, True, ["d2/inner"]), (0o755, True, [])]
    )


def test_a_tracker_collected_while_the_hub_is_busy_does_not_deadlock(workspace: Path) -> None:
    """The collector runs finalizers in whatever thread it interrupts: one draining the hub
    (under its lock) once collected a forgotten tracker whose finalizer took the same lock.
    A finalizer now only notes the tracker; its watches go at the hub's next call."""
    import gc

    tree(workspace)
    hub = _inotify.WatchHub()
    tracker = SnapshotTracker(workspace, watch_hub=hub)
    tracker.snapshot()
    assert hub.watches() == 13
    cycle: list[object] = [tracker]
    cycle.append(cycle)  # only the cyclic collector frees it, at a moment of its choosing
    del tracker, cycle
    done = threading.Event()

    def collect_under_the_lock() -> None:
        with hub._lock:  # as inside drain(), when an allocation runs the collector
            gc.collect()
        done.set()

    thread = threading.Thread(target=collect_under_the_lock, daemon=True)
    thread.start()
    thread.join(10)
    assert done.is_set(), "the finalizer deadlocked on the hub's lock"
    assert hub.watches() == 0, "the collected tracker's watches were not released"


@pytest.mark.parametrize("parent", ["/dev/shm", None])
def test_a_write_through_a_shared_mapping_is_a_change(tmp_path: Path, parent: str | None) -> None:
    """On tmpfs a shared writable mapping changes the bytes and no metadata at all; the
    file's close after writing (when the mapping goes) names it, and the diff reports it."""
    import mmap

    if parent is not None and not os.path.isdir(parent):
        pytest.skip(f"no {parent}")
    root = Path(tempfile.mkdtemp(dir=parent or tmp_path))
    try:
        (root / "src").mkdir()
        target = root / "src" / "app.py"
        target.write_bytes(b"answer = 42\n")
        (root / "src" / "other.py").write_bytes(b"x = 1\n")
        tracker = SnapshotTracker(root)
        before = tracker.snapshot()
        st = target.stat()
        fd = os.open(target, os.O_RDWR)
        mapped = mmap.mmap(fd, 0)
        os.close(fd)
        assert mapped[:6] == b"answer"
        tracker.snapshot()  # the descriptor's close is not the mapping's
        mapped[:6] = b"ANSWER"
        mapped.close()
        after = tracker.snapshot()
        if parent == "/dev/shm":
            now = target.stat()
            assert (now.st_mtime_ns, now.st_ctime_ns) == (st.st_mtime_ns, st.st_ctime_ns)
        changes = before.diff(after)
        assert [(c.path, c.kind) for c in changes] == [("src/app.py", "modified")]
        ledger = MutationLedger()
        record_bash_changes(ledger, before, after, root)
        entry = ledger.get("src/app.py")
        assert entry is not None and entry.content_digest.endswith(
            hashlib.sha256(b"ANSWER = 42\n").hexdigest()
        )
        # a file only read is no change
        (root / "src" / "other.py").read_bytes()
        assert after.diff(tracker.snapshot()) == []
        tracker.close()
    finally:
        shutil.rmtree(root)
