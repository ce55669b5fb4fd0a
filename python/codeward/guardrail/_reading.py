"""The C reader's reading of a command line, as the guardrail's rules see it.

The permission policy, the exec check's bindings and this guardrail read a
line once, with one reader and one wrapper table: ``native/src/bash_split.c``
(``a3s_bash_read_line``). It gives every piece of code the line runs (a
*source*: the line, each substitution, a shell's ``-c`` code, ``eval``'s
words, a here-document or echoed text a shell reads, a trap, an alias, the
command a wrapper hands to a shell, ``find -exec``), and in each source its
simple commands in order: their words (what each may stand for, with the
variables the line assigns expanded, a ``${x:-default}``'s default, an
unknown substitution as ``$(…)`` and ``$(pwd)`` as ``$PWD``), the program
each wrapper runs (``env nice rm``: ``env``, ``nice``, ``rm``), the
redirections, and the command that writes into its pipe. This module only
turns that into objects; there is no tokenizer here.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import NamedTuple

from .. import _native

__all__ = [
    "MAX_NESTING",
    "SUB_MARK",
    "Command",
    "Invocation",
    "Reading",
    "Redirect",
    "Source",
    "Word",
    "arg_texts",
    "command_name",
    "first",
    "has_unknown",
    "invocations",
    "read",
    "shown",
]

MAX_NESTING: int = _native.BASH_MAX_DEPTH  # code inside code (bash -c 'eval "..."'), levels
SUB_MARK = "$(…)"  # a substitution whose output the line does not show

# a3s_bash_source.via (native/src/bash_split.h), and how a refusal names it
_VIA_LINE, _VIA_SUB, _VIA_SPLIT = 0, 1, 11
_VIA = {
    2: "inside {} -c",
    3: "inside eval",
    4: "a here-document run by {}",
    5: "a here-string run by {}",
    6: "text piped into {}",
    7: "inside a trap",
    8: "inside an alias",
    9: "a command string run by a wrapper",
    10: "a command run by find -exec",
    12: "inside an arithmetic command",
}
_TOK_WORD, _TOK_OP = 0, 1


class Word(NamedTuple):
    """A word: ``shown`` quote-removed with expansions as written, ``values`` what it may
    stand for (at least one), ``subs`` the sources its substitutions run."""

    shown: str
    values: tuple[str, ...]
    subs: tuple[Source, ...]
    split: bool  # an unquoted expansion: bash splits its value at blanks
    unknown: bool  # some of it is a value the line does not show


@dataclass(frozen=True, slots=True)
class Redirect:
    """``[fd]op target``; a here-document keeps its body."""

    op: str
    fd: str
    target: Word | None
    body: str | None


@dataclass(eq=False, slots=True)
class Command:
    """One simple command (no words: only redirections, ``> /dev/sda``)."""

    words: list[Word]
    redirects: list[Redirect]
    stages: tuple[tuple[int, str | None], ...]  # the word of each program it runs, wrappers
    # first, and the directory that wrapper runs the next one in (env -C DIR), if any
    piped: bool  # its stdin is a pipe
    dynamic: bool  # the last program's name is not shown by the line
    fed: str | None  # what the command writing into its pipe prints, when shown
    upstream: Command | None = None  # that command, when known


@dataclass(eq=False, slots=True)
class Source:
    """A piece of code the line runs, how (``via``, for messages), and its commands."""

    code: str
    parent: Source | None
    via: str
    tokens: tuple[tuple[int, str | None], ...]
    commands: list[Command] = field(default_factory=list)
    downloads: bool = False  # it, or code it runs, runs a downloader
    decodes: bool = False  # ... or decodes hidden text (base64 -d, xxd -r)


@dataclass(frozen=True, slots=True)
class Reading:
    complete: bool  # read to its end (a malformed line is judged as far as it reads)
    bounded: bool  # a bound (nesting, size, number of commands) ended the reading
    sources: list[Source]


@dataclass(eq=False, slots=True)
class Invocation:
    """A program about to run: its folded name (``""`` if unknown), its word, its arguments."""

    name: str
    word: Word
    args: list[Word]
    dynamic: bool  # the name comes from a value the line does not show
    wrappers: tuple[str, ...] = ()  # the wrappers it was found behind, outermost first
    cwd: str | None = None  # the directory a wrapper runs it in (``env -C DIR``), if any

    def fragment(self) -> str:
        """The command as written, quotes removed (a word with blanks is shown quoted)."""
        return " ".join(shown(w) for w in (self.word, *self.args))


def read(line: str) -> Reading:
    """The reading of ``line``; MemoryError when it cannot be held."""
    complete, bounded, raw_sources, raw_cmds, raw_words, raw_redirs = _native.bash_read(line)
    sources: list[Source] = []
    for code, parent, _depth, via, via_name, tokens in raw_sources:
        up = sources[parent] if parent >= 0 else None
        if via in (_VIA_LINE, _VIA_SUB, _VIA_SPLIT) or via not in _VIA:
            text = up.via if up is not None else ""
        else:
            text = _VIA[via].format(via_name or "")
        sources.append(Source(code, up, text, tokens))
    words = [
        Word(shown_text, values, tuple(sources[sub0:sub1]) if sub1 > sub0 else (), split, unknown)
        for shown_text, values, sub0, sub1, split, unknown in raw_words
    ]
    redirs = []
    for op, target, body in raw_redirs:
        fd = op[: len(op) - len(op.lstrip("0123456789"))]
        redirs.append(Redirect(op[len(fd) :], fd, words[target] if target >= 0 else None, body))
    commands: list[Command] = []
    for si, w0, nw, r0, nr, stages, upstream, fed, piped, dynamic in raw_cmds:
        cmd = Command(words[w0 : w0 + nw], redirs[r0 : r0 + nr], stages, piped, dynamic, fed)
        if 0 <= upstream < len(commands):
            cmd.upstream = commands[upstream]
        commands.append(cmd)
        sources[si].commands.append(cmd)
    return Reading(complete, bounded, sources)


def first(word: Word) -> str:
    """The first value: good enough to read an option."""
    return word.values[0]


def has_unknown(words: list[Word]) -> bool:
    """Whether any word holds a value the line does not show (it may be an option)."""
    return any(w.unknown for w in words)


def arg_texts(words: list[Word]) -> list[str]:
    """Every value of ``words``, split where an unquoted expansion would split."""
    out: list[str] = []
    for w in words:
        for text in w.values:
            if w.split and text != SUB_MARK:
                out.extend(text.split() or [""])
            else:
                out.append(text)
    return out


def command_name(text: str) -> str:
    """``/usr/bin/RM`` -> ``rm``: the basename, case-folded (case-insensitive file systems)."""
    return posixpath.basename(text).casefold()


def shown(word: Word) -> str:
    text = word.shown
    return f'"{text}"' if not text or any(c.isspace() for c in text) else text


def invocations(cmd: Command) -> list[Invocation]:
    """Each program ``cmd`` runs, as the reader unwrapped it: the first, then the one each
    wrapper runs (``sudo env rm``: sudo, env, rm), each with the words after it."""
    out: list[Invocation] = []
    words = cmd.words
    wrappers: tuple[str, ...] = ()
    cwd: str | None = None
    for at, directory in cmd.stages:
        word = words[at]
        if word.split and not word.unknown and any(c.isspace() for c in word.values[0]):
            break  # `$(echo rm -rf /)`: the reader reads the split words as code of their own
        args = list(words[at + 1 :])
        names = list(dict.fromkeys(command_name(v) for v in word.values))
        for name in names:
            out.append(Invocation(name, word, args, word.unknown, wrappers, cwd))
        if directory:  # `env -C DIR`: relative to where the wrapper itself runs
            cwd = (
                directory
                if cwd is None or directory.startswith("/")
                else f"{cwd.rstrip('/')}/{directory}"
            )
        wrappers = (*wrappers, names[0])
    return out


def fork_bomb(source: Source) -> str | None:
    """The name of a function that calls itself through a pipe or in the background.

    ``:(){ :|:& };:``, ``bomb() { bomb | bomb & }``, ``function f { f & f; }``:
    one pass over the source's tokens with a stack of open function bodies.
    """
    if "(" not in source.code and "function" not in source.code:
        return None  # no function is defined
    toks = _brace_split(source.tokens)
    open_funcs: list[list[object]] = []  # [name, depth at open, calls itself, forks]
    depth = 0
    pending: str | None = None
    at_command = True
    i, n = 0, len(toks)

    def op_at(k: int) -> str | None:
        return toks[k][1] if k < n and toks[k][0] == _TOK_OP else None

    while i < n:
        kind, text = toks[i]
        if kind == _TOK_WORD:
            if text == "function" and at_command and i + 1 < n and toks[i + 1][0] == _TOK_WORD:
                pending = toks[i + 1][1] or ""
                i += 2
                if op_at(i) == "(" and op_at(i + 1) == ")":
                    i += 2
                continue
            if text is not None and at_command and op_at(i + 1) == "(" and op_at(i + 2) == ")":
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
        if kind != _TOK_OP:  # a redirection
            i += 1
            continue
        if text == "\n" and pending is not None:
            i += 1
            continue
        if text == "(":
            depth += 1
            if pending is not None:
                open_funcs.append([pending, depth, False, False])
                pending = None
        elif text == ")":
            if open_funcs and open_funcs[-1][1] == depth:
                name, _d, calls, forks = open_funcs.pop()
                if calls and forks:
                    return str(name)
            depth = max(0, depth - 1)
        else:
            pending = None
            if text in ("|", "&") and open_funcs:
                open_funcs[-1][3] = True
        at_command = True
        i += 1
    for name, _d, calls, forks in open_funcs:  # an unterminated body still counts
        if calls and forks:
            return str(name)
    return None


def _brace_split(
    tokens: tuple[tuple[int, str | None], ...],
) -> list[tuple[int, str | None]]:
    """``{:`` and ``&}`` written without blanks: the brace split off for the fork-bomb scan."""
    out: list[tuple[int, str | None]] = []
    for kind, text in tokens:
        if kind == _TOK_WORD and text is not None and len(text) > 1:
            lead, trail = text[0] == "{", text[-1] == "}"
            if lead or trail:
                core = text[1 if lead else 0 : -1 if trail else None]
                if lead:
                    out.append((_TOK_WORD, "{"))
                if core:
                    out.append((_TOK_WORD, core))
                if trail:
                    out.append((_TOK_WORD, "}"))
                continue
        out.append((kind, text))
    return out
