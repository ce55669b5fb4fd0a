"""The host's side of the resource-bound tests: what a hostile command did to the machine.

A ``HostWatch`` samples, every 20 ms while a hostile command runs, the host's
available memory, its one-minute load and the number of host processes whose
command line carries the test's marker (a forked process keeps its parent's
command line, so every copy of a fork bomb carries it). The payloads these
tests run are hostile but bounded themselves, so that a missing bound shows up
as a failed assertion, never as a machine taken down for the other people on it.
"""

from __future__ import annotations

import os
import shlex
import textwrap
import threading
from dataclasses import dataclass, field

from hostprocs import processes_with


def mem_available() -> int:
    """MemAvailable of /proc/meminfo, in bytes."""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no MemAvailable in /proc/meminfo")


def mem_total() -> int:
    with open("/proc/meminfo") as f:
        return int(f.readline().split()[1]) * 1024


@dataclass
class HostWatch:
    """Use as a context manager around the hostile command."""

    marker: str
    start_available: int = 0
    start_load: float = 0.0
    min_available: int = 0
    max_load: float = 0.0
    max_marked: int = 0
    samples: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> HostWatch:
        self.start_available = self.min_available = mem_available()
        self.start_load = self.max_load = os.getloadavg()[0]
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join()

    def _sample(self) -> None:
        while not self._stop.wait(0.02):
            self.min_available = min(self.min_available, mem_available())
            self.max_load = max(self.max_load, os.getloadavg()[0])
            self.max_marked = max(self.max_marked, len(processes_with(self.marker)))
            self.samples += 1

    def __str__(self) -> str:
        return (
            f"available memory {self.start_available >> 20} MiB -> min "
            f"{self.min_available >> 20} MiB; load {self.start_load:.2f} -> max "
            f"{self.max_load:.2f}; marked processes max {self.max_marked}; {self.samples} samples"
        )

    def memory_drop(self) -> int:
        return self.start_available - self.min_available


PY = "/usr/bin/python3"


def _py(marker: str, script: str) -> str:
    """A python3 -c command whose command line carries the marker."""
    body = f"# {marker}\n{textwrap.dedent(script)}"
    return f"{PY} -c {shlex.quote(body)}"


def fork_count(marker: str, attempts: int = 200) -> str:
    """Forks sleeping children until fork fails; prints "<children> <errno or none>"."""
    return _py(
        marker,
        f"""
        import os, time
        kids, err = 0, "none"
        for _ in range({attempts}):
            try:
                pid = os.fork()
            except OSError as e:
                err = e.errno
                break
            if pid == 0:
                time.sleep(3)
                os._exit(0)
            kids += 1
        print(kids, err)
        """,
    )


def fork_bomb(marker: str, seconds: float = 2.0) -> str:
    """Every process forks forever (pausing 50 ms after a refused fork); the main one
    reports after `seconds` whether a fork was refused with EAGAIN, then leaves the
    rest to the sandbox."""
    return _py(
        marker,
        f"""
        import errno, os, time
        def bomb():
            while True:
                try:
                    os.fork()
                except OSError as e:
                    if e.errno == errno.EAGAIN:
                        try:
                            os.close(os.open("eagain", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                        except OSError:
                            pass
                    time.sleep(0.05)
        if os.fork() == 0:
            bomb()
        time.sleep({seconds})
        print("EAGAIN" if os.path.exists("eagain") else "no EAGAIN")
        """,
    )


def balloon(marker: str, max_mib: int = 2048) -> str:
    """Touches 16 MiB more every step up to max_mib (itself a bound), printing each step."""
    return _py(
        marker,
        f"""
        import sys
        held = []
        for step in range({max_mib} // 16):
            held.append(b"x" * (16 << 20))
            print(len(held) * 16, flush=True)
        print("survived")
        """,
    )


def _queue_balloon(marker: str, max_mib: int, imports: str, queue_more: str) -> str:
    """Queues 64 KiB chunks in kernel buffers until `max_mib` MiB are queued (itself a bound),
    printing the MiB queued at every 16. `queue_more` opens one more pair of descriptors, keeps
    them in `held` and adds what `fill(write)` queues to `queued`; it breaks out of the loop
    when no more can be opened (what is queued stays)."""
    head = f"""\
import resource, time, {imports}
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
held, queued, shown = [], 0, 0
chunk = b"x" * 65536
def fill(write):
    n = 0
    while True:
        try:
            n += write(chunk)
        except BlockingIOError:
            return n
while queued < {max_mib} << 20:
"""
    tail = """\
    while queued >> 24 > shown:
        shown += 1
        print(shown * 16, flush=True)
time.sleep(2)  # held: a bound after the fact has its time to see it
print("survived", queued >> 20, flush=True)
"""
    step = textwrap.indent(textwrap.dedent(queue_more).lstrip("\n"), "    ")
    return _py(marker, head + step + tail)


def socket_balloon(marker: str, max_mib: int = 1024) -> str:
    """Fills socketpairs (the largest send buffers allowed) until `max_mib` MiB are queued
    (itself a bound), printing the MiB queued at every 16; kernel memory no process maps."""
    return _queue_balloon(
        marker,
        max_mib,
        "socket",
        """
        try:
            a, b = socket.socketpair()
        except OSError:
            break  # out of descriptors: what is queued stays
        held.append((a, b))
        for s in (a, b):
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 30)
            s.setblocking(False)
            queued += fill(s.send)
        """,
    )


def pipe_balloon(marker: str, max_mib: int = 1024) -> str:
    """Fills pipes (each as large as allowed) until `max_mib` MiB are queued, as
    socket_balloon does with socketpairs."""
    return _queue_balloon(
        marker,
        max_mib,
        "fcntl, os",
        """
        try:
            r, w = os.pipe()
        except OSError:
            break
        held.append((r, w))
        try:
            fcntl.fcntl(w, 1031, 1 << 20)  # F_SETPIPE_SZ
        except OSError:
            pass
        os.set_blocking(w, False)
        queued += fill(lambda data: os.write(w, data))
        """,
    )


def tmpfs_fill(paths: list[str], mib: int) -> str:
    """Writes `mib` MiB into each path, then removes it; prints "<path> <bytes> ENOSPC|ok"."""
    return "\n".join(
        f"err=$(head -c {mib}M /dev/zero 2>&1 >{p}/fill); "
        f'case "$err" in *"No space left"*) e=ENOSPC;; *) e=ok;; esac; '
        f'echo "{p} $(stat -c %s {p}/fill) $e"; rm -f {p}/fill'
        for p in paths
    )
