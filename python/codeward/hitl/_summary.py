"""Short, safe renderings for a confirmation: the operation line and argument values.

The text comes from the model, so it is hostile: a control sequence could
repaint the prompt, a bidirectional override could reorder what the user
reads, and a token in a command must not end up on a screen or in a log.
The rules (masking, escaping, clipping) are :mod:`codeward._redact`'s, and
the operation line is the one call summary of :mod:`codeward._summary`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .._redact import clip, safe_text
from .._summary import summarize_call

__all__ = ["OPERATION_LIMIT", "summarize_operation", "summarize_value"]

OPERATION_LIMIT = 240
_VALUE_LIMIT = 60


def summarize_operation(
    tool: str, args: Mapping[str, Any] | None, limit: int = OPERATION_LIMIT
) -> str:
    """The call's one-line summary (``bash: cargo test``, ``write src/a.rs (1.2 KiB)``), at most
    ``limit`` characters: :func:`codeward.guardrail.summarize_call` with a longer limit."""
    return summarize_call(tool, args, limit)


def summarize_value(value: Any, limit: int = _VALUE_LIMIT) -> str:
    """A short, safe rendering of one value (a scope entry in ``ConfirmationRequest.render``)."""
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
