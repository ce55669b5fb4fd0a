"""What the command rules share: the walk's context and how a refusal is worded."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ._hit import GuardrailHit
from ._reading import Command, Invocation

__all__ = ["FRAGMENT_LIMIT", "Context", "Rule", "refuse"]

FRAGMENT_LIMIT = 200


@dataclass
class Context:
    """What the rules know while they walk one source's commands, in order."""

    via: str = ""  # "" for the line, else e.g. "inside bash -c"
    cwd: str | None = None  # the directory a cd moved to, None for the start
    downloaded: bool = False  # an earlier command in this source downloads


Rule = Callable[[Invocation, Command, Context], "GuardrailHit | None"]


def refuse(rule: str, ctx: Context, fragment: str, why: str) -> GuardrailHit:
    """A hit whose message quotes the fragment (clipped) and says why."""
    if len(fragment) > FRAGMENT_LIMIT:
        fragment = fragment[: FRAGMENT_LIMIT - 1] + "…"
    where = f" ({ctx.via})" if ctx.via else ""
    return GuardrailHit(rule, f"refused {fragment!r}{where}: {why}", fragment)
