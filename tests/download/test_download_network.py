"""The network boundary end to end: pinning, mixed answers, rebinding, TLS, the request itself."""

from __future__ import annotations

import hashlib
import ssl

import pytest
from dlserver import PUBLIC_IP, PUBLIC_IP2, PUBLIC_IP6, Origin, leftovers, serve_file

from codeward.download import AddressRejected, NetworkError, download

DATA = bytes(range(256)) * 512  # 128 KiB


def test_http_download(fetch, origin, ws, net):
    origin["/f.bin"] = serve_file(DATA, content_type="application/x-thing")
    result = fetch("http://dl.example.com/f.bin", "sub/dir/f.bin")
    assert (result.file_path, result.bytes) == ("sub/dir/f.bin", len(DATA))
    assert result.sha256 == hashlib.sha256(DATA).hexdigest()
    assert result.content_type == "application/x-thing"
    assert (result.strategy, result.connections, result.redirects) == ("single", 1, ())
    assert result.overwritten is False and result.url == "http://dl.example.com/f.bin"
    with open(f"{ws.root}/sub/dir/f.bin", "rb") as f:
        assert f.read() == DATA
    assert net.resolved == ["dl.example.com"] and net.dialed == [(PUBLIC_IP, 80)]
    assert leftovers(ws) == []


def test_request_is_minimal_and_identity_encoded(fetch, origin):
    origin["/f"] = serve_file(DATA)
    fetch("http://dl.example.com/f?a=1", connections=1)
    (req,) = origin.requests
    assert (req.method, req.target) == ("GET", "/f?a=1")
    assert req.header("Host") == "dl.example.com"
    assert req.header("Accept-Encoding") == "identity"
    assert req.header("Connection") == "close"
    assert req.header("User-Agent").startswith("codeward/")
    assert req.header("Range") is None  # one connection: a plain GET


def test_https_pins_sni_and_verifies(fetch, tls_origin, net):
    tls_origin["/f"] = serve_file(DATA)
    result = fetch("https://DL.Example.COM/f")
    assert result.sha256 == hashlib.sha256(DATA).hexdigest()
    assert tls_origin.requests[0].sni == "dl.example.com"
    assert tls_origin.requests[0].header("Host") == "dl.example.com"
    assert net.dialed == [(PUBLIC_IP, 443)]


def test_https_refuses_a_certificate_for_another_name(fetch, tls_origin, net, ws):
    net.dns["evil.example.org"] = [PUBLIC_IP]
    tls_origin["/f"] = serve_file(DATA)
    with pytest.raises(NetworkError) as info:
        fetch("https://evil.example.org/f")
    assert info.value.transient is False and "not trusted" in str(info.value)
    assert tls_origin.requests == [] and leftovers(ws) == []


def test_https_refuses_an_unknown_ca(fetch, tls_origin):
    tls_origin["/f"] = serve_file(DATA)
    with pytest.raises(NetworkError):
        fetch("https://dl.example.com/f", ssl_context=ssl.create_default_context())


def test_contexts_that_do_not_verify_are_refused(fetch, client_tls):
    lax = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    lax.check_hostname = False
    lax.verify_mode = ssl.CERT_NONE
    with pytest.raises(ValueError):
        fetch("https://dl.example.com/f", ssl_context=lax)


def test_literal_public_address_and_ipv6(fetch, origin, net):
    origin["/f"] = serve_file(DATA)
    net.routes[(PUBLIC_IP6, 80)] = origin.addr
    fetch(f"http://{PUBLIC_IP}/f", "a")
    fetch(f"http://[{PUBLIC_IP6}]/f", "b")
    assert net.resolved == []  # literals are never resolved
    assert net.dialed == [(PUBLIC_IP, 80), (PUBLIC_IP6, 80)]
    assert origin.requests[1].header("Host") == f"[{PUBLIC_IP6}]"


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/",
        "http://10.0.0.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:7f00:1]/",
        "http://[64:ff9b::a9fe:a9fe]/",
        "http://\uff11\uff12\uff17\uff0e\uff10\uff0e\uff10\uff0e\uff11/",
        "http://203.0.113.5/",
    ],
)
def test_literal_private_targets_never_connect(fetch, net, url, ws):
    with pytest.raises(AddressRejected):
        fetch(url)
    assert net.resolved == [] and net.dialed == [] and leftovers(ws) == []


@pytest.mark.parametrize(
    "answers",
    [
        ["127.0.0.1"],
        [PUBLIC_IP, "127.0.0.1"],
        ["10.0.0.7", PUBLIC_IP],
        [PUBLIC_IP, "::1"],
        [PUBLIC_IP, "::ffff:10.0.0.1"],
        [PUBLIC_IP, "fe80::1%eth0"],
        [PUBLIC_IP, "not an address"],
    ],
)
def test_any_private_answer_refuses_the_hop(fetch, origin, net, answers):
    origin["/f"] = serve_file(DATA)
    net.dns["mixed.example.com"] = answers
    with pytest.raises(AddressRejected):
        fetch("http://mixed.example.com/f")
    assert net.dialed == [] and origin.requests == []


def test_unresolvable_and_empty(fetch, net):
    with pytest.raises(NetworkError):
        fetch("http://nowhere.example.com/f")
    net.dns["empty.example.com"] = []
    with pytest.raises(NetworkError):
        fetch("http://empty.example.com/f")
    assert net.dialed == []


def test_connects_only_to_validated_answers_in_order(fetch, origin, net):
    origin["/f"] = serve_file(DATA)
    net.dns["two.example.com"] = [PUBLIC_IP2, PUBLIC_IP]  # the first one refuses connections
    fetch("http://two.example.com/f")
    assert net.dialed == [(PUBLIC_IP2, 80), (PUBLIC_IP, 80)]


def test_rebinding_has_no_second_resolution(fetch, origin, net, monkeypatch):
    """The name flips to loopback after the first answer: no connection ever uses it."""
    import codeward.download._ranges as ranges

    monkeypatch.setattr(ranges, "PART_MIN", 16 * 1024)
    answers = iter([[PUBLIC_IP]])
    net.dns["rebind.example.com"] = lambda: next(answers, ["127.0.0.1"])
    origin["/f"] = serve_file(DATA)
    result = fetch("http://rebind.example.com/f", connections=4)
    assert result.strategy == "ranges" and result.connections == 4
    assert net.resolved == ["rebind.example.com"]  # once, for all four connections
    assert net.dialed == [(PUBLIC_IP, 80)] * 4


def test_rebinding_on_a_redirect_hop_is_refused(fetch, origin, net):
    answers = iter([[PUBLIC_IP]])
    net.dns["rebind.example.com"] = lambda: next(answers, ["127.0.0.1"])
    origin["/a"] = lambda req, conn: conn.sendall(
        b"HTTP/1.1 302 Found\r\nLocation: /b\r\nContent-Length: 0\r\n\r\n"
    )
    origin["/b"] = serve_file(DATA)
    with pytest.raises(AddressRejected) as info:
        fetch("http://rebind.example.com/a")
    assert "redirect" in str(info.value)
    assert origin.paths() == ["/a"]


def test_system_resolver_answers_are_checked_too():
    """Defence in depth: were a local name to get past the parser, its answers are refused."""
    from codeward.download._deadline import Deadline
    from codeward.download._net import resolve_pinned, system_proxy_resolver
    from codeward.download._url import Url

    # getaddrinfo as such (the target resolver only adds a trailing dot, which keeps
    # search domains and, with glibc, the hosts file out of it)
    assert set(system_proxy_resolver("localhost", 80)) & {"127.0.0.1", "::1"}
    smuggled = Url("http", "localhost", 80, "/", "name")
    with pytest.raises(AddressRejected):
        resolve_pinned(smuggled, system_proxy_resolver, Deadline(5))


def test_https_to_a_literal_address_verifies_its_ip_san(fetch, tls_origin, net):
    tls_origin["/f"] = serve_file(DATA)
    assert fetch(f"https://{PUBLIC_IP}/f").bytes == len(DATA)
    assert tls_origin.requests[0].sni is None  # no SNI for an address; the IP SAN is checked


def test_resolver_runs_under_the_deadline(fetch, net):
    import threading

    release = threading.Event()

    def slow(host, port):
        release.wait(10)
        return [PUBLIC_IP]

    from codeward.download import DownloadTimeout

    try:
        with pytest.raises(DownloadTimeout):
            fetch("http://slow.example.com/f", resolver=slow, timeout_s=0.5)
    finally:
        release.set()


def test_each_request_uses_a_fresh_connection(fetch, origin, net):
    origin["/a"] = lambda req, conn: conn.sendall(
        b"HTTP/1.1 301 Moved\r\nLocation: /b\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n"
    )
    origin["/b"] = serve_file(DATA)
    fetch("http://dl.example.com/a")
    peers = [r.peer for r in origin.requests]
    assert len(peers) == 2 and peers[0] != peers[1]


def test_each_hop_connects_to_its_own_pinned_address(ws, net):
    """Two origins, two addresses: each hop connects to its own pinned address only."""
    a, b = Origin(), Origin()
    try:
        net.dns.update({"a.example.com": [PUBLIC_IP], "b.example.com": [PUBLIC_IP2]})
        net.routes.update({(PUBLIC_IP, 80): a.addr, (PUBLIC_IP2, 80): b.addr})
        a["/x"] = lambda req, conn: conn.sendall(
            b"HTTP/1.1 302 Found\r\nLocation: http://b.example.com/y\r\nContent-Length: 0\r\n\r\n"
        )
        b["/y"] = serve_file(DATA)
        result = download(
            "http://a.example.com/x", "o", workspace=ws, resolver=net.resolver, dialer=net.dialer
        )
        assert result.redirects == ("http://b.example.com/y",)
        assert net.dialed == [(PUBLIC_IP, 80), (PUBLIC_IP2, 80)]
    finally:
        a.close()
        b.close()
