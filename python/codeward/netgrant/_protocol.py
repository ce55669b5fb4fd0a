"""The proxy protocols a granted command's tools speak, read strictly and answered plainly.

One port serves all three: the first byte tells them apart (5: SOCKS5;
anything else: HTTP). A request is read within a time and size bound, and
either names a target (a host as the client wrote it and a port) or is
refused with a :class:`Refused` that says why in words the command's tool
prints: an HTTP status line and body, or a SOCKS reply code.

- HTTP ``CONNECT host:port``: a tunnel; TLS stays end to end (nothing here
  reads inside it).
- HTTP absolute form (``GET http://host[:port]/path``): forwarded to the
  origin in origin form, with the ``Proxy-*`` headers dropped, ``Host``
  set to the target's authority and ``Connection: close``. One request per
  connection: exactly its head and its ``Content-Length`` bytes of body go
  to the origin, nothing after them (a request pipelined behind it, perhaps
  for another origin, is never passed on undecided: the connection closes
  after the first answer, and the client's next request comes on a new
  connection and is decided again). Framing that an origin could read
  differently (``Transfer-Encoding``, conflicting ``Content-Length``,
  folded or malformed header lines) is refused.
- SOCKS5 ``CONNECT`` by name (``socks5h``) or by address, no
  authentication; BIND and UDP ASSOCIATE are refused.
"""

from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "MAX_HEAD",
    "ProxyRequest",
    "Refused",
    "read_request",
    "send_granted",
    "send_refusal",
]

MAX_HEAD = 16 * 1024  # an HTTP request head: far above what a proxy request needs
Kind = Literal["connect", "http", "socks5"]
# hop-by-hop headers of the client-proxy leg, never passed to the origin
_HOP_HEADERS = frozenset(
    {b"proxy-connection", b"proxy-authorization", b"connection", b"keep-alive"}
)

# SOCKS5 reply codes (RFC 1928 6)
SOCKS_FAILURE = 1
SOCKS_NOT_ALLOWED = 2
SOCKS_HOST_UNREACHABLE = 4
SOCKS_REFUSED = 5
SOCKS_TTL_EXPIRED = 6
SOCKS_COMMAND = 7
SOCKS_ADDRESS_TYPE = 8


class Refused(Exception):
    """A connection the mediator does not admit: the HTTP status and SOCKS code to answer with."""

    def __init__(self, reason: str, status: int = 403, socks: int = SOCKS_NOT_ALLOWED) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status
        self.socks = socks
        self.kind: Kind | None = None  # the protocol to answer in, once the first byte told


@dataclass
class ProxyRequest:
    """A target the client asked for, before any decision."""

    kind: Kind
    host: str  # as the client wrote it (brackets removed from an IPv6 literal)
    port: int
    forward: bytes = b""  # what goes to the origin first: a rewritten head, and bytes read past it
    by_address: bool = False  # SOCKS5 by IP address rather than by name
    body_left: int = 0  # http: body bytes still to come from the client after ``forward``
    pipelined: bool = False  # http: the client sent more after the request (never forwarded)


def read_request(sock: socket.socket) -> ProxyRequest:
    """Reads one proxy request from a fresh connection, all of it within the socket's timeout.

    The timeout bounds the whole request, not each read: a client that
    trickles a byte at a time is refused when the time is up.
    """
    timeout = sock.gettimeout()
    conn = _Timed(sock, None if timeout is None else time.monotonic() + timeout)
    try:
        first = _recv_some(conn, 1)
        if first == b"\x05":
            try:
                return _read_socks5(conn)
            except Refused as refused:
                refused.kind = "socks5"
                raise
        if first == b"\x04":
            raise Refused("SOCKS4 is not supported; use socks5h://", 400, SOCKS_FAILURE)
        return _read_http(conn, first)
    finally:
        sock.settimeout(timeout)


def send_granted(sock: socket.socket, request: ProxyRequest) -> None:
    """Tells the client its tunnel is open (CONNECT, SOCKS5); a forwarded request needs nothing."""
    if request.kind == "connect":
        sock.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
    elif request.kind == "socks5":
        sock.sendall(b"\x05\x00\x00\x01\x00\x00\x00\x00\x00\x00")


def send_refusal(sock: socket.socket, kind: Kind | None, refused: Refused) -> None:
    """The refusal in the client's protocol; errors are ignored (the client may be gone)."""
    try:
        if kind == "socks5":
            sock.sendall(bytes([5, refused.socks, 0, 1, 0, 0, 0, 0, 0, 0]))
            return
        text = "codeward network grant: " + refused.reason
        phrase = _phrase(text)
        body = (text + "\n").encode("utf-8", "replace")
        head = (
            f"HTTP/1.1 {refused.status} {phrase}\r\n"
            "Content-Type: text/plain; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n"
        )
        sock.sendall(head.encode("ascii") + body)
    except OSError:
        pass


# -- HTTP --------------------------------------------------------------------------------------


def _read_http(sock: _Timed, first: bytes) -> ProxyRequest:
    data = first
    while b"\r\n\r\n" not in data:
        if len(data) > MAX_HEAD:
            raise Refused(f"the request head is longer than {MAX_HEAD} bytes", 431)
        chunk = _recv_some(sock, 4096)
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    if len(head) > MAX_HEAD:
        raise Refused(f"the request head is longer than {MAX_HEAD} bytes", 431)
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
        raise Refused("not an HTTP/1.x proxy request", 400)
    method, target = parts[0], parts[1].decode("latin-1")
    if method == b"CONNECT":
        host, port = _authority(target, default=None)
        return ProxyRequest("connect", host, port, forward=rest)
    scheme, sep, after = target.partition("://")
    if not sep or not scheme.isascii() or scheme.lower() not in ("http", "https"):
        raise Refused(
            "a request to a proxy names its target in absolute form (http://host/path), "
            "or tunnels with CONNECT",
            400,
        )
    if scheme.lower() == "https":
        raise Refused("an https:// URL goes through a CONNECT tunnel, not a plain request", 400)
    cut = min((i for i in (after.find(c) for c in "/?#") if i >= 0), default=len(after))
    authority, path = after[:cut], after[cut:].partition("#")[0] or "/"
    if path.startswith("?"):
        path = "/" + path
    host, port = _authority(authority, default=80)
    headers = _headers(lines[1:])
    length = _body_length(headers)
    kept = [line for name, line in headers if name not in _HOP_HEADERS and name != b"host"]
    rewritten = b"\r\n".join(
        [
            method + b" " + path.encode("latin-1") + b" " + parts[2],
            b"Host: " + authority.encode("latin-1"),
            *kept,
            b"Connection: close",
        ]
    )
    body = rest[:length]
    return ProxyRequest(
        "http",
        host,
        port,
        forward=rewritten + b"\r\n\r\n" + body,
        body_left=length - len(body),
        pipelined=len(rest) > length,
    )


_TOKEN = frozenset(b"!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _headers(lines: list[bytes]) -> list[tuple[bytes, bytes]]:
    """(lower-case name, line) of each header line; Refused for a line an origin could read
    otherwise: folded (obs-fold), without a colon, a name that is not a token (spaces
    before the colon included), or a control character in the value."""
    out = []
    for line in lines:
        name, colon, value = line.partition(b":")
        if not colon or not name or not set(name) <= _TOKEN:
            raise Refused(f"malformed header line {_show(line.decode('latin-1'))}", 400)
        if any((c < 0x20 and c != 0x09) or c == 0x7F for c in value):
            raise Refused(f"a control character in header {_show(name.decode())}", 400)
        out.append((name.lower(), line))
    return out


def _body_length(headers: list[tuple[bytes, bytes]]) -> int:
    """The request body's length from Content-Length (0 without one); Refused where the
    framing is not one plain length that every origin reads the same."""
    if any(name == b"transfer-encoding" for name, _ in headers):
        raise Refused(
            "a request body with Transfer-Encoding is not forwarded; send it with Content-Length",
            501,
        )
    values = {
        line.partition(b":")[2].strip() for name, line in headers if name == b"content-length"
    }
    if not values:
        return 0
    value = values.pop()
    if values or not value.isdigit() or len(value) > 18:
        raise Refused("the request has no single valid Content-Length", 400)
    return int(value)


def _authority(text: str, *, default: int | None) -> tuple[str, int]:
    """``host:port`` (``[v6]:port``), the port optional only where a default is given."""
    if "@" in text:
        raise Refused("user information in a proxy target is refused", 400)
    if text.startswith("["):
        close = text.find("]")
        host, after = text[1:close], text[close + 1 :]
        if close < 0 or (after and not after.startswith(":")):
            raise Refused(f"malformed target {_show(text)}", 400)
        port_text = after[1:] if after else None
    else:
        host, sep, port_text_ = text.rpartition(":")
        if not sep:
            host, port_text = text, None
        else:
            port_text = port_text_
    if port_text is None:
        if default is None:
            raise Refused(f"the target {_show(text)} has no port", 400)
        return host, default
    if (
        not port_text.isascii()  # '\xb9' and other Unicode digits are not a port
        or not port_text.isdigit()
        or port_text.startswith("0")
        or not 0 < int(port_text) < 65536
    ):
        raise Refused(f"the target {_show(text)} has no valid port", 400)
    return host, int(port_text)


# -- SOCKS5 ------------------------------------------------------------------------------------


def _read_socks5(sock: _Timed) -> ProxyRequest:
    count = _recv_exact(sock, 1)[0]
    methods = _recv_exact(sock, count) if count else b""
    if 0 not in methods:
        sock.sendall(b"\x05\xff")
        raise Refused("SOCKS5 without the no-authentication method", 400, SOCKS_NOT_ALLOWED)
    sock.sendall(b"\x05\x00")
    version, command, _reserved, atyp = _recv_exact(sock, 4)
    if version != 5:
        raise Refused("malformed SOCKS5 request", 400, SOCKS_FAILURE)
    if atyp == 1:
        host = socket.inet_ntop(socket.AF_INET, _recv_exact(sock, 4))
    elif atyp == 4:
        host = socket.inet_ntop(socket.AF_INET6, _recv_exact(sock, 16))
    elif atyp == 3:
        raw = _recv_exact(sock, _recv_exact(sock, 1)[0])
        try:
            host = raw.decode("ascii")
        except UnicodeDecodeError:
            raise Refused("a SOCKS5 name must be ASCII (an A-label)", 400, SOCKS_FAILURE) from None
    else:
        raise Refused(f"SOCKS5 address type {atyp} is unknown", 400, SOCKS_ADDRESS_TYPE)
    (port,) = struct.unpack("!H", _recv_exact(sock, 2))
    if command != 1:
        what = {2: "BIND", 3: "UDP ASSOCIATE"}.get(command, f"command {command}")
        raise Refused(f"SOCKS5 {what} is refused: only CONNECT", 400, SOCKS_COMMAND)
    if port == 0:
        raise Refused("port 0 is not a target", 400, SOCKS_FAILURE)
    return ProxyRequest("socks5", host, port, by_address=atyp != 3)


# -- bytes -------------------------------------------------------------------------------------


class _Timed:
    """A connection whose reads share one deadline (None: none); writes are passed through."""

    def __init__(self, sock: socket.socket, deadline: float | None) -> None:
        self._sock = sock
        self._deadline = deadline

    def recv(self, n: int) -> bytes:
        if self._deadline is not None:
            left = self._deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            self._sock.settimeout(left)
        return self._sock.recv(n)

    def sendall(self, data: bytes) -> None:
        self._sock.sendall(data)


def _recv_some(sock: _Timed, n: int) -> bytes:
    try:
        data = sock.recv(n)
    except TimeoutError:
        raise Refused("no complete request in time", 408, SOCKS_TTL_EXPIRED) from None
    if not data:
        raise Refused("the client closed before a complete request", 400, SOCKS_FAILURE)
    return data


def _recv_exact(sock: _Timed, n: int) -> bytes:
    data = b""
    while len(data) < n:
        data += _recv_some(sock, n - len(data))
    return data


def _phrase(text: str) -> str:
    """A reason phrase: printable ASCII on one line, at most 300 characters."""
    clean = "".join(c if " " <= c <= "~" else "?" for c in text)
    return clean[:300]


def _show(text: str) -> str:
    return repr(text[:100])
