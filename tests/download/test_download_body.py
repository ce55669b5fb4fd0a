"""The response body: limits, deadlines, truncation, framing, statuses, integrity."""

from __future__ import annotations

import gzip
import hashlib
import os
import socket
import threading
import time

import pytest
from dlserver import leftovers, respond, send_head, serve_file

from codeward.download import (
    DownloadTimeout,
    HttpStatusError,
    IntegrityError,
    ProtocolError,
    TooLarge,
)

DATA = os.urandom(300_000)


def _assert_nothing_written(ws, name="out.bin"):
    assert not os.path.exists(os.path.join(ws.root, name))
    assert leftovers(ws) == []


@pytest.mark.parametrize("connections", [1, 4])
def test_declared_size_over_the_limit_is_refused_before_reading(fetch, origin, ws, connections):
    origin["/f"] = serve_file(DATA)
    with pytest.raises(TooLarge) as info:
        fetch("http://dl.example.com/f", max_bytes=1000, connections=connections)
    assert (info.value.limit, info.value.size) == (1000, len(DATA))
    _assert_nothing_written(ws)


def test_exactly_the_limit_is_fine(fetch, origin):
    origin["/f"] = serve_file(DATA)
    assert fetch("http://dl.example.com/f", max_bytes=len(DATA)).bytes == len(DATA)


def _chunked(req, conn):
    send_head(conn, 200, [("Transfer-Encoding", "chunked")])
    for i in range(0, len(DATA), 10_000):
        piece = DATA[i : i + 10_000]
        conn.sendall(b"%x;ext=1\r\n%s\r\n" % (len(piece), piece))
    conn.sendall(b"0\r\nX-Trailer: t\r\n\r\n")


def _close_delimited(req, conn):
    send_head(conn, 200, [])
    conn.sendall(DATA)


@pytest.mark.parametrize("handler", [_chunked, _close_delimited], ids=["chunked", "close"])
def test_undeclared_sizes(fetch, origin, ws, handler):
    origin["/f"] = handler
    assert fetch("http://dl.example.com/f").sha256 == hashlib.sha256(DATA).hexdigest()
    with pytest.raises(TooLarge):
        fetch("http://dl.example.com/f", "other", max_bytes=len(DATA) - 1)
    _assert_nothing_written(ws, "other")


def test_slow_drip_hits_the_total_deadline(fetch, origin, ws):
    stop = threading.Event()

    def drip(req, conn):
        send_head(conn, 200, [("Content-Length", "1000000")])
        while not stop.is_set():
            conn.sendall(b"x")  # one byte at a time: each read succeeds, the total does not
            time.sleep(0.02)

    origin["/f"] = drip
    try:
        with pytest.raises(DownloadTimeout) as info:
            fetch("http://dl.example.com/f", timeout_s=1)
    finally:
        stop.set()
    assert info.value.timeout_s == 1
    _assert_nothing_written(ws)


def test_stalled_head_hits_the_deadline(fetch, origin, ws):
    stop = threading.Event()
    origin["/f"] = lambda req, conn: stop.wait(10)
    try:
        with pytest.raises(DownloadTimeout):
            fetch("http://dl.example.com/f", timeout_s=0.5)
    finally:
        stop.set()
    _assert_nothing_written(ws)


def _truncated_length(req, conn):
    send_head(conn, 200, [("Content-Length", str(len(DATA)))])
    conn.sendall(DATA[:1000])


def _truncated_chunked(req, conn):
    send_head(conn, 200, [("Transfer-Encoding", "chunked")])
    conn.sendall(b"%x\r\n" % len(DATA) + DATA[:1000])


@pytest.mark.parametrize("handler", [_truncated_length, _truncated_chunked])
def test_truncated_bodies(fetch, origin, ws, handler):
    origin["/f"] = handler
    with pytest.raises(IntegrityError) as info:
        fetch("http://dl.example.com/f", connections=1)
    assert info.value.reason == "truncated"
    _assert_nothing_written(ws)


def test_tls_close_without_close_notify_is_truncation(fetch, tls_origin, ws):
    tls_origin.clean_tls_close = False

    def handler(req, conn):
        send_head(conn, 200, [])
        conn.sendall(DATA[:5000])
        conn.shutdown(socket.SHUT_RDWR)  # TCP ends; no TLS close_notify (that is unwrap())

    tls_origin["/f"] = handler
    with pytest.raises(IntegrityError):
        fetch("https://dl.example.com/f")
    _assert_nothing_written(ws)


def test_tls_close_with_close_notify_ends_the_body(fetch, tls_origin):
    def handler(req, conn):
        send_head(conn, 200, [])
        conn.sendall(DATA)

    tls_origin["/f"] = handler
    assert fetch("https://dl.example.com/f").bytes == len(DATA)


RAW = {
    "te-and-length": b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
    "two-lengths": b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello",
    "length-list": b"HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\nhello",
    "negative-length": b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
    "gzip-te": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
    "http2": b"HTTP/2 200\r\n\r\n",
    "http09": b"hello world\r\n",
    "no-reason-garbage": b"HTTP/1.1 2000 OK\r\n\r\n",
    "space-before-colon": b"HTTP/1.1 200 OK\r\nContent-Length : 5\r\n\r\nhello",
    "obs-fold": b"HTTP/1.1 200 OK\r\nX-A: 1\r\n  folded\r\nContent-Length: 0\r\n\r\n",
    "switching": b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n",
    "huge-header": b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n",
    "many-headers": b"HTTP/1.1 200 OK\r\n" + b"X-A: 1\r\n" * 200 + b"\r\n",
    "bad-chunk": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
    "chunk-no-crlf": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n",
    "endless-interim": b"HTTP/1.1 103 Early Hints\r\n\r\n" * 20,
}


@pytest.mark.parametrize("raw", RAW.values(), ids=RAW.keys())
def test_malformed_or_ambiguous_responses(fetch, origin, ws, raw):
    origin["/f"] = lambda req, conn: conn.sendall(raw)
    with pytest.raises(ProtocolError):
        fetch("http://dl.example.com/f", connections=1)
    _assert_nothing_written(ws)


def test_interim_responses_are_skipped(fetch, origin):
    origin["/f"] = lambda req, conn: conn.sendall(
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n"
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
    )
    assert fetch("http://dl.example.com/f").bytes == 5


def test_bare_lf_and_http10(fetch, origin, ws):
    origin["/f"] = lambda req, conn: conn.sendall(b"HTTP/1.0 200 OK\nContent-Length: 5\n\nhello")
    fetch("http://dl.example.com/f")
    with open(os.path.join(ws.root, "out.bin"), "rb") as f:
        assert f.read() == b"hello"


def test_content_encoding_is_never_decoded(fetch, origin, ws):
    packed = gzip.compress(DATA)
    origin["/f.tar.gz"] = lambda req, conn: respond(
        conn, 200, [("Content-Encoding", "gzip")], packed
    )
    result = fetch("http://dl.example.com/f.tar.gz", "f.tar.gz")
    assert result.sha256 == hashlib.sha256(packed).hexdigest()
    assert origin.requests[0].header("Accept-Encoding") == "identity"


@pytest.mark.parametrize("status", [204, 304, 401, 403, 404, 410, 500, 503])
def test_unsuccessful_statuses(fetch, origin, ws, status):
    origin["/f"] = lambda req, conn: respond(
        conn, status, body=b"" if status in (204, 304) else b"no"
    )
    with pytest.raises(HttpStatusError) as info:
        fetch("http://dl.example.com/f")
    assert info.value.status == status
    _assert_nothing_written(ws)


def test_sha256_match_and_mismatch(fetch, origin, ws):
    origin["/f"] = serve_file(DATA)
    good = hashlib.sha256(DATA).hexdigest()
    assert fetch("http://dl.example.com/f", "ok", expected_sha256=good.upper()).sha256 == good
    bad = "0" * 64
    with pytest.raises(IntegrityError) as info:
        fetch("http://dl.example.com/f", expected_sha256=bad)
    assert (info.value.reason, info.value.expected, info.value.actual) == ("sha256", bad, good)
    _assert_nothing_written(ws)


@pytest.mark.parametrize("value", ["abc", "g" * 64, "0" * 63, 123])
def test_sha256_argument_is_checked(fetch, value):
    with pytest.raises(ValueError):
        fetch("http://dl.example.com/f", expected_sha256=value)


@pytest.mark.parametrize(
    "kw",
    [
        {"max_bytes": 0},
        {"max_bytes": 8 * 2**30 + 1},
        {"timeout_s": 0},
        {"timeout_s": 3601},
        {"connections": 0},
        {"connections": 5},
        {"max_bytes": True},
    ],
)
def test_limits_are_checked(fetch, kw):
    with pytest.raises((ValueError, TypeError)):
        fetch("http://dl.example.com/f", **kw)


def test_memory_stays_bounded_with_a_large_body(fetch, origin):
    """A body much larger than the receive buffer streams through it (no whole-body copy)."""
    big = os.urandom(1 << 20) * 24  # 24 MiB

    def handler(req, conn):
        send_head(conn, 200, [("Content-Length", str(len(big)))])
        conn.sendall(big)

    origin["/f"] = handler
    import tracemalloc

    tracemalloc.start()
    try:
        result = fetch("http://dl.example.com/f", connections=1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.bytes == len(big)
    assert peak < 4 << 20  # the 1 MiB buffer and small change, never the 24 MiB body
