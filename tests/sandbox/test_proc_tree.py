"""Hostile process-tree cases: nothing a command starts outlives it, on the host's own evidence.

Each command starts `sleep 313.<random>` style stragglers; after exec()
returns (or after the caller was SIGKILLed) the HOST's process table is
searched for that marker and must be empty within about a second. The host
process itself must never become a subreaper, gain a filter, or keep
children, threads or fds around.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hostprocs import BACKENDS, new_marker, processes_with, sandbox_for, sleeping, survivors


@pytest.fixture
def markers():
    """Hands out markers; kills (by pid) whatever still carries one at teardown."""
    made: list[str] = []

    def make() -> str:
        m = new_marker()
        made.append(m)
        return m

    yield make
    for m in made:
        for pid, _ in processes_with(m):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


# {s} is a `sleep <marker>` command line
ESCAPES = {
    "background": "{s} & echo started",
    "disowned": "{s} & disown; echo started",
    "setsid": "setsid {s} & echo started",
    "setsid-fork": "setsid -f {s}; echo started",
    "nohup": "nohup {s} >/dev/null 2>&1 & echo started",
    "double-fork": "( ( {s} & ) & ); echo started",
    "new-process-group": "set -m; {s} & echo started",
    "stopped": (
        "{s} & until pgrep -f '^{s}' >/dev/null; do sleep 0.01; done; kill -STOP $!; echo started"
    ),
    "ignores-term-hup-int": "( trap '' TERM HUP INT; {s} ) & echo started",
    "daemon-closes-stdio": "( exec </dev/null >&- 2>&-; setsid {s} & ) & echo started",
    "python-daemon": (
        "/usr/bin/python3 -c '"
        "import os,sys\n"
        "if os.fork(): sys.exit(0)\n"
        "os.setsid()\n"
        "if os.fork(): os._exit(0)\n"
        'os.chdir("/")\n'
        "[os.close(fd) for fd in (0, 1, 2)]\n"
        'os.execvp("sleep", ["sleep", "{m}"])\'; echo started'
    ),
    "grandchild-of-subshell-keeps-pipe": "bash -c '{s} & {s}0 &' ; echo started",
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("escape", list(ESCAPES))
def test_no_descendant_outlives_the_command(workspace, markers, backend, escape) -> None:
    m = markers()
    # the command only ends once its straggler really runs, so the check below
    # is about killing it, not about a race it never entered
    command = ESCAPES[escape].format(s=f"sleep {m}", m=m) + (
        f"; for i in $(seq 300); do pgrep -f '^sleep {m}' >/dev/null && break; sleep 0.01; done"
        f"; pgrep -f '^sleep {m}' >/dev/null && echo straggler-up"
    )
    sb = sandbox_for(workspace, backend)
    t0 = time.monotonic()
    out = sb.exec(command, timeout_ms=20_000)
    elapsed = time.monotonic() - t0
    assert out.exit_code == 0 and "started" in out.stdout, out
    assert "straggler-up" in out.stdout, f"the straggler never started: {out}"
    assert not out.timed_out, out
    # a descendant holding the output pipes must not make exec wait for it
    assert elapsed < 5, f"exec took {elapsed:.1f} s: a descendant held it"
    left = survivors(m)
    assert left == [], f"{escape} ({backend}): processes outlived the command: {left}"


@pytest.mark.parametrize("backend", BACKENDS)
def test_descendant_holding_stdout_does_not_hang_exec(workspace, markers, backend) -> None:
    m = markers()
    sb = sandbox_for(workspace, backend)
    out = sb.exec(
        f"sleep {m} & sleep {m}1 >&2 & echo parent-done",
        timeout_ms=30_000,
    )
    assert out.exit_code == 0 and out.stdout == "parent-done\n", out
    assert out.duration_ms < 5_000, out
    assert survivors(m) == []


# ---- killing the caller ---------------------------------------------------

CALLER = r"""
import os, sys
from codeward.sandbox import NativeBashSandbox, ProcessHostBashSandbox
ws, backend = sys.argv[1], sys.argv[2]
sb = NativeBashSandbox(ws) if backend == "native" else ProcessHostBashSandbox(ws)
command = os.environ["A3S_HOSTILE_COMMAND"]
print("GO", flush=True)
sb.exec(command, timeout_ms=60_000)
print("RETURNED", flush=True)
"""


def _start_caller(ws: Path, backend: str, m: str) -> subprocess.Popen:
    # The command travels in the environment, so the caller's own command
    # line never carries the marker; only the run's processes do.
    command = (
        f"echo up > {ws}/started; sleep {m}1 & setsid sleep {m}2 & "
        f"( ( sleep {m}3 & ) & ); nohup sleep {m}4 >/dev/null 2>&1 & sleep {m}5"
    )
    env = dict(os.environ, A3S_HOSTILE_COMMAND=command)
    return subprocess.Popen(
        [sys.executable, "-c", CALLER, str(ws), backend],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )


def _kill_and_check(proc: subprocess.Popen, m: str, moment: str) -> None:
    proc.kill()
    proc.wait()
    proc.stdout.close()
    left = survivors(m)
    assert left == [], f"SIGKILL of the caller {moment} left processes alive: {left}"


@pytest.mark.parametrize("backend", BACKENDS)
def test_caller_killed_immediately_leaves_nothing(workspace, markers, backend) -> None:
    m = markers()
    proc = _start_caller(workspace, backend, m)
    _kill_and_check(proc, m, "immediately after starting")


@pytest.mark.parametrize("round_", range(10))
def test_caller_killed_during_sandbox_startup_leaves_nothing(workspace, markers, round_) -> None:
    m = markers()
    rng = random.Random(round_ * 7919 + os.getpid())
    proc = _start_caller(workspace, "native", m)
    assert proc.stdout.readline() == b"GO\n"
    # exec starts right after "GO": bwrap (~0-15 ms), then the init, Landlock
    # and seccomp, bash (~20 ms), the stragglers (~30 ms); spread the rounds
    # over that window, each with some jitter
    time.sleep(round_ * 0.0035 + rng.uniform(0.0, 0.004))
    _kill_and_check(proc, m, f"during start-up (round {round_})")


@pytest.mark.parametrize("round_", range(3))
def test_process_host_caller_killed_during_startup_leaves_nothing(
    workspace, markers, round_
) -> None:
    m = markers()
    proc = _start_caller(workspace, "process-host", m)
    assert proc.stdout.readline() == b"GO\n"
    time.sleep(random.uniform(0.0, 0.02))
    _kill_and_check(proc, m, f"during process-host start-up (round {round_})")


@pytest.mark.parametrize("backend", BACKENDS)
def test_caller_killed_mid_run_leaves_nothing(workspace, markers, backend) -> None:
    m = markers()
    proc = _start_caller(workspace, backend, m)
    deadline = time.monotonic() + 15
    while not (workspace / "started").exists():
        assert time.monotonic() < deadline, "the command never started"
        assert proc.poll() is None, "the caller died on its own"
        time.sleep(0.01)
    # wait until the stragglers exist, so the check below is meaningful
    while not sleeping(m + "5") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sleeping(m + "1") and sleeping(m + "5"), "the stragglers never appeared"
    time.sleep(0.1)
    _kill_and_check(proc, m, "mid-run")


# ---- the host process stays as it was ----------------------------------------

PR_GET_CHILD_SUBREAPER = 37


def _subreaper() -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    value = ctypes.c_int(-1)
    assert libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(value), 0, 0, 0) == 0
    return value.value


def _status_fields() -> dict[str, str]:
    keep = ("SigBlk", "SigIgn", "SigCgt", "NoNewPrivs", "Seccomp", "CapEff", "CapPrm", "Threads")
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in keep:
            fields[key] = value.strip()
    return fields


def _children_of_me() -> list[str]:
    me = str(os.getpid())
    kids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[1] == me:  # state, ppid
            kids.append(f"{entry} state={fields[0]} {stat[: stat.rfind(')') + 1]}")
    return kids


def _run_mix(sb, m: str) -> None:
    for command in (
        f"sleep {m} & setsid sleep {m}1 & echo ok",
        "kill -9 $$",
        "exit 3",
        f"sleep {m}2",
    ):
        cancel = threading.Event()
        if command.startswith("sleep"):
            threading.Timer(0.3, cancel.set).start()
        sb.exec(command, timeout_ms=10_000, cancel=cancel)
    sb.exec(f"sleep {m}3", timeout_ms=200, kill_grace_ms=100)


@pytest.mark.parametrize("backend", BACKENDS)
def test_host_process_is_never_changed_by_runs(workspace, markers, backend) -> None:
    sb = sandbox_for(workspace, backend)
    # Warm-up with the same mix: Python's first thread makes glibc install its
    # own internal signal handler, which is not the runner's doing.
    _run_mix(sb, markers())
    before = _status_fields()
    fds_before = sorted(os.listdir("/proc/self/fd"))
    assert _subreaper() == 0
    m = markers()
    _run_mix(sb, m)
    assert _subreaper() == 0, "the host process became a child subreaper"
    assert _status_fields() == before, "signal dispositions, filter or threads of the host changed"
    assert sorted(os.listdir("/proc/self/fd")) == fds_before, "file descriptors leaked"
    assert _children_of_me() == [], "children (or zombies) of the host process were left"
    assert survivors(m) == []


def test_sandbox_cannot_see_or_signal_host_processes(workspace, markers) -> None:
    """A root caller's command is root in its namespaces only: the host's
    processes (here a canary the test owns) are neither visible nor signalable."""
    m = markers()
    canary = subprocess.Popen(["sleep", m])
    try:
        sb = sandbox_for(workspace, "native")
        pid = canary.pid
        out = sb.exec(
            f"kill -TERM {pid} 2>/dev/null; echo term=$?; kill -KILL {pid} 2>/dev/null; "
            f"echo kill=$?; test -e /proc/{pid}/cmdline && grep -c {m} /proc/{pid}/cmdline; "
            f"ls /proc | grep -c '^[0-9]'",
            timeout_ms=20_000,
        )
        lines = out.stdout.splitlines()
        assert "term=1" in lines and "kill=1" in lines, out
        assert int(lines[-1]) <= 4, f"{lines[-1]} processes visible inside the sandbox"
        time.sleep(0.1)
        assert canary.poll() is None, "the sandbox signalled a host process"
    finally:
        canary.kill()
        canary.wait()
