"""One GET on a fresh connection to one hop: direct to its pinned addresses, or via the proxy.

A :class:`Route` is a hop after its checks: the parsed URL plus either the
validated addresses (direct mode) or the proxy. It is built once per hop; the
ranged connections of the final hop reuse it, so they connect to the same
validated addresses without resolving again. Every request opens a new
connection and closes it afterwards: nothing is reused, across hosts or not.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from ._addresses import check_address
from ._deadline import Deadline
from ._errors import NetworkError
from ._headers import HostHeaders, request_headers
from ._http import Connection, ResponseHead, build_request
from ._net import Dialer, Resolver, connect, resolve_pinned, start_tls
from ._proxy import Proxy, open_tunnel, proxy_from_env
from ._url import Url

__all__ = ["Client", "Route"]


@dataclass(frozen=True)
class Route:
    """A checked hop: where its requests go (pinned addresses, or the proxy)."""

    url: Url
    addresses: tuple[str, ...] = ()
    proxy: Proxy | None = None


@dataclass
class Client:
    """The network settings of one download, and its deadline."""

    deadline: Deadline
    ssl_context: ssl.SSLContext
    resolver: Resolver
    dialer: Dialer
    proxy_resolver: Resolver
    proxy: Proxy | None = None
    env_proxy: bool = False
    environ: Mapping[str, str] | None = None

    def route(self, url: Url) -> Route:
        """Checks a hop: the proxy decides for names in proxy mode, the address table otherwise."""
        proxy = self.proxy
        if proxy is None and self.env_proxy:
            proxy = proxy_from_env(url, self.environ)
        if proxy is not None:
            if url.kind != "name":  # a literal address is checked even when a proxy connects
                check_address(url.host, host=url.host)
            return Route(url, proxy=proxy)
        return Route(url, addresses=resolve_pinned(url, self.resolver, self.deadline))

    @contextlib.contextmanager
    def get(
        self, route: Route, host_headers: HostHeaders, extra: Sequence[tuple[str, str]] = ()
    ) -> Iterator[tuple[Connection, ResponseHead]]:
        """Sends one GET for ``route`` and yields the connection and the response head."""
        url = route.url
        conn = self._connect(route)
        try:
            target, more = url.target, list(extra)
            if route.proxy is not None and url.scheme == "http":  # absolute form, to the proxy
                target = url.geturl()
                if route.proxy.authorization:
                    more.append(("Proxy-Authorization", route.proxy.authorization))
            conn.send(
                build_request("GET", target, request_headers(url.authority, host_headers, more))
            )
            yield conn, conn.read_head()
        finally:
            conn.close()

    def _connect(self, route: Route) -> Connection:
        url = route.url
        if route.proxy is None:
            sock = connect(
                route.addresses, url.port, self.dialer, self.deadline, what=url.authority
            )
        else:
            sock = self._connect_proxy(route.proxy)
        try:
            if route.proxy is not None and url.scheme == "https":
                open_tunnel(sock, route.proxy, url, self.deadline)
            if url.scheme == "https":
                sock = start_tls(sock, self.ssl_context, url.host, self.deadline)
        except BaseException:
            sock.close()
            raise
        return Connection(sock, self.deadline)

    def _connect_proxy(self, proxy: Proxy) -> socket.socket:
        """The proxy is the host's own setting: resolved as named, not held to the address table."""
        p = proxy.url
        addresses: Sequence[str] = (p.host,)
        if p.kind == "name":
            try:
                addresses = list(self.deadline.call(lambda: self.proxy_resolver(p.host, p.port)))
            except OSError as exc:
                raise NetworkError(f"cannot resolve the proxy {proxy}: {exc}") from None
            if not addresses:
                raise NetworkError(f"the proxy {proxy} has no address")
        return connect(addresses, p.port, self.dialer, self.deadline, what=f"the proxy {proxy}")
