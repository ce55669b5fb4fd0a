"""Model-written text made safe to show: secrets masked, terminal controls escaped, length bounded.

Every copy of an argument, URL or command that reaches a screen, a log, an
error message or tool metadata goes through here: signed-URL parameters,
URL passwords, bearer tokens, ``--password x`` and well-known token formats
become ``REDACTED``; characters that could repaint a terminal or reorder
what a reader sees are shown as escapes; long text is clipped with a mark.
The download tool, the guardrail's call summaries and the confirmation
prompts all use these rules, so a secret masked in one is masked in all.
"""

from __future__ import annotations

import re
from urllib.parse import unquote_plus

__all__ = [
    "REDACTED",
    "clip",
    "escape",
    "is_secret_name",
    "is_sensitive_param",
    "redact",
    "redact_query",
    "redact_url",
    "safe_text",
    "visible",
]

REDACTED = "REDACTED"
_BARE_TOKEN = 16  # a bare query item this long is taken for a signature

# Query parameters whose value is a credential: names compared without case, '-', '_', '.'.
_SENSITIVE_PARAMS = frozenset(
    {
        "sig",
        "signature",
        "xamzsignature",
        "xamzcredential",
        "xamzsecuritytoken",
        "xgoogsignature",
        "xgoogcredential",
        "googleaccessid",
        "token",
        "accesstoken",
        "refreshtoken",
        "idtoken",
        "key",
        "apikey",
        "keypairid",
        "policy",
        "expires",
        "code",
        "password",
        "passwd",
        "pwd",
        "secret",
        "clientsecret",
        "auth",
        "authorization",
        "session",
        "sessionid",
        "jwt",
        "hmac",
        "sv",  # Azure SAS: version, expiry, permissions (with sig, they are the signed grant)
        "se",
        "sp",
        "sk",
    }
)
# Any name containing one of these is treated as secret as well: fail closed.
_SENSITIVE_FRAGMENTS = (
    "sig",
    "token",
    "secret",
    "passw",
    "credential",
    "apikey",
    "auth",
    "session",
)
# Words in an argument name whose value is a credential (``api_key``, ``Authorization`` ...).
_SECRET_NAME_WORDS = (
    "token",
    "secret",
    "passw",
    "passphrase",
    "credential",
    "key",
    "auth",
    "cookie",
)


def is_sensitive_param(name: str) -> bool:
    """Whether a URL query parameter name carries a signature, token or key."""
    folded = re.sub(r"[-_.\s]", "", unquote_plus(name)).casefold()
    return (
        folded in _SENSITIVE_PARAMS
        or folded.endswith(("key", "expires"))
        or any(f in folded for f in _SENSITIVE_FRAGMENTS)
    )


def is_secret_name(name: object) -> bool:
    """Whether an argument or header name says its value is a credential."""
    if not isinstance(name, str):
        return False
    folded = name.casefold()
    return any(word in folded for word in _SECRET_NAME_WORDS)


def redact_query(query: str) -> str:
    """``query`` (without the ``?``) with the values of sensitive parameters replaced.

    A bare item (no ``=``) of 16 characters or more is taken for a token and
    replaced too: some signed URLs carry the signature as the whole query.
    """
    out = []
    for item in query.split("&"):
        name, eq, _value = item.partition("=")
        if eq and is_sensitive_param(name):
            out.append(f"{name}={REDACTED}")
        elif not eq and len(item) >= _BARE_TOKEN:
            out.append(REDACTED)
        else:
            out.append(item)
    return "&".join(out)


_URL_USERINFO = re.compile(r"(?<=//)[^/?#]*@")
_URL_QUERY = re.compile(r"\?([^#\s]*)")


def redact_url(text: str, limit: int = 300) -> str:
    """A raw, possibly malformed URL made safe to echo in a message.

    User information is dropped whole (a token can be the user name), the
    fragment removed, sensitive query values and credential-looking text
    replaced, controls escaped and the result clipped to ``limit``.
    """
    text = _URL_USERINFO.sub(f"{REDACTED}@", text.split("#", 1)[0])
    text = _URL_QUERY.sub(lambda m: "?" + redact_query(m.group(1)), text)
    return safe_text(text, limit)


# Masks for free text, in order: each replaces the secret and keeps what names it.
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (  # a private key block, or its start when the text is cut
        re.compile(
            r"-----BEGIN[A-Z ]*PRIVATE KEY-----.*?(?:-----END[A-Z ]*PRIVATE KEY-----|\Z)", re.S
        ),
        REDACTED,
    ),
    (  # GitHub, GitLab, Slack, OpenAI/Anthropic, npm, PyPI and age tokens
        re.compile(
            r"(?:ghp_|gho_|ghu_|ghs_|ghr_|github_pat_|glpat-|xox[abprs]-|sk-ant-|sk-|npm_|"
            r"pypi-AgE|AGE-SECRET-KEY-)[A-Za-z0-9_\-]{8,}"
        ),
        REDACTED,
    ),
    (re.compile(r"\bA[KS]IA[A-Z0-9]{16}\b"), REDACTED),  # AWS access key ids
    (re.compile(r"\beyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}"), REDACTED),
    (re.compile(r"(://[^/\s:@]*):[^/\s@]+@"), r"\1:" + REDACTED + "@"),  # URL passwords
    (re.compile(r"(?i)\b(bearer|basic|token)(\s+)[A-Za-z0-9._~+/=\-]{8,}"), r"\1\2" + REDACTED),
    (  # NAME=value and "name": "value" for secret-looking names
        re.compile(
            r"(?i)((?:password|passwd|passphrase|secret|token|api[_\-]?key|access[_\-]?key)"
            r"[\w.\-]*[\"']?\s*[=:]\s*)([\"']?)[^\s\"',;&|]+"
        ),
        r"\1\2" + REDACTED,
    ),
    (  # --password x, --api-key=x, -token x
        re.compile(
            r"(?i)(--?[\w-]*(?:password|passwd|passphrase|token|secret|api-?key)[\w-]*(?:=|\s+))"
            r"(['\"]?)[^\s'\"]+"
        ),
        r"\1\2" + REDACTED,
    ),
)
_QUERY_PARAM = re.compile(r"([?&;])([^=&#\s;'\"]+)=([^&#\s;'\"]*)")


def redact(text: str) -> str:
    """``text`` with credentials replaced by REDACTED, wherever they stand.

    Masked: signed-URL query values (:func:`is_sensitive_param`), URL
    passwords, ``Bearer``/``Basic``/``token`` values, ``NAME=value`` and
    ``--flag value`` for secret-looking names, private key blocks, and
    GitHub, GitLab, Slack, npm, PyPI, OpenAI, Anthropic and AWS key formats
    and JWTs.
    """
    text = _QUERY_PARAM.sub(
        lambda m: f"{m[1]}{m[2]}={REDACTED}" if m[3] and is_sensitive_param(m[2]) else m[0], text
    )
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_one(ch: str) -> str:
    if ch.isprintable():
        return ch
    code = ord(ch)
    if ch in _NAMED:
        return _NAMED[ch]
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def escape(text: str) -> str:
    """``text`` safe to print on a terminal: every character that is not printable as an escape.

    That is C0 and C1 controls and DEL (which move the cursor or start
    sequences), bidirectional overrides and isolates (which reorder what is
    read), zero-width and other format characters (which hide text), line and
    paragraph separators, and unassigned or private-use code points.
    """
    if text.isprintable():
        return text
    return "".join(_escape_one(ch) for ch in text)


_SPACE_RUN = re.compile(r" {2,}")


def visible(text: str) -> str:
    """``text`` with nothing hidden, for a person who must approve exactly it.

    Never cut and never masked. Every character that does not print is an
    escape (as :func:`escape`), a run of two or more spaces is counted
    (``⟨300 spaces⟩``, so nothing hides past the edge of a screen), and line
    breaks stay line breaks. Applying it twice changes nothing more.
    """
    lines = text.split("\n")
    return "\n".join(
        _SPACE_RUN.sub(lambda m: f"⟨{len(m.group())} spaces⟩", escape(line)) for line in lines
    )


def clip(text: str, limit: int, *, show_length: bool = True) -> str:
    """At most ``limit`` characters; a cut ends in an ellipsis and, by default, the full length."""
    if len(text) <= limit:
        return text
    note = f"… ({len(text)} chars)" if show_length else "…"
    return text[: max(1, limit - len(note))] + note


_NEWLINES = re.compile(r"\s*\n\s*")


def safe_text(text: str, limit: int, *, one_line: bool = False, show_length: bool = True) -> str:
    """``text`` redacted, escaped and clipped to ``limit`` characters.

    Only a bounded head is looked at, so a huge value costs no more than a
    small one; the head is far longer than what is shown, so a secret that
    starts in the shown part is masked whole. ``one_line`` shows line breaks
    as `` ⏎ `` instead of ``\\n``. A cut is marked as :func:`clip` marks it,
    with the length of the whole of ``text``.
    """
    head = text[: limit * 4 + 512]
    cut = len(head) < len(text)
    if one_line:
        head = _NEWLINES.sub(" ⏎ ", head.strip())
    shown = escape(redact(head))
    if not cut and len(shown) <= limit:
        return shown
    note = f"… ({len(text)} chars)" if show_length else "…"
    return shown[: max(1, limit - len(note))] + note
