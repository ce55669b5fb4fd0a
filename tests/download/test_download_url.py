"""The one URL parser: what it accepts, how it canonicalises, and every form it refuses."""

from __future__ import annotations

import pytest

from codeward.download import UrlRejected
from codeward.download._url import join, parse_url


@pytest.mark.parametrize(
    ("text", "scheme", "host", "port", "target", "kind"),
    [
        ("http://example.com", "http", "example.com", 80, "/", "name"),
        ("HTTPS://EXAMPLE.COM/A/b?Q=1#frag", "https", "example.com", 443, "/A/b?Q=1", "name"),
        ("https://example.com:8443/x", "https", "example.com", 8443, "/x", "name"),
        ("http://example.com:80/x", "http", "example.com", 80, "/x", "name"),
        ("http://example.com./x", "http", "example.com", 80, "/x", "name"),
        ("http://example.com?x=1", "http", "example.com", 80, "/?x=1", "name"),
        ("http://93.184.215.14/x", "http", "93.184.215.14", 80, "/x", "ipv4"),
        ("http://[2606:2800:0:0::1]:8080/", "http", "2606:2800::1", 8080, "/", "ipv6"),
        (
            "http://r3---sn-abc.googlevideo.com/",
            "http",
            "r3---sn-abc.googlevideo.com",
            80,
            "/",
            "name",
        ),
        (
            "https://Bücher.example.com/ä-ö",
            "https",
            "xn--bcher-kva.example.com",
            443,
            "/%C3%A4-%C3%B6",
            "name",
        ),
        (
            "https://\uff25\uff38\uff21\uff2d\uff30\uff2c\uff25.com/",
            "https",
            "example.com",
            443,
            "/",
            "name",
        ),
        (
            "https://xn--bcher-kva.example.com/",
            "https",
            "xn--bcher-kva.example.com",
            443,
            "/",
            "name",
        ),
        ("http://example.com/a%2Fb/%zz", "http", "example.com", 80, "/a%2Fb/%zz", "name"),
        (
            'http://example.com/"<>^`{|}',
            "http",
            "example.com",
            80,
            "/%22%3C%3E%5E%60%7B%7C%7D",
            "name",
        ),
    ],
)
def test_accepted_and_canonical(text, scheme, host, port, target, kind):
    url = parse_url(text)
    assert (url.scheme, url.host, url.port, url.target, url.kind) == (
        scheme,
        host,
        port,
        target,
        kind,
    )


def test_authority_and_origin():
    url = parse_url("https://Example.com:443/x")
    assert url.authority == "example.com"
    assert url.hostport == "example.com:443"
    assert url.origin == ("https", "example.com", 443)
    assert parse_url("http://[2606:2800::1]:81/").authority == "[2606:2800::1]:81"
    assert parse_url("http://[2606:2800::1]/").authority == "[2606:2800::1]"


REFUSED = {
    # user information, in every spelling
    "userinfo": "http://user@example.com/",
    "userinfo-password": "http://user:pass@example.com/",
    "userinfo-empty": "http://@example.com/",
    "userinfo-colon": "http://:@example.com/",
    "userinfo-confusable": "http://example.com@evil.com/",
    "userinfo-after-port": "http://example.com:80@evil.com/",
    # parser disagreements
    "backslash-authority": "http://example.com\\@evil.com/",
    "backslash-path": "http://example.com/a\\b",
    "backslash-scheme": "http:\\\\example.com/",
    "space": "http://exa mple.com/",
    "space-path": "http://example.com/a b",
    "tab": "http://example.com/\t",
    "newline": "http://example.com/\nX-Injected: 1",
    "cr": "http://example.com/\r",
    "nul": "http://example.com/\x00",
    "del": "http://example.com/\x7f",
    "nbsp": "http://example.com/\u00a0",
    "line-separator": "http://example.com/\u2028",
    "zero-width-space": "http://exa\u200bmple.com/",
    "zero-width-joiner": "http://ex\u200dample.com/",
    "bidi-override": "http://example.com/\u202e",
    "leading-space": " http://example.com/",
    # percent escapes and zone ids in the host
    "pct-host": "http://%6c%6f%63%61%6c%68%6f%73%74/",
    "pct-host-dot": "http://127%2e0%2e0%2e1/",
    "zone-id": "http://[fe80::1%25eth0]/",
    "zone-id-raw": "http://[fe80::1%eth0]/",
    # numeric hosts that are not canonical dotted quads
    "short-2": "http://127.1/",
    "short-3": "http://127.0.1/",
    "hex-short": "http://0x7f.1/",
    "hex-full": "http://0x7f000001/",
    "hex-octets": "http://0x7f.0x0.0x0.0x1/",
    "integer": "http://2130706433/",
    "octal": "http://0177.0.0.1/",
    "leading-zero": "http://01.2.3.4/",
    "zero": "http://0/",
    "trailing-dot-quad": "http://127.0.0.1./",
    "trailing-dot-public": "http://93.184.215.14./",
    "five-parts": "http://1.2.3.4.5/",
    "octet-256": "http://256.1.1.1/",
    "hex-last": "http://example.0x10/",
    "empty-hex": "http://0x/",
    "fullwidth-short": "http://\uff11\uff12\uff17.\uff11/",
    # IPv6 literal forms
    "v6-unbracketed": "http://::1/",
    "v6-unclosed": "http://[::1/",
    "v6-invalid": "http://[::g]/",
    "v6-future": "http://[v1.abc]/",
    "v6-junk-after": "http://[::1]x/",
    "bracket-in-name": "http://exa[mple.com/",
    # ports
    "port-empty": "http://example.com:/",
    "port-zero": "http://example.com:0/",
    "port-big": "http://example.com:65536/",
    "port-leading-zero": "http://example.com:080/",
    "port-sign": "http://example.com:+80/",
    "port-alpha": "http://example.com:8o/",
    # names that only ever mean this machine or a private network
    "localhost": "http://localhost/",
    "localhost-upper": "http://LOCALHOST/",
    "localhost-dot": "http://localhost./",
    "sub-localhost": "http://api.localhost/",
    "localhost-localdomain": "http://localhost.localdomain/",
    "single-label": "http://intranet/",
    "single-label-dot": "http://wpad./",
    "mdns": "http://printer.local/",
    "gcp-metadata": "http://metadata.google.internal/",
    "k8s": "http://kubernetes.default.svc.cluster.local/",
    "home-arpa": "http://nas.home.arpa/",
    "reverse-dns": "http://1.0.0.127.in-addr.arpa/",
    "onion": "http://abc.onion/",
    "test-tld": "http://foo.test/",
    "invalid-tld": "http://foo.invalid/",
    "lan": "http://router.lan/",
    "fullwidth-localhost": "http://\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54/",
    # host names
    "underscore": "http://a_b.example.com/",
    "empty-label": "http://a..example.com/",
    "hyphen-edge": "http://-a.example.com/",
    "long-label": "http://" + "a" * 64 + ".com/",
    "bad-punycode": "http://xn--abc.com/",
    "empty-host": "http:///x",
    "no-host-port": "http://:80/",
    # schemes and shapes
    "ftp": "ftp://example.com/x",
    "file": "file:///etc/passwd",
    "data": "data:text/plain,hi",
    "javascript": "javascript:alert(1)",
    "gopher": "gopher://example.com/",
    "no-slashes": "http:example.com/",
    "one-slash": "http:/example.com/",
    "scheme-relative": "//example.com/",
    "relative": "/x",
    "empty": "",
    "too-long": "http://example.com/" + "a" * 9000,
}


@pytest.mark.parametrize("text", REFUSED.values(), ids=REFUSED.keys())
def test_refused(text):
    with pytest.raises(UrlRejected):
        parse_url(text)


def test_not_a_string():
    with pytest.raises(UrlRejected):
        parse_url(b"http://example.com/")


def test_fullwidth_quad_maps_once_to_a_literal():
    # UTS-46 maps full-width digits and dots once; the result is an IPv4 literal that the
    # address table then judges (test_download_addresses covers the refusal of 127.0.0.1).
    url = parse_url("http://\uff11\uff12\uff17\uff0e\uff10\uff0e\uff10\uff0e\uff11/")
    assert (url.host, url.kind) == ("127.0.0.1", "ipv4")


def test_messages_never_echo_credentials_or_signatures():
    text = "http://alice:hunter2@example.com/x?X-Amz-Signature=deadbeef&token=s3cr3t&keep=1"
    with pytest.raises(UrlRejected) as info:
        parse_url(text)
    message = str(info.value)
    for secret in ("hunter2", "alice", "deadbeef", "s3cr3t"):
        assert secret not in message
    assert "keep=1" in message


def test_proxy_urls_allow_credentials_and_local_names():
    url = parse_url("http://user:p%40ss@proxy:3128", proxy=True)
    assert (url.host, url.port, url.userinfo) == ("proxy", 3128, "user:p%40ss")
    assert "p%40ss" not in repr(url) and "p%40ss" not in url.redacted()
    with pytest.raises(UrlRejected):
        parse_url("http://proxy:3128/some/path", proxy=True)


def test_redacted_rendering():
    url = parse_url("https://bucket.example.com/o?X-Amz-Credential=AKIA&X-Amz-Signature=ff&v=2")
    assert url.redacted() == (
        "https://bucket.example.com/o?X-Amz-Credential=REDACTED&X-Amz-Signature=REDACTED&v=2"
    )
    assert "ff" in url.geturl() and str(url) == url.redacted()


BASE = parse_url("https://example.com/a/b/c?q=1")


@pytest.mark.parametrize(
    ("location", "joined"),
    [
        ("d", "https://example.com/a/b/d"),
        ("./d", "https://example.com/a/b/d"),
        ("../d", "https://example.com/a/d"),
        ("../../../../d", "https://example.com/d"),
        ("/x/./y/../z", "https://example.com/x/z"),
        ("?r=2", "https://example.com/a/b/c?r=2"),
        ("", "https://example.com/a/b/c?q=1"),
        ("#frag", "https://example.com/a/b/c?q=1"),
        ("//cdn.example.net/f", "https://cdn.example.net/f"),
        ("http://other.example.com/g", "http://other.example.com/g"),
        ("ftp://example.com/x", "ftp://example.com/x"),
    ],
)
def test_join(location, joined):
    assert join(BASE, location) == joined
