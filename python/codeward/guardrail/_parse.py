"""From tokens to simple commands: what runs, with which words, fed by which pipe.

Grouping (``( )``, ``{ }``), compound keywords (``if``, ``while``, ``case``
...) and list operators are flattened: the rules judge each simple command
on its own, so a command inside a loop or a subshell is judged like any
other. What a rule needs from the structure is kept: the assignments before
a command, its redirections, whether its standard input is a pipe and which
command writes into it, and ``for`` loops (their variable's values).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ._shell import LIT, Redirect, Script, Word

__all__ = ["RESERVED", "Command", "commands", "fork_bomb"]

# Words that open or continue a compound command: not commands themselves.
RESERVED = frozenset(
    {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}", "esac"}
)
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
_LIST_OPS = frozenset({";", "&", "&&", "||", "\n", ";;", ";&", ";;&"})
_PIPES = frozenset({"|", "|&"})


@dataclass(eq=False)
class Command:
    """One simple command; ``kind`` is "simple", "for", or "skip" (case headers, function names)."""

    words: list[Word] = field(default_factory=list)
    assignments: list[Word] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    kind: str = "simple"
    piped_in: bool = False
    upstream: Command | None = None  # the command writing into its stdin pipe
    resolution: object = None  # cache for the wrapper resolution (see _wrappers)

    def empty(self) -> bool:
        return not (self.words or self.assignments or self.redirects)


def is_assignment(word: Word) -> bool:
    """``NAME=value`` with the name and ``=`` unquoted."""
    first = word.parts[0] if word.parts else None
    return (
        first is not None
        and first.kind == LIT
        and not first.quoted
        and _ASSIGNMENT.match(first.text) is not None
    )


def commands(script: Script) -> list[Command]:
    """The simple commands of ``script`` in order (cached on the script)."""
    if script.commands is not None:
        return script.commands  # type: ignore[return-value]
    out: list[Command] = []
    cur = Command()
    tokens = script.tokens
    pipe_from: Command | None = None
    piped = False

    def end() -> None:
        nonlocal cur, piped, pipe_from
        if not cur.empty():
            if piped:
                cur.piped_in, cur.upstream = True, pipe_from
                piped = False
            out.append(cur)
        cur = Command()

    for idx, tok in enumerate(tokens):
        if isinstance(tok, str):
            end()
            if tok in _PIPES:
                piped, pipe_from = True, (out[-1] if out else None)
            elif tok in _LIST_OPS:
                piped = False
            continue
        if isinstance(tok, Redirect):
            cur.redirects.append(tok)
            continue
        if cur.kind == "skip":
            continue
        if cur.kind == "function":  # the name after "function": a definition, not a call
            cur.kind = "skip"
            end()
            continue
        if not cur.words:
            lit = tok.literal() if not tok.quoted else None
            if lit in RESERVED:
                end()
                continue
            if not cur.assignments and _prefix_keyword(tokens, idx):
                continue  # `time -p`, `coproc NAME`: what follows is the command
            if lit in ("case", "function"):
                cur.kind = "skip" if lit == "case" else "function"
                continue
            if lit in ("for", "select"):
                cur.kind = "for"
            elif is_assignment(tok):
                cur.assignments.append(tok)
                continue
            elif _function_name(tokens, idx):
                cur.kind = "skip"
                continue
        cur.words.append(tok)
    end()
    script.commands = out  # type: ignore[assignment]
    return out


def _prefix_keyword(tokens: Sequence[object], idx: int) -> bool:
    """A word at command position that bash reads as part of a keyword, not as a program:
    ``time`` and its options (``time -p FOO=1 rm ...`` runs ``FOO=1 rm ...``), ``coproc``, and
    a coprocess's NAME before a compound command (``coproc NAME { ...; }``)."""
    word = tokens[idx]
    assert isinstance(word, Word)
    text = word.literal() if not word.quoted else None
    if text in ("time", "coproc"):
        return True
    before = _previous_words(tokens, idx)
    if before[-1:] == ["time"] or before[-2:] in (["time", "-p"], ["time", "--"]):
        return text in ("-p", "--")
    if before[-1:] == ["coproc"]:
        nxt = tokens[idx + 1] if idx + 1 < len(tokens) else None
        return nxt == "(" or (isinstance(nxt, Word) and nxt.literal() == "{")
    return False


def _previous_words(tokens: Sequence[object], idx: int) -> list[str | None]:
    """The literal texts of the (up to two) words right before ``idx`` in the same command."""
    out: list[str | None] = []
    for tok in reversed(tokens[max(0, idx - 2) : idx]):
        if not isinstance(tok, Word):
            break
        out.insert(0, tok.literal() if not tok.quoted else None)
    return out


def _function_name(tokens: Sequence[object], idx: int) -> bool:
    """``name ( )``: a function definition, not a call."""
    return tokens[idx + 1 : idx + 3] == ["(", ")"]


def fork_bomb(script: Script) -> str | None:
    """The name of a function that calls itself through a pipe or in the background.

    ``:(){ :|:& };:``, ``bomb() { bomb | bomb & }``, ``function f { f & f; }``:
    one pass over the tokens with a stack of open function bodies.
    """
    toks = _brace_split(script.tokens)
    open_funcs: list[list[object]] = []  # [name, depth at open, calls itself, forks]
    depth = 0
    pending: str | None = None
    at_command = True
    i, n = 0, len(toks)
    while i < n:
        tok = toks[i]
        if isinstance(tok, Word):
            text = tok.literal() if not tok.quoted else None
            if text == "function" and at_command and i + 1 < n and isinstance(toks[i + 1], Word):
                name_word = toks[i + 1]
                assert isinstance(name_word, Word)
                pending = name_word.source()
                i += 2
                if toks[i : i + 2] == ["(", ")"]:
                    i += 2
                continue
            if text is not None and at_command and toks[i + 1 : i + 3] == ["(", ")"]:
                pending = text
                i += 3
                continue
            if text == "{" and at_command:
                depth += 1
                if pending is not None:
                    open_funcs.append([pending, depth, False, False])
                    pending = None
                i += 1
                continue
            if text == "}" and at_command:
                if open_funcs and open_funcs[-1][1] == depth:
                    name, _d, calls, forks = open_funcs.pop()
                    if calls and forks:
                        return str(name)
                depth = max(0, depth - 1)
                i += 1
                continue
            if at_command and open_funcs and text == open_funcs[-1][0]:
                open_funcs[-1][2] = True
            pending = None
            at_command = False
            i += 1
            continue
        if isinstance(tok, Redirect):
            i += 1
            continue
        # an operator
        if tok == "\n" and pending is not None:
            i += 1
            continue
        if tok == "(":
            depth += 1
            if pending is not None:
                open_funcs.append([pending, depth, False, False])
                pending = None
        elif tok == ")":
            if open_funcs and open_funcs[-1][1] == depth:
                name, _d, calls, forks = open_funcs.pop()
                if calls and forks:
                    return str(name)
            depth = max(0, depth - 1)
        else:
            pending = None
            if tok in ("|", "|&", "&") and open_funcs:
                open_funcs[-1][3] = True
        at_command = True
        i += 1
    for name, _d, calls, forks in open_funcs:  # an unterminated body still counts
        if calls and forks:
            return str(name)
    return None


def _brace_split(tokens: Sequence[object]) -> list[object]:
    """``{:`` and ``&}`` written without blanks: split the brace off for the fork-bomb scan."""
    out: list[object] = []
    for tok in tokens:
        if isinstance(tok, Word) and not tok.quoted:
            text = tok.literal()
            if text is not None and len(text) > 1 and (text[0] == "{" or text[-1] == "}"):
                core = text
                lead = core.startswith("{")
                trail = core.endswith("}")
                core = core[1 if lead else 0 : -1 if trail else None]
                if lead:
                    out.append(_word("{"))
                if core:
                    out.append(_word(core))
                if trail:
                    out.append(_word("}"))
                continue
        out.append(tok)
    return out


def _word(text: str) -> Word:
    from ._shell import Part

    return Word([Part(LIT, text, "", False)])
