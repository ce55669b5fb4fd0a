"""The simple commands of a bash line, each with the spellings a permission rule is matched on.

A rule such as ``deny: bash(git push**)`` is written against one program and
its arguments, but a line can run that program in many spellings: after
other commands (``cd . && git push``), behind assignments and wrappers
(``FOO=1 env -i command git push``), escaped or quoted (``\\git push``),
with git's global options (``git -c x=y push``, ``git -C dir push``), in a
substitution, or as code handed to a shell (``bash -c 'git push'``). This
module finds every simple command the line runs, with the same walk as the
command guardrail (``walk_commands``), and gives each:

* ``spellings``: the command as written, and as it reads with each thing
  that does not change the program removed (assignments, wrappers and their
  options, git's global options), with known variables expanded. A deny or
  ask rule that matches any of them applies; an allow rule covers the
  command only if it matches all of them.
* ``aliases``: further forms only a deny or ask rule is matched on: the
  program's name without its directory and case-folded (``/usr/bin/GIT
  push`` is ``git push`` to a deny rule), so an allow rule still has to name
  the program the way it is written.
* ``dynamic``: the program's name comes from an expansion whose value is
  unknown (``$CMD push``), so no rule can be shown not to match it.

The policy decides per simple command (policy/_bash.py); docs/policy.md,
"How a bash command is decided", is the prose reference.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ._command import walk_commands
from ._exec import EXEC_RULES
from ._parse import RESERVED, Command, commands
from ._shell import LIT, VAR, Redirect, Script, Word
from ._words import MAX_CANDIDATES, Env, command_name, expand
from ._wrappers import WRAPPER_NAMES, Invocation, resolve_command, shown

__all__ = ["BashLine", "SimpleCommand", "split_line"]

RUNS_CODE = frozenset(EXEC_RULES) | {"find"}  # programs whose arguments hold commands to walk
# Lines up to this long are cached (1024 of them): a check and matching_rules of one call, and
# a kernel's several scopes, split the line once; the cache stays a few MB at most.
_MAX_CACHED_LINE = 1024
# git's options before the subcommand that take the next word as their value
_GIT_TAKES = frozenset({"-c", "-C", "--git-dir", "--work-tree", "--namespace", "--config-env"})


@dataclass(frozen=True)
class SimpleCommand:
    """One simple command of a line; see the module docstring."""

    shown: str
    spellings: tuple[str, ...]
    aliases: tuple[str, ...]
    dynamic: bool


@dataclass(frozen=True)
class BashLine:
    """The simple commands of a line, in the order the walk found them.

    ``complete`` is False when the line is too complex to be walked to the
    end: the commands listed are then only some of those it runs.
    """

    commands: tuple[SimpleCommand, ...]
    complete: bool


def split_line(line: str) -> BashLine:
    """Every simple command ``line`` runs, with its spellings (cached for short lines)."""
    if len(line) <= _MAX_CACHED_LINE:
        return _split_cached(line)
    return _split(line)


@functools.lru_cache(maxsize=1024)
def _split_cached(line: str) -> BashLine:
    return _split(line)


def _split(line: str) -> BashLine:
    plain = _plain_commands(line)
    if plain is not None:
        return BashLine(plain, True)
    found: list[SimpleCommand] = []

    def visit(cmd: Command, env: Env, script: Script, top: bool) -> None:
        whole = top and not found and _only_command(script)
        found.append(_spell(cmd, env, line if whole else None))

    complete = walk_commands(line, visit)
    return BashLine(tuple(found), complete)


# The fast path: a line of plain commands (words, simple quotes) joined by ; && || | or
# newlines, with nothing the shell would expand, redirect, group or read as a keyword.
# (possessive quantifiers: a line that is not plain fails at once, with no backtracking)
_WORD = r"""(?:[A-Za-z0-9_./:=@%+,*?\[\]~^!-]++|"[^"$`\\!]*+"|'[^']*+')++"""
_REDIRECT = rf"(?:[0-9]*+(?:>>|>&|>\||<>|<&|>|<(?!<))|&>>|&>)[ \t]*+{_WORD}"
_ITEM = rf"(?:{_REDIRECT}|{_WORD})"
_ONE = rf"[ \t]*+{_ITEM}(?:[ \t]*+{_ITEM})*+[ \t]*+"
_OPERATOR = r"&&|\|\||;(?![;&])|\|(?!&)|\n"  # not ;; ;& |& (case arms, stderr pipes)
_PLAIN_LINE = re.compile(rf"{_ONE}(?:(?:{_OPERATOR}){_ONE})*+\n?[ \t]*+")
_PLAIN_TOKEN = re.compile(
    rf"(?P<op>{_OPERATOR})"
    rf"|(?P<redirect>(?P<fd>[0-9]*+)(?P<how>>>|>&|>\||<>|<&|>|<|&>>|&>)[ \t]*+(?P<to>{_WORD}))"
    rf"|(?P<word>{_WORD})"
)
_QUOTED = re.compile(r"\"([^\"]*)\"|'([^']*)'")
_PROGRAM = re.compile(r"[A-Za-z0-9_./:@%+,^-]+")  # unquoted: no assignment, glob or tilde
# First words that need the walk even among plain words: keywords, wrappers, and programs that
# run code of their own (sh -c ls, find -exec, eval ...).
_NOT_PLAIN = frozenset({"!", "[[", "coproc", "function", "select", "time", "until", "while"})
_WALKED = _NOT_PLAIN | RUNS_CODE | WRAPPER_NAMES | RESERVED


def _plain_commands(line: str) -> tuple[SimpleCommand, ...] | None:
    """The simple commands of a line of plain commands, spelled without the walk, or None
    when the line needs it (tests/test_policy_bash.py checks both spell alike)."""
    if _PLAIN_LINE.fullmatch(line) is None:
        return None
    commands: list[tuple[list[str], list[str]]] = [([], [])]  # (words, redirects) of each
    for m in _PLAIN_TOKEN.finditer(line):
        if m.group("op") is not None:
            commands.append(([], []))
        elif m.group("redirect") is not None:
            target = _shown(_unquote(m.group("to")))
            commands[-1][1].append(f"{m.group('fd')}{m.group('how')}{target}")
        else:
            commands[-1][0].append(m.group("word"))
    if not commands[-1][0] and not commands[-1][1]:
        commands.pop()  # the final newline
    names = [command_name(words[0]) if words else "" for words, _redirects in commands]
    for (words, _redirects), name in zip(commands, names, strict=True):
        if not words or _PROGRAM.fullmatch(words[0]) is None or name in _WALKED:
            return None  # only redirections, or a program the walk must look into
    whole = line if len(commands) == 1 else None
    out = []
    for (words, redirects), name in zip(commands, names, strict=True):
        args = [_shown(_unquote(w)) if "'" in w or '"' in w else w for w in words[1:]]
        out.append(_spell_plain(words[0], name, args, redirects, whole))
    return tuple(out)


def _spell_plain(
    program: str, name: str, args: list[str], redirects: list[str], whole_line: str | None
) -> SimpleCommand:
    """What :func:`_spell` makes of a plain command: no wrapper, assignment or expansion, so
    its only other readings are the bare name and, for git, the subcommand."""
    written = " ".join([program, *args, *redirects])
    forms = [written]
    aliases = [" ".join([name, *args, *redirects])]
    if name == "git":
        subcommand = _without_git_globals(args)
        if subcommand != args:
            forms.append(" ".join([program, *subcommand, *redirects]))
            aliases.append(" ".join([name, *subcommand, *redirects]))
    return _assemble(whole_line, written, forms, [written], aliases, False)


def _unquote(word: str) -> str:
    return _QUOTED.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(2), word)


def _only_command(script: Script) -> bool:
    """A command list that is one simple command: no operator, no substitution, nothing else."""
    ops = [t for t in script.tokens if isinstance(t, str)]
    return not script.children and all(t == "\n" for t in ops) and len(commands(script)) == 1


def _spell(cmd: Command, env: Env, whole_line: str | None) -> SimpleCommand:
    """The spellings of one simple command (see the module docstring).

    ``whole_line`` is the line when this command is all of it: the line is
    then the command as written, exactly as a rule for the line has always
    been matched on it.
    """
    redirects = [_redirect(r) for r in cmd.redirects]
    words = _words(cmd.words)
    written = " ".join([*(w.source() for w in cmd.assignments), *words, *redirects])
    forms = [" ".join([*words, *redirects])]
    plain: list[str] = []  # the words as they are, only unquoted: the line itself, to a rule
    aliases: list[str] = []
    invocations, _code = resolve_command(cmd, env)  # cached for the guardrail's rules too
    dynamic = bool(cmd.words) and _many_values(cmd.words[0], env)
    for inv in invocations:
        dynamic = dynamic or inv.dynamic
        bare = not cmd.assignments and len(inv.args) == len(cmd.words) - 1
        for program, args, changed in _forms(inv, env):
            text = " ".join([program, *args, *redirects])
            (forms if changed or not bare else plain).append(text)
            aliases.append(" ".join([inv.name, *args, *redirects]))
    return _assemble(whole_line, written, forms, plain, aliases, dynamic)


def _assemble(
    whole_line: str | None,
    written: str,
    forms: list[str],
    plain: list[str],
    aliases: list[str],
    dynamic: bool,
) -> SimpleCommand:
    """The command's spellings from its readings: ``forms`` (the words, then each reading with
    something removed or expanded), ``plain`` (the program's readings with only quotes
    removed) and the bare-name ``aliases``."""
    if whole_line is None:
        spellings = [written, *forms, *plain]
    else:  # the line is this command as written; what was removed from it must be allowed too
        same = "".join(whole_line.split())
        spellings = [whole_line, *(f for f in forms[1:] if "".join(f.split()) != same)]
        aliases = [written, *forms, *plain, *aliases]
    unique = _unique(spellings)  # bounded by the walk: at most a few dozen, never cut
    return SimpleCommand(
        written, unique, tuple(a for a in _unique(aliases) if a not in unique), dynamic
    )


def _forms(inv: Invocation, env: Env) -> list[tuple[str, list[str], bool]]:
    """(program, argument texts, whether anything was removed or expanded) for the invocation
    as written, with known variables expanded, and without git's global options."""
    program = shown(inv.word)
    written = _words(inv.args)
    forms = [(program, written, False)]
    if any(p.kind != LIT for w in inv.args for p in w.parts):
        expanded = [_first(w, env) for w in inv.args]
        if expanded != written:
            forms.append((program, expanded, True))
    if inv.name == "git":
        for _program, args, _changed in list(forms):
            subcommand = _without_git_globals(args)
            if subcommand != args:
                forms.append((program, subcommand, True))
    return forms


def _many_values(word: Word, env: Env) -> bool:
    """Whether the program's name has more candidate values than the walk follows (a loop over
    twenty names): the ones past the limit are unknown, so the program is too."""
    return any(
        p.kind == VAR and len(env.get(p.text, ())) + len(p.defaults) >= MAX_CANDIDATES
        for p in word.parts
    )


def _without_git_globals(args: list[str]) -> list[str]:
    """``-c x=y -C dir --no-pager push -f`` -> ``push -f``: what git runs is the subcommand."""
    i = 0
    while i < len(args) and args[i].startswith("-"):
        option = args[i]
        if option == "--":
            i += 1
            break
        i += 2 if option in _GIT_TAKES else 1
    return args[i:]


def _words(words: Sequence[Word]) -> list[str]:
    return [_shown(w.source()) for w in words]


def _first(word: Word, env: Env) -> str:
    return _shown(expand(word, env, braces=False)[0])


def _shown(text: str) -> str:
    """A word's text as a rule reads it: quoted when it is empty or holds a blank."""
    return f'"{text}"' if not text or _BLANK.search(text) else text


_BLANK = re.compile(r"\s")


def _redirect(r: Redirect) -> str:
    target = shown(r.target) if r.target is not None else ""
    return f"{r.fd or ''}{r.op}{target}"


def _unique(items: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(i for i in items if i))
