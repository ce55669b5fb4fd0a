"""Hostile timing and signal cases: timeouts, TERM-ignoring commands, signal deaths, cancel.

Also `codeward exec`, which must exit with the command's own status (124 on
timeout) and must not orphan the command when it is itself terminated.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from hostprocs import BACKENDS, sandbox_for, sleeping, survivors

# How long a test waits for what must happen before it calls the build broken: never reached
# by a slow or loaded machine, only by a hang.
HANG_GUARD_S = 600


@pytest.mark.parametrize("backend", BACKENDS)
def test_timeout_gives_124_and_timed_out(workspace, marker, backend) -> None:
    sb = sandbox_for(workspace, backend)
    out = sb.exec(f"echo before; sleep {marker}; echo AFTER", timeout_ms=500)
    assert out.exit_code == 124, out
    assert out.timed_out and not out.cancelled, out
    assert out.stdout == "before\n", out
    assert 450 <= out.duration_ms < 4_000, out
    assert survivors(marker) == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_term_trapping_command_is_killed_after_the_grace_period(workspace, marker, backend) -> None:
    sb = sandbox_for(workspace, backend)
    timeout_ms, grace_ms = 400, 700
    out = sb.exec(
        f"trap 'echo got-term' TERM; sleep {marker} & while :; do sleep 0.05; done",
        timeout_ms=timeout_ms,
        kill_grace_ms=grace_ms,
    )
    assert out.exit_code == 124 and out.timed_out, out
    assert "got-term" in out.stdout, f"SIGTERM was never delivered: {out}"
    # it survived the TERM, so only the KILL after the grace period ended it
    assert out.duration_ms >= timeout_ms + grace_ms - 100, out
    assert out.duration_ms < timeout_ms + grace_ms + 3_000, out
    assert survivors(marker) == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_term_ignoring_tree_is_killed(workspace, marker, backend) -> None:
    sb = sandbox_for(workspace, backend)
    out = sb.exec(
        f"trap '' TERM INT HUP; sleep {marker} & sleep {marker}1",
        timeout_ms=300,
        kill_grace_ms=300,
    )
    assert out.exit_code == 124 and out.timed_out, out
    assert out.duration_ms < 4_000, out
    assert survivors(marker) == []


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("signo", [1, 2, 6, 9, 11, 13, 15])
def test_exit_code_is_128_plus_the_signal(workspace, backend, signo) -> None:
    sb = sandbox_for(workspace, backend)
    out = sb.exec(f"ulimit -c 0; kill -{signo} $$; echo SURVIVED", timeout_ms=10_000)
    assert out.exit_code == 128 + signo, out
    assert not out.timed_out and "SURVIVED" not in out.stdout, out


@pytest.mark.parametrize("backend", BACKENDS)
def test_signal_death_of_an_exec_d_program(workspace, backend) -> None:
    sb = sandbox_for(workspace, backend)
    out = sb.exec(
        "exec /usr/bin/python3 -c 'import os, signal; os.kill(os.getpid(), signal.SIGQUIT)'",
        timeout_ms=10_000,
    )
    assert out.exit_code == 128 + signal.SIGQUIT, out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("ignore_term", [False, True], ids=["plain", "ignores-term"])
def test_cancel_returns_promptly(workspace, marker, backend, ignore_term) -> None:
    sb = sandbox_for(workspace, backend)
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    prefix = "trap '' TERM; " if ignore_term else ""
    # no wall-clock margin: only a cancel that fails lets the (hang guard's) timeout fire
    out = sb.exec(
        f"{prefix}sleep {marker} & sleep {marker}1",
        timeout_ms=HANG_GUARD_S * 1000,
        kill_grace_ms=500,
        cancel=cancel,
    )
    assert out.cancelled and not out.timed_out, out
    assert out.exit_code != 0, out
    left = survivors(marker)
    assert left == [], f"processes outlived the cancelled command ({backend}): {left}"


@pytest.mark.parametrize("backend", BACKENDS)
def test_cancel_set_before_exec(workspace, marker, backend) -> None:
    sb = sandbox_for(workspace, backend)
    cancel = threading.Event()
    cancel.set()
    out = sb.exec(f"sleep {marker}", timeout_ms=60_000, cancel=cancel)
    assert out.cancelled, out
    assert out.duration_ms < 3_000, out
    assert survivors(marker) == []


# ---- codeward exec ----------------------------------------------------------------


def _cli(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "codeward", "exec", *args],
        capture_output=True,
        text=True,
        timeout=60,
        **kw,
    )


@pytest.mark.parametrize(
    "command,code",
    [("exit 0", 0), ("exit 7", 7), ("exit 255", 255), ("kill -9 $$", 137), ("false", 1)],
)
def test_cli_exits_with_the_command_status(workspace, command, code) -> None:
    r = _cli("--workspace", str(workspace), "--", command)
    assert r.returncode == code, r


def test_cli_exits_124_on_timeout(workspace, marker) -> None:
    r = _cli("--workspace", str(workspace), "--timeout-ms", "300", "--", f"sleep {marker}")
    assert r.returncode == 124, r
    assert "timed out" in r.stderr, r
    assert survivors(marker) == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_cli_terminated_mid_run_cancels_the_command(workspace, marker, sig) -> None:
    """No wall-clock margin: the command's own time is a day, so only the signal ends it.

    HANG_GUARD_S only keeps a broken build from hanging the suite; a busy machine is slow
    but never reaches it."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "codeward",
            "exec",
            "--workspace",
            str(workspace),
            "--timeout-ms",
            "86400000",
            "--",
            f"touch {workspace}/started; sleep {marker} & sleep {marker}1",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        started = time.monotonic()
        while not sleeping(f"{marker}1"):
            assert proc.poll() is None, f"codeward exec ended before its command started: {proc}"
            assert time.monotonic() - started < HANG_GUARD_S, "the command never started"
            time.sleep(0.01)
        proc.send_signal(sig)
        try:
            proc.wait(timeout=HANG_GUARD_S)
        except subprocess.TimeoutExpired:
            pytest.fail("codeward exec did not stop on the signal")
        stderr = proc.stderr.read() if proc.stderr else ""
        assert proc.returncode == 124, (proc.returncode, stderr)  # cancelled, as a timeout is
        assert "timed out" not in stderr, stderr
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stderr:
            proc.stderr.close()
    assert survivors(marker) == [], "codeward exec orphaned the command"


CLI_PROCESS_HOST = """
import sys
from codeward.sandbox import _locate, _native_runner
# no boundary here, so the opt-in selects the process host
_locate.find_bwrap = _native_runner.find_bwrap = lambda workspace=None: None
from codeward.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_cli_on_the_process_host_terminated_mid_run_kills_a_term_ignoring_tree(
    workspace, marker
) -> None:
    env = dict(os.environ, A3S_CODE_ALLOW_PROCESS_HOST_SANDBOX="1")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            CLI_PROCESS_HOST,
            "exec",
            "--workspace",
            str(workspace),
            "--timeout-ms",
            "86400000",
            "--",
            f"trap '' TERM INT; sleep {marker} & sleep {marker}1",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        started = time.monotonic()
        while not sleeping(f"{marker}1"):
            assert proc.poll() is None, "codeward exec ended before its command started"
            assert time.monotonic() - started < HANG_GUARD_S, "the command never started"
            time.sleep(0.01)
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=HANG_GUARD_S)
        except subprocess.TimeoutExpired:
            pytest.fail("codeward exec on the process host did not stop on SIGTERM")
        assert proc.returncode == 124
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        stderr = proc.stderr.read().decode(errors="replace")
        proc.stderr.close()
    assert "no sandbox" in stderr, f"not the process host: {stderr}"
    left = survivors(marker)
    assert left == [], f"codeward exec on the process host orphaned the command: {left}"
