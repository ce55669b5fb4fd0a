"""NetworkGrant: the one origin a confirmed bash call may reach, and the host names it compares.

A grant names one host exactly, as the approver saw it: no wildcard, no
path, no port inside the host, and one mapping (IDNA with UTS-46 for
non-ASCII names, lower-casing for ASCII ones, a trailing dot dropped), done
by the download tool's URL parser (``codeward.download``), so that a name
is compared in the same form everywhere. ``localhost`` and ``127.0.0.1`` are
different hosts. A grant without a port covers 443 and 80 of its host.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any, Literal

from .._summary import DEFAULT_GRANT_PORTS, grant_target
from ..download._errors import UrlRejected
from ..download._url import _canonical_host
from ._errors import NetworkGrantError

__all__ = ["DEFAULT_PORTS", "HostKind", "NetworkGrant", "canonical_host"]

DEFAULT_PORTS = DEFAULT_GRANT_PORTS  # a grant without a port: HTTPS and HTTP of its host
HostKind = Literal["name", "ipv4", "ipv6"]
# Never part of an exact host: wildcards, paths, user information, ports, spaces.
_FORBIDDEN = frozenset("*?/\\@#%[] \t\r\n:")


def canonical_host(text: object, *, what: str = "host") -> tuple[str, HostKind]:
    """The canonical form of an exact host (a name, a dotted quad, an IPv6 address) and its kind.

    Raises NetworkGrantError saying what is wrong. An IPv6 address may come
    with or without brackets; IPv4 shorthand (``127.1``, ``0x7f.0.0.1``)
    and every other numeric form are refused, as in URLs.
    """
    if not isinstance(text, str) or not text:
        raise NetworkGrantError(f"the {what} must be a non-empty string")
    literal = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    if ":" in literal:
        # checked before the address is parsed, which would take a zone id (fe80::1%lo)
        bad6 = sorted({c for c in literal if (c in _FORBIDDEN and c != ":") or not c.isprintable()})
        if bad6:
            raise NetworkGrantError(
                f"the {what} {text!r} is not an exact IP address: it contains "
                f"{', '.join(map(repr, bad6))} (no zone id, port, path or wildcard)"
            )
        try:
            return str(ipaddress.IPv6Address(literal)), "ipv6"
        except ValueError:
            raise NetworkGrantError(
                f"the {what} {text!r} is not a host: a port goes in the grant's port field, "
                "and an IPv6 address must be valid"
            ) from None
    bad = sorted({c for c in text if c in _FORBIDDEN or ord(c) < 0x20 or ord(c) == 0x7F})
    if bad:
        raise NetworkGrantError(
            f"the {what} {text!r} is not an exact host name or IP address: it contains "
            f"{', '.join(map(repr, bad))} (no scheme, port, path or wildcard)"
        )

    def fail(why: str) -> UrlRejected:
        return UrlRejected(why)

    try:
        host, kind = _canonical_host(text, fail, proxy=True)
    except UrlRejected as exc:
        raise NetworkGrantError(f"the {what} {text!r} is refused: {exc}") from None
    return host, kind


@dataclass(frozen=True)
class NetworkGrant:
    """One approved origin for one command: ``host``, ``port`` (None: 443 and 80), the digest.

    ``policy_digest`` is the sandbox policy the approver was shown
    (``NativeBashSandbox.policy()``); the command runs only under that policy.
    Build it with :meth:`make`, which canonicalises and checks the host.
    """

    host: str
    port: int | None
    policy_digest: str
    kind: HostKind = "name"

    @classmethod
    def make(cls, host: object, port: object, policy_digest: str) -> NetworkGrant:
        canonical, kind = canonical_host(host)
        if port is not None and (
            not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535
        ):
            raise NetworkGrantError(f"the port must be an integer from 1 to 65535, not {port!r}")
        if not isinstance(policy_digest, str) or not policy_digest.startswith("sha256:"):
            raise NetworkGrantError("a grant needs the sandbox policy digest it was approved on")
        return cls(canonical, port, policy_digest, kind)

    @property
    def ports(self) -> tuple[int, ...]:
        return DEFAULT_PORTS if self.port is None else (self.port,)

    @property
    def origin(self) -> str:
        """In words, as the prompt shows it: ``example.com:8443``, or both web ports."""
        return grant_target(self.host, self.port)

    def admits(self, host: str, port: int) -> bool:
        """Whether a canonical host and a port are this grant's origin, exactly."""
        return host == self.host and port in self.ports

    def to_dict(self) -> dict[str, Any]:
        return {"host": self.host, "port": self.port, "policy_digest": self.policy_digest}
