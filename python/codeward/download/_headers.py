"""Request headers: what the host may add, what every request carries, what survives a redirect.

The host can add headers (an ``Authorization`` for a private artifact store);
the model never can. Headers that decide the framing or the encoding of the
exchange are the client's own and cannot be set. On a redirect to another
origin (scheme, host or port changed) only a short allow-list survives:
credentials and validators are dropped and stay dropped for the rest of the
download, even if a later redirect comes back to the first origin.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from .._version import __version__

__all__ = ["USER_AGENT", "HostHeaders", "request_headers"]

USER_AGENT = f"codeward/{__version__}"

# Set by the client on every request, or meaningless for a download: never the host's.
_RESERVED = frozenset(
    {
        "host",
        "connection",
        "keep-alive",
        "proxy-connection",
        "content-length",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "expect",
        "accept-encoding",
        "range",
        "if-range",
    }
)
# The only host headers still sent after a cross-origin redirect.
CROSS_ORIGIN_SAFE = frozenset({"user-agent", "accept", "accept-language"})

_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_VALUE = re.compile(r"[\t\x20-\x7e\x80-\xff]*")


class HostHeaders:
    """The host's headers for one download, validated once; immutable."""

    def __init__(self, headers: Mapping[str, str] | Iterable[tuple[str, str]] | None = None):
        items = list(headers.items() if isinstance(headers, Mapping) else headers or ())
        checked: list[tuple[str, str]] = []
        for item in items:
            if not (isinstance(item, tuple) and len(item) == 2):
                raise TypeError("headers must be a mapping or (name, value) pairs")
            name, value = item
            if not isinstance(name, str) or not _NAME.fullmatch(name):
                raise ValueError(f"invalid header name {name!r}")
            if not isinstance(value, str) or not _VALUE.fullmatch(value):
                raise ValueError(
                    f"invalid value for header {name!r}: control characters or non-latin-1 text"
                )
            if name.lower() in _RESERVED:
                raise ValueError(f"the header {name!r} is set by the download itself")
            checked.append((name, value.strip(" \t")))
        self.items: tuple[tuple[str, str], ...] = tuple(checked)

    def cross_origin(self) -> HostHeaders:
        """What is left after a redirect to another origin (see the module docstring)."""
        kept = HostHeaders()
        kept.items = tuple((k, v) for k, v in self.items if k.lower() in CROSS_ORIGIN_SAFE)
        return kept

    def names(self) -> set[str]:
        return {k.lower() for k, _ in self.items}


def request_headers(
    authority: str,
    host: HostHeaders,
    extra: Sequence[tuple[str, str]] = (),
) -> list[tuple[str, str]]:
    """Every header of one GET: ours, then ``extra`` (range, proxy auth), then the host's."""
    given = host.names()
    out = [("Host", authority)]
    if "user-agent" not in given:
        out.append(("User-Agent", USER_AGENT))
    if "accept" not in given:
        out.append(("Accept", "*/*"))
    out += [("Accept-Encoding", "identity"), ("Connection", "close"), *extra, *host.items]
    return out
