"""Rules for code that runs code: shells, interpreters, ``eval``, ``source``, downloads.

The code itself (``bash -c STRING``, ``eval``, aliases, traps, here-documents
and text piped into a shell) is read by the C reader as sources of their own
and judged like the line. What is left here is the download (or hidden text
decoded with ``base64 -d``) that ends up as code: piped into a shell or an
interpreter reading its program from stdin, substituted into
``sh -c``/``eval``/``python -c``, sourced or run through a process
substitution (``bash <(curl ...)``), or run as a command (``$(curl ...)``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._context import Context, Rule, refuse
from ._hit import GuardrailHit
from ._reading import Command, Invocation, Source, Word, arg_texts, first, invocations, shown

__all__ = ["DOWNLOADERS", "EXEC_RULES", "SHELLS", "is_interpreter", "mark_sources", "run_dynamic"]

DOWNLOADERS = frozenset(
    {
        "curl",
        "wget",
        "wget2",
        "fetch",
        "aria2c",
        "http",
        "https",
        "xh",
        "xhs",
        "httpie",
        "curlie",
        "lwp-request",
        "lwp-download",
        "ftp",
        "tftp",
        "nc",
        "ncat",
        "netcat",
        "socat",
    }
)
SHELLS = frozenset(
    {
        "sh",
        "bash",
        "dash",
        "zsh",
        "ksh",
        "ksh93",
        "mksh",
        "pdksh",
        "yash",
        "ash",
        "hush",
        "fish",
        "csh",
        "tcsh",
        "rbash",
        "posh",
    }
)
_DECODERS = frozenset({"base64", "base32", "basenc", "xxd", "openssl", "uudecode"})
_STDIN_NAMES = frozenset({"-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"})
_PYTHON = re.compile(r"(python|pypy)[0-9.]*\Z")
_LUA = re.compile(r"lua(jit)?[0-9.]*\Z")

PIPE = "catastrophic.pipe_to_shell"
DECODE = "catastrophic.decode_to_shell"


# -- what a source does, bottom-up ------------------------------------------------------------


def mark_sources(sources: list[Source]) -> None:
    """Sets ``downloads``/``decodes`` on every source: it, or code it runs (its
    substitutions, a ``bash -c`` inside them ...), runs a downloader or a decoder.
    A source's code comes after its parent's, so one pass from the end suffices."""
    for source in reversed(sources):
        for cmd in source.commands:
            for inv in invocations(cmd):
                source.downloads = source.downloads or inv.name in DOWNLOADERS
                source.decodes = source.decodes or (inv.name in _DECODERS and _decodes(inv))
        if source.parent is not None:
            source.parent.downloads = source.parent.downloads or source.downloads
            source.parent.decodes = source.parent.decodes or source.decodes


def _decodes(inv: Invocation) -> bool:
    texts = arg_texts(inv.args)
    if inv.name == "xxd":
        return any(t.startswith("-") and "r" in t for t in texts)
    if inv.name == "uudecode":
        return True
    return any(t == "--decode" or (t.startswith("-") and "d" in t[1:].lower()) for t in texts)


def _as_code(inv: Invocation, ctx: Context, word: Word, what: str) -> GuardrailHit | None:
    """A word that becomes code: refused when its substitutions download or decode."""
    subs = word.subs
    if any(s.downloads for s in subs):
        return refuse(PIPE, ctx, inv.fragment(), f"it runs the output of a download as {what}")
    if any(s.decodes for s in subs):
        return refuse(DECODE, ctx, inv.fragment(), f"it decodes hidden text and runs it as {what}")
    return None


# -- shells ---------------------------------------------------------------------------------


def _shell(inv: Invocation, cmd: Command, ctx: Context) -> GuardrailHit | None:
    """``sh -c STRING [NAME ARGS]``, ``sh SCRIPT``, or ``sh`` reading its program from stdin."""
    args = inv.args
    i = 0
    has_c = from_stdin = False
    while i < len(args):
        t = first(args[i])
        if t in ("-", "--"):
            i += 1
            from_stdin = from_stdin or (t == "-" and not has_c)
            break
        if t in ("--rcfile", "--init-file"):
            i += 2
            continue
        if t.startswith("--"):
            i += 1
            continue
        if len(t) > 1 and t[0] in "-+":
            flags = t[1:]
            has_c = has_c or "c" in flags
            from_stdin = from_stdin or "s" in flags
            i += 1 + flags.count("o") + flags.count("O")
            continue
        break
    operand = args[i] if i < len(args) else None
    if has_c:
        if operand is None:
            return None
        hit = _as_code(inv, ctx, operand, "a script")
        if hit is not None:
            return hit
        if "xargs" in inv.wrappers and cmd.piped and ctx.downloaded:
            return refuse(PIPE, ctx, inv.fragment(), "it runs downloaded text through xargs")
        return None
    if operand is not None:
        hit = _as_code(inv, ctx, operand, "a script")
        if hit is not None:
            return hit
        if first(operand) not in _STDIN_NAMES and not from_stdin:
            return None
    return _stdin_program(inv, cmd, ctx, shell=True)


def _stdin_program(
    inv: Invocation, cmd: Command, ctx: Context, *, shell: bool
) -> GuardrailHit | None:
    """A shell or interpreter reading its program from stdin: is it fed a download?"""
    for r in cmd.redirects:
        if r.target is not None and (r.op == "<" or (shell and r.op == "<<<")):
            hit = _as_code(inv, ctx, r.target, "a program on stdin")
            if hit is not None:
                return hit
    if not cmd.piped:
        return None
    upstream = cmd.upstream
    if ctx.downloaded:
        fragment = inv.fragment()
        if upstream is not None:
            fragment = " ".join(shown(w) for w in upstream.words) + " | " + fragment
        return refuse(PIPE, ctx, fragment, f"it pipes a download into {inv.name}")
    if upstream is None:
        return None
    for feeder in invocations(upstream):
        if feeder.name in _DECODERS and _decodes(feeder):
            return refuse(
                DECODE,
                ctx,
                f"{feeder.fragment()} | {inv.fragment()}",
                f"it decodes hidden text and runs it with {inv.name}",
            )
    return None


# -- interpreters ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Interp:
    code: str  # option letters whose value is program text (-c, -e)
    values: str = ""  # option letters that take a value (attached or the next word)
    attached: str = ""  # option letters whose value, if any, is attached
    stop: str = ""  # option letters after which no program is read (-m module)
    long_code: tuple[str, ...] = ()
    long_values: tuple[str, ...] = ()


_INTERPRETERS = {
    "python": _Interp(code="c", values="WXQ", stop="m"),
    "perl": _Interp(code="eE", attached="IMmxiF0lCdD"),
    "ruby": _Interp(code="e", values="rICE", attached="x"),
    "node": _Interp(
        code="ep",
        values="r",
        long_code=("--eval", "--print"),
        long_values=("--require", "--import", "--loader"),
    ),
    "php": _Interp(code="r", values="cdzf"),
    "lua": _Interp(code="e", values="l"),
}


def is_interpreter(name: str) -> bool:
    return _family(name) in _INTERPRETERS


def _family(name: str) -> str:
    if _PYTHON.match(name):
        return "python"
    if name == "nodejs":
        return "node"
    return "lua" if _LUA.match(name) else name


def _interpreter(inv: Invocation, cmd: Command, ctx: Context) -> GuardrailHit | None:
    """Python, perl, ruby, node, php, lua: a program from a download or from decoded text."""
    spec = _INTERPRETERS[_family(inv.name)]
    args = inv.args
    code: Word | None = None
    script: Word | None = None
    i = 0
    while i < len(args) and code is None and script is None:
        t = first(args[i])
        if t == "-":
            return _stdin_program(inv, cmd, ctx, shell=False)
        if t == "--":
            script = args[i + 1] if i + 1 < len(args) else None
            break
        if t.startswith("--"):
            name = t.split("=", 1)[0]
            if name in spec.long_code:
                code = args[i] if "=" in t else (args[i + 1] if i + 1 < len(args) else None)
                break
            i += 2 if name in spec.long_values and "=" not in t else 1
            continue
        if t.startswith("-") and len(t) > 1:
            step = 1
            for k, ch in enumerate(t[1:], start=1):
                attached = t[k + 1 :]
                if ch in spec.stop:
                    return None
                if ch in spec.code:
                    code = args[i] if attached else (args[i + 1] if i + 1 < len(args) else None)
                    break
                if ch in spec.values:
                    step = 1 if attached else 2
                    break
                if ch in spec.attached:
                    break
            i += step
            continue
        script = args[i]
    if code is not None:
        return _as_code(inv, ctx, code, "a program")
    if script is not None:
        hit = _as_code(inv, ctx, script, "a program")
        if hit is not None or first(script) not in _STDIN_NAMES:
            return hit
    return _stdin_program(inv, cmd, ctx, shell=False)


# -- builtins that run strings --------------------------------------------------------------


def _eval(inv: Invocation, cmd: Command, ctx: Context) -> GuardrailHit | None:
    """``eval "$(curl ...)"``: a download run as shell code."""
    for w in inv.args:
        hit = _as_code(inv, ctx, w, "shell code")
        if hit is not None:
            return hit
    return None


def _source(inv: Invocation, cmd: Command, ctx: Context) -> GuardrailHit | None:
    """``source <(curl ...)``; ``. /dev/stdin`` fed by a download."""
    if not inv.args:
        return None
    hit = _as_code(inv, ctx, inv.args[0], "a sourced script")
    if hit is None and first(inv.args[0]) in _STDIN_NAMES:
        return _stdin_program(inv, cmd, ctx, shell=True)
    return hit


def _at(inv: Invocation, cmd: Command, ctx: Context) -> GuardrailHit | None:
    """``at``/``batch`` read the commands they schedule from stdin (unless ``-f FILE``)."""
    if any(t in ("-f", "-l", "-r", "-d", "-c", "-V") for t in arg_texts(inv.args)):
        return None
    return _stdin_program(inv, cmd, ctx, shell=True)


def run_dynamic(inv: Invocation, cmd: Command, ctx: Context) -> GuardrailHit | None:
    """A program named by a substitution: ``$(curl ...)`` runs a download."""
    return _as_code(inv, ctx, inv.word, "a command")


EXEC_RULES: dict[str, Rule] = {
    "eval": _eval,
    "source": _source,
    ".": _source,
    "at": _at,
    "batch": _at,
    **dict.fromkeys(SHELLS, _shell),
    **dict.fromkeys(("perl", "ruby", "node", "nodejs", "php"), _interpreter),
}
INTERPRETER_RULE: Rule = _interpreter
