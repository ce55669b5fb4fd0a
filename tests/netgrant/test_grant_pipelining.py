"""Every request the mediator forwards is decided: pipelining and malformed requests, for real.

A granted command (in the real sandbox, long-lived and one-shot) speaks raw
HTTP to its proxy; the origin is a raw loopback server that records every
byte it receives. A second absolute-form request pipelined behind the
first, on the same connection, must never reach the origin (the grant
decided the first only), whether it comes in the same write or later; a
request body is forwarded exactly, by its Content-Length. A malformed
request (a CONNECT port of Unicode digits, ambiguous framing) gets a 400
answer, never a silent close.
"""

from __future__ import annotations

import ast
import shlex
import socket
import textwrap
import threading
from collections.abc import Iterator

import pytest
from grantkit import PUBLIC_IP

PY = "/usr/bin/python3"


def _py(script: str) -> str:
    return f"{PY} -c {shlex.quote(textwrap.dedent(script))}"


class RawOrigin:
    """An origin that records every byte of each connection, answers once, then reads on
    until the peer closes (so pipelined bytes, had they been forwarded, are recorded)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.addr = self.sock.getsockname()
        self.received: list[bytes] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        data = b""
        conn.settimeout(5)
        with conn:
            try:
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nanswer")
                while chunk := conn.recv(65536):  # whatever else comes on this connection
                    data += chunk
            except OSError:
                pass
            with self._lock:
                self.received.append(data)

    def all_bytes(self) -> bytes:
        with self._lock:
            return b"".join(self.received)

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def raw_origin(net) -> Iterator[RawOrigin]:  # type: ignore[no-untyped-def]
    origin = RawOrigin()
    net.routes[(PUBLIC_IP, 80)] = origin.addr  # dl.example.com:80 is this server now
    yield origin
    origin.close()


SEND = """
import socket, sys, time
def exchange(parts, pause=0.0):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
    for i, part in enumerate(parts):
        if i:
            time.sleep(pause)
        try:
            s.sendall(part)
        except OSError:
            break
    data = b""
    try:
        while chunk := s.recv(65536):
            data += chunk
    except OSError as exc:
        data += b"<" + type(exc).__name__.encode() + b">"
    sys.stdout.write(repr(data) + "\\n")
    sys.stdout.flush()
"""

FIRST = b"GET http://dl.example.com/first HTTP/1.1\r\nHost: dl.example.com\r\n\r\n"
SECOND = b"GET http://other.example.com/second HTTP/1.1\r\nHost: other.example.com\r\n\r\n"


def test_a_pipelined_request_never_reaches_the_origin(sandbox, run_granted, raw_origin) -> None:  # type: ignore[no-untyped-def]
    posted = b"POST http://dl.example.com/first HTTP/1.1\r\nContent-Length: 4\r\n\r\nbody"
    script = _py(
        SEND
        + f"""
exchange([{FIRST + SECOND!r}])                 # both in one write
exchange([{FIRST!r}, {SECOND!r}], pause=0.3)    # the second after the first
exchange([{posted + SECOND!r}])                # a body, then the second
"""
    )
    r = run_granted(sandbox, "dl.example.com", 80, script)
    answers = r.out.stdout.splitlines()
    assert len(answers) == 3, r.out
    for answer in answers:  # one answer each, then the connection closed
        assert answer.count("HTTP/1.1 200 OK") == 1 and answer.endswith("answer'"), r.out
    seen = raw_origin.all_bytes()
    assert seen.count(b"/first HTTP/1.1") == 3, seen
    assert b"second" not in seen and b"other.example.com" not in seen, seen
    assert any(c.endswith(b"Connection: close\r\n\r\nbody") for c in raw_origin.received)
    assert r.summary["refused"] >= 2 and any("pipelined" in x for x in r.summary["refusals"])


def test_the_host_header_is_the_decided_target(sandbox, run_granted, raw_origin) -> None:  # type: ignore[no-untyped-def]
    request = b"GET http://dl.example.com/x HTTP/1.1\r\nHost: other.example.com\r\n\r\n"
    r = run_granted(sandbox, "dl.example.com", 80, _py(SEND + f"exchange([{request!r}])"))
    assert "HTTP/1.1 200 OK" in r.out.stdout, r.out
    seen = raw_origin.all_bytes()
    assert b"Host: dl.example.com\r\n" in seen and b"other.example.com" not in seen, seen


@pytest.mark.parametrize(
    "request_bytes, status",
    [
        (b"CONNECT dl.example.com:\xb9 HTTP/1.1\r\n\r\n", 400),  # '\xb9' is a Unicode digit
        (b"CONNECT dl.example.com:\xd9\xa1 HTTP/1.1\r\n\r\n", 400),
        (b"GET http://dl.example.com:\xb2/ HTTP/1.1\r\n\r\n", 400),
        (
            b"POST http://dl.example.com/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            501,
        ),
        (
            b"POST http://dl.example.com/ HTTP/1.1\r\n"
            b"Content-Length: 1\r\nContent-Length: 2\r\n\r\n",
            400,
        ),
        (b"GET http://dl.example.com/ HTTP/1.1\r\nContent-Length : 0\r\n\r\n", 400),
        (b"GET http://dl.example.com/ HTTP/1.1\r\nX: a\r\n folded\r\n\r\n", 400),
    ],
    ids=["connect-sup1", "connect-arabic1", "get-sup2", "chunked", "two-lengths", "space", "fold"],
)
def test_a_malformed_request_gets_an_answer(
    sandbox, run_granted, raw_origin, request_bytes, status
) -> None:  # type: ignore[no-untyped-def]
    r = run_granted(sandbox, "dl.example.com", 80, _py(SEND + f"exchange([{request_bytes!r}])"))
    answer = ast.literal_eval(r.out.stdout.splitlines()[0])
    assert answer.startswith(b"HTTP/1.1 %d " % status), r.out
    assert raw_origin.all_bytes() == b""  # nothing reached the origin
