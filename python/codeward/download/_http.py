"""A minimal HTTP/1.1 client over one socket the caller connected: one request, one response.

Why not ``http.client`` or ``urllib``: they resolve and connect by themselves
(no pinning to a validated address), follow or expose redirects their own
way, accept ambiguous framing, and decode what the server sends. This one
sends exactly one GET with ``Connection: close`` and ``Accept-Encoding:
identity``, parses the status line and headers under fixed limits, refuses
ambiguous framing (``Transfer-Encoding`` with ``Content-Length``, differing
``Content-Length`` values, any transfer coding but ``chunked``) and streams
the body through one fixed-size buffer into a sink, never decompressing.
Each receive takes its timeout from the download's :class:`Deadline`.
"""

from __future__ import annotations

import contextlib
import re
import socket
import ssl
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from ._deadline import Deadline
from ._errors import IntegrityError, NetworkError, ProtocolError, TooLarge

__all__ = ["BUFFER_SIZE", "Connection", "ResponseHead", "Sink", "build_request"]

BUFFER_SIZE = 1 << 20  # one receive buffer per connection: memory does not grow with the file
HEAD_LIMIT = 64 * 1024  # status line + headers, all interim responses included
LINE_LIMIT = 8 * 1024
MAX_HEADERS = 128
MAX_INTERIM = 16  # 1xx responses skipped before the real one

Sink = Callable[[memoryview], None]  # receives body bytes; the view is valid during the call only
Framing = Literal["none", "length", "chunked", "close"]

_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_STATUS = re.compile(rb"HTTP/1\.([01]) ([0-9]{3})(?: ([^\x00\r\n]*))?\r?\n")
_HEADER = re.compile(rb"([!#$%&'*+\-.^_`|~0-9A-Za-z]+):[ \t]*([^\x00\r\n]*?)[ \t]*\r?\n")
_CHUNK = re.compile(rb"([0-9A-Fa-f]{1,15})[ \t]*(;[^\x00\r\n]*)?\r?\n")
_DIGITS = re.compile(r"[0-9]{1,18}")


@dataclass(frozen=True)
class ResponseHead:
    """A parsed status line and header section; names are lower-case, values latin-1 text."""

    version: str
    status: int
    reason: str
    headers: tuple[tuple[str, str], ...]

    def get_all(self, name: str) -> list[str]:
        return [v for k, v in self.headers if k == name]

    def get(self, name: str) -> str | None:
        """The header's value; ProtocolError if it is repeated with different values."""
        values = self.get_all(name)
        if not values:
            return None
        if any(v != values[0] for v in values):
            raise ProtocolError(f"the response repeats {name!r} with different values")
        return values[0]

    def framing(self) -> tuple[Framing, int | None]:
        """How the body is delimited (RFC 9112 6.3), refusing every ambiguous case."""
        if 100 <= self.status < 200 or self.status in (204, 304):
            return "none", 0
        codings = [
            c.strip().lower() for v in self.get_all("transfer-encoding") for c in v.split(",")
        ]
        lengths = [v.strip() for h in self.get_all("content-length") for v in h.split(",")]
        if codings:
            if lengths:
                raise ProtocolError(
                    "the response has both Transfer-Encoding and Content-Length (ambiguous framing)"
                )
            if codings != ["chunked"]:
                raise ProtocolError(
                    f"the transfer coding {', '.join(codings)!r} is not supported: only chunked "
                    "(the download never decodes content)"
                )
            return "chunked", None
        if lengths:
            if not all(_DIGITS.fullmatch(v) for v in lengths) or len(set(lengths)) != 1:
                raise ProtocolError(f"invalid Content-Length {', '.join(lengths)!r}")
            return "length", int(lengths[0])
        return "close", None


def build_request(method: str, target: str, headers: Sequence[tuple[str, str]]) -> bytes:
    """The request head; names and values were validated where they entered."""
    lines = [f"{method} {target} HTTP/1.1", *(f"{k}: {v}" for k, v in headers), "", ""]
    return "\r\n".join(lines).encode("latin-1")


class Connection:
    """One socket, one request, one response; closed when done (never reused)."""

    def __init__(self, sock: socket.socket, deadline: Deadline, buffer_size: int = BUFFER_SIZE):
        self.sock = sock
        self.deadline = deadline
        self._buf = bytearray(buffer_size)
        self._view = memoryview(self._buf)
        self._start = 0
        self._end = 0
        self.unclean_eof = False  # a TLS connection ended without close_notify

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def buffered(self) -> int:
        return self._end - self._start

    # -- sending -----------------------------------------------------------------------------

    def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                self.sock.settimeout(self.deadline.slice())
                n = self.sock.send(view)
            except TimeoutError:
                continue
            except OSError as exc:
                raise NetworkError(f"sending the request failed: {_describe(exc)}") from None
            view = view[n:]

    # -- receiving ---------------------------------------------------------------------------

    def _recv_into(self, view: memoryview) -> int:
        """One receive under the deadline; 0 at the end of the stream."""
        while True:
            timeout = self.deadline.slice()
            try:
                self.sock.settimeout(timeout)
                return self.sock.recv_into(view)
            except TimeoutError:
                continue
            except ssl.SSLEOFError:
                self.unclean_eof = True
                return 0
            except ssl.SSLError as exc:
                raise NetworkError(f"TLS failed while receiving: {_describe(exc)}") from None
            except OSError as exc:
                raise NetworkError(f"receiving failed: {_describe(exc)}") from None

    def _fill(self) -> int:
        """Receives more bytes behind the buffered ones (moving them to the front if needed)."""
        if self._start:
            n = self._end - self._start
            self._buf[:n] = self._buf[self._start : self._end]
            self._start, self._end = 0, n
        if self._end == len(self._buf):
            raise ProtocolError("a response line or header section is too long")
        got = self._recv_into(self._view[self._end :])
        self._end += got
        return got

    def read_some(self, limit: int) -> memoryview:
        """Up to ``limit`` buffered bytes, receiving once if none are; empty at the end."""
        if self._start == self._end:
            self._start = 0
            self._end = self._recv_into(self._view)
        n = min(limit, self._end - self._start)
        view = self._view[self._start : self._start + n]
        self._start += n
        return view

    def read_line(self, budget: int) -> bytes:
        """One line including its terminator, at most ``min(budget, LINE_LIMIT)`` bytes."""
        limit = min(budget, LINE_LIMIT)
        scanned = 0  # bytes after _start known to hold no newline
        while True:
            nl = self._buf.find(b"\n", self._start + scanned, self._end)
            if nl >= 0:
                if nl + 1 - self._start > limit:
                    break
                line = bytes(self._buf[self._start : nl + 1])
                self._start = nl + 1
                return line
            scanned = self._end - self._start
            if scanned >= limit:
                break
            if self._fill() == 0:
                raise NetworkError(
                    "the connection closed before a complete response head"
                    if self._start == self._end
                    else "the connection closed in the middle of a response line"
                )
        raise ProtocolError("a response line or the header section exceeds its size limit")

    def read_head(self) -> ResponseHead:
        """The final response's head, skipping interim (1xx) responses."""
        budget = HEAD_LIMIT
        for _ in range(MAX_INTERIM + 1):
            line = self.read_line(budget)
            budget -= len(line)
            m = _STATUS.fullmatch(line)
            if m is None:
                raise ProtocolError(f"not an HTTP/1.x status line: {line[:60]!r}")
            status = int(m.group(2))
            headers: list[tuple[str, str]] = []
            while True:
                line = self.read_line(budget)
                budget -= len(line)
                if line in (b"\r\n", b"\n"):
                    break
                if line[:1] in (b" ", b"\t"):
                    raise ProtocolError("obsolete header line folding is refused")
                h = _HEADER.fullmatch(line)
                if h is None:
                    raise ProtocolError(f"malformed header line {line[:60]!r}")
                headers.append((h.group(1).decode("ascii").lower(), h.group(2).decode("latin-1")))
                if len(headers) > MAX_HEADERS:
                    raise ProtocolError(f"more than {MAX_HEADERS} response headers")
            if status == 101:
                raise ProtocolError("the server switched protocols (101); only HTTP/1.1 is spoken")
            if status >= 200 or status < 100:
                reason = (m.group(3) or b"").decode("latin-1")
                return ResponseHead(f"1.{m.group(1).decode()}", status, reason, tuple(headers))
        raise ProtocolError(f"more than {MAX_INTERIM} interim (1xx) responses")

    def read_body(
        self, head: ResponseHead, sink: Sink, *, limit: int, stop_after: int | None = None
    ) -> int:
        """Streams the body into ``sink``; returns the byte count.

        More than ``limit`` bytes raises TooLarge; a connection that ends
        early raises IntegrityError("truncated"). ``stop_after`` ends the read
        after that many bytes (the rest of a probe's body is not needed).
        """
        framing, length = head.framing()
        if framing == "none":
            return 0
        if framing == "length":
            assert length is not None
            if length > limit:
                raise TooLarge(
                    f"the server declares {length} bytes, more than the limit of {limit}",
                    limit=limit,
                    size=length,
                )
            want = length if stop_after is None else min(length, stop_after)
            return self._read_exact(want, sink, promised=length)
        if framing == "chunked":
            return self._read_chunked(sink, limit, stop_after)
        return self._read_to_close(sink, limit, stop_after)

    def _read_exact(self, want: int, sink: Sink, *, promised: int, offset: int = 0) -> int:
        left = want
        while left:
            view = self.read_some(left)
            if not view:
                got = offset + want - left
                raise IntegrityError(
                    f"the connection ended after {got} of {offset + promised} bytes",
                    reason="truncated",
                )
            sink(view)
            left -= len(view)
        return want

    def _read_chunked(self, sink: Sink, limit: int, stop_after: int | None) -> int:
        total = 0
        while True:
            line = self.read_line(LINE_LIMIT)
            m = _CHUNK.fullmatch(line)
            if m is None:
                raise ProtocolError(f"malformed chunk size line {line[:40]!r}")
            size = int(m.group(1), 16)
            if size == 0:
                break
            if total + size > limit:
                raise TooLarge(f"the chunked body exceeds the limit of {limit} bytes", limit=limit)
            want = size if stop_after is None else min(size, stop_after - total)
            self._read_exact(want, sink, promised=size, offset=total)
            total += want
            if stop_after is not None and total >= stop_after:
                return total
            if self.read_line(2) not in (b"\r\n", b"\n"):
                raise ProtocolError("a chunk is not followed by CRLF")
        budget = HEAD_LIMIT  # trailers: read and dropped, under the same limits as headers
        while self.read_line(budget) not in (b"\r\n", b"\n"):
            budget -= LINE_LIMIT
            if budget <= 0:
                raise ProtocolError("the chunked trailer section is too long")
        return total

    def _read_to_close(self, sink: Sink, limit: int, stop_after: int | None) -> int:
        total = 0
        while stop_after is None or total < stop_after:
            cap = BUFFER_SIZE if stop_after is None else stop_after - total
            view = self.read_some(min(cap, limit + 1 - total))
            if not view:
                if self.unclean_eof:
                    raise IntegrityError(
                        f"the TLS connection ended without close_notify after {total} bytes "
                        "of a body delimited by the close: it may be truncated",
                        reason="truncated",
                    )
                break
            if total + len(view) > limit:
                raise TooLarge(f"the body exceeds the limit of {limit} bytes", limit=limit)
            sink(view)
            total += len(view)
        return total


def _describe(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLError):
        return exc.reason or str(exc)
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__
