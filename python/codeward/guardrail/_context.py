"""What the command rules share: the walk's context and how a refusal is worded."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ._hit import GuardrailHit
from ._parse import Command
from ._wrappers import Invocation

__all__ = ["FRAGMENT_LIMIT", "Context", "Rule", "refuse"]

FRAGMENT_LIMIT = 200

# (code, how it is run, extra variables such as sh -c's $0 $1 ...) -> analysed later
RunCode = Callable[[str, str, "Mapping[str, Sequence[str]] | None"], None]


@dataclass
class Context:
    """What the analysis knows while it walks one command list."""

    env: dict[str, list[str]]
    run_code: RunCode
    via: str = ""  # "" at the top, else e.g. "inside bash -c"
    cwd: str | None = None  # the directory a cd moved to, None for the start
    downloaded: bool = False  # an earlier command in this list downloads
    observing: bool = False  # walking for walk_commands: a hit does not end the walk

    def code(self, text: str, via: str, extra: Mapping[str, Sequence[str]] | None = None) -> None:
        """Hands ``text`` to the analysis as a command of its own."""
        self.run_code(text, via, extra)


Rule = Callable[[Invocation, Command, Context], "GuardrailHit | None"]


def refuse(rule: str, ctx: Context, fragment: str, why: str) -> GuardrailHit:
    """A hit whose message quotes the fragment (clipped) and says why."""
    if len(fragment) > FRAGMENT_LIMIT:
        fragment = fragment[: FRAGMENT_LIMIT - 1] + "…"
    where = f" ({ctx.via})" if ctx.via else ""
    return GuardrailHit(rule, f"refused {fragment!r}{where}: {why}", fragment)
