"""Resolution once, validation of every answer, connection to the validated addresses only.

A hop's host is resolved exactly once. If any answer is not public unicast
the hop is refused before any connection: a name that mixes a public and a
private answer is an attack, not a misconfiguration. The validated answers
are then the only addresses the hop (and every ranged connection after it)
ever connects to: nothing resolves the name again, so DNS rebinding between
"check" and "connect" has no second resolution to act on. TLS uses the
canonical host as SNI and for certificate verification.

``resolver`` and ``dialer`` are the host's seams (its own DNS, its own
network stack, tests); the validation stays here, outside them.
"""

from __future__ import annotations

import functools
import socket
import ssl
from collections.abc import Callable, Sequence

from ._addresses import check_address
from ._deadline import Deadline
from ._errors import NetworkError
from ._url import Url

__all__ = [
    "Dialer",
    "Resolver",
    "check_ssl_context",
    "connect",
    "default_ssl_context",
    "plain_dialer",
    "resolve_pinned",
    "start_tls",
    "system_proxy_resolver",
    "system_resolver",
]

Resolver = Callable[[str, int], Sequence[str]]
Dialer = Callable[[str, int, float], socket.socket]

MAX_ANSWERS = 64  # more answers than this for one name is refused, not truncated
MAX_ATTEMPTS = 8  # addresses tried per connection


def system_resolver(host: str, port: int) -> list[str]:
    """The system resolver for targets; the trailing dot keeps local search domains out."""
    return _getaddrinfo(host + ".", port)


def system_proxy_resolver(host: str, port: int) -> list[str]:
    """The system resolver for the host's proxy, whose name may rely on search domains."""
    return _getaddrinfo(host, port)


def _getaddrinfo(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    return [str(info[4][0]) for info in infos if info[0] in (socket.AF_INET, socket.AF_INET6)]


def plain_dialer(ip: str, port: int, timeout_s: float) -> socket.socket:
    """A TCP connection to an already validated address."""
    family = socket.AF_INET6 if ":" in ip else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout_s)
        sock.connect((ip, port))
    except BaseException:
        sock.close()
        raise
    return sock


@functools.lru_cache(maxsize=1)
def default_ssl_context() -> ssl.SSLContext:
    """The system trust store with full verification (hostname and chain)."""
    return ssl.create_default_context()


def check_ssl_context(ctx: ssl.SSLContext) -> None:
    """A host-supplied context must still verify certificates and names fully."""
    if not isinstance(ctx, ssl.SSLContext):
        raise TypeError(f"ssl_context must be an ssl.SSLContext, not {type(ctx).__name__}")
    if ctx.verify_mode != ssl.CERT_REQUIRED or not ctx.check_hostname:
        raise ValueError(
            "ssl_context must verify certificates and host names "
            "(verify_mode CERT_REQUIRED, check_hostname True); add a CA instead of disabling checks"
        )


def resolve_pinned(url: Url, resolver: Resolver, deadline: Deadline) -> tuple[str, ...]:
    """The validated addresses of ``url``'s host; AddressRejected if any answer is not public."""
    if url.kind != "name":
        return (check_address(url.host, host=url.host),)
    try:
        answers = deadline.call(lambda: resolver(url.host, url.port))
    except socket.gaierror as exc:
        raise NetworkError(f"cannot resolve {url.host}: {exc.strerror or exc}") from None
    except OSError as exc:
        raise NetworkError(f"cannot resolve {url.host}: {exc}") from None
    if isinstance(answers, (str, bytes)) or not isinstance(answers, Sequence):
        raise TypeError("a resolver must return a list of IP address strings")
    if not answers:
        raise NetworkError(f"{url.host} has no address")
    if len(answers) > MAX_ANSWERS:
        raise NetworkError(f"{url.host} has {len(answers)} addresses, more than {MAX_ANSWERS}")
    pinned: list[str] = []
    for answer in answers:  # every answer, before any connection
        address = check_address(answer, host=url.host)
        if address not in pinned:
            pinned.append(address)
    return tuple(pinned)


def connect(
    addresses: Sequence[str], port: int, dialer: Dialer, deadline: Deadline, *, what: str
) -> socket.socket:
    """A connection to the first of ``addresses`` that answers, within the deadline."""
    failures = []
    for ip in addresses[:MAX_ATTEMPTS]:
        try:
            sock = dialer(ip, port, deadline.budget())
        except OSError as exc:
            failures.append(f"{ip}: {exc.strerror or str(exc) or type(exc).__name__}")
            continue
        return sock
    deadline.check()
    raise NetworkError(f"could not connect to {what} ({'; '.join(failures)})")


def start_tls(
    sock: socket.socket, ctx: ssl.SSLContext, server_name: str, deadline: Deadline
) -> ssl.SSLSocket:
    """TLS over ``sock`` with ``server_name`` as SNI and the name verified against it."""
    try:
        sock.settimeout(deadline.budget())
        return ctx.wrap_socket(sock, server_hostname=server_name, suppress_ragged_eofs=False)
    except ssl.SSLCertVerificationError as exc:
        sock.close()
        raise NetworkError(
            f"the TLS certificate of {server_name} is not trusted: "
            f"{exc.verify_message or exc.reason}",
            transient=False,
        ) from None
    except ssl.SSLError as exc:
        sock.close()
        raise NetworkError(
            f"the TLS handshake with {server_name} failed: {exc.reason or exc}", transient=False
        ) from None
    except OSError as exc:
        sock.close()
        deadline.check()
        raise NetworkError(
            f"the TLS handshake with {server_name} failed: {exc.strerror or exc}"
        ) from None
