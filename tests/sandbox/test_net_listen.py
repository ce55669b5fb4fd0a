"""Hostile listener cases: a sandboxed command is never a server.

listen()/accept() are refused by seccomp (EPERM) whatever the address, and
Landlock (ABI >= 4) also refuses the TCP bind. Each layer is checked on its
own: with the full boundary and with Landlock switched off.
"""

from __future__ import annotations

import errno
import shlex
import textwrap

import pytest

from codeward import _native
from codeward.sandbox import NativeBashSandbox, select_sandbox
from codeward.sandbox._locate import find_bwrap, init_path
from codeward.sandbox._native_runner import _CoreSandbox

PY = "/usr/bin/python3"


def _py(script: str) -> str:
    return f"{PY} -c {shlex.quote(textwrap.dedent(script))}"


@pytest.fixture(params=["full", "no-landlock"])
def layered_sandbox(request, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    if request.param == "full":
        sb = select_sandbox(ws)
        assert isinstance(sb, NativeBashSandbox), f"the native boundary is unavailable: {sb!r}"
        return sb
    handle = _native.Sandbox(str(ws), init_path(), bwrap=find_bwrap(str(ws)), no_landlock=True)
    return _CoreSandbox(ws, _handle=handle)


@pytest.mark.parametrize(
    "family,addr",
    [("AF_INET", "127.0.0.1"), ("AF_INET6", "::1"), ("AF_INET", "0.0.0.0"), ("AF_INET6", "::")],
)
def test_listen_on_loopback_is_refused(layered_sandbox, family, addr) -> None:
    out = layered_sandbox.exec(
        _py(f"""
            import socket
            # listen() without bind (the kernel would auto-bind a port)
            s = socket.socket(socket.{family}, socket.SOCK_STREAM)
            try:
                s.listen(1)
                print("LISTENING-UNBOUND")
            except OSError as e:
                print("unbound-listen", e.errno)
            s = socket.socket(socket.{family}, socket.SOCK_STREAM)
            try:
                s.bind(({addr!r}, 0))
                print("bound")
            except OSError as e:
                print("bind", e.errno)
            try:
                s.listen(1)
                print("LISTENING")
            except OSError as e:
                print("listen", e.errno)
            try:
                s.accept()
                print("ACCEPTED")
            except OSError as e:
                print("accept", e.errno)
        """),
        timeout_ms=20_000,
    )
    lines = out.stdout.splitlines()
    assert "LISTENING" not in out.stdout and "ACCEPTED" not in out.stdout, out
    assert lines[0] == f"unbound-listen {errno.EPERM}", out
    assert lines[2] == f"listen {errno.EPERM}", out
    assert lines[3] == f"accept {errno.EPERM}", out
    # the bind itself is Landlock's (test_landlock_refuses_the_tcp_bind)
    assert lines[1] in ("bound", f"bind {errno.EACCES}"), out


def test_landlock_refuses_the_tcp_bind(tmp_path) -> None:
    if _native.features()["landlock_abi"] < 4:
        pytest.skip("Landlock has no network rules on this kernel")
    ws = tmp_path / "ws"
    ws.mkdir()
    sb = select_sandbox(ws)
    assert isinstance(sb, NativeBashSandbox)
    out = sb.exec(
        _py("""
            import socket
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", 0)); print("BOUND")
            except OSError as e:
                print("bind", e.errno)
        """),
        timeout_ms=20_000,
    )
    assert out.stdout.strip() == f"bind {errno.EACCES}", out


def test_http_server_fails_quickly(layered_sandbox) -> None:
    out = layered_sandbox.exec(
        f"{PY} -m http.server 18123 --bind 127.0.0.1; echo exit=$?",
        timeout_ms=20_000,
    )
    assert not out.timed_out, f"http.server kept running: {out}"
    assert "exit=0" not in out.stdout, out
    assert "Serving HTTP" not in out.stdout, out
    assert "PermissionError" in out.stderr, out
    assert out.duration_ms < 5_000, f"took {out.duration_ms} ms to fail"
