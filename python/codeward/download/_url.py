"""The one URL parser of the download tool, and the one canonical host it yields.

Server-side request forgery through URLs lives in the disagreements between
parsers: a backslash one library reads as ``/``, an ``@`` that turns a host
into user information, ``127.1`` or ``0x7f.1`` that ``inet_aton`` expands to
loopback, an IDNA mapping done twice. So every URL the tool handles (the
argument, each redirect, a proxy setting) goes through :func:`parse_url`,
which accepts a strict subset and refuses everything else. The host is mapped
once (IDNA with UTS-46 for non-ASCII names, lower-casing for ASCII ones) and
the resulting :attr:`Url.host` is what is resolved, sent as ``Host`` and SNI,
compared for origins and shown in messages.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from .._redact import redact_query, redact_url
from ._errors import UrlRejected

__all__ = ["MAX_URL_LENGTH", "Url", "join", "parse_url", "refused_name"]

MAX_URL_LENGTH = 8192
DEFAULT_PORTS = {"http": 80, "https": 443}

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
_PORT = re.compile(r"[1-9][0-9]{0,4}")
_LABEL = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")
_OCTET = r"(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_DOTTED_QUAD = re.compile(rf"{_OCTET}(\.{_OCTET}){{3}}")
_NUMERIC_LABEL = re.compile(r"[0-9]+|0[xX][0-9A-Fa-f]*")
# Unicode categories never accepted anywhere in a URL: controls, format characters
# (bidi overrides, zero-width joiners), surrogates, private use, unassigned, separators.
_FORBIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zs", "Zl", "Zp"})
# Characters sent as they are in a request target; everything else is percent-encoded.
_TARGET_SAFE = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@/?%"
)
# Names that only ever mean this machine or a private network, refused before resolution.
_LOCAL_NAMES = frozenset(
    {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback", "broadcasthost"}
)
# Special-use and never-delegated top-level names (RFC 6761, 6762, 7686, 8375, 9476,
# ICANN's .internal) and the usual private ones: refused with every name below them.
_LOCAL_SUFFIXES = (
    "localhost",
    "localdomain",
    "local",
    "internal",
    "intranet",
    "lan",
    "home",
    "corp",
    "private",
    "arpa",
    "onion",
    "invalid",
    "test",
    "example",
    "alt",
)

HostKind = Literal["name", "ipv4", "ipv6"]
_Fail = Callable[[str], UrlRejected]  # builds the error for one URL from a reason


@dataclass(frozen=True)
class Url:
    """A parsed http(s) URL: what is sent where.

    ``host`` is canonical (a lower-case A-label name without a trailing dot, a
    dotted quad, or a compressed IPv6 address without brackets); ``target``
    is the origin-form request target (path and query, percent-encoded where
    needed, never empty). The fragment is dropped. ``userinfo`` is set only
    for a proxy URL and never appears in any rendering.
    """

    scheme: Literal["http", "https"]
    host: str
    port: int
    target: str
    kind: HostKind
    userinfo: str | None = field(default=None, repr=False, compare=False)

    @property
    def origin(self) -> tuple[str, str, int]:
        return (self.scheme, self.host, self.port)

    @property
    def authority(self) -> str:
        """``host[:port]`` as sent in ``Host`` (brackets around IPv6, no default port)."""
        host = f"[{self.host}]" if self.kind == "ipv6" else self.host
        return host if self.port == DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"

    @property
    def hostport(self) -> str:
        """``host:port`` always with the port, as a CONNECT request names it."""
        host = f"[{self.host}]" if self.kind == "ipv6" else self.host
        return f"{host}:{self.port}"

    @property
    def path(self) -> str:
        return self.target.partition("?")[0]

    def geturl(self) -> str:
        """The full URL as sent (secrets included): for the request line and comparisons only."""
        return f"{self.scheme}://{self.authority}{self.target}"

    def redacted(self) -> str:
        """The URL safe to show: sensitive query values replaced (see :mod:`codeward._redact`)."""
        path, sep, query = self.target.partition("?")
        return f"{self.scheme}://{self.authority}{path}{sep}{redact_query(query) if sep else ''}"

    def __str__(self) -> str:
        return self.redacted()


def parse_url(text: object, *, proxy: bool = False) -> Url:
    """Parses an absolute http(s) URL strictly; raises UrlRejected saying why.

    ``proxy=True`` parses a host-supplied proxy URL: user information is then
    kept (as proxy credentials) and local names are allowed, the host being a
    setting of the host application rather than a destination.
    """
    what = "proxy URL" if proxy else "URL"
    if not isinstance(text, str):
        raise UrlRejected(f"a {what} must be a string, not {type(text).__name__}")

    def fail(why: str) -> UrlRejected:
        return UrlRejected(f"refused the {what} {redact_url(text)!r}: {why}")

    if len(text) > MAX_URL_LENGTH:
        raise fail(f"it is longer than {MAX_URL_LENGTH} characters")
    bad = _forbidden_char(text)
    if bad is not None:
        raise fail(f"it contains {bad}")
    if "\\" in text:
        raise fail("it contains a backslash, which parsers disagree about")
    m = _SCHEME.match(text)
    if m is None:
        raise fail("it is not an absolute URL with a scheme")
    scheme = m.group(1).lower()
    if scheme not in DEFAULT_PORTS:
        raise fail(f"the scheme {scheme!r} is not http or https")
    rest = text[m.end() :]
    if not rest.startswith("//"):
        raise fail("the scheme is not followed by '//' and a host")
    rest = rest[2:]
    end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority, rest = rest[:end], rest[end:].partition("#")[0]
    userinfo = None
    if "@" in authority:
        if not proxy:
            raise fail("it contains user information ('@' in the authority)")
        userinfo, _, authority = authority.rpartition("@")
    host_text, port_text = _split_port(authority, fail)
    host, kind = _canonical_host(host_text, fail, proxy=proxy)
    port = DEFAULT_PORTS[scheme] if port_text is None else _port(port_text, fail)
    path, sep, query = rest.partition("?")
    if proxy and (path not in ("", "/") or sep):
        raise fail("a proxy URL has no path or query")
    target = _encode(path or "/") + (f"?{_encode(query)}" if sep else "")
    return Url(scheme, host, port, target, kind, userinfo)  # type: ignore[arg-type]


def refused_name(host: str) -> str | None:
    """Why a canonical host name may never be fetched (before any resolution), or None."""
    if host in _LOCAL_NAMES:
        return "it names the local machine"
    if "." not in host:
        return "a single-label name is resolved through local search domains and hosts files"
    tld = host.rsplit(".", 1)[1]
    if tld in _LOCAL_SUFFIXES or host.endswith(".home.arpa"):
        return f"names under '.{tld}' are local or special-use, never public"
    return None


def join(base: Url, location: str) -> str:
    """Resolves a redirect's ``Location`` against ``base`` (RFC 3986 5.2), as a string.

    The result is parsed again with :func:`parse_url`: there is one parser, and
    this function only glues components.
    """
    location = location.partition("#")[0]
    if _SCHEME.match(location) or location.startswith("//"):
        return location if not location.startswith("//") else f"{base.scheme}:{location}"
    prefix = f"{base.scheme}://{base.authority}"
    path, sep, query = location.partition("?")
    if not path:
        path = base.path
        if not sep:
            query, sep = base.target.partition("?")[2], "?" if "?" in base.target else ""
    elif not path.startswith("/"):
        path = base.path[: base.path.rfind("/") + 1] + path
    return prefix + _remove_dot_segments(path) + (f"?{query}" if sep else "")


# -- pieces ---------------------------------------------------------------------------------


def _forbidden_char(text: str) -> str | None:
    for i, ch in enumerate(text):
        o = ord(ch)
        if (
            o < 0x21
            or o == 0x7F
            or (o >= 0x80 and unicodedata.category(ch) in _FORBIDDEN_CATEGORIES)
        ):
            kind = "whitespace" if ch.isspace() else "a control or invisible character"
            return f"{kind} (U+{o:04X} at position {i})"
    return None


def _split_port(authority: str, fail: _Fail) -> tuple[str, str | None]:
    if authority.startswith("["):
        close = authority.find("]")
        if close < 0:
            raise fail("an IPv6 literal is missing its ']'")
        after = authority[close + 1 :]
        if after and not after.startswith(":"):
            raise fail("unexpected characters after the IPv6 literal")
        return authority[: close + 1], (after[1:] if after else None)
    if "[" in authority or "]" in authority:
        raise fail("a bracket outside an IPv6 literal")
    if authority.count(":") > 1:
        raise fail("an IPv6 address must be written in brackets")
    host, sep, port = authority.partition(":")
    return host, (port if sep else None)


def _port(text: str, fail: _Fail) -> int:
    if not _PORT.fullmatch(text) or int(text) > 65535:
        raise fail(f"the port {text!r} is not a number from 1 to 65535 without leading zeros")
    return int(text)


def _canonical_host(text: str, fail: _Fail, *, proxy: bool) -> tuple[str, HostKind]:
    if not text:
        raise fail("it has no host")
    if "%" in text:
        raise fail("the host contains a percent sign (escapes or an IPv6 zone id)")
    if text.startswith("["):
        literal = text[1:-1]
        if literal[:1] in ("v", "V"):
            raise fail("IPvFuture literals are not supported")
        try:
            return str(ipaddress.IPv6Address(literal)), "ipv6"
        except ValueError:
            raise fail(f"[{literal}] is not a valid IPv6 address") from None
    mapped = _map_name(text, fail)
    name = mapped[:-1] if mapped.endswith(".") else mapped
    if _ends_in_number(name):
        if mapped != name or not _DOTTED_QUAD.fullmatch(name):
            raise fail(
                f"the numeric host {mapped!r} is not a canonical dotted quad "
                "(shorthand, octal, hex and integer forms are refused)"
            )
        return name, "ipv4"
    if not name or len(name) > 253:
        raise fail("the host name is empty or longer than 253 characters")
    for label in name.split("."):
        if not _LABEL.fullmatch(label):
            raise fail(
                f"the host label {label!r} is not letters, digits and inner hyphens (1-63 long)"
            )
    if not proxy:
        why = refused_name(name)
        if why is not None:
            raise fail(f"the host {name!r} is refused: {why}")
    return name, "name"


def _map_name(text: str, fail: _Fail) -> str:
    """The UTS-46 mapping, done once: lower-casing for plain ASCII, IDNA for the rest."""
    lowered = text.lower()
    if text.isascii() and not any(lab.startswith("xn--") for lab in lowered.split(".")):
        return lowered
    try:
        import idna
    except ImportError:  # pragma: no cover - a dependency of the package
        raise fail("internationalised host names need the 'idna' package") from None
    try:
        return idna.encode(text, uts46=True, std3_rules=True, transitional=False).decode("ascii")
    except (idna.IDNAError, UnicodeError) as exc:
        raise fail(f"the host is not a valid internationalised name ({exc})") from None


def _ends_in_number(name: str) -> bool:
    """The WHATWG rule: a host whose last label is numeric is an IPv4 address, never a name."""
    last = name.rsplit(".", 1)[-1]
    return bool(last) and _NUMERIC_LABEL.fullmatch(last) is not None


def _encode(part: str) -> str:
    if all(c in _TARGET_SAFE for c in part):
        return part
    return "".join(
        c if c in _TARGET_SAFE else "".join(f"%{b:02X}" for b in c.encode("utf-8")) for c in part
    )


def _remove_dot_segments(path: str) -> str:
    out: list[str] = []
    segments = path.split("/")
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        if seg == ".":
            if last:
                out.append("")
        elif seg == "..":
            if len(out) > 1:
                out.pop()
            if last:
                out.append("")
        else:
            out.append(seg)
    result = "/".join(out)
    return result if result.startswith("/") else "/" + result
