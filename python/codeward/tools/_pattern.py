"""The grep pattern: a Python regular expression with a time limit.

The third-party ``regex`` module runs the match with a timeout (and without
holding the GIL), so a pattern that backtracks catastrophically ends in a
Timeout result instead of hanging the host process. Without it, the standard
``re`` module runs the same syntax and the time limit is only checked between
files.
"""

from __future__ import annotations

import importlib
import re
import time
from collections.abc import Iterator
from types import ModuleType
from typing import Any

__all__ = ["TIME_LIMITED", "Pattern", "PatternTimeout"]


def _engine() -> tuple[ModuleType, bool]:
    try:
        return importlib.import_module("regex"), True
    except ImportError:  # pragma: no cover - depends on the environment
        return re, False


_ENGINE, TIME_LIMITED = _engine()


class PatternTimeout(Exception):
    """The pattern ran past the search's deadline."""


class Pattern:
    """A compiled grep pattern; ``^`` and ``$`` match at line boundaries."""

    def __init__(self, source: str) -> None:
        self.source = source
        try:
            self._compiled: Any = _ENGINE.compile(source, _ENGINE.MULTILINE)
        except Exception as exc:  # re.error, regex.error: both say what is wrong
            raise ValueError(f"invalid regular expression {source!r}: {exc}") from None

    def starts(self, text: str, deadline: float) -> Iterator[int]:
        """The start offset of each match in ``text``; raises PatternTimeout past ``deadline``."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise PatternTimeout
        try:
            if TIME_LIMITED:
                matches = self._compiled.finditer(text, timeout=remaining)
            else:  # pragma: no cover - depends on the environment
                matches = self._compiled.finditer(text)
            for m in matches:
                yield m.start()
        except TimeoutError:
            raise PatternTimeout from None
