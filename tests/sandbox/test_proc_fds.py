"""Hostile inheritance cases: what the command holds when it starts.

An inherited file descriptor is a capability that no mount namespace or
Landlock rule can take back (a directory fd opened on the host reaches the
whole host tree through openat). The command must start with exactly stdin
(/dev/null), stdout and stderr: no fd the host process leaked, not the init's
status or lifeline pipe (which would let it forge its own verdict), and no
controlling terminal.
"""

from __future__ import annotations

import os
import shlex
import textwrap

import pytest
from hostprocs import sandbox_for

PY = "/usr/bin/python3"


def _py(script: str) -> str:
    return f"{PY} -c {shlex.quote(textwrap.dedent(script))}"


# the fds of the command's own bash ($$), listed by a child that adds none to it
LIST_FDS = "ls -l /proc/$$/fd; true"


def _fds(listing: str) -> dict[int, str]:
    fds = {}
    for line in listing.splitlines():
        if " -> " in line:
            left, target = line.split(" -> ", 1)
            fds[int(left.split()[-1])] = target
    return fds


@pytest.mark.parametrize("backend", ["native", "process-host"])
def test_command_starts_with_only_stdio(workspace, backend) -> None:
    sb = sandbox_for(workspace, backend)
    out = sb.exec(LIST_FDS, timeout_ms=20_000)
    fds = _fds(out.stdout)
    assert sorted(fds) == [0, 1, 2], f"the command inherited extra fds: {out.stdout}"
    assert fds[0] == "/dev/null", fds
    assert fds[1].startswith("pipe:") and fds[2].startswith("pipe:"), fds


@pytest.mark.parametrize("backend", ["native", "process-host"])
def test_host_fds_marked_inheritable_do_not_reach_the_command(workspace, tmp_path, backend) -> None:
    secret_dir = tmp_path / "host-secret"
    secret_dir.mkdir()
    (secret_dir / "key").write_text("HOST-SECRET-VALUE\n")
    # a careless host library leaving inheritable fds around: a directory
    # (openat escape), a file, and the write end of a pipe
    dir_fd = os.open(secret_dir, os.O_RDONLY | os.O_DIRECTORY)
    file_fd = os.open(secret_dir / "key", os.O_RDONLY)
    r, w = os.pipe()
    leaked = [dir_fd, file_fd, r, w]
    try:
        for fd in leaked:
            os.set_inheritable(fd, True)
        sb = sandbox_for(workspace, backend)
        probe = _py(f"""
            import os
            for fd in {leaked!r}:
                try:
                    print(fd, "OPEN", os.readlink(f"/proc/self/fd/{{fd}}"))
                except OSError:
                    print(fd, "closed")
                try:
                    with open(os.open("key", os.O_RDONLY, dir_fd=fd)) as f:
                        print("READ", f.read())
                except OSError:
                    pass
        """)
        out = sb.exec(
            probe + f"; cat <&{file_fd} 2>/dev/null; echo SECRET-VIA-SHELL >&{w}", timeout_ms=20_000
        )
        assert "HOST-SECRET-VALUE" not in out.stdout, f"a leaked host fd was usable: {out}"
        assert "OPEN" not in out.stdout, out
        os.set_blocking(r, False)
        try:
            got = os.read(r, 100)
        except BlockingIOError:
            got = b""
        assert got == b"", f"the command wrote into a host pipe: {got!r}"
    finally:
        for fd in leaked:
            os.close(fd)


def test_command_cannot_forge_the_init_status(workspace) -> None:
    """The status pipe tells the caller 'timed out' or 'setup failed': the
    command must not be able to write to it (fds 3..64 are all closed)."""
    sb = sandbox_for(workspace, "native")
    out = sb.exec(
        # each attempt in a subshell whose stderr is already /dev/null, so that
        # bash keeps no saved copy of stderr on a high fd
        "for fd in $(seq 3 64); do ( exec 2>/dev/null; printf T >&$fd && echo wrote-$fd; "
        "printf Eforged >&$fd ); done; exit 0",
        timeout_ms=20_000,
    )
    assert "wrote-" not in out.stdout, out
    assert out.exit_code == 0 and not out.timed_out and out.setup_error is None, out


@pytest.mark.parametrize("backend", ["native", "process-host"])
def test_no_controlling_terminal(workspace, backend) -> None:
    sb = sandbox_for(workspace, backend)
    out = sb.exec(
        "tty; echo tty=$?; (exec 3<>/dev/tty) 2>/dev/null && echo OPENED-TTY; "
        "ps -o sid=,pgid=,tty= -p $$",
        timeout_ms=20_000,
    )
    assert "tty=1" in out.stdout and "OPENED-TTY" not in out.stdout, out
    sid, pgid, tty = out.stdout.splitlines()[-1].split()
    assert tty == "?", out
    assert sid == pgid, f"the command is not the leader of its own session: {out.stdout}"
