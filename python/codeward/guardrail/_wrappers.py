"""Which program a simple command really runs, through the wrappers that run another one.

``env FOO=1 nice -n 5 timeout 10 /bin/rm -rf /`` runs ``rm``: each wrapper's
options (and its operands, such as timeout's duration) are skipped until the
wrapped command. ``xargs``, ``busybox``, ``chroot``, ``strace`` ... are
wrappers too, and ``find -exec`` runs a command of its own. Wrappers that
take a command as one string (``env -S``, ``watch``, ``script -c``,
``flock -c``, ``sg``) hand it back as code for a shell to analyse.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ._parse import Command
from ._shell import LIT, VAR, Word
from ._words import SUB_MARK, Env, command_name, expand, first, literal_word, splits

__all__ = ["WRAPPER_NAMES", "Invocation", "plain_name", "resolve", "resolve_command", "shown"]


@dataclass(eq=False)
class Invocation:
    """A program about to run: its folded name (``""`` if unknown), its word, its arguments."""

    name: str
    word: Word
    args: list[Word]
    dynamic: bool  # the name comes from an expansion the guardrail cannot know
    wrappers: tuple[str, ...] = ()  # the wrappers it was found behind, outermost first
    cwd: str | None = None  # the directory a wrapper runs it in (``env -C DIR``), if any

    def fragment(self) -> str:
        """The command as written, quotes removed (a word with blanks is shown quoted)."""
        return " ".join(shown(w) for w in (self.word, *self.args))


def shown(word: Word) -> str:
    text = word.source()
    return f'"{text}"' if not text or any(c.isspace() for c in text) else text


# A wrapper looks at the words after its name (from index j) and returns the index of the
# wrapped command, None when it runs nothing (``command -v x``), or NOT_A_WRAPPER.
NOT_A_WRAPPER = -1
_Spec = Callable[[Sequence[Word], int, Env, list[str]], int | None]


def plain_name(cmd: Command) -> str | None:
    """The program name when the first word is a plain literal (the fast path), else None."""
    if not cmd.words:
        return None
    parts = cmd.words[0].parts
    if len(parts) != 1 or parts[0].kind != LIT:
        return None
    text = parts[0].text
    return None if "{" in text and not parts[0].quoted else command_name(text)


def resolve_command(cmd: Command, env: Env) -> tuple[list[Invocation], list[str]]:
    """:func:`resolve` for a parsed command, cached when no variable can change the answer."""
    if cmd.resolution is not None:
        return cmd.resolution  # type: ignore[return-value]
    result = resolve(cmd.words, env)
    if not any(p.kind == VAR for w in cmd.words for p in w.parts):
        cmd.resolution = result
    return result


def resolve(words: Sequence[Word], env: Env) -> tuple[list[Invocation], list[str]]:
    """The programs ``words`` runs, and the code strings that wrappers hand to a shell."""
    invocations: list[Invocation] = []
    code: list[str] = []
    work: list[tuple[Sequence[Word], int, str | None, tuple[str, ...], str | None]] = [
        (words, 0, None, (), None)
    ]
    budget = 4 * len(words) + 64
    syntax: tuple[Sequence[Word], int] | None = None  # (words, the last word eval re-parses)
    while work and budget > 0:
        ws, i, forced, wrappers, cwd = work.pop()
        while i < len(ws) and budget > 0:
            budget -= 1
            word = ws[i]
            if forced is None:
                pieces = splits(word, env)
                if len(pieces) > 1:  # {rm,-rf,/} or $(echo rm -rf /): several words
                    ws, i = [*map(literal_word, pieces), *ws[i + 1 :]], 0
                    continue
                names = list(dict.fromkeys(command_name(t) for t in expand(word, env)))
                for other in names[1:]:
                    if len(work) < 16:
                        work.append((ws, i, other, wrappers, cwd))
                name = names[0]
            else:
                name, forced = forced, None
            if name == "eval":  # ``eval rm -rf /`` is ``rm -rf /``; shell syntax is a rule's job
                if syntax is None or syntax[0] is not ws:
                    syntax = (ws, _last_syntax(ws, env))
                nxt: int | None = i + 1 if i + 1 > syntax[1] else NOT_A_WRAPPER
                if nxt == len(ws):
                    break
            else:
                spec = _WRAPPERS.get(name)
                nxt = spec(ws, i + 1, env, code) if spec is not None else NOT_A_WRAPPER
            if nxt is None:
                break
            if nxt != NOT_A_WRAPPER:
                cwd = _chdir(name, ws[i + 1 : max(nxt, i + 1)], env, cwd)
                i = max(nxt, i + 1)
                if len(wrappers) < 8:  # enough to tell what fed it (xargs ...)
                    wrappers = (*wrappers, name)
                continue
            dynamic = "$" in name or "`" in name or SUB_MARK.casefold() in name
            invocations.append(Invocation(name, word, list(ws[i + 1 :]), dynamic, wrappers, cwd))
            if name == "find":
                inner = (*wrappers, name)
                work.extend((sub, 0, None, inner, cwd) for sub in _find_exec(ws[i + 1 :], env))
            break
    return invocations, code


# Wrappers that run the command in another directory, and the options that name it.
_CHDIR_OPTIONS = {
    "env": ("-C", "--chdir"),
    "unshare": ("--wd",),
    "nsenter": ("-w", "--wd"),
    "systemd-run": ("--working-directory",),
}


def _chdir(name: str, options: Sequence[Word], env: Env, cwd: str | None) -> str | None:
    """The directory ``env -C DIR`` (``--chdir=DIR``, ``-CDIR`` ...) runs its command in,
    relative to ``cwd`` when it is relative; ``cwd`` unchanged for other wrappers."""
    names = _CHDIR_OPTIONS.get(name)
    if names is None:
        return cwd
    texts = [first(w, env) for w in options]
    for k, t in enumerate(texts):
        value = None
        if t in names and k + 1 < len(texts):
            value = texts[k + 1]
        else:
            for option in names:
                if t.startswith(option + "=") and option.startswith("--"):
                    value = t[len(option) + 1 :]
                elif len(option) == 2 and t.startswith(option) and len(t) > 2:
                    value = t[2:]
        if value:
            cwd = value if cwd is None or value.startswith("/") else f"{cwd.rstrip('/')}/{value}"
    return cwd


def _options(
    ws: Sequence[Word],
    j: int,
    env: Env,
    *,
    takes: str = "",
    long_takes: frozenset[str] = frozenset(),
    stop: frozenset[str] = frozenset(),
    operands: int = 0,
) -> int | None:
    """Skips options (``takes`` are the letters with a separate value) and ``operands`` words."""
    while j < len(ws):
        t = first(ws[j], env)
        if t == "--":
            j += 1
            break
        if t.startswith("--") and len(t) > 2:
            name = t.split("=", 1)[0]
            if name in stop:
                return None
            j += 2 if name in long_takes and "=" not in t else 1
            continue
        if t.startswith("-") and len(t) > 1:
            if t[:2] in stop:
                return None
            j += 2 if len(t) == 2 and t[1] in takes else 1
            continue
        break
    return j + operands


def _simple(
    takes: str = "",
    long_takes: tuple[str, ...] = (),
    stop: tuple[str, ...] = (),
    operands: int = 0,
) -> _Spec:
    lt, st = frozenset(long_takes), frozenset(stop)

    def spec(ws: Sequence[Word], j: int, env: Env, code: list[str]) -> int | None:
        return _options(ws, j, env, takes=takes, long_takes=lt, stop=st, operands=operands)

    return spec


def _env(ws: Sequence[Word], j: int, env: Env, code: list[str]) -> int | None:
    """``env [-i] [-u NAME] [-C DIR] [-S STRING] [NAME=VALUE]... COMMAND``."""
    while j < len(ws):
        t = first(ws[j], env)
        if t in ("-S", "--split-string") or t.startswith(("-S", "--split-string=")):
            value = t.split("=", 1)[1] if t.startswith("--") else t[2:]
            rest = ws[j + 1 :]
            if not value and rest:
                value, rest = first(rest[0], env), rest[1:]
            code.append(" ".join([value, *(w.source() for w in rest)]))
            return None
        if t in ("-u", "-C", "--unset", "--chdir"):
            j += 2
        elif t == "--" or t.startswith("-") or ("=" in t and not t.startswith("=")):
            j += 1
        else:
            return j
    return None


def _command(ws: Sequence[Word], j: int, env: Env, code: list[str]) -> int | None:
    """``command [-p] NAME`` runs NAME; ``command -v/-V`` only looks it up."""
    while j < len(ws):
        t = first(ws[j], env)
        if t in ("-v", "-V") or (t.startswith("-") and ("v" in t or "V" in t)):
            return None
        if t == "--":
            return j + 1
        if not t.startswith("-"):
            return j
        j += 1
    return None


def _xargs(ws: Sequence[Word], j: int, env: Env, code: list[str]) -> int | None:
    return _options(
        ws,
        j,
        env,
        takes="ILnPdEsa",
        long_takes=frozenset(
            {
                "--arg-file",
                "--delimiter",
                "--eof",
                "--replace",
                "--max-lines",
                "--max-args",
                "--max-procs",
                "--max-chars",
                "--process-slot-var",
            }
        ),
    )


def _applet(ws: Sequence[Word], j: int, env: Env, code: list[str]) -> int | None:
    """``busybox rm ...``: the next word is the program."""
    if j < len(ws) and first(ws[j], env).startswith("-"):
        return None
    return j


def _watch(ws: Sequence[Word], j: int, env: Env, code: list[str]) -> int | None:
    """``watch [options] COMMAND...``: joined and run by ``sh -c`` unless ``-x``."""
    exec_mode = False
    while j < len(ws):
        t = first(ws[j], env)
        if t in ("-x", "--exec"):
            exec_mode = True
            j += 1
        elif t in ("-n", "--interval", "-q", "--equexit"):
            j += 2
        elif t == "--":
            j += 1
            break
        elif t.startswith("-"):
            j += 1
        else:
            break
    if exec_mode:
        return j
    if j < len(ws):
        code.append(" ".join(first(w, env) for w in ws[j:]))
    return None


def _script(ws: Sequence[Word], j: int, env: Env, code: list[str]) -> int | None:
    """``script [options] -c COMMAND [file]``: the command string goes to a shell."""
    while j < len(ws):
        t = first(ws[j], env)
        short_c = t.startswith("-") and not t.startswith("--") and t.endswith("c")
        if (short_c or t == "--command") and j + 1 < len(ws):
            code.append(expand(ws[j + 1], env, subs_raw=True)[0])
            j += 2
        elif t.startswith("--command="):
            code.append(t.split("=", 1)[1])
            j += 1
        else:
            j += 1
    return None


def _flock(ws: Sequence[Word], j: int, env: Env, code: list[str]) -> int | None:
    """``flock [options] FILE COMMAND...`` or ``flock [options] FILE -c STRING``."""
    lockfile_seen = False
    while j < len(ws):
        t = first(ws[j], env)
        if t in ("-c", "--command") and j + 1 < len(ws):
            code.append(expand(ws[j + 1], env, subs_raw=True)[0])
            return None
        if t in ("-w", "--timeout", "-E", "--conflict-exit-code"):
            j += 2
        elif t.startswith("-"):
            j += 1
        elif not lockfile_seen:
            lockfile_seen = True
            j += 1
        else:
            return j
    return None


def _string_after(skip: int) -> _Spec:
    """Commands that run their remaining words as one shell string (``sg GROUP CMD``)."""

    def spec(ws: Sequence[Word], j: int, env: Env, code: list[str]) -> int | None:
        rest = [w for w in ws[j + skip :] if first(w, env) != "-c"]
        if rest:
            code.append(" ".join(expand(w, env, subs_raw=True)[0] for w in rest))
        return None

    return spec


def _runuser(ws: Sequence[Word], j: int, env: Env, code: list[str]) -> int | None:
    """``runuser -u USER -- COMMAND`` or ``runuser USER -c STRING``."""
    user_option = False
    while j < len(ws):
        t = first(ws[j], env)
        if t in ("-c", "--command") and j + 1 < len(ws):
            code.append(expand(ws[j + 1], env, subs_raw=True)[0])
            j += 2
        elif t in ("-u", "--user"):
            user_option = True
            j += 2
        elif t in ("-g", "--group", "-G", "--supp-group", "-s", "--shell", "-w"):
            j += 2
        elif t == "--":
            return j + 1 if user_option else None
        elif t.startswith("-"):
            j += 1
        else:
            return j if user_option else None
    return None


_SHELL_SYNTAX = re.compile(r"[\s;&|<>()$`'\"\\{}*?\[~#=]")


def _last_syntax(ws: Sequence[Word], env: Env) -> int:
    """The index of the last word that eval would re-parse differently (-1 for none)."""
    for k in range(len(ws) - 1, -1, -1):
        w = ws[k]
        if w.subs() or any(_SHELL_SYNTAX.search(t) for t in expand(w, env)):
            return k
    return -1


def _run_subcommand(
    verbs: tuple[str, ...], takes: str = "", long_takes: tuple[str, ...] = ()
) -> _Spec:
    """``uv run CMD``, ``poetry run CMD``, ``bundle exec CMD``: a wrapper only with that verb."""
    lt = frozenset(long_takes)

    def spec(ws: Sequence[Word], j: int, env: Env, code: list[str]) -> int | None:
        if j >= len(ws) or first(ws[j], env) not in verbs:
            return NOT_A_WRAPPER
        return _options(ws, j + 1, env, takes=takes, long_takes=lt)

    return spec


def _find_exec(args: Sequence[Word], env: Env) -> list[Sequence[Word]]:
    """The commands of ``find ... -exec CMD ... ;`` (also -execdir, -ok, -okdir)."""
    found: list[Sequence[Word]] = []
    i = 0
    while i < len(args):
        if first(args[i], env) in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < len(args) and first(args[j], env) not in (";", "+"):
                j += 1
            if j > i + 1:
                found.append(args[i + 1 : j])
            i = j
        i += 1
    return found[:16]


_WRAPPERS: dict[str, _Spec] = {
    "env": _env,
    "command": _command,
    "builtin": _simple(),
    "exec": _simple(takes="a"),
    "nice": _simple(takes="n", long_takes=("--adjustment",)),
    "nohup": _simple(),
    "setsid": _simple(),
    "time": _simple(takes="fo", long_takes=("--format", "--output")),
    "timeout": _simple(takes="sk", long_takes=("--signal", "--kill-after"), operands=1),
    "stdbuf": _simple(takes="ioe", long_takes=("--input", "--output", "--error")),
    "ionice": _simple(
        takes="cn",
        long_takes=("--class", "--classdata"),
        stop=("-p", "-P", "-u", "--pid", "--pgid", "--uid"),
    ),
    "chrt": _simple(takes="TPD", stop=("-p", "--pid"), operands=1),
    "taskset": _simple(stop=("-p", "--pid"), operands=1),
    "xargs": _xargs,
    "busybox": _applet,
    "toybox": _applet,
    "chroot": _simple(long_takes=("--userspec", "--groups"), operands=1),
    "unshare": _simple(takes="SGRw", long_takes=("--setuid", "--setgid", "--root", "--wd")),
    "nsenter": _simple(takes="tSG", long_takes=("--target", "--setuid", "--setgid")),
    "strace": _simple(takes="oepsuEabIOSPX"),
    "ltrace": _simple(takes="oepsunaADlx"),
    "setpriv": _simple(),
    "systemd-run": _simple(
        takes="upEMH",
        long_takes=(
            "--unit",
            "--property",
            "--setenv",
            "--machine",
            "--host",
            "--description",
            "--slice",
            "--uid",
            "--gid",
            "--nice",
            "--working-directory",
            "--on-calendar",
            "--on-active",
        ),
    ),
    "firejail": _simple(),
    "caffeinate": _simple(takes="wt"),
    "arch": _simple(),
    "unbuffer": _simple(),
    "catchsegv": _simple(),
    "dbus-run-session": _simple(),
    "fakeroot": _simple(takes="lsib"),
    "watch": _watch,
    "script": _script,
    "flock": _flock,
    "sg": _string_after(1),
    "runuser": _runuser,
    "uv": _run_subcommand(("run",), takes="p", long_takes=("--with", "--python", "--directory")),
    "poetry": _run_subcommand(("run",)),
    "pipenv": _run_subcommand(("run",)),
    "pdm": _run_subcommand(("run",)),
    "hatch": _run_subcommand(("run",)),
    "conda": _run_subcommand(("run",), takes="np", long_takes=("--name", "--prefix")),
    "bundle": _run_subcommand(("exec",)),
}
WRAPPER_NAMES = frozenset(_WRAPPERS) | {"eval"}
