"""Safe renderings for a confirmation: the whole operation, and short argument values.

The text comes from the model, so it is hostile: a control sequence could
repaint the prompt, a bidirectional override could reorder what the user
reads, a run of spaces could push the end of a command off the screen, and
a token in an argument must not end up on a screen or in a log. The
operation is :func:`codeward._summary.describe_call`: shown whole, because
a person approves exactly what runs; the other values are masked, escaped
and clipped by :mod:`codeward._redact`'s rules.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .._redact import clip, safe_text
from .._summary import describe_call, summarize_call

__all__ = ["summarize_operation", "summarize_value"]

_VALUE_LIMIT = 60


def summarize_operation(
    tool: str,
    args: Mapping[str, Any] | None,
    limit: int | None = None,
    *,
    targets: Sequence[tuple[str, str]] = (),
) -> str:
    """The call's operation (``bash: cargo test``, ``write src/a.rs (1.2 KiB)``), whole.

    Nothing is cut and nothing in a command is masked: a person approves
    exactly what runs (:func:`codeward._summary.describe_call`). ``targets``
    are the resolved call's ``(action, path)``. With ``limit``, the one-line
    summary of :func:`codeward.guardrail.summarize_call` instead, for a log.
    """
    if limit is not None:
        return summarize_call(tool, args, limit)
    return describe_call(tool, args, targets)


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
