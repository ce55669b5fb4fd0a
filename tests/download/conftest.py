"""Fixtures for the download tests: a workspace, loopback origins, the fake network seams."""

from __future__ import annotations

import ssl
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from dlserver import PUBLIC_IP, Certs, FakeNet, Origin, make_certs

from codeward.download import DownloadResult, download
from codeward.workspace import Workspace


@pytest.fixture(scope="session")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    made = make_certs(tmp_path_factory.mktemp("certs"))
    if made is None:
        pytest.skip("neither the cryptography package nor the openssl CLI is available")
    return made


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "ws"
    root.mkdir()
    return Workspace(root)


@pytest.fixture
def net() -> FakeNet:
    return FakeNet()


@pytest.fixture
def origin(net: FakeNet) -> Iterator[Origin]:
    """Plain HTTP on dl.example.com (port 80 of PUBLIC_IP)."""
    server = Origin()
    net.dns["dl.example.com"] = [PUBLIC_IP]
    net.routes[(PUBLIC_IP, 80)] = server.addr
    yield server
    server.close()


@pytest.fixture
def tls_origin(net: FakeNet, certs: Certs) -> Iterator[Origin]:
    """HTTPS on dl.example.com (port 443 of PUBLIC_IP), certificate from the test CA."""
    server = Origin(tls=certs.server_context())
    net.dns["dl.example.com"] = [PUBLIC_IP]
    net.routes[(PUBLIC_IP, 443)] = server.addr
    yield server
    server.close()


@pytest.fixture
def client_tls(certs: Certs) -> ssl.SSLContext:
    return certs.client_context()


Fetch = Callable[..., DownloadResult]


@pytest.fixture
def fetch(ws: Workspace, net: FakeNet, request: pytest.FixtureRequest) -> Fetch:
    """download() with the workspace and the fake network filled in; keywords pass through.

    ``tls=True`` trusts the test CA for a URL that starts as http and redirects to https.
    """

    def run(url: str, path: str = "out.bin", *, tls: bool = False, **kw: Any) -> DownloadResult:
        kw.setdefault("workspace", ws)
        kw.setdefault("resolver", net.resolver)
        kw.setdefault("dialer", net.dialer)
        kw.setdefault("timeout_s", 20)
        if "ssl_context" not in kw and (tls or url.startswith("https")):
            kw["ssl_context"] = request.getfixturevalue("client_tls")
        return download(url, path, **kw)

    return run
