"""Explicit proxy mode: CONNECT for https, absolute form for http, and the checks that remain."""

from __future__ import annotations

import hashlib

import pytest
from dlserver import ForwardProxy, leftovers, redirect, serve_file

from codeward.download import (
    AddressRejected,
    NetworkError,
    RedirectRejected,
    UrlRejected,
    download,
)

DATA = b"through the proxy " * 4096


@pytest.fixture
def proxy(origin, net):
    """A forward proxy that reaches the loopback origin(s) by name; it does its own 'DNS'."""
    p = ForwardProxy({"dl.example.com:80": origin.addr})
    yield p
    p.close()


def _proxy_url(proxy: ForwardProxy, userinfo: str = "") -> str:
    return f"http://{userinfo}127.0.0.1:{proxy.addr[1]}"


def test_http_through_the_proxy_in_absolute_form(fetch, origin, proxy, net):
    origin["/f"] = serve_file(DATA)
    result = fetch("http://dl.example.com/f?x=1", proxy=_proxy_url(proxy, "bob:s%40cret@"))
    assert result.sha256 == hashlib.sha256(DATA).hexdigest()
    (seen,) = proxy.requests
    assert (seen.method, seen.target) == ("GET", "http://dl.example.com/f?x=1")
    assert seen.header("Proxy-Authorization") == "Basic Ym9iOnNAY3JldA=="  # bob:s@cret
    assert seen.header("Host") == "dl.example.com"
    assert net.resolved == []  # the proxy resolves names
    assert net.dialed == [("127.0.0.1", proxy.addr[1])]


def test_https_through_a_connect_tunnel(fetch, tls_origin, net):
    proxy = ForwardProxy({"dl.example.com:443": tls_origin.addr})
    try:
        tls_origin["/f"] = serve_file(DATA)
        result = fetch("https://dl.example.com/f", proxy=_proxy_url(proxy, "bob:pw@"))
    finally:
        proxy.close()
    assert result.bytes == len(DATA)
    (seen,) = proxy.requests
    assert (seen.method, seen.target) == ("CONNECT", "dl.example.com:443")
    assert seen.header("Proxy-Authorization") == "Basic Ym9iOnB3"
    (inner,) = tls_origin.requests
    assert inner.sni == "dl.example.com"
    assert inner.header("Proxy-Authorization") is None  # proxy credentials stay with the proxy
    assert net.resolved == []


def test_tunnel_still_verifies_the_target_certificate(fetch, tls_origin, net):
    proxy = ForwardProxy({"evil.example.org:443": tls_origin.addr})
    try:
        with pytest.raises(NetworkError) as info:
            fetch("https://evil.example.org/f", proxy=proxy.url)
    finally:
        proxy.close()
    assert info.value.transient is False


def test_proxy_refusing_the_tunnel(fetch, tls_origin):
    proxy = ForwardProxy({"dl.example.com:443": tls_origin.addr})
    proxy.connect_status = 407
    try:
        with pytest.raises(NetworkError) as info:
            fetch("https://dl.example.com/f", proxy=proxy.url)
    finally:
        proxy.close()
    assert "407" in str(info.value)


@pytest.mark.parametrize(
    ("url", "error"),
    [
        ("http://127.0.0.1/", AddressRejected),
        ("http://169.254.169.254/latest/", AddressRejected),
        ("http://[::ffff:10.0.0.1]/", AddressRejected),
        ("http://localhost/", UrlRejected),
        ("http://metadata.google.internal/", UrlRejected),
        ("http://2130706433/", UrlRejected),
    ],
)
def test_literal_and_name_checks_apply_in_proxy_mode(fetch, proxy, url, error):
    with pytest.raises(error):
        fetch(url, proxy=proxy.url)
    assert proxy.requests == []


def test_redirect_checks_apply_in_proxy_mode(fetch, origin, proxy):
    origin["/a"] = redirect("http://127.0.0.1/admin")
    with pytest.raises(AddressRejected):
        fetch("http://dl.example.com/a", proxy=proxy.url)
    origin["/b"] = redirect("http://localhost./admin")
    with pytest.raises(RedirectRejected):
        fetch("http://dl.example.com/b", proxy=proxy.url)
    assert [r.target for r in proxy.requests] == [
        "http://dl.example.com/a",
        "http://dl.example.com/b",
    ]


def test_environment_proxy_only_when_the_host_opts_in(fetch, origin, proxy, net, monkeypatch):
    origin["/f"] = serve_file(DATA)
    monkeypatch.setenv("http_proxy", proxy.url)
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    fetch("http://dl.example.com/f", "a")  # not opted in: direct
    assert proxy.requests == [] and net.resolved == ["dl.example.com"]
    fetch("http://dl.example.com/f", "b", allow_env_proxy=True)
    assert len(proxy.requests) == 1 and net.resolved == ["dl.example.com"]
    monkeypatch.setenv("NO_PROXY", "example.org, .example.com")
    fetch("http://dl.example.com/f", "c", allow_env_proxy=True)  # bypassed: direct, checked
    assert len(proxy.requests) == 1 and net.resolved == ["dl.example.com"] * 2


def test_proxy_credentials_never_appear_in_errors(fetch, ws):
    with pytest.raises(NetworkError) as info:
        fetch("http://dl.example.com/f", proxy="http://bob:hunter2@127.0.0.1:9")
    assert "hunter2" not in str(info.value) and "bob" not in str(info.value)
    assert leftovers(ws) == []


@pytest.mark.parametrize(
    "setting", ["https://proxy.example.com:3128", "socks5://proxy:1080", "http://proxy:3128/path"]
)
def test_unsupported_proxy_settings(ws, setting):
    with pytest.raises(UrlRejected):
        download("http://dl.example.com/f", "x", workspace=ws, proxy=setting)
