"""Pure-Python rule sets the C matcher is compared against, on the same rules and calls.

Each baseline takes the policy's canonical rules (``PermissionPolicy.rules()``:
lower-cased tool, grep/glob/bm25 rewritten to ``search``) and evaluates a
pre-built (canonical tool, argument string) pair exactly as
``a3s_ruleset_check`` does: rules grouped by literal tool name in a dict plus
a generic list (tool globs, ``mcp__server`` rules), then deny, then allow,
then ask; the first list with a matching rule decides. Only the glob engine
differs:

``re-exact``
    a hand translation to ``re`` with a3s semantics (``*`` stops at ``/``,
    ``**`` crosses it, ``**/`` is empty or a run ending in ``/``, ``P:*`` is a
    prefix, ``\\*`` a literal star). Its decisions must equal the C
    decisions; run.py uses it as the correctness oracle.
``fnmatch``
    stdlib ``fnmatch.translate`` + ``re.compile`` per pattern, matched with
    ``.match``. Literal ``*?[`` are escaped; every wildcard becomes ``*``,
    which in fnmatch also crosses ``/`` (fnmatch has no ``**``), so a few
    decisions differ: run.py reports the agreement.
``wcmatch``
    ``wcmatch.glob.compile`` with GLOBSTAR | DOTGLOB | FORCEUNIX for patterns
    whose ``**`` are whole path segments (``*``, ``**`` and ``**/`` keep their
    meaning), and ``wcmatch.fnmatch.compile`` (DOTMATCH | FORCEUNIX) for the
    rest (``cargo test**``, ``npm run:*``) and for tool-name globs, since a
    ``**`` inside a segment is only ``*`` to wcmatch.glob. fnmatch's ``*``
    crosses ``/`` and wcmatch.glob treats absolute paths apart, so a few
    decisions differ: run.py reports the agreement.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

LIT, STAR, GLOBSTAR, GSLASH = 0, 1, 2, 3

# a3s_rule_view flags (native/include/a3s/a3s.h)
RULE_ANY_ARGS = 1 << 0
RULE_TOOL_GLOB = 1 << 1
RULE_MCP_SERVER = 1 << 2
RULE_PREFIX = 1 << 4

LIST_CODES = {"deny": 1, "allow": 2, "ask": 3}

Matcher = Callable[[str], Any]  # truthy on a whole-subject match


def tokenize(pattern: str, tool_name: bool = False) -> list[tuple[int, str]]:
    """The tokens of an a3s glob, as native/src/glob.c reads it (without ':*')."""
    out: list[tuple[int, str]] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n and pattern[i + 1] == "*":
            out.append((LIT, "*"))
            i += 2
        elif c == "*":
            run = 0
            while i < n and pattern[i] == "*":
                run += 1
                i += 1
            if tool_name:
                out.append((GLOBSTAR, ""))
            elif run == 1:
                out.append((STAR, ""))
            elif i < n and pattern[i] == "/":
                out.append((GSLASH, ""))
                i += 1
            else:
                out.append((GLOBSTAR, ""))
        else:
            out.append((LIT, c))
            i += 1
    return out


def _literal_runs(tokens: Iterable[tuple[int, str]]) -> list[tuple[int, str]]:
    """Merges consecutive literal tokens into one (LIT, text) token."""
    merged: list[tuple[int, str]] = []
    for kind, text in tokens:
        if kind == LIT and merged and merged[-1][0] == LIT:
            merged[-1] = (LIT, merged[-1][1] + text)
        else:
            merged.append((kind, text))
    return merged


class Engine:
    """Turns one canonical a3s pattern into a whole-subject matcher."""

    name = "engine"

    def arg(self, pattern: str, prefix: bool) -> Matcher:
        raise NotImplementedError

    def tool(self, pattern: str) -> Matcher:
        raise NotImplementedError


_RE_PARTS = {STAR: "[^/]*", GLOBSTAR: ".*", GSLASH: "(?:.*/)?"}


class ReExact(Engine):
    name = "re-exact"

    def translate(self, pattern: str, prefix: bool) -> str:
        if prefix:
            return re.escape(pattern[:-2]) + ".*"
        parts = [
            re.escape(text) if kind == LIT else _RE_PARTS[kind]
            for kind, text in _literal_runs(tokenize(pattern))
        ]
        return "".join(parts)

    def arg(self, pattern: str, prefix: bool) -> Matcher:
        return re.compile(self.translate(pattern, prefix), re.DOTALL).fullmatch

    def tool(self, pattern: str) -> Matcher:
        parts = [
            re.escape(text) if kind == LIT else ".*"
            for kind, text in _literal_runs(tokenize(pattern, tool_name=True))
        ]
        return re.compile("".join(parts), re.DOTALL | re.IGNORECASE | re.ASCII).fullmatch


def _fnmatch_escape(text: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


class Fnmatch(Engine):
    name = "fnmatch"

    def translate(self, pattern: str, prefix: bool) -> str:
        """The fnmatch pattern a user would write for this a3s pattern."""
        if prefix:
            return _fnmatch_escape(pattern[:-2]) + "*"
        return "".join(
            _fnmatch_escape(text) if kind == LIT else "*"
            for kind, text in _literal_runs(tokenize(pattern))
        )

    def arg(self, pattern: str, prefix: bool) -> Matcher:
        return re.compile(fnmatch.translate(self.translate(pattern, prefix))).match

    def tool(self, pattern: str) -> Matcher:
        fn = "".join(
            _fnmatch_escape(text) if kind == LIT else "*"
            for kind, text in _literal_runs(tokenize(pattern, tool_name=True))
        )
        return re.compile(fnmatch.translate(fn), re.IGNORECASE).match


class Wcmatch(Engine):
    name = "wcmatch"

    def __init__(self) -> None:
        from wcmatch import fnmatch as wcfnmatch
        from wcmatch import glob as wcglob

        self._glob = wcglob
        self._fnmatch = wcfnmatch
        self.glob_flags = wcglob.GLOBSTAR | wcglob.DOTGLOB | wcglob.FORCEUNIX
        self.fnmatch_flags = wcfnmatch.DOTMATCH | wcfnmatch.FORCEUNIX | wcfnmatch.IGNORECASE

    def translate(self, pattern: str, prefix: bool) -> str:
        esc = self._glob.escape
        if prefix:
            return esc(pattern[:-2]) + "**"
        wild = {STAR: "*", GLOBSTAR: "**", GSLASH: "**/"}
        return "".join(
            esc(text) if kind == LIT else wild[kind]
            for kind, text in _literal_runs(tokenize(pattern))
        )

    @staticmethod
    def path_shaped(pattern: str, prefix: bool) -> bool:
        """Whether every ``**`` is a whole path segment (so wcmatch.glob can express it)."""
        if prefix:
            return False
        tokens = tokenize(pattern)
        for i, (kind, _) in enumerate(tokens):
            if kind in (GLOBSTAR, GSLASH):
                before_ok = i == 0 or tokens[i - 1] == (LIT, "/")
                after_ok = kind == GSLASH or i + 1 == len(tokens) or tokens[i + 1] == (LIT, "/")
                if not (before_ok and after_ok):
                    return False
        return True

    def fnmatch_translate(self, pattern: str, prefix: bool) -> str:
        esc = self._fnmatch.escape
        if prefix:
            return esc(pattern[:-2]) + "*"
        return "".join(
            esc(text) if kind == LIT else "*" for kind, text in _literal_runs(tokenize(pattern))
        )

    def arg(self, pattern: str, prefix: bool) -> Matcher:
        if self.path_shaped(pattern, prefix):
            return self._glob.compile(self.translate(pattern, prefix), flags=self.glob_flags).match
        # "cargo test**", "npm run:*", '**"url":"https://github.com/**': a '**' inside a
        # segment is only '*' to wcmatch.glob, so use wcmatch.fnmatch, whose '*' crosses '/'.
        fn = self.fnmatch_translate(pattern, prefix)
        return self._fnmatch.compile(fn, flags=self.fnmatch_flags & ~self._fnmatch.IGNORECASE).match

    def tool(self, pattern: str) -> Matcher:
        fn = "".join(
            self._fnmatch.escape(text) if kind == LIT else "*"
            for kind, text in _literal_runs(tokenize(pattern, tool_name=True))
        )
        return self._fnmatch.compile(fn, flags=self.fnmatch_flags).match


ENGINES: dict[str, Callable[[], Engine]] = {
    "re-exact": ReExact,
    "fnmatch": Fnmatch,
    "wcmatch": Wcmatch,
}


def _server_matcher(server: str) -> Matcher:
    child = server + "__"
    return lambda tool: tool == server or tool.startswith(child)


class PyRuleset:
    """deny -> allow -> ask over grouped rules, with one glob engine."""

    def __init__(self, views: Sequence[Any], engine: Engine) -> None:
        self.engine = engine
        self.groups: dict[str, tuple[list[Matcher | None], ...]] = {}
        self.generic: tuple[list[tuple[Matcher, Matcher | None]], ...] = ([], [], [])
        # (rule index, matcher) for every rule with an argument pattern
        self.arg_matchers: list[tuple[int, Matcher]] = []
        for v in views:
            code = LIST_CODES[v.list] - 1
            am: Matcher | None = None
            if not v.flags & RULE_ANY_ARGS:
                am = engine.arg(v.pattern, bool(v.flags & RULE_PREFIX))
                self.arg_matchers.append((v.index, am))
            if v.flags & RULE_TOOL_GLOB:
                self.generic[code].append((engine.tool(v.tool), am))
            elif v.flags & RULE_MCP_SERVER:
                self.generic[code].append((_server_matcher(v.tool), am))
            else:
                self.groups.setdefault(v.tool, ([], [], []))[code].append(am)

    def check(self, tool: str, subject: str) -> int:
        """The deciding list code (0 none, 1 deny, 2 allow, 3 ask)."""
        group = self.groups.get(tool)
        generic = self.generic
        for code in (0, 1, 2):
            if group is not None:
                for am in group[code]:
                    if am is None or am(subject):
                        return code + 1
            for tm, am in generic[code]:
                if tm(tool) and (am is None or am(subject)):
                    return code + 1
        return 0


def count_hits(matcher: Matcher, subjects: Sequence[str]) -> int:
    """How many subjects one compiled pattern matches (the per-pattern loop)."""
    return sum(map(bool, map(matcher, subjects)))
