"""Which IP addresses a download may connect to: public unicast only, by an explicit table.

``ipaddress``'s ``is_global``/``is_private`` are not used: their answers have
changed between Python releases and were wrong for several blocks (the
IPv4-mapped and NAT64 forms, 192.0.0.0/24, 100.64.0.0/10 on some versions).
The tables below are the whole policy, one row per block, each with the
document that reserves it. IPv4: everything not in a row is allowed. IPv6:
only ``2000::/3`` (global unicast) is allowed, minus the rows inside it;
rows outside it are listed anyway so that a refusal names the real reason.
Every form that embeds an IPv4 address in an IPv6 one (mapped, compatible,
translated, NAT64, 6to4, Teredo) is refused outright rather than decoded:
a proxy or relay could otherwise turn it into a private IPv4 destination.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from ._errors import AddressRejected

__all__ = ["IPV4_TABLE", "IPV6_TABLE", "Row", "check_address", "refusal"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class Row:
    """One refused block: the network, what it is, and the document that reserves it."""

    network: ipaddress.IPv4Network | ipaddress.IPv6Network
    name: str
    reference: str


def _rows(*rows: tuple[str, str, str]) -> tuple[Row, ...]:
    return tuple(Row(ipaddress.ip_network(n), name, ref) for n, name, ref in rows)


IPV4_TABLE: tuple[Row, ...] = _rows(
    ("0.0.0.0/8", "'this network' (0.0.0.0 reaches the local host)", "RFC 791, RFC 1122 3.2.1.3"),
    ("10.0.0.0/8", "private network", "RFC 1918"),
    ("100.64.0.0/10", "shared address space (carrier-grade NAT)", "RFC 6598"),
    ("127.0.0.0/8", "loopback", "RFC 1122 3.2.1.3"),
    ("169.254.0.0/16", "link-local (cloud metadata services live here)", "RFC 3927"),
    ("172.16.0.0/12", "private network", "RFC 1918"),
    ("192.0.0.0/24", "IETF protocol assignments (DS-Lite, NAT64 discovery ...)", "RFC 6890"),
    ("192.0.2.0/24", "documentation (TEST-NET-1)", "RFC 5737"),
    ("192.31.196.0/24", "AS112 DNS sink", "RFC 7535"),
    ("192.52.193.0/24", "automatic multicast tunnelling relays", "RFC 7450"),
    ("192.88.99.0/24", "6to4 relay anycast (deprecated)", "RFC 7526"),
    ("192.168.0.0/16", "private network", "RFC 1918"),
    ("192.175.48.0/24", "AS112 direct delegation", "RFC 7534"),
    ("198.18.0.0/15", "benchmarking", "RFC 2544"),
    ("198.51.100.0/24", "documentation (TEST-NET-2)", "RFC 5737"),
    ("203.0.113.0/24", "documentation (TEST-NET-3)", "RFC 5737"),
    ("224.0.0.0/4", "multicast", "RFC 5771"),
    ("240.0.0.0/4", "reserved, and 255.255.255.255 limited broadcast", "RFC 1112 4, RFC 919"),
    ("168.63.129.16/32", "Azure platform endpoint (wire server)", "Microsoft Azure documentation"),
)

IPV6_TABLE: tuple[Row, ...] = _rows(
    ("::/128", "unspecified address", "RFC 4291 2.5.2"),
    ("::1/128", "loopback", "RFC 4291 2.5.3"),
    ("::ffff:0:0/96", "IPv4-mapped address", "RFC 4291 2.5.5.2"),
    ("::/96", "IPv4-compatible address (deprecated)", "RFC 4291 2.5.5.1"),
    ("::ffff:0:0:0/96", "IPv4-translated address", "RFC 2765 2.1"),
    ("64:ff9b::/96", "NAT64 well-known prefix", "RFC 6052 2.1"),
    ("64:ff9b:1::/48", "NAT64 local-use prefix", "RFC 8215"),
    ("100::/64", "discard-only prefix", "RFC 6666"),
    ("100:0:0:1::/64", "dummy prefix", "RFC 9780"),
    ("2001::/32", "Teredo tunnelling (embeds an IPv4 address)", "RFC 4380"),
    ("2001::/23", "IETF protocol assignments (benchmarking, ORCHID, AMT ...)", "RFC 2928"),
    ("2001:db8::/32", "documentation", "RFC 3849"),
    ("2002::/16", "6to4 (embeds an IPv4 address)", "RFC 3056"),
    ("2620:4f:8000::/48", "AS112 direct delegation", "RFC 7534"),
    ("3ffe::/16", "former 6bone test network", "RFC 3701"),
    ("3fff::/20", "documentation", "RFC 9637"),
    ("5f00::/16", "segment routing (SRv6) SIDs", "RFC 9602"),
    ("fc00::/7", "unique local address", "RFC 4193"),
    ("fe80::/10", "link-local", "RFC 4291 2.5.6"),
    ("fec0::/10", "site-local (deprecated)", "RFC 3879"),
    ("ff00::/8", "multicast", "RFC 4291 2.7"),
)

GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")


def refusal(address: IPAddress) -> str | None:
    """Why ``address`` may not be connected to, or None when it is public unicast."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.scope_id:
            return "an address with a zone id (link-scoped)"
        for row in IPV6_TABLE:
            if address in row.network:
                return f"{row.name}, {row.network} ({row.reference})"
        if address not in GLOBAL_UNICAST:
            return f"outside {GLOBAL_UNICAST}, the only global unicast IPv6 space (RFC 4291 2.4)"
        return None
    for row in IPV4_TABLE:
        if address in row.network:
            return f"{row.name}, {row.network} ({row.reference})"
    return None


def check_address(text: str, *, host: str) -> str:
    """The canonical form of ``text`` if it is a public unicast address; else AddressRejected.

    ``host`` is the canonical name that resolved to it, for the message.
    """
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        raise AddressRejected(
            f"{host} resolved to {text!r}, which is not an IP address",
            host=host,
            address=str(text)[:64],
            reason="not an IP address",
        ) from None
    reason = refusal(address)
    if reason is not None:
        where = "is" if str(address) == host else "resolves to"
        raise AddressRejected(
            f"refused {host}: it {where} {address}, {reason}; downloads reach public "
            "addresses only",
            host=host,
            address=str(address),
            reason=reason,
        )
    return str(address)
