"""Explicit proxy mode: the host names a proxy, and the proxy resolves and connects.

``https`` targets go through a ``CONNECT host:port`` tunnel, with TLS to the
target inside it (SNI and verification against the target's canonical name);
``http`` targets are requested in absolute form from the proxy. The proxy's
credentials (user information in the proxy URL) go to the proxy only: on the
CONNECT request, or on the absolute-form request the proxy itself answers.

What still applies in proxy mode: the URL checks (names like ``localhost``,
odd numeric hosts), the address table for literal IP hosts, and every check
on each redirect. What cannot: the address check of a name, which only the
proxy resolves. That is the proxy's job, and the reason this mode is opt-in.
"""

from __future__ import annotations

import base64
import ipaddress
import os
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote

from ._deadline import Deadline
from ._errors import NetworkError, ProtocolError, UrlRejected
from ._http import Connection, build_request
from ._url import Url, parse_url

__all__ = ["Proxy", "open_tunnel", "parse_proxy", "proxy_from_env"]

_TUNNEL_BUFFER = 16 * 1024


@dataclass(frozen=True)
class Proxy:
    """A parsed proxy setting; ``str()`` never shows its credentials."""

    url: Url

    @property
    def authorization(self) -> str | None:
        """The ``Proxy-Authorization`` value from the URL's user information, if any."""
        if not self.url.userinfo:
            return None
        user, _, password = self.url.userinfo.partition(":")
        token = f"{unquote(user)}:{unquote(password)}".encode()
        return "Basic " + base64.b64encode(token).decode("ascii")

    def __str__(self) -> str:
        return f"http://{self.url.authority}"


def parse_proxy(text: str) -> Proxy:
    """Parses a host-supplied proxy URL (``http://[user:pass@]host:port``)."""
    url = parse_url(text, proxy=True)
    if url.scheme != "http":
        raise UrlRejected(
            f"the proxy {url.scheme}://{url.authority} is not supported: only http:// proxies "
            "(https targets are still end-to-end TLS through CONNECT)"
        )
    return Proxy(url)


def proxy_from_env(url: Url, environ: Mapping[str, str] | None = None) -> Proxy | None:
    """The proxy the environment names for ``url`` (``HTTPS_PROXY``/``HTTP_PROXY``, ``NO_PROXY``).

    Only consulted when the host opted in. ``HTTP_PROXY`` in upper case is
    ignored in a CGI environment (``REQUEST_METHOD`` set), where a client
    controls it ("httpoxy").
    """
    env = os.environ if environ is None else environ
    lower = f"{url.scheme}_proxy"
    value = env.get(lower)
    if not value and not (url.scheme == "http" and "REQUEST_METHOD" in env):
        value = env.get(lower.upper())
    if not value or _bypassed(url.host, env.get("no_proxy") or env.get("NO_PROXY") or ""):
        return None
    return parse_proxy(value)


def _bypassed(host: str, no_proxy: str) -> bool:
    for entry in re.split(r"[,\s]+", no_proxy.strip().lower()):
        if not entry:
            continue
        if entry == "*":
            return True
        entry = entry.strip("[]")
        if "/" in entry:
            try:
                if ipaddress.ip_address(host) in ipaddress.ip_network(entry, strict=False):
                    return True
            except ValueError:
                pass
            continue
        entry = entry.removeprefix("*").removeprefix(".")
        if entry.rsplit(":", 1)[0] == host or host.endswith("." + entry):
            return True
    return False


def open_tunnel(sock: socket.socket, proxy: Proxy, target: Url, deadline: Deadline) -> None:
    """Asks the proxy for a tunnel to ``target`` over ``sock``; raises unless it is open."""
    headers = [("Host", target.hostport), ("User-Agent", "codeward")]
    if proxy.authorization:
        headers.append(("Proxy-Authorization", proxy.authorization))
    conn = Connection(sock, deadline, buffer_size=_TUNNEL_BUFFER)
    conn.send(build_request("CONNECT", target.hostport, headers))
    head = conn.read_head()
    if not 200 <= head.status < 300:
        raise NetworkError(
            f"the proxy {proxy} refused a tunnel to {target.hostport}: "
            f"{head.status} {head.reason}".rstrip(),
            transient=head.status in (502, 503, 504),
        )
    if conn.buffered:
        raise ProtocolError(f"the proxy {proxy} sent data before the tunnel was used")
