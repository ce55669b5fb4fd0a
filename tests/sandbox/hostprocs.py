"""Host-side views of processes for the sandbox tests.

A test gives the processes it starts a unique marker (``sleep 424.123456``)
and then looks for that marker in the host's /proc: whatever still carries it
after the command returned has outlived the command.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import time
from pathlib import Path

from codeward.sandbox import NativeBashSandbox, ProcessHostBashSandbox, select_sandbox

BACKENDS = ["native", "process-host"]


def new_marker(prefix: int = 424) -> str:
    return f"{prefix}.{random.randint(100000, 999999)}"


def processes_with(token: str) -> list[tuple[int, str]]:
    """(pid, command line) of every host process but this one naming `token`."""
    me = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if token.encode() in cmdline:
            found.append((int(entry), cmdline.replace(b"\0", b" ").decode(errors="replace")))
    return found


def sleeping(token: str) -> bool:
    """Whether a `sleep TOKEN...` process itself runs (not merely a command line naming it)."""
    needle = b"sleep\0" + token.encode()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if Path(f"/proc/{entry}/cmdline").read_bytes().startswith(needle):
                    return True
            except OSError:
                continue
    return False


def survivors(token: str, within_s: float = 1.5) -> list[tuple[int, str]]:
    """The processes still naming `token` once `within_s` has passed (or none is left)."""
    deadline = time.monotonic() + within_s
    while (left := processes_with(token)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return left


def kill_marked(token: str) -> None:
    for pid, _ in processes_with(token):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def sandbox_for(ws: Path, backend: str) -> NativeBashSandbox | ProcessHostBashSandbox:
    if backend == "native":
        sb = select_sandbox(ws)
        assert isinstance(sb, NativeBashSandbox), f"the native boundary is unavailable: {sb!r}"
        return sb
    return ProcessHostBashSandbox(ws)


def cgroup_mounts() -> list[str]:
    """Every cgroup hierarchy mounted here: the v1 controllers' and the v2 one."""
    mounts = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            sep = fields.index("-")
            if fields[sep + 1] in ("cgroup", "cgroup2"):
                mounts.append(fields[4])
    return mounts


def cgroups_made_by(pids: list[int]) -> list[str]:
    """The cgroups that processes `pids` made and nobody removed, in every hierarchy.

    native/src/cgroup_linux.c names each codeward-<pid of its maker>-<random>, next to the
    maker's own cgroup (v2) or under it (each v1 controller it uses: memory, pids); the whole
    of each hierarchy is searched, so a cgroup made anywhere else is found too.
    """
    prefixes = tuple(f"codeward-{pid}-" for pid in pids)
    found = []
    for mount in cgroup_mounts():
        for parent, dirs, _ in os.walk(mount):
            found += [os.path.join(parent, d) for d in dirs if d.startswith(prefixes)]
    return sorted(found)
