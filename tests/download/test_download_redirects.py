"""Redirects: followed by hand, validated hop by hop, credentials dropped across origins."""

from __future__ import annotations

import pytest
from dlserver import PUBLIC_IP, PUBLIC_IP2, Origin, leftovers, redirect, serve_file

from codeward.download import AddressRejected, HttpStatusError, RedirectRejected

DATA = b"payload" * 1000


def test_chain_is_followed_and_listed(fetch, origin):
    origin["/1"] = redirect("/2", 301)
    origin["/2"] = redirect("http://dl.example.com/3", 307)
    origin["/3"] = redirect("4?x=1", 308)
    origin["/4"] = serve_file(DATA)
    result = fetch("http://dl.example.com/1")
    assert result.redirects == (
        "http://dl.example.com/2",
        "http://dl.example.com/3",
        "http://dl.example.com/4?x=1",
    )
    assert result.url == "http://dl.example.com/4?x=1"
    assert origin.paths() == ["/1", "/2", "/3", "/4"]


def test_ten_redirects_are_fine_eleven_are_not(fetch, origin, ws):
    for i in range(11):
        origin[f"/r{i}"] = redirect(f"/r{i + 1}")
    origin["/r10"] = serve_file(DATA)
    assert len(fetch("http://dl.example.com/r0").redirects) == 10
    origin["/r10"] = redirect("/r11")
    origin["/r11"] = serve_file(DATA)
    with pytest.raises(RedirectRejected) as info:
        fetch("http://dl.example.com/r0", "other")
    assert info.value.reason == "too_many"
    assert leftovers(ws) == []


@pytest.mark.parametrize(
    "chain",
    [
        {"/a": "/a"},
        {"/a": "/b", "/b": "/a"},
        {"/a": "/b", "/b": "http://dl.example.com:80/a"},
    ],
)
def test_loops(fetch, origin, chain):
    for path, location in chain.items():
        origin[path] = redirect(location)
    with pytest.raises(RedirectRejected) as info:
        fetch("http://dl.example.com/a")
    assert info.value.reason == "loop"


@pytest.mark.parametrize(
    "location",
    [
        "http://127.0.0.1/",
        "http://127.0.0.1:8080/admin",
        "http://10.0.0.1/",
        "http://169.254.169.254/latest/meta-data/iam/",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:a9fe:a9fe]/",
        "http://[64:ff9b::7f00:1]/",
        "http://[2002:7f00:1::]/",
        "http://\uff11\uff12\uff17\uff0e\uff10\uff0e\uff10\uff0e\uff11/",
        "https://192.168.1.1/",
    ],
)
def test_redirect_to_a_private_address(fetch, origin, net, location, ws):
    origin["/a"] = redirect(location)
    with pytest.raises(AddressRejected) as info:
        fetch("http://dl.example.com/a")
    assert "redirect" in str(info.value)
    assert net.dialed == [(PUBLIC_IP, 80)] and leftovers(ws) == []


@pytest.mark.parametrize(
    "location",
    [
        "http://127.1/",
        "http://0x7f.1/",
        "http://0x7f000001/",
        "http://2130706433/",
        "http://0177.0.0.1/",
        "http://0/",
        "http://127.0.0.1./",
        "http://localhost/",
        "http://localhost./",
        "http://LocalHost:8080/",
        "http://api.localhost/",
        "http://metadata.google.internal/",
        "http://metadata/",
        "http://%6c%6f%63%61%6c%68%6f%73%74/",
        "http://user:pw@dl.example.com/",
        "http://dl.example.com\\@127.0.0.1/",
        "http://[fe80::1%25eth0]/",
    ],
)
def test_redirect_to_an_encoded_loopback(fetch, origin, net, location):
    origin["/a"] = redirect(location)
    with pytest.raises(RedirectRejected) as info:
        fetch("http://dl.example.com/a")
    assert info.value.reason == "url"
    assert net.resolved == ["dl.example.com"] and len(net.dialed) == 1


@pytest.mark.parametrize(
    "location",
    ["file:///etc/passwd", "ftp://dl.example.com/x", "gopher://dl.example.com:70/", "data:,x"],
)
def test_redirect_to_another_scheme(fetch, origin, net, location):
    origin["/a"] = redirect(location)
    with pytest.raises(RedirectRejected) as info:
        fetch("http://dl.example.com/a")
    assert info.value.reason == "scheme"
    assert len(net.dialed) == 1


def test_redirect_without_location(fetch, origin):
    origin["/a"] = lambda req, conn: conn.sendall(
        b"HTTP/1.1 302 Found\r\nContent-Length: 0\r\n\r\n"
    )
    with pytest.raises(RedirectRejected) as info:
        fetch("http://dl.example.com/a")
    assert info.value.reason == "location"


def test_not_utf8_location(fetch, origin):
    origin["/a"] = lambda req, conn: conn.sendall(
        b"HTTP/1.1 302 Found\r\nLocation: /\xff\xfe\r\nContent-Length: 0\r\n\r\n"
    )
    with pytest.raises(RedirectRejected):
        fetch("http://dl.example.com/a")


def test_unsupported_3xx_is_a_status_error(fetch, origin):
    origin["/a"] = redirect("/b", 300)
    with pytest.raises(HttpStatusError) as info:
        fetch("http://dl.example.com/a")
    assert info.value.status == 300


def test_http_to_https_is_validated_again(fetch, origin, tls_origin, net):
    origin["/a"] = redirect("https://dl.example.com/b")
    tls_origin["/b"] = serve_file(DATA)
    result = fetch("http://dl.example.com/a", tls=True)
    assert result.redirects == ("https://dl.example.com/b",)
    assert net.resolved == ["dl.example.com", "dl.example.com"]  # once per hop
    assert net.dialed == [(PUBLIC_IP, 80), (PUBLIC_IP, 443)]
    assert tls_origin.requests[0].sni == "dl.example.com"


def test_https_to_http_switch_cannot_bypass_checks(fetch, tls_origin, net):
    net.dns["inside.example.com"] = ["10.1.1.1"]
    tls_origin["/a"] = redirect("http://inside.example.com/")
    with pytest.raises(AddressRejected):
        fetch("https://dl.example.com/a")
    assert net.dialed == [(PUBLIC_IP, 443)]


# -- header stripping ---------------------------------------------------------------------------

HOST_HEADERS = {
    "Authorization": "Bearer top-secret",
    "Cookie": "session=abc",
    "Proxy-Authorization": "Basic cHJveHk=",
    "X-Api-Key": "k-123",
    "Private-Token": "glpat-xyz",
    "If-None-Match": '"etag"',
    "If-Modified-Since": "Wed, 21 Oct 2015 07:28:00 GMT",
    "User-Agent": "host-agent/1",
    "Accept": "application/octet-stream",
    "Accept-Language": "en",
}
DROPPED = [
    "Authorization",
    "Cookie",
    "Proxy-Authorization",
    "X-Api-Key",
    "Private-Token",
    "If-None-Match",
    "If-Modified-Since",
]
KEPT = ["User-Agent", "Accept", "Accept-Language"]


@pytest.fixture
def two_hosts(net, origin):
    other = Origin()
    net.dns["other.example.com"] = [PUBLIC_IP2]
    net.routes[(PUBLIC_IP2, 80)] = other.addr
    net.routes[(PUBLIC_IP, 8080)] = other.addr  # dl.example.com:8080 is "another origin" too
    yield origin, other
    other.close()


def test_same_origin_redirect_keeps_host_headers(fetch, origin):
    origin["/a"] = redirect("/b")
    origin["/b"] = serve_file(DATA)
    fetch("http://dl.example.com/a", headers=HOST_HEADERS)
    for req in origin.requests:
        for name, value in HOST_HEADERS.items():
            assert req.header(name) == value


@pytest.mark.parametrize(
    "location", ["http://other.example.com/b", "http://dl.example.com:8080/b"], ids=["host", "port"]
)
def test_cross_origin_drops_credentials_and_validators(fetch, two_hosts, location):
    first, other = two_hosts
    first["/a"] = redirect(location)
    other["/b"] = serve_file(DATA)
    fetch("http://dl.example.com/a", headers=HOST_HEADERS)
    assert first.requests[0].header("Authorization") == "Bearer top-secret"
    (req,) = other.requests
    for name in DROPPED:
        assert req.header(name) is None, name
    for name in KEPT:
        assert req.header(name) == HOST_HEADERS[name]


def test_scheme_change_is_cross_origin(fetch, origin, tls_origin):
    origin["/a"] = redirect("https://dl.example.com/b")
    tls_origin["/b"] = serve_file(DATA)
    fetch("http://dl.example.com/a", headers=HOST_HEADERS, tls=True)
    (req,) = tls_origin.requests
    assert all(req.header(name) is None for name in DROPPED)


def test_dropped_headers_stay_dropped_when_coming_back(fetch, two_hosts):
    first, other = two_hosts
    first["/a"] = redirect("http://other.example.com/b")
    other["/b"] = redirect("http://dl.example.com/c")
    first["/c"] = serve_file(DATA)
    fetch("http://dl.example.com/a", headers=HOST_HEADERS)
    back = first.requests[-1]
    assert back.path == "/c"
    assert all(back.header(name) is None for name in DROPPED)
    assert back.header("Accept-Language") == "en"


@pytest.mark.parametrize(
    "headers",
    [
        {"Host": "evil"},
        {"Connection": "keep-alive"},
        {"Transfer-Encoding": "chunked"},
        {"Content-Length": "5"},
        {"Accept-Encoding": "gzip"},
        {"Range": "bytes=0-1"},
        {"X-Bad": "a\r\nInjected: 1"},
        {"Bad Name": "x"},
        {"X": "\x00"},
    ],
)
def test_host_headers_are_validated(fetch, headers):
    with pytest.raises(ValueError):
        fetch("http://dl.example.com/a", headers=headers)
