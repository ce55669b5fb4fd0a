"""Where AtomicBatch keeps its journal: a private directory of the user, never the workspace."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from pathlib import Path

import pytest

from codeward._errors import WorkspaceError
from codeward.workspace import Workspace, _atomic
from codeward.workspace._atomic import AtomicBatch, recover_interrupted_batches


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "ws"
    r.mkdir()
    (r / "a.txt").write_text("a\n")
    return r


def journal_seen_during_commit(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Commits a batch and returns the journal file as it was while the renames ran."""
    seen: list[Path] = []

    def hook(step: str) -> None:
        if step == "renamed:0":  # the batch holds its journal open (and locked)
            for n in os.listdir("/proc/self/fd"):
                with contextlib.suppress(OSError):
                    target = os.readlink(f"/proc/self/fd/{n}")
                    if target.endswith(".journal"):
                        seen.append(Path(target))

    monkeypatch.setattr(_atomic, "_step_hook", hook)
    with AtomicBatch(ws) as batch:
        batch.write("a.txt", b"A\n")
        batch.write("dir/new.txt", b"new\n", create=True)
        batch.commit()
    assert len(seen) == 1
    return seen[0]


def test_the_journal_is_private_names_the_batch_and_is_gone_after(root, state_home, monkeypatch):
    ws = Workspace(root)
    journal = journal_seen_during_commit(ws, monkeypatch)
    assert journal.parent == state_home / "codeward" / "patch-journals"
    assert stat.S_IMODE(journal.parent.stat().st_mode) == 0o700
    assert not journal.exists() and os.listdir(journal.parent) == []
    assert (root / "a.txt").read_text() == "A\n" and (root / "dir/new.txt").read_text() == "new\n"


def test_the_journal_records_each_destination(root, state_home, monkeypatch):
    ws = Workspace(root)
    records: list[dict[str, object]] = []

    def hook(step: str) -> None:
        if step == "kept":
            folder = state_home / "codeward" / "patch-journals"
            (name,) = os.listdir(folder)
            records.append(json.loads((folder / name).read_text()))

    monkeypatch.setattr(_atomic, "_step_hook", hook)
    with AtomicBatch(ws) as batch:
        batch.write("a.txt", b"A\n")
        batch.write("dir/new.txt", b"new\n", create=True)
        batch.commit()
    (record,) = records
    assert record["workspace"] == ws.root and record["pid"] == os.getpid()
    replaced, created = record["entries"]  # type: ignore[misc]
    assert replaced["parent"] == [] and replaced["name"] == "a.txt" and replaced["existed"]
    assert replaced["temp"].endswith(".a3s-tmp") and replaced["orig"].endswith(".a3s-orig")
    assert created["parent"] == ["dir"] and not created["existed"] and created["orig"] == ""


def test_a_state_home_inside_the_workspace_is_not_used(root, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(root / "state"))
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    journal = journal_seen_during_commit(Workspace(root), monkeypatch)
    assert journal.parent == home / ".local/state/codeward/patch-journals"
    assert not (root / "state").exists()


def test_the_temp_dir_is_the_last_resort_and_inside_everything_is_refused(
    root, tmp_path, monkeypatch
):
    monkeypatch.setenv("XDG_STATE_HOME", str(root / "state"))
    monkeypatch.setenv("HOME", str(root))  # a workspace that is the home directory
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    journal = journal_seen_during_commit(Workspace(root), monkeypatch)
    assert journal.parent == temp / f"codeward-state-{os.getuid()}" / "patch-journals"
    monkeypatch.setattr(tempfile, "tempdir", str(root / "tmp"))
    with AtomicBatch(Workspace(root)) as batch:
        batch.write("a.txt", b"never\n")
        with pytest.raises(WorkspaceError, match="outside the workspace"):
            batch.commit()
    assert (root / "a.txt").read_text() == "A\n"
    assert not (root / "state").exists() and not (root / ".local").exists()
    assert sorted(os.listdir(root)) == ["a.txt", "dir"]


def test_a_state_dir_others_can_write_is_skipped(root, tmp_path, state_home, monkeypatch):
    shared = state_home / "codeward"
    shared.mkdir(parents=True)
    shared.chmod(0o777)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    journal = journal_seen_during_commit(Workspace(root), monkeypatch)
    assert journal.parent == tmp_path / "home/.local/state/codeward/patch-journals"
    assert not (shared / "patch-journals").exists()


def test_a_symlinked_journal_dir_is_not_followed(root, tmp_path, state_home, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (state_home / "codeward").mkdir(parents=True, mode=0o700)
    os.symlink(elsewhere, state_home / "codeward" / "patch-journals")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    journal_seen_during_commit(Workspace(root), monkeypatch)
    assert os.listdir(elsewhere) == []


def test_recovery_with_no_journal_dir_does_nothing(root, state_home):
    assert recover_interrupted_batches(Workspace(root)) == []
    assert not (state_home / "codeward").exists()


def test_a_failed_rename_rolls_back_and_drops_the_journal(root, state_home, monkeypatch):
    real_rename = os.rename

    def failing(src: str, dst: str, **kw: object) -> None:
        if dst == "b.txt":
            raise OSError(28, "No space left on device")
        real_rename(src, dst, **kw)  # type: ignore[arg-type]

    (root / "b.txt").write_text("b\n")
    monkeypatch.setattr(_atomic.os, "rename", failing)
    with AtomicBatch(Workspace(root)) as batch:
        batch.write("a.txt", b"A\n")
        batch.write("b.txt", b"B\n")
        with pytest.raises(OSError, match="No space"):
            batch.commit()
    assert (root / "a.txt").read_text() == "a\n" and (root / "b.txt").read_text() == "b\n"
    assert sorted(os.listdir(root)) == ["a.txt", "b.txt"]
    assert os.listdir(state_home / "codeward" / "patch-journals") == []
