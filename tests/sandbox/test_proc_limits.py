"""Bounded resources: a fork bomb gets EAGAIN, a memory balloon is killed with a reason, a full
tmpfs gives ENOSPC, and the host stays responsive throughout.

Each hostile payload is bounded itself (a balloon stops at 2 GiB, a fork
counter at 200 children) and runs only after the bound it tests was seen to
exist, so a missing bound fails the test instead of hurting the machine the
suite shares. The host is sampled during each run (hostload.HostWatch): its
available memory, its load and the number of the payload's processes. The
same checks run for an unprivileged caller in test_proc_unprivileged.py, where
no cgroup can be made and the fallbacks (RLIMIT_NPROC, the init's memory
watchdog) carry the bounds.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hostload import (
    HostWatch,
    balloon,
    fork_bomb,
    fork_count,
    mem_total,
    pipe_balloon,
    socket_balloon,
    tmpfs_fill,
)
from hostprocs import new_marker, survivors
from procbox import proc_sandbox

from codeward.sandbox import UNLIMITED, NativeBashSandbox, SandboxLimits
from codeward.sandbox._native_runner import _CoreSandbox

MiB = 1 << 20
TIGHT = SandboxLimits(memory_max_bytes=256 * MiB, max_processes=48, tmpfs_max_bytes=8 * MiB)


def run(sb: _CoreSandbox, command: str, timeout_ms: int = 30_000):
    out = sb.exec(command, timeout_ms=timeout_ms, max_output_bytes=1 << 16)
    assert out.setup_error is None, out
    return out


@pytest.fixture(params=[True, False], ids=["landlock", "no-landlock"])
def landlock(request: pytest.FixtureRequest, fs_boundary_ready: None) -> bool:
    return bool(request.param)


def test_a_fork_bomb_gets_eagain_and_the_next_command_runs(workspace, landlock) -> None:
    m = new_marker()
    with proc_sandbox(workspace, limits=TIGHT, landlock=landlock) as sb:
        counted = run(sb, fork_count(m))
        kids, err = counted.stdout.split()
        assert err == "11" and int(kids) < 48, f"no process bound: {counted}"  # EAGAIN
        with HostWatch(m) as host:
            bomb = run(sb, fork_bomb(m))
        assert bomb.exit_code == 0 and bomb.stdout == "EAGAIN\n", bomb
        assert host.max_marked <= 48, host
        assert host.max_load <= host.start_load + 48 + 2, host
        after = run(sb, "ls /proc | grep -c '^[0-9]'; echo ok")
        assert after.stdout.split() in (["3", "ok"], ["4", "ok"]), after  # init, bash, ls, grep
        info = sb._handle.info()
        assert int(info["starts"]) == 1, "the bomb ended the sandbox"
        if os.geteuid() == 0:  # RLIMIT_NPROC does not bind root: a pids cgroup must
            assert info["pids_cgroup"], info
    assert survivors(m) == []


@pytest.mark.parametrize("reuse", [True, False], ids=["reuse", "one-shot"])
def test_a_memory_balloon_is_killed_and_says_why(workspace, landlock, reuse) -> None:
    m = new_marker()
    limits = SandboxLimits(memory_max_bytes=256 * MiB)
    with proc_sandbox(workspace, limits=limits, reuse=reuse, landlock=landlock) as sb:
        assert run(sb, balloon(m, max_mib=64)).stdout.endswith("survived\n")  # under the bound
        with HostWatch(m) as host:
            out = run(sb, balloon(m))
        assert out.exit_code == 137 and out.oom_killed and not out.timed_out, out
        reached = int(out.stdout.split()[-1])
        assert reached < 1024, f"the balloon reached {reached} MiB under a 256 MiB bound"
        assert host.memory_drop() <= 256 * MiB + 768 * MiB, host
        nxt = run(sb, "echo next")
        assert nxt.exit_code == 0 and not nxt.oom_killed, nxt
        if reuse:
            assert int(sb._handle.info()["starts"]) == 1, "the balloon ended the sandbox"
    assert survivors(m) == []


@pytest.mark.parametrize("reuse", [True, False], ids=["reuse", "one-shot"])
@pytest.mark.parametrize("payload", [socket_balloon, pipe_balloon], ids=["sockets", "pipes"])
def test_kernel_buffers_a_command_pins_count_against_the_memory_bound(
    workspace, reuse, payload, fs_boundary_ready
) -> None:
    """1 GiB queued in socketpairs or pipes is memory no process maps (and a memory cgroup
    may not charge): the init's watchdog counts it and the command is killed for it."""
    m = new_marker()
    limits = SandboxLimits(memory_max_bytes=64 * MiB)
    with proc_sandbox(workspace, limits=limits, reuse=reuse) as sb:
        with HostWatch(m) as host:
            out = run(sb, payload(m, 1024))
        assert out.exit_code == 137 and out.oom_killed, out
        reached = int(out.stdout.split()[-1])
        assert reached < 512, f"{reached} MiB queued under a 64 MiB bound"
        assert host.memory_drop() <= 64 * MiB + 768 * MiB, host
        assert run(sb, "echo next").stdout == "next\n"
    assert survivors(m) == []


@pytest.mark.parametrize("reuse", [True, False], ids=["reuse", "one-shot"])
def test_a_full_tmpfs_gives_enospc(workspace, landlock, reuse) -> None:
    paths = ["/tmp", "/var/tmp", "/dev/shm", "/run"] + (["$HOME"] if reuse else [])
    with proc_sandbox(workspace, limits=TIGHT, reuse=reuse, landlock=landlock) as sb:
        with HostWatch("no-such-marker") as host:
            out = run(sb, tmpfs_fill(paths, 32))
        lines = out.stdout.splitlines()
        assert len(lines) == len(paths), out
        for line in lines:
            _path, size, result = line.split()
            assert result == "ENOSPC" and int(size) <= 8 * MiB, out
        assert host.memory_drop() <= 256 * MiB, host
        again = run(sb, "head -c 1M /dev/zero > /tmp/small && stat -c %s /tmp/small")
        assert again.stdout == f"{MiB}\n", again


def test_the_defaults_bound_every_sandbox(workspace, fs_boundary_ready) -> None:
    # long-lived whatever A3S_TEST_SANDBOX_REUSE says: its init's cgroup is read below
    with NativeBashSandbox(workspace, reuse=True) as sb:
        out = run(sb, "ulimit -u; df -B1 --output=size /tmp /var/tmp /dev/shm /run | tail -n +2")
        info = sb._handle.info()
        limit_files = _memory_limit_files(int(info["pid"]))
    nproc, *sizes = out.stdout.split()
    assert nproc == "4096", out
    eighth = mem_total() // 8
    for size in sizes:  # rounded to pages by the kernel
        assert abs(int(size) - eighth) < MiB, out
    if os.geteuid() == 0:
        assert info["memory_cgroup"] and info["pids_cgroup"], info
        assert limit_files, "the sandbox is not in a memory cgroup of its own"
        assert abs(min(limit_files) - mem_total() // 2) < MiB, limit_files


def test_unlimited_leaves_the_bounds_out(workspace, fs_boundary_ready) -> None:
    limits = SandboxLimits(
        memory_max_bytes=UNLIMITED, max_processes=UNLIMITED, tmpfs_max_bytes=UNLIMITED
    )
    with NativeBashSandbox(workspace, limits=limits) as sb:
        out = run(sb, "ulimit -u; cat /proc/1/cmdline | tr '\\0' ' '")
        info = sb._handle.info()
    assert out.stdout.split()[0] != "4096", out
    assert "--max-processes" not in out.stdout and "--memory-max" not in out.stdout, out
    assert not info["memory_cgroup"] and not info["pids_cgroup"], info


def test_limits_below_what_a_sandbox_needs_are_refused(workspace) -> None:
    from codeward import SandboxArgumentError

    for bad in ({"memory_max_bytes": MiB}, {"max_processes": 2}, {"tmpfs_max_bytes": 4096}):
        with pytest.raises(SandboxArgumentError, match="below the least"):
            NativeBashSandbox(workspace, limits=SandboxLimits(**bad))
    for bad in ({"max_processes": 0}, {"memory_max_bytes": -1}, {"tmpfs_max_bytes": True}):
        with pytest.raises(SandboxArgumentError, match="SandboxLimits"):
            SandboxLimits(**bad)


def _memory_limit_files(pid: int) -> list[int]:
    """memory.max / memory.limit_in_bytes of the cgroups `pid` is in (host view)."""
    found = []
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            candidates = [Path("/sys/fs/cgroup") / path.lstrip("/") / "memory.max"]
        elif "memory" in controllers.split(","):
            candidates = [
                Path(mnt) / path.lstrip("/") / "memory.limit_in_bytes"
                for mnt in ("/sys/fs/cgroup/memory",)
            ]
        else:
            continue
        for c in candidates:
            if c.exists() and c.read_text().strip().isdigit():
                found.append(int(c.read_text()))
    return found
