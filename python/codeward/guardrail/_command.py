"""``check_command``: refuses catastrophic shell commands however they are spelled.

The command is tokenised like bash would (``_shell``), flattened into simple
commands (``_parse``), each program found behind its wrappers
(``_wrappers``) and judged by the rules (``_rules``). Code that runs other
code is analysed as a command of its own: ``$(...)``, backticks and
process substitutions as they are found, and ``bash -c``/``sh -c``
strings, ``eval``, here-documents and text piped into a shell through a
work queue, so nothing recurses on the Python stack.

Work is bounded by a budget proportional to the input (at least a few MB of
scanning); a command that exhausts it, or nests code in code more than
:data:`MAX_NESTING` levels deep, is refused as ``parse.too_complex``: no
agent writes such a command, and one that cannot be analysed cannot be
shown to be safe. A merely malformed command (an unbalanced quote) is
judged on its best-effort tokenisation.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from .. import _native
from ._context import Context
from ._exec import (
    DOWNLOADERS,
    EXEC_RULES,
    INTERPRETER_RULE,
    is_interpreter,
    mark_scripts,
    run_dynamic,
)
from ._hit import GuardrailHit
from ._parse import Command, commands, fork_bomb, is_assignment
from ._rules import DESTRUCTIVE_RULES, check_redirects, mkfs, mkfs_family, rm_like
from ._shell import LIT, Budget, Part, Script, TooComplex, Word, lex
from ._targets import danger, join_cwd
from ._words import (
    MAX_CANDIDATES,
    MAX_VALUE,
    arg_texts,
    echoed,
    expand,
    first,
    literal_word,
    printed,
)
from ._wrappers import WRAPPER_NAMES, Invocation, plain_name, resolve, resolve_command

__all__ = ["MAX_NESTING", "Visit", "check_command", "walk_commands"]

MAX_NESTING = 32  # code inside code (bash -c 'eval "..."'), levels
_MIN_BUDGET = 4 << 20  # scanning units, whatever the input's length
_BUDGET_PER_CHAR = 16
_ITEM_COST = 256  # units charged per queued piece of code
_MAX_FOR_VALUES = 32


@dataclass
class _Item:
    code: str
    env: dict[str, list[str]]
    depth: int
    via: str


# (a simple command, the variables known when it runs, the command list it belongs to, and
# whether that list is the command line itself rather than a substitution or code in code)
Visit = Callable[[Command, Mapping[str, Sequence[str]], Script, bool], None]


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
    hit = _Analysis(command).run()
    return hit if hit is not None else _policy_reading(command)


def _policy_reading(command: str) -> GuardrailHit | None:
    """Each simple command the C reader (the one the permission policy decides on) finds,
    in every spelling it reads, judged on its own: a program this module's tokenizer
    missed (after an arithmetic command, behind a wrapper it does not know, in a trap) is
    judged as well. Bounded by the reader's own bounds and a byte budget; the line itself
    was judged in full above."""
    try:
        _complete, _opaque, found = _native.bash_commands(command)
    except MemoryError:
        return GuardrailHit(
            "parse.too_complex", "refused a command too large to read", command[:200]
        )
    budget = 4 * len(command) + (64 << 10)
    seen = {command}
    for _shown, forms, _dynamic in found:
        for form in forms:
            text = form.decode("utf-8", "surrogateescape")
            if text in seen:
                continue
            seen.add(text)
            budget -= len(text)
            if budget < 0:
                return None
            hit = _Analysis(text).run()
            if hit is not None and hit.rule != "parse.too_complex":
                return hit
    return None


def walk_commands(command: str, visit: Visit) -> bool:
    """Calls ``visit`` for every simple command that ``command`` runs, as the guardrail finds
    them: in the line, in its substitutions, and in the code it hands to shells (``bash -c``,
    ``eval``, text piped into ``sh``, here-documents, wrappers' command strings). A command a
    rule would refuse does not end the walk. False when the command is too complex to be
    walked completely (the commands visited so far are only some of them).
    """
    hit = _Analysis(command, visit).run()
    return hit is None or hit.rule != "parse.too_complex"


class _Analysis:
    def __init__(self, command: str, visit: Visit | None = None) -> None:
        self.command = command
        self.visit = visit
        self.budget = Budget(max(_MIN_BUDGET, _BUDGET_PER_CHAR * len(command)))
        self.queue: deque[_Item] = deque([_Item(command, {}, 0, "")])

    def run(self) -> GuardrailHit | None:
        try:
            while self.queue:
                hit = self._check(self.queue.popleft())
                if hit is not None:
                    return hit
        except (TooComplex, RecursionError, MemoryError):
            shown = self.command[:199] + "…" if len(self.command) > 200 else self.command
            return GuardrailHit(
                "parse.too_complex",
                "refused the command: it is too large or nests code too deeply to be analysed "
                "(a command that cannot be analysed cannot be shown to be safe)",
                shown,
            )
        return None

    def _enqueue(self, code: str, env: dict[str, list[str]], depth: int, via: str) -> None:
        if depth > MAX_NESTING:
            raise TooComplex
        self.budget.charge(_ITEM_COST)
        self.queue.append(_Item(code, env, depth, via))

    def _check(self, item: _Item) -> GuardrailHit | None:
        root = lex(item.code, self.budget)
        order = _preorder(root)
        if self.visit is None:  # what downloads or decodes matters only to a refusal
            mark_scripts(order)
        env = item.env

        def run_code(code: str, via: str, extra: Mapping[str, Sequence[str]] | None) -> None:
            inner = {**env, **{k: list(v) for k, v in extra.items()}} if extra else env
            self._enqueue(code, inner, item.depth + 1, via)

        for script in order:
            name = fork_bomb(script) if self.visit is None else None
            if name is not None:
                shown = f"{name}() {{ {name} | {name} & }}"
                where = f" ({item.via})" if item.via else ""
                return GuardrailHit(
                    "catastrophic.fork_bomb",
                    f"refused the function {name!r}{where}: it calls itself through a pipe or "
                    "in the background, a fork bomb that exhausts the machine's processes",
                    shown,
                )
            ctx = Context(env, run_code, item.via, observing=self.visit is not None)
            for cmd in commands(script):
                self.budget.charge(8 + len(cmd.words))
                if self.visit is not None and cmd.kind == "simple" and cmd.words:
                    self.visit(cmd, env, script, item.depth == 0 and script is root)
                hit = _check_command(cmd, ctx)
                if hit is not None and self.visit is None:
                    return hit
        return None


def _preorder(root: Script) -> list[Script]:
    order: list[Script] = []
    stack = [root]
    while stack:
        script = stack.pop()
        order.append(script)
        stack.extend(reversed(script.children))
    return order


def _check_command(cmd: Command, ctx: Context) -> GuardrailHit | None:
    hit = check_redirects(cmd, ctx)
    if hit is not None and not ctx.observing:
        return hit
    if cmd.kind == "for":
        _bind_loop(cmd, ctx)
        return None
    if cmd.kind != "simple":
        return None
    if not cmd.words:
        for a in cmd.assignments:
            _assign(a, ctx)
        return None
    name = plain_name(cmd)
    if name is not None and not _relevant(name):  # the fast path: no rule can apply
        if any(s.downloads for w in cmd.words for s in w.subs()):
            ctx.downloaded = True
        return None
    invocations, code = resolve_command(cmd, ctx.env)
    for text in code:
        ctx.code(text, "a command string run by a wrapper")
    for inv in invocations:
        hit = _check_invocation(inv, cmd, ctx)
        if hit is not None and not ctx.observing:
            return hit
        _track_state(inv.name, inv.args, ctx)
    if any(inv.name in DOWNLOADERS for inv in invocations) or any(
        s.downloads for w in (*cmd.words, *cmd.assignments) for s in w.subs()
    ):
        ctx.downloaded = True
    return None


_TRACKED = frozenset(
    {"export", "declare", "typeset", "local", "readonly", "unset", "read", "readarray"}
    | {"mapfile", "cd", "pushd", "popd"}
)
_RELEVANT = (
    frozenset(DESTRUCTIVE_RULES) | frozenset(EXEC_RULES) | WRAPPER_NAMES | DOWNLOADERS | _TRACKED
)


def _relevant(name: str) -> bool:
    return name in _RELEVANT or mkfs_family(name) or is_interpreter(name)


def _check_invocation(inv: Invocation, cmd: Command, ctx: Context) -> GuardrailHit | None:
    """The rules for one program run (in the directory a wrapper moved it to, if any)."""
    if ctx.observing:  # walking only: the rules that find code to walk, no refusal
        rule = EXEC_RULES.get(inv.name)
        return rule(inv, cmd, ctx) if rule is not None else None
    if "xargs" in inv.wrappers and cmd.piped_in:
        fed = _xargs_input(cmd, ctx)
        if fed:  # `echo / | xargs rm -rf` is `rm -rf /`
            inv = replace(inv, args=[*inv.args, *map(literal_word, fed)])
    if inv.cwd is None:
        return _apply_rules(inv, cmd, ctx)
    outer = ctx.cwd
    ctx.cwd = join_cwd(outer, inv.cwd)  # `env -C / rm -rf .` removes /
    try:
        return _apply_rules(inv, cmd, ctx)
    finally:
        ctx.cwd = outer


def _xargs_input(cmd: Command, ctx: Context) -> list[str]:
    """The words an ``echo``/``printf`` piped into ``xargs`` hands it as arguments."""
    upstream = cmd.upstream
    if upstream is None:
        return []
    feeders, _code = resolve(upstream.words, ctx.env)
    words: list[str] = []
    for feeder in feeders:
        if feeder.name in ("echo", "printf") and not feeder.wrappers:
            texts = [expand(w, ctx.env)[0] for w in feeder.args]
            words += (printed(texts) if feeder.name == "printf" else echoed(texts)).split()
    return words[:MAX_CANDIDATES]


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


def _track_state(name: str, args: list[Word], ctx: Context) -> None:
    """Variables and the working directory that later commands depend on."""
    if name in ("export", "declare", "typeset", "local", "readonly"):
        for a in args:
            if is_assignment(a):
                _assign(a, ctx)
    elif name in ("unset", "read", "readarray", "mapfile"):
        for t in arg_texts(args, ctx.env):
            ctx.env.pop(t, None)
    elif name == "popd":
        ctx.cwd = None
    elif name in ("cd", "pushd"):
        target = _cd_target(args, ctx.env)
        ctx.cwd = join_cwd(ctx.cwd, target) if target != "-" else None


def _cd_target(args: list[Word], env: Mapping[str, Sequence[str]]) -> str:
    """Where ``cd`` goes: of the candidate values of its operand (``${x:-/}`` may be ``/``),
    the first that is itself a dangerous place, else the first."""
    operand = next((w for w in args if first(w, env) == "-" or first(w, env)[:1] != "-"), None)
    if operand is None:
        return "~"
    candidates = expand(operand, env)
    return next((c for c in candidates if danger(c) is not None), candidates[0])


def _assign(word: Word, ctx: Context) -> None:
    """``NAME=value``: NAME now stands for value's candidates (``+=`` makes it unknown)."""
    head = word.parts[0]
    name, _eq, rest = head.text.partition("=")
    if name.endswith("+") or "[" in name:
        ctx.env.pop(name.rstrip("+").split("[", 1)[0], None)
        return
    value = Word([Part(LIT, rest, "", False), *word.parts[1:]], word.quoted)
    values = [v for v in expand(value, ctx.env)[:MAX_CANDIDATES] if len(v) <= MAX_VALUE]
    if values:
        ctx.env[name] = values
    else:
        ctx.env.pop(name, None)


def _bind_loop(cmd: Command, ctx: Context) -> None:
    """``for NAME in WORDS``: NAME takes each word's value."""
    words = cmd.words
    if len(words) < 2:
        return
    name = first(words[1], ctx.env)
    if len(words) >= 3 and first(words[2], ctx.env) == "in":
        values = [v for v in arg_texts(words[3:], ctx.env)[:_MAX_FOR_VALUES] if len(v) <= MAX_VALUE]
        if values:
            ctx.env[name] = values
            return
    ctx.env.pop(name, None)
