"""The workspace pieces the tools added: the descriptor walk and the all-or-nothing batch."""

from __future__ import annotations

import os

import pytest
from toolkit import put, temps

from codeward._errors import DestinationExists
from codeward.workspace._atomic import AtomicBatch, FileChanged


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_walk_is_sorted_omits_credentials_and_does_not_follow_links(root, ws, tmp_path):
    put(root, "b/z.txt")
    put(root, "a.txt")
    put(root, ".env")
    put(root, "b/.ssh/id_rsa")
    os.symlink(tmp_path, root / "out")
    os.mkfifo(root / "fifo")
    steps = [(s.relpath, s.dirs[:], s.files[:], s.links[:], s.omitted) for s in ws.walk()]
    assert steps == [
        (".", ["b"], ["a.txt"], ["out"], 1),
        ("b", [], ["z.txt"], [], 1),
    ]


def test_walk_pruning_and_early_close_release_descriptors(root, ws):
    for i in range(20):
        put(root, f"d{i}/e/f/g.txt")
    before = open_fds()
    walk = ws.walk()
    first = next(walk)
    first.dirs[:] = ["d3"]
    assert [s.relpath for s in walk] == ["d3", "d3/e", "d3/e/f"]
    walk = ws.walk()
    next(walk)
    next(walk)
    walk.close()
    assert open_fds() == before


def test_walk_skips_a_directory_swapped_for_a_symlink(root, ws, tmp_path):
    put(root, "d/inner.txt")
    outside = tmp_path / "outside"
    put(outside, "secret.txt")
    walk = ws.walk()
    top = next(walk)
    assert top.dirs == ["d"]
    os.rename(root / "d", root / "d-moved")
    os.symlink(outside, root / "d")  # swapped after the listing, before the descent
    assert [s.relpath for s in walk] == []


def test_batch_all_or_nothing_and_conflicts(root, ws):
    put(root, "a.txt", "a\n")
    put(root, "b.txt", "b\n")
    with AtomicBatch(ws) as batch:
        batch.write("a.txt", b"A\n")
        batch.write("new/c.txt", b"C\n", create=True)
        batch.delete("b.txt")
        changes = batch.commit()
    assert [(c.relpath, c.action) for c in changes] == [
        ("a.txt", "replaced"),
        ("new/c.txt", "created"),
        ("b.txt", "deleted"),
    ]
    assert (root / "a.txt").read_text() == "A\n" and not (root / "b.txt").exists()
    assert temps(root) == []
    with AtomicBatch(ws) as batch:  # not committed: nothing visible, nothing left
        batch.write("a.txt", b"never\n")
    assert (root / "a.txt").read_text() == "A\n" and temps(root) == []


def test_batch_refuses_files_changed_or_created_meanwhile(root, ws):
    put(root, "a.txt", "a\n")
    st = os.stat(root / "a.txt")
    with AtomicBatch(ws) as batch:
        batch.write("a.txt", b"mine\n", expect=st)
        batch.write("late.txt", b"mine\n", create=True)
        put(root, "late.txt", "theirs\n")
        with pytest.raises(DestinationExists):
            batch.commit()
    assert (root / "a.txt").read_text() == "a\n" and (root / "late.txt").read_text() == "theirs\n"
    with AtomicBatch(ws) as batch:
        batch.write("a.txt", b"mine\n", expect=st)
        os.utime(root / "a.txt", ns=(1, 1))
        with pytest.raises(FileChanged):
            batch.commit()
    assert (root / "a.txt").read_text() == "a\n" and temps(root) == []
