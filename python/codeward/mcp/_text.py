"""Untrusted text from a server, made safe to show: controls and bidirectional characters escaped.

Tool results keep their line breaks and tabs (a model reads them as text);
everything else that is not printable shows as an escape (``\\x1b``,
``\\u202e``), so neither a terminal nor a confirmation prompt can be
repainted or reordered by what a server sends.
"""

from __future__ import annotations

import re

from .._redact import escape, safe_text

__all__ = ["cap_text", "one_line", "untrusted"]

_KEEP = re.compile(r"([\n\t])")


def untrusted(text: str) -> str:
    """``text`` with every non-printable character escaped except newlines and tabs."""
    if text.isprintable():
        return text
    return "".join(part if part in ("\n", "\t") else escape(part) for part in _KEEP.split(text))


def one_line(text: object, limit: int = 200) -> str:
    """A name, title or message for a terminal or a log: one line, escaped, redacted, clipped."""
    return safe_text(str(text), limit, one_line=True)


def cap_text(text: str, limit: int) -> tuple[str, bool]:
    """At most ``limit`` UTF-8 bytes of ``text``: its head and tail around a marker; (text, cut)."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text, False
    head = limit // 2
    tail = limit - head
    omitted = len(data) - head - tail
    marker = f"\n[... codeward: {omitted} bytes omitted ...]\n"
    shown = data[:head].decode("utf-8", "ignore") + marker + data[-tail:].decode("utf-8", "ignore")
    return shown, True
