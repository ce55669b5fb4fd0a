"""The proxy request reader under arbitrary input: it returns a request or refuses, nothing else.

Whatever a command sends its proxy, the reader (over a real socket pair)
returns a ProxyRequest or raises Refused, whose answer the mediator sends;
any other exception would end the connection's thread with no answer. An
admitted plain HTTP request forwards exactly its head and its declared body
(never bytes pipelined behind it), and the grant check on what it read
returns a host or refuses.
"""

from __future__ import annotations

import socket

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codeward.netgrant import NetworkGrant
from codeward.netgrant._protocol import ProxyRequest, Refused, read_request
from codeward.netgrant._upstream import admit

GRANT = NetworkGrant.make("dl.example.com", 80, "sha256:" + "0" * 64)
SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _read(data: bytes) -> ProxyRequest | Refused:
    a, b = socket.socketpair()
    with a, b:
        b.settimeout(2)
        a.sendall(data)
        a.shutdown(socket.SHUT_WR)
        try:
            request = read_request(b)
        except Refused as refused:
            assert 400 <= refused.status < 600 and refused.reason
            return refused
    try:
        host = admit(GRANT, request)
    except Refused as refused:
        assert 400 <= refused.status < 600 and refused.reason
        return request
    assert isinstance(host, str) and request.port == 80 and host == "dl.example.com"
    return request


def _check_http(data: bytes, request: ProxyRequest) -> None:
    """A plain request forwards its rewritten head and at most its declared body."""
    head, sep, body = request.forward.partition(b"\r\n\r\n")
    assert sep and head.endswith(b"\r\nConnection: close")
    assert b"\r\nHost: " in head
    declared = len(body) + request.body_left
    sent_after_head = data.partition(b"\r\n\r\n")[2]
    assert body == sent_after_head[:declared]
    assert request.pipelined == (len(sent_after_head) > declared)


@SETTINGS
@given(st.binary(max_size=3000))
def test_any_bytes(data: bytes) -> None:
    result = _read(data)
    if isinstance(result, ProxyRequest) and result.kind == "http":
        _check_http(data, result)


_METHODS = st.sampled_from([b"GET", b"POST", b"CONNECT", b"HEAD", b"PUT", b"get"])
_HOSTS = st.one_of(
    st.sampled_from([b"dl.example.com", b"DL.example.com.", b"[::1]", b"127.1", b"xn--e1a"]),
    st.text(max_size=20).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.binary(max_size=20),
)
_PORTS = st.one_of(
    st.sampled_from([b"80", b"443", b"\xb9", b"\xd9\xa1", b"0", b"080", b"65536", b""]),
    st.binary(max_size=6),
    st.integers(0, 70000).map(lambda n: str(n).encode()),
)
_HEADER = st.one_of(
    st.tuples(
        st.sampled_from(
            [
                b"Host",
                b"Content-Length",
                b"Transfer-Encoding",
                b"Connection",
                b"X",
                b"content-length",
            ]
        ),
        st.one_of(
            st.sampled_from([b"0", b"4", b"chunked", b"close", b" 4 ", b"-1"]),
            st.binary(max_size=12),
        ),
    ).map(lambda kv: kv[0] + b": " + kv[1]),
    st.binary(max_size=30),
)


@st.composite
def _requests(draw: st.DrawFn) -> bytes:
    method = draw(_METHODS)
    host, port = draw(_HOSTS), draw(_PORTS)
    authority = host + (b":" + port if draw(st.booleans()) else b"")
    if method == b"CONNECT":
        target = authority
    else:
        target = draw(st.sampled_from([b"http://", b"https://", b"HTTP://", b""])) + authority
        target += draw(st.sampled_from([b"/", b"/p?q=1", b"?x", b"#f", b""]))
    version = draw(st.sampled_from([b"HTTP/1.1", b"HTTP/1.0", b"HTTP/2", b"http/1.1"]))
    headers = draw(st.lists(_HEADER, max_size=5))
    tail = draw(st.binary(max_size=40))
    line = draw(st.sampled_from([b" ", b"  ", b"\t"])).join([method, target, version])
    return b"\r\n".join([line, *headers]) + b"\r\n\r\n" + tail


@SETTINGS
@given(_requests())
def test_proxy_requests(data: bytes) -> None:
    result = _read(data)
    if isinstance(result, ProxyRequest) and result.kind == "http":
        _check_http(data, result)


@SETTINGS
@given(st.binary(max_size=300))
def test_socks5(data: bytes) -> None:
    _read(b"\x05" + data)


def test_the_unicode_digit_port_of_the_issue_is_refused() -> None:
    for port in (b"\xb9", b"\xb2\xb3", b"1\xb9"):
        result = _read(b"CONNECT dl.example.com:" + port + b" HTTP/1.1\r\n\r\n")
        assert isinstance(result, Refused) and result.status == 400
