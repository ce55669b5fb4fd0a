"""How a bash call is decided: per simple command, on every spelling of it.

The C core does the work (native/src/bash_split.c splits the line into the
simple commands it runs and spells each; native/src/ruleset.c decides them),
so Python, Node and Go give the same answer from the same code. Each command
gets the strictest decision over its spellings (every spelling is checked as
a whole argument string: deny, then allow, then ask, then the default), and
an alias (quotes removed, the program's bare, lower-case name) adds only the
deny and ask rules it matches. The line's decision is the strictest over its
commands (deny, then ask, then allow), and a deny or ask rule that matches
the whole line as written still applies. A command whose program is named by
an unknown expansion (``$CMD push``) is at least Ask when the policy has any
deny or ask rule with a pattern for bash; a line that cannot be read to its
end is at least Ask.

docs/policy.md, "How a bash command is decided", is the prose reference.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import _native
from ._decision import Decision

__all__ = ["BashVerdict", "CommandVerdict", "verdict_from_native"]

_BY_LIST_CODE = {
    _native.LIST_DENY: Decision.DENY,
    _native.LIST_ALLOW: Decision.ALLOW,
    _native.LIST_ASK: Decision.ASK,
}
_WHY = {
    _native.BASH_WHY_RULE: "rule",
    _native.BASH_WHY_DEFAULT: "default",
    _native.BASH_WHY_DYNAMIC: "dynamic program",
    _native.BASH_WHY_INCOMPLETE: "incomplete line",
}


@dataclass(frozen=True)
class CommandVerdict:
    """The decision on one simple command: which rule decided it, on which spelling."""

    command: str
    decision: Decision
    rule: int | None  # the index of the deciding rule; None: the default (or a floor)
    spelling: str  # the spelling the deciding rule matched (the command, when none did)
    why: str  # a short phrase: "rule", "default", "dynamic program", ...


@dataclass(frozen=True)
class BashVerdict:
    """The decision on a whole line, its commands' verdicts, and every rule that matched."""

    decision: Decision
    commands: tuple[CommandVerdict, ...]
    matched: frozenset[int]
    explicit: bool  # every command is allowed by an allow rule (not by the default)

    @property
    def deciding(self) -> CommandVerdict | None:
        """The first command whose decision is the line's, or None when the line decided."""
        for verdict in self.commands:
            if verdict.decision is self.decision:
                return verdict
        return None


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def verdict_from_native(
    raw: tuple[int, int, list[tuple[int, int, int, bytes, bytes]], tuple[int, ...]],
) -> BashVerdict:
    """A BashVerdict from ``_native.Ruleset.check_bash``'s tuple."""
    decision, flags, commands, matched = raw
    return BashVerdict(
        decision=_BY_LIST_CODE[decision],
        commands=tuple(
            CommandVerdict(
                command=_text(text),
                decision=_BY_LIST_CODE[code],
                rule=None if rule < 0 else rule,
                spelling=_text(spelling),
                why=_WHY[why],
            )
            for code, why, rule, text, spelling in commands
        ),
        matched=frozenset(matched),
        explicit=bool(flags & _native.BASH_EXPLICIT),
    )
