"""The connection to the granted origin, under the download tool's address rules.

The target a client asks for is compared with the grant in canonical form
(``_grant.canonical_host``), so ``EXAMPLE.com.`` is ``example.com`` and
``127.1`` is no host at all. Then:

- a grant that names an IP address reaches that address, whatever it is:
  the approver saw it;
- a grant of ``localhost`` exactly reaches the loopback addresses, without
  asking any resolver (RFC 6761);
- a grant of any other name is resolved once, by the host's resolver, and
  every answer must be a public unicast address (``codeward.download``'s
  table): one private answer refuses the connection, so a name that
  rebinds to 127.0.0.1, a cloud metadata address or the LAN reaches
  nothing. The connection goes to the answers just checked, never to a
  second resolution.
"""

from __future__ import annotations

import socket

from ..download._deadline import Deadline
from ..download._errors import AddressRejected, DownloadTimeout, NetworkError
from ..download._net import Dialer, Resolver, connect, resolve_pinned
from ..download._url import Url
from ._errors import NetworkGrantError
from ._grant import NetworkGrant, canonical_host
from ._protocol import (
    SOCKS_HOST_UNREACHABLE,
    SOCKS_REFUSED,
    SOCKS_TTL_EXPIRED,
    ProxyRequest,
    Refused,
)

__all__ = ["admit", "open_upstream"]

_LOOPBACK = ("127.0.0.1", "::1")


def admit(grant: NetworkGrant, request: ProxyRequest) -> str:
    """The canonical host of an admitted request; Refused for anything but the grant's origin."""
    try:
        host, kind = canonical_host(request.host, what="target")
    except NetworkGrantError as exc:
        raise Refused(str(exc), 400) from None
    if not grant.admits(host, request.port):
        asked = f"[{host}]:{request.port}" if kind == "ipv6" else f"{host}:{request.port}"
        raise Refused(f"{asked} is not the granted origin; this command may reach {grant.origin}")
    return host


def open_upstream(
    grant: NetworkGrant,
    host: str,
    port: int,
    *,
    resolver: Resolver,
    dialer: Dialer,
    timeout_s: float,
) -> socket.socket:
    """A connection to the admitted ``host:port``; Refused (with the status to answer) if none."""
    deadline = Deadline(timeout_s)
    try:
        addresses = _addresses(grant, host, port, resolver, deadline)
    except AddressRejected as exc:
        raise Refused(
            f"{exc.host} resolves to {exc.address} ({exc.reason}); a grant of a name reaches "
            "public addresses only: grant the address itself to reach it"
        ) from None
    except DownloadTimeout:
        raise Refused(
            f"{host} did not resolve within {timeout_s:g} s", 504, SOCKS_TTL_EXPIRED
        ) from None
    except NetworkError as exc:
        raise Refused(str(exc), 502, SOCKS_HOST_UNREACHABLE) from None
    try:
        return connect(addresses, port, dialer, deadline, what=f"{host}:{port}")
    except DownloadTimeout:
        raise Refused(
            f"{host}:{port} did not answer within {timeout_s:g} s", 504, SOCKS_TTL_EXPIRED
        ) from None
    except NetworkError as exc:
        raise Refused(str(exc), 502, SOCKS_REFUSED) from None


def _addresses(
    grant: NetworkGrant, host: str, port: int, resolver: Resolver, deadline: Deadline
) -> tuple[str, ...]:
    if grant.kind != "name":
        return (host,)
    if host == "localhost":
        return _LOOPBACK
    return resolve_pinned(Url("https", host, port, "/", "name"), resolver, deadline)
