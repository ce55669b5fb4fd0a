"""Signed URLs are credentials: their secret parameters never leave the request line.

A pre-signed artifact URL (S3, GCS, Azure SAS, CloudFront, a token in the
query) is sent to the server exactly as given, but every copy that ends up
somewhere else (tool metadata, an error message, the redirect list, a log)
goes through :func:`redact_target` or :func:`redact_text` first: the value of
a sensitive parameter becomes ``REDACTED``, the name stays so a reader can
still tell which URL it was.
"""

from __future__ import annotations

import re

__all__ = ["REDACTED", "is_sensitive_param", "redact_query", "redact_text"]

REDACTED = "REDACTED"
_BARE_TOKEN = 16

# Exact names (compared case-insensitively, with '-' and '_' removed).
_EXACT = frozenset(
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
        "sk",
    }
)
# Any name containing one of these is treated as secret as well: fail closed.
_FRAGMENTS = ("sig", "token", "secret", "passw", "credential", "apikey", "auth", "session")


def is_sensitive_param(name: str) -> bool:
    """Whether a query parameter name carries a signature, token or key."""
    folded = re.sub(r"[-_.\s]", "", _pct_decode(name)).casefold()
    return (
        folded in _EXACT
        or folded.endswith(("key", "expires"))
        or any(f in folded for f in _FRAGMENTS)
    )


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


_USERINFO = re.compile(r"(?<=//)[^/?#]*@")
_QUERY = re.compile(r"\?([^#\s]*)")


def redact_text(text: str, limit: int = 300) -> str:
    """A raw, possibly malformed URL made safe to echo in a message.

    User information is dropped, sensitive query values replaced, the
    fragment removed, control characters escaped and the result shortened.
    """
    text = _USERINFO.sub(f"{REDACTED}@", text.split("#", 1)[0])
    text = _QUERY.sub(lambda m: "?" + redact_query(m.group(1)), text)
    text = text.encode("unicode_escape").decode("ascii") if not text.isprintable() else text
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _pct_decode(name: str) -> str:
    return re.sub(r"%([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), name.replace("+", " "))
