"""The mediator's parts on real sockets, without a sandbox: the proxy protocols, the handshake.

The request reader is fed by a socket pair, as a command's connection
would be; the grant handshake is driven by hand, as a broken or hostile
init would drive it, and must be refused without the mediator listening.
"""

from __future__ import annotations

import socket
import struct
import threading

import pytest

from codeward.netgrant import NetworkGrant, NetworkGrantError, NetworkMediator, canonical_host
from codeward.netgrant._protocol import MAX_HEAD, Refused, read_request, send_refusal

DIGEST = "sha256:" + "0" * 64


def _read(data: bytes, *, timeout: float = 2.0, close: bool = True):
    a, b = socket.socketpair()
    with a, b:
        b.settimeout(timeout)
        a.sendall(data)
        if close:
            a.shutdown(socket.SHUT_WR)
        return read_request(b)


def test_connect_and_ipv6_targets():
    req = _read(b"CONNECT dl.example.com:443 HTTP/1.1\r\nHost: x\r\n\r\nearly")
    assert (req.kind, req.host, req.port, req.forward) == (
        "connect",
        "dl.example.com",
        443,
        b"early",
    )
    req = _read(b"CONNECT [2606:2800::1]:8443 HTTP/1.1\r\n\r\n")
    assert (req.host, req.port) == ("2606:2800::1", 8443)
    for bad in (b"dl.example.com", b"dl.example.com:0", b"dl.example.com:99999", b"a@b:1"):
        with pytest.raises(Refused) as exc:
            _read(b"CONNECT " + bad + b" HTTP/1.1\r\n\r\n")
        assert exc.value.status == 400


def test_absolute_form_is_rewritten_to_origin_form():
    req = _read(
        b"POST http://dl.example.com:8080/up?x=1 HTTP/1.1\r\n"
        b"Host: dl.example.com:8080\r\nProxy-Authorization: Basic c2VjcmV0\r\n"
        b"Proxy-Connection: keep-alive\r\nConnection: keep-alive\r\nContent-Length: 4\r\n\r\nbody"
    )
    assert (req.kind, req.host, req.port) == ("http", "dl.example.com", 8080)
    head, _, rest = req.forward.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"POST /up?x=1 HTTP/1.1"
    assert b"Proxy-Authorization: Basic c2VjcmV0" not in lines  # never passed to the origin
    assert b"Connection: close" in lines and b"Connection: keep-alive" not in lines
    assert rest == b"body"
    assert _read(b"GET http://dl.example.com HTTP/1.0\r\n\r\n").forward.startswith(b"GET / ")


@pytest.mark.parametrize(
    "head, status",
    [
        (b"GET /origin-form HTTP/1.1\r\n\r\n", 400),
        (b"GET https://dl.example.com/ HTTP/1.1\r\n\r\n", 400),
        (b"GET ftp://dl.example.com/ HTTP/1.1\r\n\r\n", 400),
        (b"HELLO\r\n\r\n", 400),
        (b"GET http://u:p@dl.example.com/ HTTP/1.1\r\n\r\n", 400),
        (b"GET http://dl.example.com/ HTTP/1.1\r\nX: " + b"a" * MAX_HEAD + b"\r\n\r\n", 431),
        (b"\x04\x01\x00\x50\x01\x02\x03\x04\x00", 400),  # SOCKS4
    ],
)
def test_malformed_requests_are_refused(head, status):
    with pytest.raises(Refused) as exc:
        _read(head)
    assert exc.value.status == status


def test_a_slow_or_silent_client_is_refused_in_time():
    with pytest.raises(Refused) as exc:
        _read(b"CONNECT dl.example.com:443 HTTP/1.1\r\n", timeout=0.2, close=False)
    assert exc.value.status == 408
    with pytest.raises(Refused):
        _read(b"")  # connected, closed at once


def test_a_trickling_client_gets_the_same_time_for_the_whole_request():
    """One byte every 20 ms never lets a single read wait long, yet the request is overdue."""
    a, b = socket.socketpair()
    stop = threading.Event()

    def trickle():
        for byte in b"CONNECT dl.example.com:443 HTTP/1.1\r\nHost: dl.example.com\r\n\r\n":
            if stop.wait(0.02):
                return
            try:
                a.send(bytes([byte]))
            except OSError:
                return

    sender = threading.Thread(target=trickle)
    sender.start()
    try:
        b.settimeout(0.3)  # the request would take well over a second
        with pytest.raises(Refused) as exc:
            read_request(b)
        assert exc.value.status == 408
        assert b.gettimeout() == 0.3  # given back as it was
    finally:
        stop.set()
        sender.join()
        a.close()
        b.close()


def test_socks5_negotiation():
    req = _read(b"\x05\x01\x00\x05\x01\x00\x03\x0edl.example.com\x01\xbb")
    assert (req.kind, req.host, req.port, req.by_address) == (
        "socks5",
        "dl.example.com",
        443,
        False,
    )
    req = _read(b"\x05\x01\x00\x05\x01\x00\x01\x5d\xb8\xd7\x0e\x00\x50")
    assert (req.host, req.port, req.by_address) == ("93.184.215.14", 80, True)
    with pytest.raises(Refused) as exc:  # only username/password offered
        _read(b"\x05\x01\x02")
    assert exc.value.kind == "socks5"
    with pytest.raises(Refused) as exc:
        _read(b"\x05\x01\x00\x05\x02\x00\x03\x01a\x00\x50")  # BIND
    assert exc.value.socks == 7


def test_refusals_are_readable_in_both_protocols():
    a, b = socket.socketpair()
    with a, b:
        send_refusal(b, "connect", Refused("x.example:443 is not the granted origin\r\nX: y"))
        b.shutdown(socket.SHUT_WR)
        answer = a.recv(4096)
    status, _, rest = answer.partition(b"\r\n")
    assert status.startswith(b"HTTP/1.1 403 codeward network grant: x.example:443 is not")
    assert b"\r\nX: y" not in status  # no header injection through a reason
    assert rest.endswith(b"not the granted origin\r\nX: y\n")
    a, b = socket.socketpair()
    with a, b:
        send_refusal(b, "socks5", Refused("no", socks=2))
        assert a.recv(10) == b"\x05\x02\x00\x01\x00\x00\x00\x00\x00\x00"


@pytest.mark.parametrize(
    "host, canonical",
    [
        ("Dl.Example.COM.", "dl.example.com"),
        ("bücher.example", "xn--bcher-kva.example"),
        ("xn--bcher-kva.example", "xn--bcher-kva.example"),
        ("[::1]", "::1"),
        ("::ffff:7f00:1", "::ffff:7f00:1"),
        ("127.0.0.1", "127.0.0.1"),
        ("localhost", "localhost"),
    ],
)
def test_canonical_hosts(host, canonical):
    assert canonical_host(host)[0] == canonical


@pytest.mark.parametrize(
    "host",
    ["*.example.com", "a*", "ex ample.com", "a/b", "a\\b", "a?b", "user@host", "host:443",
     "127.1", "0x7f.0.0.1", "2130706433", "", "a..b", "-a.example", "%61.example", "[v1.x]"],
)  # fmt: skip
def test_inexact_hosts_are_refused(host):
    with pytest.raises(NetworkGrantError):
        canonical_host(host)


def test_a_grant_without_a_port_covers_443_and_80():
    grant = NetworkGrant.make("Example.com", None, DIGEST)
    assert grant.ports == (443, 80)
    assert grant.origin == "example.com:443 and example.com:80 (no port given: HTTPS and HTTP)"
    assert grant.admits("example.com", 80) and not grant.admits("example.com", 8080)
    assert not grant.admits("www.example.com", 443)
    assert NetworkGrant.make("::1", 8080, DIGEST).origin == "[::1]:8080"
    for port in (0, 65536, True, "443"):
        with pytest.raises(NetworkGrantError):
            NetworkGrant.make("example.com", port, DIGEST)
    with pytest.raises(NetworkGrantError):
        NetworkGrant.make("example.com", 443, "")


# -- the grant handshake, driven by hand --------------------------------------------------------


def _handshake(admission, message: bytes, fds: list[int]) -> bytes:
    """Sends what an init would on the grant socket; the mediator's answer (b"": refused)."""
    rights = struct.pack(f"{len(fds)}i", *fds)
    with socket.socket(fileno=socket.dup(admission.fd)) as peer:
        peer.sendmsg([message], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, rights)] if fds else [])
        peer.settimeout(5)
        try:
            return peer.recv(1)
        except OSError:
            return b"?"


MESSAGE = b"A3SM" + struct.pack("<HHIH", 18, 1, 14, 3128)


@pytest.mark.parametrize(
    "case",
    ["wrong address", "udp socket", "two fds", "no fd", "bad magic", "other port"],
)
def test_the_mediator_refuses_anything_but_the_proxy_socket(case):
    """A grant message that is not exactly the init's is refused: nothing listens, nothing runs."""
    grant = NetworkGrant.make("dl.example.com", 443, DIGEST)
    made: list[socket.socket] = []

    def sock(kind: int = socket.SOCK_STREAM) -> int:
        s = socket.socket(socket.AF_INET, kind)
        s.bind(("127.0.0.1", 0))  # never 127.0.0.1:3128: this host is not a sandbox
        made.append(s)
        return s.fileno()

    message, fds = MESSAGE, [sock()]
    if case == "udp socket":
        fds = [sock(socket.SOCK_DGRAM)]
    elif case == "two fds":
        fds = [sock(), sock()]
    elif case == "no fd":
        fds = []
    elif case == "bad magic":
        message = b"XXXX" + MESSAGE[4:]
    elif case == "other port":
        message = MESSAGE[:-2] + struct.pack("<H", 80)
    with NetworkMediator() as mediator, mediator.admit(grant) as admission:
        answer = _handshake(admission, message, fds)
        assert answer == b"", f"{case}: the mediator answered {answer!r}"
        assert not admission.listening
    for s in made:
        assert s.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN) == 0  # nobody listens on it
        s.close()


def test_a_closed_mediator_admits_nothing():
    mediator = NetworkMediator()
    grant = NetworkGrant.make("dl.example.com", 443, DIGEST)
    admission = mediator.admit(grant)
    mediator.close()
    with pytest.raises(OSError):
        socket.socket(fileno=socket.dup(admission.fd))  # closed with the mediator
    with pytest.raises(NetworkGrantError):
        mediator.admit(grant)


def test_many_admissions_at_once_share_one_thread():
    with NetworkMediator() as mediator:
        grants = [NetworkGrant.make(f"h{i}.example.com", 443, DIGEST) for i in range(20)]
        admissions = [mediator.admit(g) for g in grants]
        names = {t.name for t in threading.enumerate()}
        assert sum(n == "codeward-netgrant" for n in names) == 1
        for a in admissions:
            a.close()
