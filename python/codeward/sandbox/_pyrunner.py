"""A pure-Python bounded process runner, for platforms where the C runner is not built.

It keeps the contract of the C runner (native/src/process_linux.c, documented
in native/include/a3s/a3s.h) so that every backend reports commands the same
way:

- the child gets its own session and process group, stdin from /dev/null and
  a pipe for each of stdout and stderr;
- both pipes are drained concurrently (one selector loop in the calling
  thread); per stream a head of ``max/2`` and a tail of ``max - max/2`` bytes
  are kept around the marker ``"\\n[... a3s: N bytes omitted ...]\\n"``, the
  totals count every byte, and reading never stops while the child lives, so
  a flood can never block it on a full pipe;
- on timeout or cancellation the group gets SIGTERM (and SIGCONT, so a
  stopped member sees it), then SIGKILL after the grace period; the status is
  then 124;
- once the child has exited (however), what is left of its group is
  SIGKILLed *before* the child is reaped (so the group id cannot have been
  reused), and output is read for at most ``DRAIN_MS`` more: a descendant
  that left the group and keeps a pipe open cannot hang the caller;
- a status of 128+N reports signal N;
- it waits only for the pid it started (``waitid(P_PID, ...)``), installs no
  signal handler and keeps no global state: threads may run commands at once.

Exec failures (a missing program, an unusable cwd) raise ``OSError`` before
anything ran, like the C runner's A3S_E_SYSTEM errors; they are never turned
into an exit status.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ._output import CommandOutput

__all__ = [
    "DEFAULT_GRACE_MS",
    "DEFAULT_MAX_OUTPUT",
    "DRAIN_MS",
    "RunResult",
    "omitted_marker",
    "run_bounded",
]

DEFAULT_GRACE_MS = 2000  # kill_grace_ms 0 means this (A3S_PROCESS_DEFAULT_GRACE_MS)
DEFAULT_MAX_OUTPUT = 102_400  # max_output_bytes 0 means this (A3S_PROCESS_DEFAULT_MAX_OUTPUT)
DRAIN_MS = 200  # how long output is still read once the child is reaped (A3S_PROCESS_DRAIN_MS)
READ_CHUNK = 65536
WAIT_POLL_S = 0.01  # exit polling period without a pidfd (the C runner's WAIT_POLL_MS)


class _Cancel(Protocol):
    def is_set(self) -> bool: ...


def omitted_marker(count: int) -> bytes:
    """The marker between head and tail: the same bytes as the C runner's."""
    return f"\n[... a3s: {count} bytes omitted ...]\n".encode("ascii")


@dataclass(frozen=True)
class RunResult:
    """What one run produced, before decoding (the C runner's result view)."""

    stdout: bytes
    stderr: bytes
    stdout_total: int
    stderr_total: int
    stdout_truncated: bool
    stderr_truncated: bool
    exit_code: int
    term_signal: int  # the signal that ended the child, 0 if it exited
    timed_out: bool
    cancelled: bool
    duration_ms: float
    pid: int

    def to_output(
        self,
        *,
        backend: str,
        sandboxed: bool,
        setup_error: str | None = None,
        exit_code: int | None = None,
    ) -> CommandOutput:
        """The CommandOutput of this run (UTF-8 with replacement characters)."""
        return CommandOutput(
            stdout=self.stdout.decode("utf-8", "replace"),
            stderr=self.stderr.decode("utf-8", "replace"),
            exit_code=self.exit_code if exit_code is None else exit_code,
            timed_out=self.timed_out,
            truncated=self.stdout_truncated or self.stderr_truncated,
            total_bytes=self.stdout_total + self.stderr_total,
            sandboxed=sandboxed,
            backend=backend,
            setup_error=setup_error,
            cancelled=self.cancelled,
            duration_ms=self.duration_ms,
        )


class _Capture:
    """A head of head_cap bytes and a tail of the last tail_cap bytes, plus the total."""

    __slots__ = ("head", "head_cap", "tail", "tail_cap", "total")

    def __init__(self, max_bytes: int) -> None:
        self.head_cap = max_bytes // 2
        self.tail_cap = max_bytes - max_bytes // 2
        self.head = bytearray()
        self.tail = bytearray()  # grows to at most 2 * tail_cap + READ_CHUNK, then trimmed
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if not data or self.tail_cap == 0:
            return
        if len(data) >= self.tail_cap:
            self.tail = bytearray(data[-self.tail_cap :])
            return
        self.tail += data
        if len(self.tail) > 2 * self.tail_cap:
            del self.tail[: len(self.tail) - self.tail_cap]

    def finish(self) -> tuple[bytes, bool]:
        tail = bytes(self.tail[len(self.tail) - min(len(self.tail), self.tail_cap) :])
        kept = len(self.head) + len(tail)
        truncated = self.total > kept
        marker = omitted_marker(self.total - kept) if truncated else b""
        return bytes(self.head) + marker + tail, truncated


def _signal_group(pid: int, sig: int) -> None:
    """Signals the child's group, and the child itself by pid.

    Only called before the child is reaped, so neither id can have been reused.
    """
    for target in (-pid, pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(target, sig)


class _ReapedElsewhere(Exception):
    """Someone else in this process reaped our child (waitpid(-1)): its pid may be reused."""


def _has_exited(proc: subprocess.Popen[bytes]) -> bool:
    """Whether the child has exited, without reaping it (so its group id stays ours)."""
    waitid = getattr(os, "waitid", None)
    if waitid is not None:
        try:
            info = waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            raise _ReapedElsewhere(proc.pid) from None
        except OSError:
            pass  # waitid unusable here: fall back to the reaping check below
        else:
            return info is not None
    # Fallback: poll() reaps. The group is then killed right after the reap,
    # which leaves a (tiny) window in which the group id could be reused.
    return proc.poll() is not None


def _exited_or_lost(proc: subprocess.Popen[bytes]) -> bool:
    try:
        return _has_exited(proc)
    except _ReapedElsewhere:
        # the pid may belong to someone else by now: signal nothing, report the failure
        proc.returncode = -1
        raise ChildProcessError(
            f"the child {proc.pid} was reaped by someone else in this process"
        ) from None


def _positive_or_default(value: int | None, default: int) -> int:
    if value is None or value == 0:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"expected a non-negative integer, not {value!r}")
    return value


def run_bounded(
    argv: Sequence[str | bytes],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    timeout_ms: int | None = 0,
    kill_grace_ms: int | None = DEFAULT_GRACE_MS,
    max_output_bytes: int | None = DEFAULT_MAX_OUTPUT,
    cancel: _Cancel | Any = None,
    pass_fds: Sequence[int] = (),
) -> RunResult:
    """Runs ``argv`` (argv[0] an absolute path: no PATH search) and returns its bounded output.

    ``env`` is the child's whole environment (None: inherit). ``timeout_ms``
    0 or None means no timeout; ``kill_grace_ms`` and ``max_output_bytes`` 0
    or None mean the defaults (2000 ms, 100 KiB per stream). ``cancel`` is
    anything with ``is_set()``; when it becomes true the run stops like a
    timeout but reports ``cancelled``. ``pass_fds`` are inherited by the
    child under the same numbers.
    """
    if not argv:
        raise ValueError("argv is empty")
    program = os.fsdecode(argv[0])
    if not os.path.isabs(program):
        raise ValueError(f"the program {program!r} must be an absolute path")
    timeout = _positive_or_default(timeout_ms, 0)
    grace = _positive_or_default(kill_grace_ms, DEFAULT_GRACE_MS)
    max_bytes = _positive_or_default(max_output_bytes, DEFAULT_MAX_OUTPUT)
    if cancel is not None and not callable(getattr(cancel, "is_set", None)):
        raise ValueError("cancel must have an is_set() method")
    if signal.getsignal(signal.SIGCHLD) == signal.SIG_IGN:
        # an ignored SIGCHLD makes the kernel reap the child: no status to report
        raise RuntimeError("SIGCHLD is ignored in this process; exit statuses would be lost")

    start = time.monotonic()
    proc = subprocess.Popen(  # raises OSError if the program cannot start
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=env,
        close_fds=True,
        pass_fds=tuple(pass_fds),
        start_new_session=True,
        restore_signals=True,
        bufsize=0,
    )
    assert proc.stdout is not None and proc.stderr is not None
    captures = {
        proc.stdout.fileno(): _Capture(max_bytes),
        proc.stderr.fileno(): _Capture(max_bytes),
    }
    out_capture, err_capture = captures[proc.stdout.fileno()], captures[proc.stderr.fileno()]
    selector = selectors.DefaultSelector()
    pidfd = -1
    reaped = False
    try:
        for fd in captures:
            os.set_blocking(fd, False)
            selector.register(fd, selectors.EVENT_READ)
        pidfd_open = getattr(os, "pidfd_open", None)
        if pidfd_open is not None:
            try:
                pidfd = pidfd_open(proc.pid)
                selector.register(pidfd, selectors.EVENT_READ)
            except OSError:
                pidfd = -1  # poll for the exit instead
        open_fds = set(captures)
        deadline = start + timeout / 1000 if timeout else None
        stop_reason = ""  # "timeout" or "cancel" once stopping
        kill_at = 0.0
        killed = False
        drain_at = 0.0
        while True:
            now = time.monotonic()
            if not reaped:
                if not stop_reason and deadline is not None and now >= deadline:
                    stop_reason = "timeout"
                elif not stop_reason and cancel is not None and cancel.is_set():
                    stop_reason = "cancel"
                if stop_reason and not kill_at:
                    _signal_group(proc.pid, signal.SIGTERM)
                    _signal_group(proc.pid, signal.SIGCONT)  # a stopped member would never see it
                    kill_at = now + grace / 1000
                if kill_at and not killed and now >= kill_at:
                    _signal_group(proc.pid, signal.SIGKILL)
                    killed = True
            elif now >= drain_at or not open_fds:
                break

            if reaped:
                wait: float | None = max(0.0, drain_at - now)
            else:
                wait = WAIT_POLL_S if pidfd < 0 or cancel is not None else None
                for at in (deadline if not stop_reason else None, kill_at if not killed else None):
                    if at:
                        wait = max(0.0, at - now) if wait is None else min(wait, max(0.0, at - now))
            pid_ready = False
            for key, _ in selector.select(wait):
                fd = int(key.fd)
                if fd == pidfd:
                    pid_ready = True
                    continue
                try:
                    data = os.read(fd, READ_CHUNK)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if data:
                    captures[fd].add(data)
                else:
                    selector.unregister(fd)
                    open_fds.discard(fd)
            if not reaped and (pidfd < 0 or pid_ready) and _exited_or_lost(proc):
                # kill what is left of the group while the zombie still pins its id
                _signal_group(proc.pid, signal.SIGKILL)
                proc.wait()
                reaped = True
                if pidfd >= 0:
                    selector.unregister(pidfd)
                    os.close(pidfd)
                    pidfd = -1
                drain_at = time.monotonic() + DRAIN_MS / 1000
    except ChildProcessError:
        reaped = True  # see _exited_or_lost: nothing may be signalled any more
        raise
    finally:
        if not reaped:  # an exception (KeyboardInterrupt ...): never leave the child behind
            _signal_group(proc.pid, signal.SIGKILL)
            proc.wait()
        selector.close()
        if pidfd >= 0:
            os.close(pidfd)
        proc.stdout.close()
        proc.stderr.close()

    code = proc.returncode
    term_signal = -code if code < 0 else 0
    exit_code = 128 + term_signal if term_signal else code
    if stop_reason:
        exit_code = 124
    stdout, out_truncated = out_capture.finish()
    stderr, err_truncated = err_capture.finish()
    return RunResult(
        stdout=stdout,
        stderr=stderr,
        stdout_total=out_capture.total,
        stderr_total=err_capture.total,
        stdout_truncated=out_truncated,
        stderr_truncated=err_truncated,
        exit_code=exit_code,
        term_signal=term_signal,
        timed_out=stop_reason == "timeout",
        cancelled=stop_reason == "cancel",
        duration_ms=(time.monotonic() - start) * 1000,
        pid=proc.pid,
    )
