"""Hostile Unix-socket cases: host daemons (ssh-agent, D-Bus, Docker) stay out of reach.

The seccomp filter refuses every AF_UNIX socket() (only anonymous stream
socketpairs pass), so neither a socket file visible inside the sandbox nor an
abstract name can be reached, and the agent variables are scrubbed from the
environment. The host side of each check is a real listening socket whose
accept queue must stay empty.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import shlex
import socket
import tempfile
import textwrap

import pytest

from codeward import _native
from codeward._errors import SandboxArgumentError
from codeward.sandbox import NativeBashSandbox, ProcessHostBashSandbox, select_sandbox
from codeward.sandbox._locate import find_bwrap, init_path
from codeward.sandbox._native_runner import _CoreSandbox

PY = "/usr/bin/python3"


def _py(script: str) -> str:
    return f"{PY} -c {shlex.quote(textwrap.dedent(script))}"


def _native_sandbox(ws):
    sb = select_sandbox(ws)
    assert isinstance(sb, NativeBashSandbox), f"the native boundary is unavailable here: {sb!r}"
    return sb


@pytest.fixture(params=["full", "no-landlock"])
def layered_sandbox(request, workspace):
    if request.param == "full":
        return _native_sandbox(workspace)
    handle = _native.Sandbox(
        str(workspace), init_path(), bwrap=find_bwrap(str(workspace)), no_landlock=True
    )
    return _CoreSandbox(workspace, _handle=handle)


def _accepted(listener: socket.socket, wait_s: float = 0.3) -> int:
    n = 0
    listener.setblocking(False)
    while select.select([listener], [], [], wait_s)[0]:
        try:
            conn, _ = listener.accept()
        except BlockingIOError:
            break
        conn.close()
        n += 1
        wait_s = 0.05
    return n


UNIX_KINDS = [
    pytest.param("SOCK_STREAM", "path", id="file-stream"),
    pytest.param("SOCK_DGRAM", "path", id="file-dgram"),
    pytest.param("SOCK_SEQPACKET", "path", id="file-seqpacket"),
    pytest.param("SOCK_STREAM", "abstract", id="abstract-stream"),
    pytest.param("SOCK_DGRAM", "abstract", id="abstract-dgram"),
]


@pytest.mark.parametrize("kind,where", UNIX_KINDS)
def test_unix_socket_creation_is_refused(layered_sandbox, workspace, kind, where) -> None:
    target = str(workspace / "made.sock") if where == "path" else "\0a3s-hostile-abstract"
    out = layered_sandbox.exec(
        _py(f"""
            import socket
            try:
                s = socket.socket(socket.AF_UNIX, socket.{kind})
            except OSError as e:
                print("socket-errno", e.errno)
                raise SystemExit(0)
            s.bind({target!r})
            if socket.{kind} != socket.SOCK_DGRAM:
                s.listen(1)
            print("BOUND")
        """),
        timeout_ms=20_000,
    )
    assert "BOUND" not in out.stdout, out
    assert out.stdout.strip() == f"socket-errno {errno.EAFNOSUPPORT}", out
    assert not (workspace / "made.sock").exists(), "a socket file appeared in the workspace"


def test_unix_socket_refused_even_with_high_bits_in_the_family(workspace) -> None:
    """socket() takes an int: 0x1_0000_0001 is AF_UNIX to the kernel."""
    sb = _native_sandbox(workspace)
    out = sb.exec(
        _py("""
            import ctypes, ctypes.util
            libc = ctypes.CDLL(None, use_errno=True)
            libc.syscall.restype = ctypes.c_long
            fd = libc.syscall(ctypes.c_long(41), ctypes.c_long((1 << 32) | 1),
                              ctypes.c_long(1), ctypes.c_long(0))
            print("fd", fd, "errno", ctypes.get_errno())
        """),
        timeout_ms=20_000,
    )
    assert out.stdout.strip() == f"fd -1 errno {errno.EAFNOSUPPORT}", out


@pytest.fixture
def agent_sockets(workspace, monkeypatch):
    """Two real listening agent sockets: one inside the workspace (visible in the
    sandbox as a file), one in a host /tmp directory; SSH_AUTH_SOCK and friends
    point at them in the host environment."""
    host_dir = tempfile.mkdtemp(prefix="a3s-agent-", dir="/tmp")
    paths = [str(workspace / "agent.sock"), os.path.join(host_dir, "agent.sock")]
    listeners = []
    for p in paths:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(p)
        s.listen(16)
        listeners.append(s)
    monkeypatch.setenv("SSH_AUTH_SOCK", paths[1])
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", f"unix:path={paths[0]}")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{paths[0]}")
    yield paths, listeners
    for s in listeners:
        s.close()
    for p in paths:
        with contextlib.suppress(OSError):
            os.unlink(p)
    os.rmdir(host_dir)


def test_host_agent_sockets_cannot_be_reached(workspace, agent_sockets) -> None:
    paths, listeners = agent_sockets
    # control: the listeners do see a connection from the host
    for p, lst in zip(paths, listeners, strict=False):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
            c.connect(p)
        assert _accepted(lst) == 1

    sb = _native_sandbox(workspace)  # created after the variables were set
    out = sb.exec(
        "env; echo ==; "
        + _py(f"""
            import socket
            for p in {paths!r}:
                try:
                    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    s.connect(p)
                    s.sendall(b"escaped")
                    print("CONNECTED", p)
                except OSError as e:
                    print("refused", e.errno)
        """)
        + f"; ls -l {shlex.quote(paths[1])} 2>&1; "
        "SSH_AUTH_SOCK=" + shlex.quote(paths[0]) + " ssh-add -l 2>&1; true",
        timeout_ms=20_000,
    )
    env_part, _, rest = out.stdout.partition("==\n")
    for name in ("SSH_AUTH_SOCK", "DBUS_SESSION_BUS_ADDRESS", "DOCKER_HOST"):
        assert f"{name}=" not in env_part, f"{name} reached the sandbox environment"
    assert "CONNECTED" not in rest, out
    assert rest.count(f"refused {errno.EAFNOSUPPORT}") == 2, out
    assert "No such file" in rest, "the host /tmp agent socket is visible inside the sandbox"
    for p, lst in zip(paths, listeners, strict=False):
        assert _accepted(lst) == 0, f"the host agent socket {p} was reached from the sandbox"


@pytest.mark.parametrize(
    "name,value",
    [
        ("SSH_AUTH_SOCK", "/tmp/agent.sock"),
        ("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/0/bus"),
        ("DOCKER_HOST", "unix:///var/run/docker.sock"),
    ],
)
def test_agent_variables_cannot_be_passed_per_call(workspace, name, value) -> None:
    sb = _native_sandbox(workspace)
    with pytest.raises(SandboxArgumentError, match=name):
        sb.exec(f"touch {shlex.quote(str(workspace / 'ran'))}", env={name: value})
    assert not (workspace / "ran").exists(), "the command ran despite the refused variable"


def test_unix_socketpair_stream_works_but_datagram_pair_is_refused(workspace) -> None:
    """Anonymous stream pairs reach nothing outside and stay usable; datagram pairs are refused."""
    sb = _native_sandbox(workspace)
    out = sb.exec(
        _py("""
            import socket
            a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            a.sendall(b"ok"); print("stream", b.recv(2).decode())
            try:
                socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
                print("DGRAM-PAIR")
            except OSError as e:
                print("dgram-errno", e.errno)
        """),
        timeout_ms=20_000,
    )
    assert out.stdout.split("\n")[:2] == ["stream ok", f"dgram-errno {errno.EPERM}"], out


def test_agent_variables_are_scrubbed_on_the_process_host_too(workspace, agent_sockets) -> None:
    """The process host has no boundary, but it still must not hand the agent to the command."""
    sb = ProcessHostBashSandbox(workspace)
    out = sb.exec("env", timeout_ms=20_000)
    assert out.exit_code == 0 and out.sandboxed is False, out
    for name in ("SSH_AUTH_SOCK", "DBUS_SESSION_BUS_ADDRESS", "DOCKER_HOST"):
        assert f"{name}=" not in out.stdout, f"{name} reached the process-host environment"
