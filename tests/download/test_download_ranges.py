"""Parallel ranges: used only when provably safe, every 206 exact, transient failures retried."""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import threading

import pytest
from dlserver import leftovers, respond, send_head, serve_file

import codeward.download._ranges as ranges
from codeward.download import Cancelled, HttpStatusError, RangeError

DATA = os.urandom(256 * 1024)
DIGEST = hashlib.sha256(DATA).hexdigest()
_RANGE = re.compile(r"bytes=(\d+)-(\d+)?")


@pytest.fixture(autouse=True)
def small_parts(monkeypatch):
    monkeypatch.setattr(ranges, "PART_MIN", 16 * 1024)
    monkeypatch.setattr(ranges, "BACKOFF_S", (0.01, 0.02, 0.04))


def _nothing_written(ws):
    """No destination, no temporary file, and no connection or hash thread left running."""
    threads = [t.name for t in threading.enumerate() if t.name.startswith("a3s-download")]
    return (
        not os.path.exists(os.path.join(ws.root, "out.bin"))
        and leftovers(ws) == []
        and threads == []
    )


def test_parallel_download(fetch, origin, ws):
    origin["/f"] = serve_file(DATA)
    result = fetch("http://dl.example.com/f", connections=4)
    assert (result.strategy, result.connections, result.bytes) == ("ranges", 4, len(DATA))
    assert result.sha256 == DIGEST
    with open(os.path.join(ws.root, "out.bin"), "rb") as f:
        assert f.read() == DATA
    probe, *parts = origin.requests
    assert probe.header("Range") == "bytes=0-" and probe.header("If-Range") is None
    q = len(DATA) // 4
    asked = sorted((r.header("Range") for r in parts), key=lambda v: int(v[6:].split("-")[0]))
    assert asked == [
        f"bytes={q}-{2 * q - 1}",
        f"bytes={2 * q}-{3 * q - 1}",
        f"bytes={3 * q}-{len(DATA) - 1}",
    ]
    assert all(r.header("If-Range") == '"v1"' for r in parts)


def test_two_connections_and_odd_sizes(fetch, origin):
    data = DATA[:100_003]
    origin["/f"] = serve_file(data)
    result = fetch("http://dl.example.com/f", connections=2)
    assert (result.strategy, result.connections) == ("ranges", 2)
    assert result.sha256 == hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize(
    ("etag", "size"),
    [(None, len(DATA)), ('W/"weak"', len(DATA)), ("unquoted", len(DATA)), ('"v1"', 20_000)],
    ids=["no-etag", "weak", "malformed", "small"],
)
def test_single_stream_from_the_probe(fetch, origin, etag, size):
    origin["/f"] = serve_file(DATA[:size], etag=etag)
    result = fetch("http://dl.example.com/f", connections=4)
    assert (result.strategy, result.connections) == ("single", 1)
    assert result.sha256 == hashlib.sha256(DATA[:size]).hexdigest()
    assert len(origin.requests) == 1  # the probe's own stream carried the whole file


def test_server_without_ranges(fetch, origin):
    origin["/f"] = serve_file(DATA, ranges=False)
    result = fetch("http://dl.example.com/f", connections=4)
    assert (result.strategy, result.sha256) == ("single", DIGEST)


def test_empty_file(fetch, origin, ws):
    origin["/f"] = serve_file(b"")
    result = fetch("http://dl.example.com/f", connections=4)
    assert (result.bytes, result.sha256) == (0, hashlib.sha256(b"").hexdigest())
    assert os.path.getsize(os.path.join(ws.root, "out.bin")) == 0


def _hostile(mode: str):
    """Answers the probe correctly and every other range in the way ``mode`` says."""
    good = serve_file(DATA)

    def handler(req, conn):
        m = _RANGE.fullmatch(req.header("Range") or "")
        if m is None or m.group(2) is None:
            return good(req, conn)
        start, end = int(m.group(1)), int(m.group(2))
        body = DATA[start : end + 1]
        cr = f"bytes {start}-{end}/{len(DATA)}"
        headers = [("ETag", '"v1"'), ("Content-Range", cr)]
        if mode == "shifted":
            headers[1] = ("Content-Range", f"bytes {start + 1}-{end + 1}/{len(DATA)}")
            respond(conn, 206, headers, DATA[start + 1 : end + 2])
        elif mode == "no-content-range":
            respond(conn, 206, headers[:1], body)
        elif mode == "other-total":
            headers[1] = ("Content-Range", f"bytes {start}-{end}/{len(DATA) + 1}")
            respond(conn, 206, headers, body)
        elif mode == "star-total":
            headers[1] = ("Content-Range", f"bytes {start}-{end}/*")
            respond(conn, 206, headers, body)
        elif mode == "whole-200":
            respond(conn, 200, headers[:1], DATA)
        elif mode == "wrong-length":
            respond(conn, 206, headers, body[:-1])
        elif mode == "etag-changed":
            headers[0] = ("ETag", '"v2"')
            respond(conn, 206, headers, body)
        elif mode == "etag-missing":
            respond(conn, 206, headers[1:], body)
        elif mode == "encoded":
            respond(conn, 206, [*headers, ("Content-Encoding", "gzip")], body)
        elif mode == "extra-bytes":
            send_head(conn, 206, [*headers, ("Transfer-Encoding", "chunked")])
            conn.sendall(b"%x\r\n%s\r\n0\r\n\r\n" % (len(body) + 1, body + b"!"))
        elif mode == "multipart":
            respond(conn, 206, [("ETag", '"v1"'), ("Content-Type", "multipart/byteranges")], body)
        elif mode == "not-found":
            respond(conn, 404)
        elif mode == "unsatisfiable":
            respond(conn, 416, [("Content-Range", f"bytes */{len(DATA)}")])

    return handler


@pytest.mark.parametrize(
    "mode",
    [
        "shifted",
        "no-content-range",
        "other-total",
        "star-total",
        "whole-200",
        "wrong-length",
        "etag-changed",
        "etag-missing",
        "encoded",
        "extra-bytes",
        "multipart",
        "not-found",
        "unsatisfiable",
    ],
)
def test_anything_but_the_exact_range_fails(fetch, origin, ws, mode):
    origin["/f"] = _hostile(mode)
    with pytest.raises(RangeError):
        fetch("http://dl.example.com/f", connections=4)
    assert _nothing_written(ws)


@pytest.mark.parametrize(
    ("probe_coding", "part_coding"),
    [("gzip", None), ("gzip", "br"), ("gzip, br", "gzip"), (None, "identity, gzip")],
)
def test_parts_coded_unlike_the_probe_answer_fail(fetch, origin, ws, probe_coding, part_coding):
    """Bytes of a gzip-coded answer spliced next to plain ones would make a corrupt file."""

    def handler(req, conn):
        m = _RANGE.fullmatch(req.header("Range") or "")
        start = int(m.group(1))
        end = int(m.group(2)) if m.group(2) else len(DATA) - 1
        coding = probe_coding if m.group(2) is None else part_coding
        headers = [("ETag", '"v1"'), ("Content-Range", f"bytes {start}-{end}/{len(DATA)}")]
        if coding is not None:
            headers.append(("Content-Encoding", coding))
        respond(conn, 206, headers, DATA[start : end + 1])

    origin["/f"] = handler
    with pytest.raises(RangeError, match="Content-Encoding"):
        fetch("http://dl.example.com/f", connections=4)
    assert _nothing_written(ws)


def test_parts_coded_like_the_probe_answer_are_spliced(fetch, origin):
    def handler(req, conn):
        m = _RANGE.fullmatch(req.header("Range") or "")
        start = int(m.group(1))
        end = int(m.group(2)) if m.group(2) else len(DATA) - 1
        headers = [
            ("ETag", '"v1"'),
            ("Content-Range", f"bytes {start}-{end}/{len(DATA)}"),
            ("Content-Encoding", "GZIP" if m.group(2) else "gzip"),
        ]
        respond(conn, 206, headers, DATA[start : end + 1])

    origin["/f"] = handler
    result = fetch("http://dl.example.com/f", connections=4)
    assert (result.strategy, result.sha256) == ("ranges", DIGEST)


@pytest.mark.parametrize(
    "content_range",
    [None, "bytes 0-99/1000", f"bytes 1-{len(DATA) - 1}/{len(DATA)}", "bytes 0-9/*", "bytes */10"],
)
def test_a_wrong_probe_answer_fails(fetch, origin, ws, content_range):
    headers = [("ETag", '"v1"')]
    if content_range:
        headers.append(("Content-Range", content_range))
    origin["/f"] = lambda req, conn: respond(conn, 206, headers, DATA)
    with pytest.raises(RangeError):
        fetch("http://dl.example.com/f", connections=4)
    assert _nothing_written(ws)


def _flaky(failure: str, fail_times: int):
    """Fails the first ``fail_times`` requests for the last part, then serves correctly."""
    good = serve_file(DATA)
    count = {"n": 0}
    last_start = 3 * (len(DATA) // 4)

    def handler(req, conn):
        m = _RANGE.fullmatch(req.header("Range") or "")
        if m and m.group(2) and int(m.group(2)) == len(DATA) - 1 and count["n"] < fail_times:
            count["n"] += 1
            start = int(m.group(1))
            if failure == "503":
                respond(conn, 503, body=b"busy")
            elif failure == "truncated":
                cr = f"bytes {start}-{len(DATA) - 1}/{len(DATA)}"
                send_head(
                    conn,
                    206,
                    [
                        ("ETag", '"v1"'),
                        ("Content-Range", cr),
                        ("Content-Length", str(len(DATA) - start)),
                    ],
                )
                conn.sendall(DATA[start : start + 1000])  # then the connection ends
            return None
        return good(req, conn)

    handler.last_start = last_start  # type: ignore[attr-defined]
    return handler


@pytest.mark.parametrize("failure", ["503", "truncated"])
def test_transient_failures_are_retried_and_resumed(fetch, origin, failure):
    origin["/f"] = _flaky(failure, 2)
    result = fetch("http://dl.example.com/f", connections=4)
    assert result.sha256 == DIGEST
    last = [
        r.header("Range")
        for r in origin.requests
        if r.header("Range").endswith(f"-{len(DATA) - 1}")
    ]
    start = 3 * (len(DATA) // 4)
    offsets = [start, start + 1000, start + 2000] if failure == "truncated" else [start] * 3
    assert last == [f"bytes={o}-{len(DATA) - 1}" for o in offsets]  # resumed where bytes stopped


def test_retries_are_bounded(fetch, origin, ws):
    origin["/f"] = _flaky("503", 100)
    with pytest.raises(HttpStatusError) as info:
        fetch("http://dl.example.com/f", connections=4)
    assert info.value.status == 503
    tries = [r for r in origin.requests if (r.header("Range") or "").endswith(f"-{len(DATA) - 1}")]
    assert len(tries) == 1 + ranges.MAX_RETRIES
    assert _nothing_written(ws)


def test_cancel_during_a_parallel_download(fetch, origin, ws):
    cancel = threading.Event()
    release = threading.Event()
    good = serve_file(DATA)

    def handler(req, conn):
        if (req.header("Range") or "").startswith(f"bytes={len(DATA) // 4}-"):
            cancel.set()  # the caller cancels while this part is in flight
            release.wait(10)
        return good(req, conn)

    origin["/f"] = handler
    try:
        with pytest.raises(Cancelled):
            fetch("http://dl.example.com/f", connections=4, cancel=cancel)
    finally:
        release.set()
    assert _nothing_written(ws)


def test_plan_parts():
    assert ranges.plan_parts(15 * 1024, 4) is None
    parts = ranges.plan_parts(100_003, 4)
    assert parts is not None and parts[0].start == 0 and parts[-1].end == 100_002
    assert all(a.end + 1 == b.start for a, b in itertools.pairwise(parts))
