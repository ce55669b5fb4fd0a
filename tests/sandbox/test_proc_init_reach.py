"""PID 1 is out of a command's reach: what one command does to the init never reaches the next.

In the long-lived sandbox every command is a fork of the init (PID 1), so a
command that could renice the init, give it idle scheduling, one CPU, idle
I/O or a tiny resource limit would hand all of it to every later command (an
RLIMIT_AS of 1 MiB makes each of them die at start). The seccomp filter
refuses those calls on PID 1 (the init runs under the same filter, with
NoNewPrivs); the init puts its own OOM score back after each command, and
every command starts with the same one. Each case runs as two commands on
one handle, with Landlock and without (the filter must hold alone); the
refusals are checked one-shot as well. Signals a command queues to PID 1,
whatever sender they claim (rt_sigqueueinfo forges si_pid 0), do not stop it.
"""

from __future__ import annotations

import errno
import json
import os

import pytest
from initreach import EXPECTED_DENIED, FORGE, HOSTILE, REFUSED, STATE, py
from procbox import proc_sandbox

from codeward.sandbox._native_runner import _CoreSandbox


def _run(sb: _CoreSandbox, command: str) -> str:
    out = sb.exec(command, timeout_ms=30_000)
    assert out.setup_error is None and out.exit_code == 0, out
    return out.stdout


@pytest.fixture(params=[True, False], ids=["landlock", "no-landlock"])
def landlock(request: pytest.FixtureRequest, fs_boundary_ready: None) -> bool:
    return bool(request.param)


@pytest.mark.parametrize("reuse", [True, False], ids=["reuse", "one-shot"])
def test_pid1_runs_under_the_seccomp_filter_with_no_new_privs(workspace, landlock, reuse) -> None:
    with proc_sandbox(workspace, reuse=reuse, landlock=landlock) as sb:
        status = _run(sb, "grep -E '^(Seccomp|NoNewPrivs|CapEff):' /proc/1/status")
    fields = dict(line.split(":\t") for line in status.splitlines())
    assert fields == {"Seccomp": "2", "NoNewPrivs": "1", "CapEff": "0000000000000000"}, status


@pytest.mark.parametrize("reuse", [True, False], ids=["reuse", "one-shot"])
def test_every_call_on_pid1_is_refused(workspace, landlock, reuse) -> None:
    with proc_sandbox(workspace, reuse=reuse, landlock=landlock) as sb:
        got = json.loads(_run(sb, py(HOSTILE)))
    assert {k: v for k, v in got.items() if k in REFUSED} == dict.fromkeys(REFUSED, errno.EPERM)
    # Landlock refuses writes under /proc; without it a root caller's command owns
    # /proc/1/oom_score_adj (an unprivileged caller's does not): the init resets it
    if landlock or os.geteuid() != 0:
        assert got["write /proc/1/oom_score_adj"] in (errno.EACCES, errno.EPERM), got


def test_a_command_changing_pid1_changes_nothing_for_the_next(workspace, landlock) -> None:
    with proc_sandbox(workspace, reuse=True, landlock=landlock) as sb:
        before = json.loads(_run(sb, py(STATE)))
        hostile = json.loads(_run(sb, py(HOSTILE)))
        after = json.loads(_run(sb, py(STATE)))
        # and what runs under those settings still works
        assert _run(sb, "head -c 2000000 /dev/zero > big && stat -c %s big; rm big") == "2000000\n"
        assert int(sb._handle.info()["starts"]) == 1, "the sandbox was rebuilt"
    assert after == before
    if not landlock and os.geteuid() == 0:  # these did change PID 1: the init put them back
        assert hostile["write /proc/1/oom_score_adj"] == 0, hostile
        assert hostile["write /proc/1/coredump_filter"] == 0, hostile
    assert before["self"]["oom_score_adj"] == 1000, "a command is the OOM killer's first choice"
    assert before["init"]["oom_score_adj"] != 1000, before


@pytest.mark.parametrize("reuse", [True, False], ids=["reuse", "one-shot"])
def test_a_signal_queued_to_pid1_does_not_stop_the_sandbox(workspace, landlock, reuse) -> None:
    with proc_sandbox(workspace, reuse=reuse, landlock=landlock) as sb:
        first = sb.exec(py(FORGE) + "; sleep 0.2; echo alive", timeout_ms=30_000)
        assert first.exit_code == 0 and first.stdout.endswith("alive\n"), first
        if not landlock:  # without signal scoping the signals do reach PID 1
            assert "queued SIGTERM" in first.stdout and "killed SIGTERM" in first.stdout, first
        second = sb.exec("echo next", timeout_ms=30_000)
        assert second.exit_code == 0 and second.stdout == "next\n", second
        if reuse:
            assert int(sb._handle.info()["starts"]) == 1, "the forged signal ended the sandbox"


@pytest.mark.parametrize("reuse", [True, False], ids=["reuse", "one-shot"])
def test_every_listed_system_call_is_refused_on_this_kernel(workspace, landlock, reuse) -> None:
    """The self-test calls each plain denial for real (none runs) and checks its errno."""
    with proc_sandbox(workspace, reuse=reuse, landlock=landlock) as sb:
        out = sb.exec("exec /run/a3s/init --probe", timeout_ms=30_000)
    line = next(ln for ln in out.stdout.splitlines() if "every denied system call" in ln)
    assert line.startswith("ok "), line
    names = set(line.split(": ", 1)[1].split())
    assert names >= EXPECTED_DENIED, f"rules missing: {EXPECTED_DENIED - names}"
    assert f"({len(names)})" in line and out.stdout.rstrip().endswith("a3s-probe: ok"), out
