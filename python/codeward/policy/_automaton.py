"""Small NFAs for policy globs, so lint can decide overlap and coverage exactly.

The C matcher answers "does this string match"; lint needs "can any string
match both" (an allow shadowing an ask) and "does every string of one rule
match another" (a rule that can never take effect). Both are decidable for
these globs by walking the product of two automata; the alphabet is reduced
to the literal bytes the patterns mention, '/', and one stand-in for every
other byte, so the walk stays small.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["Automaton", "covered", "intersection_witness", "parse_pattern", "tool_automaton"]

LIT, STAR, GLOBSTAR, GSLASH = "lit", "star", "globstar", "gslash"
# Inside an automaton GSLASH becomes two states, as in glob.c: an entry that
# may skip past the loop, and a loop that leaves only on '/'.
GS_ENTRY, GS_LOOP = "gs_entry", "gs_loop"
OTHER = "\x00other"  # one symbol for every byte no pattern names
WALK_LIMIT = 50_000  # product states explored before lint gives up on a pair

StateSet = frozenset[tuple[int, int]]
Node = tuple[StateSet, StateSet]


@dataclass(frozen=True)
class Token:
    kind: str
    char: str = ""


def parse_pattern(pattern: str, tool_name: bool = False) -> list[Token]:
    """Tokens of a glob, with the same rules as native/src/glob.c."""
    if pattern == "*":
        return [Token(GLOBSTAR)]
    if not tool_name and pattern.endswith(":*"):
        return [Token(LIT, c) for c in pattern[:-2]] + [Token(GLOBSTAR)]
    tokens: list[Token] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n and pattern[i + 1] == "*":
            tokens.append(Token(LIT, "*"))
            i += 2
        elif c == "*":
            run = 0
            while i < n and pattern[i] == "*":
                run += 1
                i += 1
            if tool_name:
                tokens.append(Token(GLOBSTAR))
            elif run == 1:
                tokens.append(Token(STAR))
            elif i < n and pattern[i] == "/":
                tokens.append(Token(GSLASH))
                i += 1
            else:
                tokens.append(Token(GLOBSTAR))
        else:
            tokens.append(Token(LIT, c.lower() if tool_name else c))
            i += 1
    return tokens


class Automaton:
    """A union of token sequences; a state is (branch, position)."""

    def __init__(self, branches: Sequence[Sequence[Token]]):
        self.branches = [self._expand(b) for b in branches]

    @staticmethod
    def _expand(tokens: Sequence[Token]) -> list[Token]:
        out: list[Token] = []
        for t in tokens:
            out.extend((Token(GS_ENTRY), Token(GS_LOOP)) if t.kind == GSLASH else (t,))
        return out

    def letters(self) -> set[str]:
        return {t.char for b in self.branches for t in b if t.kind == LIT}

    def _close(self, states: Iterable[tuple[int, int]]) -> frozenset[tuple[int, int]]:
        out = set()
        todo = list(states)
        while todo:
            b, i = todo.pop()
            if (b, i) in out:
                continue
            out.add((b, i))
            toks = self.branches[b]
            if i < len(toks) and toks[i].kind in (STAR, GLOBSTAR, GS_ENTRY):
                todo.append((b, i + 1))
            if i < len(toks) and toks[i].kind == GS_ENTRY:
                todo.append((b, i + 2))
        return frozenset(out)

    def start(self) -> frozenset[tuple[int, int]]:
        return self._close((b, 0) for b in range(len(self.branches)))

    def accepts(self, states: frozenset[tuple[int, int]]) -> bool:
        return any(i == len(self.branches[b]) for b, i in states)

    def step(self, states: frozenset[tuple[int, int]], sym: str) -> frozenset[tuple[int, int]]:
        nxt = []
        for b, i in states:
            toks = self.branches[b]
            if i == len(toks):
                continue
            t = toks[i]
            if t.kind == LIT:
                if t.char == sym:
                    nxt.append((b, i + 1))
            elif t.kind == STAR:
                if sym != "/":
                    nxt.append((b, i))
            elif t.kind == GLOBSTAR:
                nxt.append((b, i))
            elif t.kind == GS_LOOP:
                nxt.append((b, i))
                if sym == "/":
                    nxt.append((b, i + 1))
        return self._close(nxt)


def tool_automaton(tool: str, tool_glob: bool, mcp_server: bool) -> Automaton:
    """The language of a rule's tool part (tool names are already lower-case)."""
    if tool_glob:
        return Automaton([parse_pattern(tool, tool_name=True)])
    lits = [Token(LIT, c) for c in tool]
    if mcp_server:
        return Automaton([lits, [*lits, Token(LIT, "_"), Token(LIT, "_"), Token(GLOBSTAR)]])
    return Automaton([lits])


def _alphabet(*automata: Automaton) -> list[str]:
    letters: set[str] = set()
    for a in automata:
        letters |= a.letters()
    return [*sorted(letters | {"/"}), OTHER]


def _spell(path: list[str]) -> str:
    return "".join("x" if s == OTHER else s for s in path)


def intersection_witness(a: Automaton, b: Automaton) -> str | None:
    """A shortest string both accept, or None if there is none (or the walk is too big)."""
    alphabet = _alphabet(a, b)
    start = (a.start(), b.start())
    parents: dict[Node, tuple[Node, str] | None] = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        sa, sb = node
        if a.accepts(sa) and b.accepts(sb):
            path: list[str] = []
            step = parents[node]
            while step is not None:
                node, sym = step
                path.append(sym)
                step = parents[node]
            return _spell(path[::-1])
        for sym in alphabet:
            na, nb = a.step(sa, sym), b.step(sb, sym)
            if not na or not nb or (na, nb) in parents:
                continue
            parents[(na, nb)] = (node, sym)
            if len(parents) > WALK_LIMIT:
                return None
            queue.append((na, nb))
    return None


def covered(a: Automaton, by: Sequence[Automaton]) -> bool | None:
    """True if every string `a` accepts is accepted by one of `by`.

    None when the walk exceeded its limit (lint then says nothing).
    """
    if not by:
        return False
    union = Automaton([br for x in by for br in x.branches])
    alphabet = _alphabet(a, union)
    start = (a.start(), union.start())
    seen = {start}
    queue = deque([start])
    while queue:
        sa, su = queue.popleft()
        if a.accepts(sa) and not union.accepts(su):
            return False
        for sym in alphabet:
            na = a.step(sa, sym)
            if not na:
                continue
            node = (na, union.step(su, sym))
            if node in seen:
                continue
            seen.add(node)
            if len(seen) > WALK_LIMIT:
                return None
            queue.append(node)
    return True
