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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ._command import walk_commands
from ._parse import Command, commands
from ._shell import Redirect, Script, Word
from ._words import expand
from ._wrappers import Invocation, resolve, shown

__all__ = ["BashLine", "SimpleCommand", "split_line"]

_MAX_SPELLINGS = 16  # per simple command; more candidates add nothing a rule could use
_MAX_CACHED_LINE = 8192
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


@functools.lru_cache(maxsize=512)
def _split_cached(line: str) -> BashLine:
    return _split(line)


def _split(line: str) -> BashLine:
    found: list[SimpleCommand] = []

    def visit(cmd: Command, env: Mapping[str, Sequence[str]], script: Script, top: bool) -> None:
        whole = top and not found and _only_command(script)
        found.append(_spell(cmd, env, line if whole else None))

    complete = walk_commands(line, visit)
    return BashLine(tuple(found), complete)


def _only_command(script: Script) -> bool:
    """A command list that is one simple command: no operator, no substitution, nothing else."""
    ops = [t for t in script.tokens if isinstance(t, str)]
    return not script.children and all(t == "\n" for t in ops) and len(commands(script)) == 1


def _spell(cmd: Command, env: Mapping[str, Sequence[str]], whole_line: str | None) -> SimpleCommand:
    """The spellings of one simple command (see the module docstring).

    ``whole_line`` is the line when this command is all of it: the line is
    then the command as written, exactly as a rule for the line has always
    been matched on it.
    """
    envs = {k: list(v) for k, v in env.items()}
    redirects = [_redirect(r) for r in cmd.redirects]
    written = " ".join([*(w.source() for w in cmd.assignments), *_words(cmd.words), *redirects])
    forms = [" ".join([*_words(cmd.words), *redirects])]
    plain: list[str] = []  # the words as they are, only unquoted: the line itself, to a rule
    aliases: list[str] = []
    invocations, _code = resolve(cmd.words, envs)
    dynamic = False
    for inv in invocations:
        dynamic = dynamic or inv.dynamic
        bare = not cmd.assignments and len(inv.args) == len(cmd.words) - 1
        for program, args, changed in _forms(inv, envs):
            text = " ".join([shown(program), *args, *redirects])
            (forms if changed or not bare else plain).append(text)
            aliases.append(" ".join([inv.name, *args, *redirects]))
    if whole_line is None:
        spellings = [written, *forms, *plain]
    else:  # the line is this command as written; what was removed from it must be allowed too
        same = "".join(whole_line.split())
        spellings = [whole_line, *(f for f in forms[1:] if "".join(f.split()) != same)]
        aliases = [written, *forms, *plain, *aliases]
    unique = _unique(spellings)
    return SimpleCommand(
        written,
        unique[:_MAX_SPELLINGS],
        tuple(a for a in _unique(aliases) if a not in unique)[:_MAX_SPELLINGS],
        dynamic,
    )


def _forms(inv: Invocation, env: dict[str, list[str]]) -> list[tuple[Word, list[str], bool]]:
    """(program word, argument texts, whether anything was removed or expanded) for the
    invocation as written, with known variables expanded, and without git's global options."""
    written = _words(inv.args)
    forms = [(inv.word, written, False)]
    expanded = [_first(w, env) for w in inv.args]
    if expanded != written:
        forms.append((inv.word, expanded, True))
    if inv.name == "git":
        for _word, args, _changed in list(forms):
            subcommand = _without_git_globals(args)
            if subcommand != args:
                forms.append((inv.word, subcommand, True))
    return forms


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
    return [shown(w) for w in words]


def _first(word: Word, env: dict[str, list[str]]) -> str:
    text = expand(word, env, braces=False)[0]
    return f'"{text}"' if not text or any(c.isspace() for c in text) else text


def _redirect(r: Redirect) -> str:
    target = shown(r.target) if r.target is not None else ""
    return f"{r.fd or ''}{r.op}{target}"


def _unique(items: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(i for i in items if i))
