"""The pure-Python bounded runner, with real processes: the C runner's contract, kept."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path

import pytest

from codeward.sandbox._pyrunner import RunResult, omitted_marker, run_bounded

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")

BASH = "/bin/bash"


def bash(command: str, **kwargs: object) -> RunResult:
    kwargs.setdefault("timeout_ms", 30_000)
    return run_bounded([BASH, "-c", command], **kwargs)  # type: ignore[arg-type]


def alive(pid: int) -> bool:
    """True while pid runs (a zombie nobody reaps counts as dead)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_dead(pid: int, seconds: float = 5.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not alive(pid):
            return True
        time.sleep(0.02)
    return False


# ---- exit statuses and streams -----------------------------------------------------------


@pytest.mark.parametrize("code", [0, 1, 3, 42, 255])
def test_exit_codes(code: int) -> None:
    r = bash(f"exit {code}")
    assert r.exit_code == code
    assert r.term_signal == 0
    assert not r.timed_out and not r.cancelled


@pytest.mark.parametrize(
    ("sig", "name"), [(signal.SIGTERM, "TERM"), (signal.SIGKILL, "KILL"), (signal.SIGSEGV, "SEGV")]
)
def test_signal_is_128_plus_n(sig: int, name: str) -> None:
    r = bash(f"kill -{name} $$")
    assert r.term_signal == sig
    assert r.exit_code == 128 + sig
    assert not r.timed_out


def test_stdout_and_stderr_are_separate_and_counted() -> None:
    r = bash("printf out; printf err >&2; printf more")
    assert r.stdout == b"outmore" and r.stderr == b"err"
    assert (r.stdout_total, r.stderr_total) == (7, 3)
    assert not r.stdout_truncated and not r.stderr_truncated
    out = r.to_output(backend="test", sandboxed=False)
    assert (out.stdout, out.stderr, out.total_bytes, out.truncated) == ("outmore", "err", 10, False)
    assert out.backend == "test" and out.ok


def test_stdin_is_dev_null() -> None:
    r = bash("cat; echo rc=$?; [ -t 0 ] && echo tty || echo notty", timeout_ms=5000)
    assert r.stdout == b"rc=0\nnotty\n"


def test_environment_and_cwd_are_exactly_the_given_ones(tmp_path: Path) -> None:
    r = run_bounded(
        ["/usr/bin/env"], cwd=tmp_path, env={"ONLY": "this", "PATH": "/bin"}, timeout_ms=5000
    )
    assert r.stdout.decode().splitlines() == ["ONLY=this", "PATH=/bin"]
    r = bash("pwd -P", cwd=tmp_path, env={})
    assert r.stdout.decode().strip() == os.path.realpath(tmp_path)


def test_invalid_utf8_is_kept_raw_and_replaced_when_decoded() -> None:
    r = bash(r"printf '\xff\xfeok\xc3'; printf '\x80' >&2")
    assert r.stdout == b"\xff\xfeok\xc3" and r.stderr == b"\x80"
    out = r.to_output(backend="t", sandboxed=True)
    assert out.stdout == "\ufffd\ufffdok\ufffd" and out.stderr == "\ufffd"


def test_exec_failures_raise_before_anything_ran(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        run_bounded(["/nonexistent/program"])
    with pytest.raises(OSError):
        run_bounded([BASH, "-c", "true"], cwd=tmp_path / "missing")
    with pytest.raises(ValueError, match="absolute"):
        run_bounded(["bash", "-c", "true"])
    with pytest.raises(ValueError):
        run_bounded([])
    with pytest.raises(ValueError, match="is_set"):
        run_bounded([BASH, "-c", "true"], cancel=object())


def test_pass_fds_reach_the_child() -> None:
    r_fd, w_fd = os.pipe()
    try:
        r = bash(f"printf hello >&{w_fd}", pass_fds=(w_fd,))
        assert r.exit_code == 0
        os.close(w_fd)
        w_fd = -1
        assert os.read(r_fd, 100) == b"hello"
    finally:
        os.close(r_fd)
        if w_fd >= 0:
            os.close(w_fd)


def test_ignored_sigchld_is_refused() -> None:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals can only be set from the main thread")
    old = signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        with pytest.raises(RuntimeError, match="SIGCHLD"):
            bash("true")
    finally:
        signal.signal(signal.SIGCHLD, old)


# ---- bounded output ----------------------------------------------------------------------

FLOOD = 50_000_000


def test_flood_of_50mb_keeps_head_and_tail_with_exact_totals_in_bounded_memory() -> None:
    cmd = (
        f"flood() {{ printf HEAD-$1; head -c {FLOOD} /dev/zero | tr '\\0' x; printf TAIL-$1; }}; "
        "flood err >&2 & flood out; wait"
    )
    tracemalloc.start()
    try:
        r = bash(cmd, max_output_bytes=64, timeout_ms=120_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert r.exit_code == 0
    for data, total, truncated, tag in (
        (r.stdout, r.stdout_total, r.stdout_truncated, b"out"),
        (r.stderr, r.stderr_total, r.stderr_truncated, b"err"),
    ):
        size = FLOOD + 2 * len(b"HEAD-") + 2 * len(tag)
        assert total == size
        assert truncated
        assert (
            data
            == b"HEAD-" + tag + b"x" * 24 + omitted_marker(size - 64) + b"x" * 24 + b"TAIL-" + tag
        )
    # 100 MB went through; what stayed in memory is a few read buffers
    assert peak < 4 * 1024 * 1024, peak


def test_marker_is_the_c_runners() -> None:
    assert omitted_marker(12345) == b"\n[... a3s: 12345 bytes omitted ...]\n"


@pytest.mark.parametrize(
    ("cap", "head", "tail"), [(1, b"", b"9"), (7, b"012", b"6789"), (10, b"01234", b"56789")]
)
def test_head_is_half_and_tail_the_rest(cap: int, head: bytes, tail: bytes) -> None:
    r = bash("printf 0123456789", max_output_bytes=cap)
    assert r.stdout_total == 10
    if cap >= 10:
        assert r.stdout == b"0123456789" and not r.stdout_truncated
    else:
        assert r.stdout == head + omitted_marker(10 - cap) + tail
        assert r.stdout_truncated


def test_output_exactly_at_the_cap_is_not_truncated() -> None:
    r = bash("head -c 1000 /dev/zero", max_output_bytes=1000)
    assert r.stdout == b"\0" * 1000 and not r.stdout_truncated and r.stdout_total == 1000


def test_tail_spans_many_small_writes() -> None:
    r = bash("for i in $(seq 1 5000); do echo line$i; done", max_output_bytes=40)
    assert r.stdout.startswith(b"line1\nline2\nline3\nli")
    assert r.stdout.endswith(b"]\n8\nline4999\nline5000\n")  # the last 20 bytes
    assert r.stdout_total == sum(len(f"line{i}\n") for i in range(1, 5001))


def test_everything_written_before_exit_is_drained() -> None:
    r = bash("head -c 3000000 /dev/zero; exit 5", max_output_bytes=1 << 30)
    assert r.exit_code == 5
    assert r.stdout_total == 3_000_000 and len(r.stdout) == 3_000_000


# ---- timeout, cancellation, process groups ---------------------------------------------


def test_timeout_terms_the_group_and_reports_124() -> None:
    start = time.monotonic()
    r = bash("echo started; sleep 30", timeout_ms=300, kill_grace_ms=10_000)
    elapsed = time.monotonic() - start
    assert r.exit_code == 124 and r.timed_out and not r.cancelled
    assert r.stdout == b"started\n"
    assert elapsed < 5  # SIGTERM sufficed: the 10 s grace was not needed


def test_timeout_kills_a_term_ignoring_child_after_the_grace() -> None:
    start = time.monotonic()
    r = bash("trap '' TERM; echo armed; sleep 30; echo survived", timeout_ms=300, kill_grace_ms=400)
    elapsed = time.monotonic() - start
    assert r.exit_code == 124 and r.timed_out
    assert r.stdout == b"armed\n"
    assert 0.6 <= elapsed < 10


def test_a_stopped_child_still_sees_the_term() -> None:
    start = time.monotonic()
    r = bash("kill -STOP $$; echo never", timeout_ms=300, kill_grace_ms=20_000)
    assert r.exit_code == 124 and r.timed_out
    assert time.monotonic() - start < 10


def test_cancel_stops_the_run() -> None:
    event = threading.Event()
    timer = threading.Timer(0.2, event.set)
    timer.start()
    try:
        start = time.monotonic()
        r = bash("sleep 30", cancel=event, kill_grace_ms=10_000)
    finally:
        timer.cancel()
    assert r.cancelled and not r.timed_out and r.exit_code == 124
    assert time.monotonic() - start < 5


def test_cancel_needs_only_is_set() -> None:
    class Flag:
        def __init__(self) -> None:
            self.deadline = time.monotonic() + 0.2

        def is_set(self) -> bool:
            return time.monotonic() >= self.deadline

    r = bash("trap '' TERM; sleep 30", cancel=Flag(), kill_grace_ms=200)
    assert r.cancelled and r.exit_code == 124


def test_an_unset_cancel_changes_nothing() -> None:
    r = bash("exit 7", cancel=threading.Event())
    assert r.exit_code == 7 and not r.cancelled


def test_background_children_in_the_group_die_with_the_command(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    r = bash(f"sleep 60 & echo $! > {pidfile}; echo done")
    assert r.exit_code == 0 and r.stdout == b"done\n"
    assert wait_dead(int(pidfile.read_text()))


@pytest.mark.skipif(not os.path.exists("/usr/bin/setsid"), reason="needs setsid(1)")
def test_a_descendant_holding_the_pipe_does_not_hang_the_caller(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    start = time.monotonic()
    r = bash(
        f"/usr/bin/setsid /bin/sh -c 'echo $$ > {pidfile}; exec sleep 60' & "
        f"while [ ! -s {pidfile} ]; do sleep 0.01; done; echo parent-done"
    )
    elapsed = time.monotonic() - start
    try:
        assert r.exit_code == 0 and r.stdout == b"parent-done\n"
        assert elapsed < 5
    finally:
        pid = int(pidfile.read_text())
        if alive(pid):  # it left the group: killing it is the sandbox's job, not the runner's
            os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(not os.path.exists("/usr/bin/setsid"), reason="needs setsid(1)")
def test_a_descendant_flooding_after_exit_is_cut_off(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    start = time.monotonic()
    r = bash(
        f"/usr/bin/setsid /bin/sh -c 'echo $$ > {pidfile}; exec yes' & "
        f"while [ ! -s {pidfile} ]; do sleep 0.01; done; sleep 0.1; exit 3",
        max_output_bytes=100,
    )
    try:
        assert r.exit_code == 3
        assert time.monotonic() - start < 5
        assert r.stdout_total > 0 and r.stdout_truncated
    finally:
        pid = int(pidfile.read_text())
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_other_children_of_the_caller_are_left_alone() -> None:
    other = subprocess.Popen([BASH, "-c", "sleep 0.3; exit 7"])
    try:
        r = bash("sleep 0.5; exit 2")
        assert r.exit_code == 2
        assert other.wait(timeout=10) == 7  # nobody reaped it behind its owner's back
    finally:
        if other.poll() is None:
            other.kill()
            other.wait()


def test_runs_from_several_threads_at_once() -> None:
    results: dict[int, RunResult] = {}

    def work(i: int) -> None:
        results[i] = bash(f"head -c {100_000 * (i + 1)} /dev/zero; exit {i}", max_output_bytes=100)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(results) == list(range(6))
    for i, r in results.items():
        assert r.exit_code == i and r.stdout_total == 100_000 * (i + 1)


def test_duration_and_pid_are_reported() -> None:
    r = bash("sleep 0.2")
    assert 150 <= r.duration_ms < 10_000
    assert r.pid > 0 and not alive(r.pid)
