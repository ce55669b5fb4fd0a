"""The shared network grant vectors (tests/vectors/netgrant_requests.json) in the Python mediator.

Each case's request bytes go through what the mediator does with a fresh
connection before relaying anything: the request is read
(``_protocol.read_request``), admitted for the grant (``_upstream.admit``)
and connected under the address rules (``_upstream.open_upstream``, with
the case's DNS answers and a dialer that records the address). The Go
binding runs the same file (bindings/go/netgrant_vectors_test.go), so the
two mediators decide every request alike.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from codeward.netgrant import NetworkGrant
from codeward.netgrant._protocol import Refused, read_request
from codeward.netgrant._upstream import admit, open_upstream

VECTORS = Path(__file__).resolve().parents[1] / "vectors" / "netgrant_requests.json"
CASES: list[dict[str, Any]] = json.loads(VECTORS.read_text())["cases"]
DIGEST = "sha256:" + "0" * 64
DEFAULT_ANSWER = "93.184.215.14"


def _grant(origin: str) -> NetworkGrant:
    if origin.startswith("["):
        host, _, port = origin[1:].partition("]:")
        return NetworkGrant.make(host, int(port), DIGEST)
    host, sep, port = origin.rpartition(":")
    return (
        NetworkGrant.make(host, int(port), DIGEST)
        if sep
        else NetworkGrant.make(origin, None, DIGEST)
    )


def _hostport(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def test_the_vectors_cover_every_outcome() -> None:
    expects = [case["expect"] for case in CASES]
    assert len(CASES) >= 100 and len({case["name"] for case in CASES}) == len(CASES)
    statuses = {e.get("status") for e in expects}
    assert {200, 400, 403, 431, 501, 502} <= statuses
    assert {0, 1, 2, 7, 8} <= {e.get("socks") for e in expects}
    assert any(e.get("pipelined") for e in expects)


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_netgrant_vector(case: dict[str, Any]) -> None:
    grant = _grant(case["origin"])
    dns: dict[str, list[str]] = case.get("dns", {})
    resolved: list[str] = []
    dialed: list[str] = []

    def resolver(host: str, port: int) -> list[str]:
        resolved.append(host)
        return dns.get(host, [DEFAULT_ANSWER])

    def dialer(ip: str, port: int, timeout_s: float) -> socket.socket:
        dialed.append(_hostport(ip, port))
        ours, theirs = socket.socketpair()
        theirs.close()
        return ours

    expect = case["expect"]
    client, server = socket.socketpair()
    with client, server:
        client.sendall(case["request"].encode("latin-1"))
        client.shutdown(socket.SHUT_WR)
        server.settimeout(5)
        request = None
        try:
            request = read_request(server)
            host = admit(grant, request)
            open_upstream(
                grant, host, request.port, resolver=resolver, dialer=dialer, timeout_s=5
            ).close()
        except Refused as refused:
            assert not expect["forward"], f"refused: {refused.reason}"
            kind = request.kind if request else refused.kind
            if kind == "socks5":
                assert refused.socks == expect["socks"]
            else:
                assert refused.status == expect["status"]
            assert refused.reason == expect["reason"]
            assert not dialed
            return
    assert expect["forward"], "forwarded"
    assert _hostport(host, request.port) == expect["target"]
    assert dialed[:1] == [expect["dialed"]]
    assert request.forward == expect["sent"].encode("latin-1")
    if request.kind == "socks5":
        assert expect["socks"] == 0
    elif request.kind == "connect":
        assert expect["status"] == 200
    else:
        assert "status" not in expect
        assert request.body_left == expect["body_left"]
        assert request.pipelined == expect["pipelined"]
    if grant.kind != "name" or grant.host == "localhost":
        assert resolved == []  # an address or localhost asks no resolver
