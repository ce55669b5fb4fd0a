"""The long-lived sandbox's own lifetime: failures, restarts, concurrency, the caller's death.

A sandbox that lives across commands adds ways to go wrong that a sandbox per
command did not have: a command that times out or is cancelled must not
spoil the next, an init that dies (or is killed from the host) must give a
clean restart (or one 125 and then a restart), a caller killed with SIGKILL
must take the sandbox with it and leave its placeholders to the next run's
sweep, two threads must both get correct results, and a forked copy of the
caller must not disturb its parent's sandbox.

Every test here runs on the placeholder fallback (A3S_CODE_PROTECT_NAMES=placeholders), whose
placeholders, journals and janitor are the state a caller's death can leave; with the
emulation there is none (test_fs_names.py checks a SIGKILLed caller leaves nothing).
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
from hostprocs import cgroups_made_by, new_marker, processes_with, survivors

from codeward.sandbox import NativeBashSandbox
from codeward.sandbox._output import CommandOutput
from protectednames import ALL_PROTECTED

PROTECTED = sorted(ALL_PROTECTED)

pytestmark = pytest.mark.usefixtures("fs_force_placeholders")


@pytest.fixture
def sb(workspace: Path, fs_boundary_ready: None):
    with NativeBashSandbox(workspace, reuse=True) as box:
        yield box


def run(sb: NativeBashSandbox, command: str, **kw) -> CommandOutput:
    out = sb.exec(command, timeout_ms=kw.pop("timeout_ms", 20_000), **kw)
    assert out.setup_error is None, out
    return out


def info(sb: NativeBashSandbox) -> dict:
    return dict(sb._handle.info())


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_gone(pid: int, within_s: float = 3.0) -> bool:
    deadline = time.monotonic() + within_s
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    return not alive(pid)


def program(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()


def parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def present(ws: Path) -> list[str]:
    return sorted(n for n in PROTECTED if os.path.lexists(ws / n))


# ---- one command's fate does not spoil the next ------------------------------------


def test_a_timed_out_command_does_not_break_the_next(sb, marker) -> None:
    out = sb.exec(f"trap '' TERM; sleep {marker} & sleep {marker}1", timeout_ms=300,
                  kill_grace_ms=200)  # fmt: skip
    assert out.exit_code == 124 and out.timed_out, out
    assert survivors(marker) == []
    again = run(sb, "echo next")
    assert again.stdout == "next\n" and info(sb)["starts"] == 1, again


def test_a_cancelled_command_does_not_break_the_next(sb, marker) -> None:
    run(sb, "true")  # the sandbox is up: the cancel lands in the command, never in the start
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    out = sb.exec(f"sleep {marker}", timeout_ms=30_000, cancel=cancel)
    assert out.cancelled and out.exit_code == 124, out
    assert survivors(marker) == []
    again = run(sb, "echo next")
    assert again.stdout == "next\n" and info(sb)["starts"] == 1, again


def test_a_command_that_kills_everything_it_can_see(sb) -> None:
    """kill(-1) reaches every process of the sandbox but the init (and the caller)."""
    out = sb.exec("sleep 30 & (sleep 31 &); kill -9 -1; wait; echo survived", timeout_ms=10_000)
    assert out.exit_code == 0 and out.stdout == "survived\n", out
    assert run(sb, "echo next").stdout == "next\n" and info(sb)["starts"] == 1


# ---- the init or bubblewrap dies ------------------------------------------------------


def test_an_idle_sandbox_is_its_init_alone(sb) -> None:
    """bubblewrap is retired once the init is up: the sandbox is one process, whose
    parent is whoever reaps orphans here, never bubblewrap and never the caller."""
    run(sb, "true")
    init = info(sb)["pid"]
    assert program(init).endswith("init"), program(init)
    up = parent(init)
    assert up != os.getpid() and "bwrap" not in program(up), program(up)
    assert Path(f"/proc/{init}/task/{init}/children").read_text().split() == []


def test_sandbox_killed_between_commands_restarts_cleanly(sb) -> None:
    run(sb, "true")
    init = info(sb)["pid"]
    os.kill(init, signal.SIGKILL)
    assert wait_gone(init)
    out = run(sb, "echo fresh")
    assert out.stdout == "fresh\n", out
    assert info(sb)["starts"] == 2 and info(sb)["pid"] != init


def test_init_killed_during_a_command_fails_closed_then_recovers(sb, workspace) -> None:
    m = new_marker()
    run(sb, "true")
    init = info(sb)["pid"]
    threading.Timer(0.5, lambda: os.kill(init, signal.SIGKILL)).start()
    t0 = time.monotonic()
    out = sb.exec(f"sleep {m} & sleep {m}1", timeout_ms=30_000)
    assert time.monotonic() - t0 < 10
    assert out.exit_code == 125 and out.setup_error, out
    assert survivors(m) == [], "the command's processes outlived their sandbox"
    again = run(sb, "echo fresh")
    assert again.stdout == "fresh\n" and info(sb)["starts"] == 2


def test_stop_cancels_a_running_command_promptly(sb, marker) -> None:
    run(sb, "true")
    box: dict[str, CommandOutput] = {}
    worker = threading.Thread(
        target=lambda: box.setdefault("out", sb.exec(f"sleep {marker}", timeout_ms=60_000))
    )
    worker.start()
    deadline = time.monotonic() + 10
    while not processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.01)
    t0 = time.monotonic()
    sb.close()
    worker.join(10)
    assert not worker.is_alive() and time.monotonic() - t0 < 5
    assert box["out"].cancelled, box["out"]
    assert survivors(marker) == []
    assert not info(sb)["running"]


# ---- the caller ------------------------------------------------------------------------

CALLER = textwrap.dedent(
    """
    import sys
    from codeward.sandbox import NativeBashSandbox
    sb = NativeBashSandbox(sys.argv[1], reuse=True)
    out = sb.exec("echo ready")
    print(out.stdout.strip(), sb._handle.info()["pid"], flush=True)
    sys.stdin.readline()
    """
)


def test_caller_killed_while_its_sandbox_idles(workspace, tmp_path, monkeypatch, fs) -> None:
    # the caller and the next run share the journal directory, as runs of one user do
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    (workspace / "README").write_text("mine\n")
    caller = subprocess.Popen(
        [sys.executable, "-c", CALLER, str(workspace)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        line = caller.stdout.readline().split()
        assert line[:1] == [b"ready"], line
        init = int(line[1])
        assert present(workspace) == PROTECTED, "no placeholders while the sandbox lives"
        assert len(fs.janitors_of(workspace)) == 1
        caller.kill()
        caller.wait()
        assert wait_gone(init), "the sandbox outlived its caller"
    finally:
        caller.kill()
        caller.wait()
        caller.stdin.close()
        caller.stdout.close()
    # the caller could not remove its placeholders: its janitor does, at once
    deadline = time.monotonic() + 10  # milliseconds in practice; the bound is for a loaded CI
    while present(workspace) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert sorted(os.listdir(workspace)) == ["README"]
    assert fs.janitors_of(workspace) == []
    assert list((tmp_path / "state").glob("codeward/placeholders-*.d/*journal*")) == []
    with NativeBashSandbox(workspace, reuse=True) as box:
        assert run(box, "echo next").stdout == "next\n"
    assert sorted(os.listdir(workspace)) == ["README"]
    # its cgroups (memory and pids) went with the next handle's first start: its sweep
    assert cgroups_made_by([caller.pid]) == []


FORKING_CALLER = textwrap.dedent(
    """
    import os, sys, time
    from codeward.sandbox import NativeBashSandbox
    sb = NativeBashSandbox(sys.argv[1], reuse=True)
    sb.exec("true")
    if os.fork() == 0:  # a worker forked without exec: it holds copies of every fd
        time.sleep(60)
        os._exit(0)
    print(sb._handle.info()["pid"], flush=True)
    sys.stdin.readline()
    """
)


def test_caller_killed_while_a_forked_worker_lives_on(workspace) -> None:
    """The worker inherited the lifeline's write end and the control socket; the
    sandbox must still die with the caller (the init watches the caller's pidfd)."""
    caller = subprocess.Popen(
        [sys.executable, "-c", FORKING_CALLER, str(workspace)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    worker = None
    try:
        init = int(caller.stdout.readline())
        kids = Path(f"/proc/{caller.pid}/task/{caller.pid}/children").read_text().split()
        worker = next(int(k) for k in kids if int(k) != init)
        caller.kill()
        caller.wait()
        assert alive(worker), "the forked worker is gone: the test proves nothing"
        assert wait_gone(init), "the sandbox outlived its caller, kept up by a forked worker"
    finally:
        caller.kill()
        caller.wait()
        caller.stdin.close()
        caller.stdout.close()
        if worker:
            os.kill(worker, signal.SIGKILL)


def test_host_process_keeps_no_child_between_commands(sb) -> None:
    run(sb, "true")
    me = str(os.getpid())
    init = info(sb)["pid"]
    assert str(parent(init)) != me, "the sandbox is a child of the caller"
    kids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if stat.rsplit(")", 1)[1].split()[1] == me:
                kids.append(stat)
    assert kids == [], kids


def test_a_forked_copy_of_the_caller_leaves_the_parent_sandbox_alone(sb, workspace) -> None:
    run(sb, "true")
    before = info(sb)
    pid = os.fork()
    if pid == 0:  # the child: its copy of the handle must not touch the parent's sandbox
        try:
            out = sb.exec("echo child")
            sb.close()
            os._exit(0 if out.stdout == "child\n" else 3)
        except BaseException:
            os._exit(4)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert info(sb) == before, "the child stopped or replaced the parent's sandbox"
    assert present(workspace) == PROTECTED, "the child removed the parent's placeholders"
    assert run(sb, "echo parent").stdout == "parent\n" and info(sb)["starts"] == 1


# ---- concurrency and close ------------------------------------------------------------------


def test_two_threads_at_once_both_get_their_own_results(sb, workspace) -> None:
    run(sb, "true")
    barrier = threading.Barrier(2)
    results: dict[int, CommandOutput] = {}

    def work(i: int) -> None:
        barrier.wait()
        results[i] = sb.exec(
            f"echo start-{i}; sleep 0.5; echo $HOME; echo end-{i} >&2; echo {i} > out-{i}",
            timeout_ms=20_000,
        )

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    homes = []
    for i in range(2):
        out = results[i]
        assert out.exit_code == 0 and out.setup_error is None, out
        lines = out.stdout.splitlines()
        assert lines[0] == f"start-{i}" and out.stderr == f"end-{i}\n", out
        homes.append(lines[1])
        assert (workspace / f"out-{i}").read_text() == f"{i}\n"
    # one ran in the long-lived sandbox, the other in a sandbox of its own
    assert sum(h.startswith("/run/a3s/scratch/") for h in homes) == 1, homes
    assert run(sb, "echo after").stdout == "after\n" and info(sb)["starts"] == 1


def test_close_removes_the_placeholders_and_a_later_exec_starts_again(workspace) -> None:
    sb = NativeBashSandbox(workspace, reuse=True)
    assert present(workspace) == [], "the constructor made placeholders"
    run(sb, "true")
    assert present(workspace) == PROTECTED and info(sb)["running"]
    sb.close()
    assert present(workspace) == [] and not info(sb)["running"]
    assert run(sb, "echo again").stdout == "again\n" and info(sb)["starts"] == 2
    with sb:
        pass
    assert present(workspace) == []


def test_one_shot_handles_keep_nothing_between_commands(workspace) -> None:
    sb = NativeBashSandbox(workspace, reuse=False)
    out = run(sb, 'echo "$HOME"')
    assert not out.stdout.startswith("/run/a3s/"), out
    assert present(workspace) == [] and not info(sb)["running"] and info(sb)["starts"] == 0
