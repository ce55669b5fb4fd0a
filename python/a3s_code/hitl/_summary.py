"""One readable line for a tool call: truncated, secrets masked, terminal controls escaped.

The text comes from the model, so it is hostile: a control sequence could
repaint the prompt, a bidirectional override could reorder what the user
reads, and a token in a command must not end up on a screen or in a log.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "OPERATION_LIMIT",
    "clip",
    "escape",
    "redact",
    "safe_text",
    "secret_key",
    "summarize_operation",
    "summarize_value",
]

OPERATION_LIMIT = 240
_VALUE_LIMIT = 60
_PRIMARY_LIMIT = 140
REDACTED = "<redacted>"

# The argument each tool is best described by, shown first and unquoted.
_PRIMARY = {
    "bash": "command",
    "read": "file_path",
    "write": "file_path",
    "edit": "file_path",
    "patch": "file_path",
    "ls": "path",
    "download": "url",
    "search": "query",
    "grep": "query",
    "glob": "query",
    "bm25": "query",
}

_SECRET_KEY_WORDS = (
    "token",
    "secret",
    "password",
    "passwd",
    "passphrase",
    "credential",
    "private_key",
    "privatekey",
    "api_key",
    "apikey",
    "access_key",
    "authorization",
    "cookie",
)

_SECRET_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            r"-----BEGIN[A-Z ]*PRIVATE KEY-----.*?(?:-----END[A-Z ]*PRIVATE KEY-----|\Z)", re.S
        ),
        "<redacted private key>",
    ),
    (
        re.compile(
            r"(?:ghp_|gho_|ghu_|ghs_|ghr_|github_pat_|glpat-|xox[abprs]-|sk-ant-|sk-|npm_|"
            r"pypi-AgE|AGE-SECRET-KEY-)[A-Za-z0-9_\-]{8,}"
        ),
        REDACTED,
    ),
    (re.compile(r"\bA[KS]IA[A-Z0-9]{16}\b"), REDACTED),
    (re.compile(r"\beyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}"), REDACTED),
    (re.compile(r"(://[^/\s:@]*):[^/\s@]+@"), r"\1:" + REDACTED + "@"),
    (re.compile(r"(?i)\b(bearer|basic|token)(\s+)[A-Za-z0-9._~+/=\-]{8,}"), r"\1\2" + REDACTED),
    (
        re.compile(
            r"(?i)((?:password|passwd|passphrase|secret|token|api[_\-]?key|access[_\-]?key)"
            r"[\w.\-]*[\"']?\s*[=:]\s*)([\"']?)[^\s\"',;&|]+"
        ),
        r"\1\2" + REDACTED,
    ),
    (
        re.compile(
            r"(?i)(\s--?[\w\-]*(?:password|passwd|passphrase|secret|token|api-?key)[\w\-]*\s+)"
            r"([\"']?)[^\s\"']+"
        ),
        r"\1\2" + REDACTED,
    ),
)

# C0 and C1 controls, DEL, bidirectional overrides and isolates, zero-width characters,
# line and paragraph separators: anything that can move the cursor or reorder the text.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def secret_key(name: object) -> bool:
    """An argument name whose value is a credential (``api_key``, ``Authorization`` ...)."""
    if not isinstance(name, str):
        return False
    lowered = name.lower().replace("-", "_")
    return any(word in lowered for word in _SECRET_KEY_WORDS)


def redact(text: str) -> str:
    """Masks credential-looking substrings: tokens, keys, JWTs, URL passwords, ``--password x``."""
    for pattern, replacement in _SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def escape(text: str) -> str:
    """Makes text safe to print on a terminal: every control is shown as an escape."""

    def one(match: re.Match[str]) -> str:
        ch = match.group()
        if ch in _NAMED:
            return _NAMED[ch]
        code = ord(ch)
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    return _UNSAFE.sub(one, text)


def clip(text: str, limit: int) -> str:
    """At most ``limit`` characters; a cut is marked with an ellipsis and the full length."""
    if len(text) <= limit:
        return text
    note = f"… ({len(text)} chars)"
    return text[: max(1, limit - len(note))] + note


def safe_text(text: str, limit: int) -> str:
    """Redacted, escaped and clipped to ``limit``.

    Only a bounded head is scanned, so a huge value costs no more than a
    small one; the head is far longer than what is shown, so a secret that
    starts in the shown part is masked whole.
    """
    head = text[: limit * 4 + 512]
    shown = escape(redact(head))
    if len(head) == len(text) and len(shown) <= limit:
        return shown
    note = f"… ({len(text)} chars)"
    return shown[: max(1, limit - len(note))] + note


def summarize_value(value: Any, limit: int = _VALUE_LIMIT) -> str:
    """A short, safe rendering of one argument value."""
    if isinstance(value, str):
        return '"' + safe_text(value, limit) + '"'
    if value is None or isinstance(value, (bool, int, float)):
        return clip(json.dumps(value), limit)
    if isinstance(value, Mapping):
        path = value.get("path")
        if isinstance(path, str) and len(value) <= 3:
            return summarize_value(path, limit)
        return f"{{{len(value)} key{'s' if len(value) != 1 else ''}}}"
    if isinstance(value, (list, tuple)):
        shown = [summarize_value(v, limit // 2) for v in value[:3]]
        more = f", +{len(value) - 3} more" if len(value) > 3 else ""
        return clip("[" + ", ".join(shown) + more + "]", limit)
    return f"<{type(value).__name__}>"


def summarize_operation(
    tool: str, args: Mapping[str, Any] | None, limit: int = OPERATION_LIMIT
) -> str:
    """``tool: primary-argument key=value …`` on one line of at most ``limit`` characters.

    Long values are cut, values of credential-named arguments are replaced by
    ``<redacted>``, credential-looking text is masked, and controls are escaped.
    """
    name = escape(str(tool))
    parts: list[str] = []
    items = dict(args) if isinstance(args, Mapping) else {}
    primary = _PRIMARY.get(str(tool).lower())
    if primary is not None and isinstance(items.get(primary), str):
        parts.append(safe_text(items.pop(primary), _PRIMARY_LIMIT))
    for key, value in items.items():
        shown = REDACTED if secret_key(key) else summarize_value(value)
        parts.append(f"{clip(escape(str(key)), 40)}={shown}")
    text = f"{name}: {' '.join(parts)}" if parts else name
    return clip(text, limit)
