"""``check_command``: refuses catastrophic shell commands however they are spelled.

The line is read once, by the C reader the permission policy decides on
(``_reading``): every piece of code it runs (substitutions, ``bash -c``
strings, ``eval``, here-documents and text piped into a shell, traps,
aliases, wrappers' command strings), each simple command in it, and each
program that command runs behind its wrappers. Each is judged by the rules
(``_rules``, ``_exec``), in order, with the directory a ``cd`` moved to.

The reader's bounds (code nested in code more than :data:`MAX_NESTING`
levels deep, more pieces of code or commands than it follows, more memory
than the line's size allows) end the reading: a line that ends it and shows
nothing catastrophic in what was read is refused as ``parse.too_complex``,
since a command that cannot be read cannot be shown to be safe. A merely
malformed line (an unbalanced quote) is judged as far as it reads; the
permission policy asks for it.
"""

from __future__ import annotations

from dataclasses import replace

from ._context import Context
from ._exec import (
    DOWNLOADERS,
    EXEC_RULES,
    INTERPRETER_RULE,
    is_interpreter,
    mark_sources,
    run_dynamic,
)
from ._hit import GuardrailHit
from ._reading import (
    MAX_NESTING,
    Command,
    Invocation,
    Reading,
    Word,
    first,
    fork_bomb,
    invocations,
    read,
)
from ._rules import DESTRUCTIVE_RULES, check_redirects, mkfs, mkfs_family, rm_like
from ._targets import danger, join_cwd

__all__ = ["MAX_NESTING", "check_command"]


def check_command(command: str) -> GuardrailHit | None:
    """The first catastrophic operation in ``command``, or None.

    Never raises for any string and always ends: see the module docstring.
    """
    if not isinstance(command, str):
        return GuardrailHit(
            "parse.invalid",
            f"refused a command of type {type(command).__name__}: a command must be a string",
            repr(command)[:200],
        )
    try:
        reading = read(command)
    except MemoryError:
        reading = Reading(False, True, [])
    hit = _judge(reading)
    if hit is None and reading.bounded:
        shown = command[:199] + "…" if len(command) > 200 else command
        return GuardrailHit(
            "parse.too_complex",
            "refused the command: it is too large or nests code too deeply to be analysed "
            "(a command that cannot be analysed cannot be shown to be safe)",
            shown,
        )
    return hit


def _judge(reading: Reading) -> GuardrailHit | None:
    mark_sources(reading.sources)
    for source in reading.sources:
        ctx = Context(via=source.via)
        name = fork_bomb(source)
        if name is not None:
            where = f" ({ctx.via})" if ctx.via else ""
            return GuardrailHit(
                "catastrophic.fork_bomb",
                f"refused the function {name!r}{where}: it calls itself through a pipe or "
                "in the background, a fork bomb that exhausts the machine's processes",
                f"{name}() {{ {name} | {name} & }}",
            )
        for cmd in source.commands:
            hit = _check_command(cmd, ctx)
            if hit is not None:
                return hit
    return None


def _check_command(cmd: Command, ctx: Context) -> GuardrailHit | None:
    hit = check_redirects(cmd, ctx)
    if hit is not None:
        return hit
    found = invocations(cmd)
    for inv in found:
        hit = _check_invocation(inv, cmd, ctx)
        if hit is not None:
            return hit
        _track_cwd(inv.name, inv.args, ctx)
    if any(inv.name in DOWNLOADERS for inv in found) or any(
        s.downloads for w in cmd.words for s in w.subs
    ):
        ctx.downloaded = True
    return None


def _check_invocation(inv: Invocation, cmd: Command, ctx: Context) -> GuardrailHit | None:
    """The rules for one program run (in the directory a wrapper moved it to, if any)."""
    if "xargs" in inv.wrappers and cmd.piped and cmd.fed:
        # `echo / | xargs rm -rf` is `rm -rf /`
        fed = [Word(t, (t,), (), False, False) for t in cmd.fed.split()[:16]]
        inv = replace(inv, args=[*inv.args, *fed])
    if inv.cwd is None:
        return _apply_rules(inv, cmd, ctx)
    outer = ctx.cwd
    ctx.cwd = join_cwd(outer, inv.cwd)  # `env -C / rm -rf .` removes /
    try:
        return _apply_rules(inv, cmd, ctx)
    finally:
        ctx.cwd = outer


def _apply_rules(inv: Invocation, cmd: Command, ctx: Context) -> GuardrailHit | None:
    if inv.dynamic:  # $(curl ...) runs a download; $RM -rf / may well be rm
        return run_dynamic(inv, cmd, ctx) or rm_like(inv, cmd, ctx)
    rule = DESTRUCTIVE_RULES.get(inv.name) or EXEC_RULES.get(inv.name)
    if rule is None:
        if mkfs_family(inv.name):
            rule = mkfs
        elif is_interpreter(inv.name):
            rule = INTERPRETER_RULE
    return rule(inv, cmd, ctx) if rule is not None else None


def _track_cwd(name: str, args: list[Word], ctx: Context) -> None:
    """The working directory that later commands of the same source run in."""
    if name == "popd":
        ctx.cwd = None
    elif name in ("cd", "pushd"):
        target = _cd_target(args)
        ctx.cwd = join_cwd(ctx.cwd, target) if target != "-" else None


def _cd_target(args: list[Word]) -> str:
    """Where ``cd`` goes: of the values of its operand (``${x:-/}`` may be ``/``), the
    first that is itself a dangerous place, else the first."""
    operand = next((w for w in args if first(w) == "-" or first(w)[:1] != "-"), None)
    if operand is None:
        return "~"
    return next((c for c in operand.values if danger(c) is not None), operand.values[0])
