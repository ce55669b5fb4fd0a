"""What AtomicWriter lets a streaming writer (the download) use: the descriptor, the resolved
path and a reader on the temporary file, without reaching into its private state."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codeward._errors import WorkspaceError
from codeward.workspace import AtomicWriter, Workspace


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    (root / "real").mkdir(parents=True)
    (root / "link").symlink_to("real")
    return Workspace(root)


def test_positional_writes_and_a_reader_on_the_same_file(ws):
    with AtomicWriter(ws, "real/out.bin") as w:
        os.pwrite(w.fileno(), b"world", 6)
        os.pwrite(w.fileno(), b"hello ", 0)
        reader = w.open_reader()
        try:
            assert os.pread(reader, 100, 0) == b"hello world"
            with pytest.raises(OSError):
                os.write(reader, b"x")  # read-only
        finally:
            os.close(reader)
        w.commit()
    assert (Path(ws.root) / "real" / "out.bin").read_bytes() == b"hello world"


def test_parts_are_the_resolved_destination(ws):
    with AtomicWriter(ws, "link/out.txt") as w:
        assert w.parts == ("real", "out.txt")
        assert ws.parts("link/out.txt") == ("link", "out.txt")
    assert AtomicWriter(ws, "x").parts == ()  # not entered yet


def test_a_replaced_temporary_file_is_refused(ws):
    with AtomicWriter(ws, "real/out.txt") as w:
        temp = [n for n in os.listdir(Path(ws.root) / "real") if n.endswith(".a3s-tmp")]
        assert len(temp) == 1
        swapped = Path(ws.root) / "real" / temp[0]
        swapped.unlink()
        swapped.write_bytes(b"someone else's")
        with pytest.raises(WorkspaceError, match="was replaced"):
            w.open_reader()


def test_no_descriptor_once_the_writer_is_done(ws):
    w = AtomicWriter(ws, "real/out.txt")
    with pytest.raises(WorkspaceError, match="not open"):
        w.fileno()
    with w:
        w.write(b"x")
        w.commit()
        with pytest.raises(WorkspaceError, match="not open"):
            w.fileno()
        with pytest.raises(WorkspaceError, match="not open"):
            w.open_reader()


def test_an_abort_removes_only_its_own_temporary_file(ws):
    """A command that replaced the temporary name keeps its file: the cleanup removes only the
    inode the writer created."""
    real = Path(ws.root) / "real"
    with AtomicWriter(ws, "real/out.txt") as w:
        w.write(b"ours")
        (temp,) = [n for n in os.listdir(real) if n.endswith(".a3s-tmp")]
        (real / temp).unlink()
        (real / temp).write_bytes(b"someone else's")
    assert (real / temp).read_bytes() == b"someone else's"
    assert not (real / "out.txt").exists()
    with AtomicWriter(ws, "real/out.txt") as w:  # and an untouched one is removed as before
        w.write(b"ours")
    assert [n for n in os.listdir(real) if n.endswith(".a3s-tmp")] == [temp]
