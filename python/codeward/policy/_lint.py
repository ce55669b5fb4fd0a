"""Policy lint: the mistakes that make a policy say something other than it seems to.

Each finding names the rule, what goes wrong and an example call, decided
exactly on the rules' automata (see _automaton.py), not guessed from text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._automaton import (
    GLOBSTAR,
    GSLASH,
    LIT,
    STAR,
    Automaton,
    Token,
    covered,
    intersection_witness,
    parse_pattern,
    tool_automaton,
)
from ._subject import FILE_PATH_TOOLS

if TYPE_CHECKING:
    from ._policy import PermissionPolicy, RuleView

__all__ = ["LintFinding", "lint_policy"]

PATH_TOOLS = FILE_PATH_TOOLS | {"ls"}


@dataclass(frozen=True)
class LintFinding:
    """One footgun. ``code`` is stable; ``message`` is for people."""

    code: str
    rule: str
    list: str
    message: str
    related_rule: str | None = None

    def __str__(self) -> str:
        return f"{self.code}: {self.list} rule {self.rule!r}: {self.message}"

    def to_dict(self) -> dict[str, str | None]:
        return {
            "code": self.code,
            "list": self.list,
            "rule": self.rule,
            "message": self.message,
            "related_rule": self.related_rule,
        }


def _tools(view: RuleView) -> Automaton:
    return tool_automaton(view.tool, view.tool_glob, view.mcp_server)


def _args(view: RuleView) -> Automaton:
    return Automaton([parse_pattern(view.pattern)])


def _call(tool_example: str, arg_example: str) -> str:
    return f"{tool_example}({arg_example})"


def _duplicates(views: list[RuleView]) -> list[LintFinding]:
    seen: dict[tuple[str, str, str], RuleView] = {}
    out = []
    for v in views:
        key = (v.list, v.tool, v.pattern)
        first = seen.setdefault(key, v)
        if first is not v:
            same = "the same rule" if first.raw == v.raw else f"the same rule as {first.raw!r}"
            out.append(
                LintFinding("duplicate", v.raw, v.list, f"is {same} earlier in {v.list}", first.raw)
            )
    return out


def _shadowed_asks(views: list[RuleView]) -> list[LintFinding]:
    out = []
    allows = [v for v in views if v.list == "allow"]
    for ask in (v for v in views if v.list == "ask"):
        for allow in allows:
            tool = intersection_witness(_tools(allow), _tools(ask))
            if tool is None:
                continue
            arg = intersection_witness(_args(allow), _args(ask))
            if arg is None:
                continue
            out.append(
                LintFinding(
                    "allow-shadows-ask",
                    ask.raw,
                    "ask",
                    f"allow rule {allow.raw!r} wins over it: a call such as "
                    f"{_call(tool, arg)!r} is allowed without asking "
                    "(allow is evaluated before ask)",
                    allow.raw,
                )
            )
    return out


def _unreachable(views: list[RuleView]) -> list[LintFinding]:
    """Rules whose every call is decided by an earlier list."""
    out = []
    earlier = {"allow": ("deny",), "ask": ("deny", "allow")}
    for v in views:
        if v.list not in earlier:
            continue
        tools = _tools(v)
        cover = [
            w for w in views if w.list in earlier[v.list] and covered(tools, [_tools(w)]) is True
        ]
        args = _args(v)
        cover = [w for w in cover if intersection_witness(args, _args(w)) is not None]
        if cover and covered(args, [_args(w) for w in cover]) is True:
            names = ", ".join(repr(w.raw) for w in cover)
            out.append(
                LintFinding(
                    "never-matches",
                    v.raw,
                    v.list,
                    f"can never take effect: every call it matches is already decided by {names}",
                    cover[0].raw,
                )
            )
    return out


def _single_star_denies(views: list[RuleView]) -> list[LintFinding]:
    """A lone '*' in a command or JSON pattern: it stops at '/', which arguments contain.

    File-path tools are left out: there '*' naming one path segment is the
    usual intent.
    """
    out = []
    for v in views:
        if v.list not in ("deny", "ask") or v.any_args or v.prefix or v.tool in PATH_TOOLS:
            continue
        tokens = parse_pattern(v.pattern)
        if not any(t.kind == STAR for t in tokens):
            continue
        example = "".join(
            t.char
            if t.kind == LIT
            else (("/" if i == len(tokens) - 1 else "a/b") if t.kind == STAR else "")
            for i, t in enumerate(tokens)
        )
        fixed = v.raw.replace("**", "\x00").replace("*", "**").replace("\x00", "**")
        verb = "denies" if v.list == "deny" else "asks about"
        out.append(
            LintFinding(
                "star-stops-at-slash",
                v.raw,
                v.list,
                f"'*' never matches '/', so this rule never {verb} a call such as "
                f"{v.tool}({example}); write {fixed!r} to cover every argument",
            )
        )
    return out


def _prefix_boundaries(views: list[RuleView]) -> list[LintFinding]:
    out = []
    for v in views:
        if v.list != "allow" or not v.prefix:
            continue
        head = v.pattern[:-2]
        if not head or not (head[-1].isalnum() or head[-1] in "_-."):
            continue
        out.append(
            LintFinding(
                "prefix-not-at-word-boundary",
                v.raw,
                "allow",
                f"':*' is a plain prefix test, so this also allows {v.tool}({head}evil); "
                f"write {v.tool}({head}) and {v.tool}({head} :*) instead",
            )
        )
    return out


_SEARCH_SHAPE = Automaton(
    [[Token(GLOBSTAR), Token(LIT, " "), Token(GLOBSTAR), Token(LIT, " "), Token(GLOBSTAR)]]
)


def _impossible_patterns(views: list[RuleView]) -> list[LintFinding]:
    """Patterns no argument string of their tool can match."""
    out = []
    for v in views:
        if v.any_args or v.tool_glob:
            continue
        reason = None
        if v.tool == "search" and intersection_witness(_args(v), _SEARCH_SHAPE) is None:
            reason = "search arguments read '<mode> <query> <path>'; add ' **' for the rest"
        elif v.tool == "search" and v.list == "allow" and _literal_spaces(v.pattern) > 2:
            reason = (
                "an allow rule matches a search only where its literal spaces are the two "
                "separators of '<mode> <query> <path>'; match a space inside the query or the "
                "path with a wildcard ('grep foo*bar src/**')"
            )
        elif v.tool in PATH_TOOLS and not v.prefix:
            reason = _impossible_path(v.pattern)
        if reason:
            out.append(LintFinding("never-matches", v.raw, v.list, f"can never match: {reason}"))
    return out


def _literal_spaces(pattern: str) -> int:
    return sum(1 for t in parse_pattern(pattern) if t.kind == LIT and t.char == " ")


def _impossible_path(pattern: str) -> str | None:
    tokens = parse_pattern(pattern)
    text = "".join(
        t.char if t.kind == LIT else {STAR: "*", GLOBSTAR: "**", GSLASH: "**/"}[t.kind]
        for t in tokens
    )
    if "\\" in text:
        return "paths are matched with '/' separators, never '\\'"
    if "//" in text.replace("**/", "") or any(seg in ("..", ".") for seg in text.split("/") if seg):
        return "paths are normalized first: no '.' or '..' segments, no doubled '/'"
    if text.endswith("/") and not text.endswith("**/"):
        return "paths are normalized first: no trailing '/'"
    return None


def _search_path_in_query(views: list[RuleView]) -> list[LintFinding]:
    """Search rules whose path part the query can satisfy.

    A search is decided on ``"<mode> <query> <path>"``, and an allow rule only
    where its literal spaces are the two separators (docs/policy.md). An
    allow pattern with fewer than two literal spaces leaves the boundary
    between query and path to a wildcard, so path-like text (with a '/')
    meant for the path can be matched inside the query: ``grep **src/**``
    matches the query ``src/`` with the path ``.``, a search of the whole
    workspace. (A deny or ask rule matched by the query only denies or asks
    more.)
    """
    out = []
    for v in views:
        if v.list != "allow" or v.tool != "search" or v.any_args or v.prefix:
            continue
        tokens = parse_pattern(v.pattern)
        spaces = [i for i, t in enumerate(tokens) if t.kind == LIT and t.char == " "]
        if len(spaces) >= 2:
            continue
        rest = tokens[spaces[0] + 1 :] if spaces else tokens
        literal = "".join(t.char for t in rest if t.kind == LIT)
        if "/" not in literal and not any(t.kind == GSLASH for t in rest):
            continue  # no path-like text after the mode: nothing the query could stand in for
        head = "".join(t.char for t in tokens[: spaces[0]] if t.kind == LIT) if spaces else ""
        example = f"{head} {literal} ."
        if not _accepts(Automaton([tokens]), example):
            continue
        out.append(
            LintFinding(
                "search-path-in-query",
                v.raw,
                v.list,
                "no literal space separates the query from the path, so the query can "
                f"satisfy what looks like a path constraint: search({example}) is allowed, "
                "a search of the whole workspace; write the path part after its own space, "
                f"as in {v.tool}({head or 'grep'} ** src/**)",
            )
        )
    return out


def _accepts(automaton: Automaton, text: str) -> bool:
    states = automaton.start()
    for ch in text:
        states = automaton.step(states, ch)
        if not states:
            return False
    return automaton.accepts(states)


def lint_policy(policy: PermissionPolicy) -> list[LintFinding]:
    """Every finding for `policy`, grouped by check, each group in rule order."""
    views = policy.rules()
    findings: list[LintFinding] = []
    for check in (
        _duplicates,
        _single_star_denies,
        _prefix_boundaries,
        _impossible_patterns,
        _search_path_in_query,
        _shadowed_asks,
        _unreachable,
    ):
        findings.extend(check(views))
    return findings
