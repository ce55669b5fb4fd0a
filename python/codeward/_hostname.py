"""How a host name is shown to the person who approves a connection to it, and what to warn of.

A prompt shows the host in the form that is compared and connected to: the
canonical A-label (``xn--xample-2of.com`` for ``example.com`` written with a
Cyrillic ``e``, U+0435), never the Unicode text a model wrote, which may look like
another name. A label that mixes scripts (Latin with Cyrillic, Greek ...)
or is written wholly in letters that look like Latin ones (``apple`` in Cyrillic) gets
a warning that says so and what it reads like.
"""

from __future__ import annotations

import unicodedata

__all__ = ["canonical_or_none", "canonical_url", "host_warnings"]

# Letters of other scripts that a reader takes for Latin ones (a small table of the usual
# look-alikes, lower case: UTS-46 has lower-cased the name already), written as escapes.
_LOOKS_LATIN = {
    # Cyrillic
    "\u0430": "a",  # cyrillic small letter a
    "\u0432": "b",  # cyrillic small letter ve
    "\u0435": "e",  # cyrillic small letter ie
    "\u0451": "e",  # cyrillic small letter io
    "\u0456": "i",  # cyrillic small letter byelorussian-ukrainian i
    "\u0457": "i",  # cyrillic small letter yi
    "\u0458": "j",  # cyrillic small letter je
    "\u043a": "k",  # cyrillic small letter ka
    "\u043c": "m",  # cyrillic small letter em
    "\u043d": "h",  # cyrillic small letter en
    "\u043e": "o",  # cyrillic small letter o
    "\u0440": "p",  # cyrillic small letter er
    "\u0441": "c",  # cyrillic small letter es
    "\u0442": "t",  # cyrillic small letter te
    "\u0443": "y",  # cyrillic small letter u
    "\u0445": "x",  # cyrillic small letter ha
    "\u0455": "s",  # cyrillic small letter dze
    "\u04bb": "h",  # cyrillic small letter shha
    "\u0501": "d",  # cyrillic small letter komi de
    "\u051b": "q",  # cyrillic small letter qa
    "\u051d": "w",  # cyrillic small letter we
    "\u04cf": "l",  # cyrillic small letter palochka
    "\u04af": "y",  # cyrillic small letter straight u
    "\u044c": "b",  # cyrillic small letter soft sign
    "\u0475": "v",  # cyrillic small letter izhitsa
    # Latin (IPA)
    "\u0261": "g",  # latin small letter script g
    # Greek
    "\u03b1": "a",  # greek small letter alpha
    "\u03b2": "b",  # greek small letter beta
    "\u03b5": "e",  # greek small letter epsilon
    "\u03b9": "i",  # greek small letter iota
    "\u03ba": "k",  # greek small letter kappa
    "\u03bd": "v",  # greek small letter nu
    "\u03bf": "o",  # greek small letter omicron
    "\u03c1": "p",  # greek small letter rho
    "\u03c4": "t",  # greek small letter tau
    "\u03c5": "u",  # greek small letter upsilon
    "\u03c7": "x",  # greek small letter chi
    "\u03b3": "y",  # greek small letter gamma
    "\u03b7": "n",  # greek small letter eta
    "\u03f2": "c",  # greek lunate sigma symbol
    "\u03f3": "j",  # greek letter yot
    # Armenian
    "\u0585": "o",  # armenian small letter oh
    "\u057d": "u",  # armenian small letter seh
    "\u0570": "h",  # armenian small letter ho
    "\u0578": "n",  # armenian small letter vo
    "\u0581": "g",  # armenian small letter co
    "\u0566": "q",  # armenian small letter za
}
# Scripts that one name may mix without a warning (Japanese and Korean writing).
_HAN = {"CJK", "HIRAGANA", "KATAKANA", "HANGUL", "BOPOMOFO"}


def canonical_or_none(host: object) -> str | None:
    """The canonical form a grant compares (a lower-case A-label name, an IP address), or None
    for text that is no exact host (the grant is refused before anyone is asked)."""
    from .netgrant._errors import NetworkGrantError
    from .netgrant._grant import canonical_host

    try:
        return canonical_host(host)[0]
    except NetworkGrantError:
        return None


def canonical_url(url: str) -> str:
    """``url`` with an internationalised host in its A-label form, the rest as written (a
    URL whose host is plain ASCII, or no exact host, is returned unchanged)."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return url
    if not host or host.isascii():
        return url
    canonical = canonical_or_none(host)
    if canonical is None:
        return url
    userinfo, at, hostport = parts.netloc.rpartition("@")
    start = hostport.lower().find(host)  # hostname is the lower-cased host of the netloc
    if start < 0:
        return url
    hostport = hostport[:start] + canonical + hostport[start + len(host) :]
    netloc = userinfo + at + hostport
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _script(char: str) -> str | None:
    if not char.isalpha():
        return None  # digits and hyphens belong to every script
    word = unicodedata.name(char, "UNKNOWN").split()[0]
    return "HAN" if word in _HAN else word


def _unicode_labels(canonical: str) -> list[tuple[str, str]]:
    """(U-label, A-label) of each internationalised label of a canonical name."""
    out = []
    for label in canonical.split("."):
        if label.startswith("xn--"):
            try:
                import idna

                out.append((idna.decode(label), label))
            except (ImportError, idna.IDNAError, UnicodeError):
                out.append((label, label))
    return out


def host_warnings(host: object) -> list[str]:
    """What the approver should know about a name that may pass for another; [] if nothing."""
    canonical = canonical_or_none(host)
    if canonical is None:
        return []
    warnings = []
    for ulabel, alabel in _unicode_labels(canonical):
        scripts = sorted({s for s in map(_script, ulabel) if s is not None})
        letters = [c for c in ulabel if c.isalpha()]
        names = ", ".join(s.title() for s in scripts)
        if len(scripts) > 1:
            warnings.append(
                f"the host label {alabel} ({ulabel!a}) mixes scripts ({names}): it may be "
                "made to look like another name"
            )
        elif scripts and scripts != ["LATIN"] and all(c in _LOOKS_LATIN for c in letters):
            looks = "".join(_LOOKS_LATIN.get(c, c) for c in ulabel)
            warnings.append(
                f"the host label {alabel} ({ulabel!a}) is written in {names} letters that "
                f"look like the Latin {looks!r}: a look-alike of another name"
            )
    return warnings
