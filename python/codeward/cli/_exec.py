"""``codeward exec``: run one command through the session boundary, as a host would."""

from __future__ import annotations

import os
import signal
import sys
import threading

from .._errors import CodewardError, SandboxArgumentError, SandboxUnavailable
from ..sandbox import ENV_OPT_IN, select_sandbox
from ..sandbox._native_runner import _CoreSandbox

# Start-up time is this command's cost: nothing is imported for annotations alone, and
# the C core's sandboxes are run for the output's fields, without building the
# CommandOutput dataclass (importing dataclasses costs as much as the sandbox itself).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from types import FrameType
    from typing import Any

    from ._parser import _Commands

EXIT_UNAVAILABLE = 125
EXIT_USAGE = 2  # what main() returns for any other refusal


def register(commands: _Commands) -> None:
    import argparse

    p = commands.add_parser(
        "exec",
        description=(
            "Run COMMAND with bash -c inside the sandbox a session over DIR would get: "
            "bubblewrap namespaces, seccomp and Landlock, no network, writes only to the "
            "workspace and a private scratch directory. The words after -- are joined with "
            "single spaces into one command line. Exit status: the command's own, 124 on "
            "timeout, 125 when the sandbox refused or is unavailable."
        ),
        epilog=(
            "examples:\n"
            "  codeward exec -- make test\n"
            "  codeward exec --workspace ~/src/app --timeout-ms 60000 -- 'cargo build && "
            "cargo test'\n"
            "  codeward exec --json -- ls -la"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--workspace", metavar="DIR", default=".", help="the workspace (default: .)")
    p.add_argument("--timeout-ms", type=int, default=120_000, metavar="N", help="default 120000")
    p.add_argument(
        "--max-output-bytes",
        type=int,
        default=102_400,
        metavar="N",
        help="per stream; a head and a tail are kept beyond it (default 102400)",
    )
    p.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="K=V",
        help="a variable for the command (repeatable); secrets and loader variables are refused",
    )
    p.add_argument(
        "--allow-process-host-sandbox",
        action="store_true",
        help=f"if the sandbox cannot run, run on the host with no boundary (also {ENV_OPT_IN}=1); "
        "only inside an outer container or VM",
    )
    p.add_argument(
        "--memory-max",
        type=int,
        metavar="BYTES",
        help="memory of the whole sandbox (default: half the machine's); the command is killed "
        "beyond it",
    )
    p.add_argument(
        "--max-processes",
        type=int,
        metavar="N",
        help="processes and threads in the sandbox (default 4096); fork fails beyond it",
    )
    p.add_argument(
        "--tmpfs-max",
        type=int,
        metavar="BYTES",
        help="each of the sandbox's tmpfs (/tmp, /run, /dev/shm ...; default: an eighth of the "
        "machine's memory); writes fail with ENOSPC beyond it",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object with every field, for every outcome: a refusal before the "
        "command starts too (exit_code 2 or 125, setup_error saying why, error naming its type)",
    )
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND...")
    # the process may end without the interpreter's teardown once run() returns (_main)
    p.set_defaults(run=run, skip_teardown=True)


# `codeward exec [options] -- COMMAND...` is parsed without argparse, whose import costs
# more than the sandbox's own start (see quick_args); these are register()'s options.
_VALUED = {
    "--workspace": ("workspace", str),
    "--timeout-ms": ("timeout_ms", int),
    "--max-output-bytes": ("max_output_bytes", int),
    "--env": ("env", list),
    "--memory-max": ("memory_max", int),
    "--max-processes": ("max_processes", int),
    "--tmpfs-max": ("tmpfs_max", int),
}
_FLAGS = {"--allow-process-host-sandbox": "allow_process_host_sandbox", "--json": "json"}
_DEFAULTS = {
    "workspace": ".",
    "timeout_ms": 120_000,
    "max_output_bytes": 102_400,
    "env": None,  # a fresh list each time
    "memory_max": None,
    "max_processes": None,
    "tmpfs_max": None,
    "allow_process_host_sandbox": False,
    "json": False,
}


def quick_args(words: list[str]) -> Any | None:
    """What register()'s parser makes of ``exec`` + ``words``, or None to let argparse parse it.

    Only the plain form is answered: options spelled in full (``--opt value`` or
    ``--opt=value``, numbers as ASCII digits, no value starting with ``-``), then ``--``
    and at least one word. Anything else (an abbreviation, ``--help``, a missing
    value, a command without ``--``) goes to argparse, which answers it or refuses it
    as it always did; tests/test_cli_startup.py checks the two agree.
    """
    from types import SimpleNamespace

    fields: dict[str, Any] = dict(_DEFAULTS, env=[])
    i = 0
    while i < len(words) and words[i] != "--":
        name, eq, value = words[i].partition("=")
        if name in _FLAGS and not eq:
            fields[_FLAGS[name]] = True
            i += 1
            continue
        if name not in _VALUED:
            return None
        if not eq:
            if i + 1 >= len(words):
                return None
            value = words[i + 1]
            i += 1
        i += 1
        if value.startswith("-"):
            return None
        dest, kind = _VALUED[name]
        if kind is int:
            if not (value.isascii() and value.isdigit()):
                return None
            fields[dest] = int(value)
        elif kind is list:
            fields[dest].append(value)
        else:
            fields[dest] = value
    if len(words) - i < 2:  # no `--`, or nothing after it
        return None
    return SimpleNamespace(**fields, command=words[i:], run=run, skip_teardown=True)


def _parse_env(items: list[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SandboxArgumentError(f"--env takes K=V, not {item!r}")
        env[key] = value
    return env


def _run_interruptibly(run: Callable[[threading.Event], dict[str, Any]]) -> dict[str, Any]:
    """Runs in a worker thread so that Ctrl-C or SIGTERM cancels the command, never orphans it."""
    cancel = threading.Event()
    done = threading.Event()  # not Thread.is_alive: a join that Ctrl-C interrupts can leave
    box: dict[str, object] = {}  # it false while the thread still runs

    def work() -> None:
        try:
            box["out"] = run(cancel)
        except BaseException as exc:  # re-raised in the main thread
            box["err"] = exc
        finally:
            done.set()

    def stop(signum: int, frame: FrameType | None) -> None:
        cancel.set()

    previous = signal.signal(signal.SIGTERM, stop)
    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    try:
        while not done.is_set():
            try:
                done.wait(0.1)
            except KeyboardInterrupt:
                cancel.set()
    finally:
        signal.signal(signal.SIGTERM, previous)
    error = box.get("err")
    if isinstance(error, BaseException):
        raise error
    result = box["out"]
    assert isinstance(result, dict)
    return result


def _fields(sandbox: Any, command: str, **kwargs: Any) -> dict[str, Any]:
    """The fields of the command's CommandOutput."""
    if isinstance(sandbox, _CoreSandbox):
        fields: dict[str, Any] = sandbox._run(command, kill_grace_ms=500, **kwargs)
        return fields
    import dataclasses  # the other backends (macOS) return the dataclass itself

    return dataclasses.asdict(sandbox.exec(command, **kwargs))


def _runner(
    sandbox: Any, command: str, args: argparse.Namespace, env: Any
) -> Callable[[threading.Event], dict[str, Any]]:
    """The command's run in ``sandbox``, as _run_interruptibly calls it."""

    def run(cancel: threading.Event) -> dict[str, Any]:
        return _fields(
            sandbox,
            command,
            timeout_ms=args.timeout_ms,
            env=env,
            max_output_bytes=args.max_output_bytes,
            cancel=cancel,
        )

    return run


def run(args: argparse.Namespace) -> int:
    if not args.json:
        return _run(args)
    try:
        return _run(args)
    except CodewardError as exc:  # refused before the command started: still one JSON object
        import dataclasses
        import json

        from ..sandbox import CommandOutput

        code = EXIT_UNAVAILABLE if isinstance(exc, SandboxUnavailable) else EXIT_USAGE
        refusal = CommandOutput("", "", code, False, False, 0, False, "none", str(exc))
        fields = dataclasses.asdict(refusal)
        print(json.dumps({**fields, "error": type(exc).__name__}, ensure_ascii=False))
        return code


def _run(args: argparse.Namespace) -> int:
    words = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not words:
        raise SandboxArgumentError("no command given: codeward exec [options] -- COMMAND...")
    command = " ".join(words)
    env = _parse_env(args.env)
    workspace = os.path.abspath(os.path.expanduser(args.workspace))
    bounds = (args.memory_max, args.max_processes, args.tmpfs_max)
    limits = None
    if any(b is not None for b in bounds):
        from ..sandbox import SandboxLimits

        limits = SandboxLimits(
            memory_max_bytes=args.memory_max,
            max_processes=args.max_processes,
            tmpfs_max_bytes=args.tmpfs_max,
        )
    # One command, then the sandbox goes: one bubblewrap for it (reuse=False) rather than a
    # long-lived sandbox, whose start and stop exchanges and between-command restore would
    # all be paid for this one command. The boundary is the same plan either way.
    # A start that fails after a pass kept by an earlier process withdraws the pass and
    # probes again (sandbox/_native_runner.py): the command did not start, so it is run
    # once more under what selection gives now, as if nothing had been kept (the process
    # host if opted in, else exit 125).
    for attempt in (1, 2):
        sandbox = select_sandbox(
            workspace,
            allow_process_host_sandbox=args.allow_process_host_sandbox,
            limits=limits,
            reuse=False,
        )
        try:
            out = _run_interruptibly(_runner(sandbox, command, args, env))
            break
        except SandboxUnavailable as exc:
            if attempt == 1 and getattr(sandbox, "withdrawn_cause", None) is not None:
                continue
            if args.json:
                raise
            print(f"codeward: sandbox unavailable: {exc}", file=sys.stderr)
            return EXIT_UNAVAILABLE
        finally:
            close = getattr(sandbox, "close", None)
            if close is not None:  # everything of the sandbox is gone before we go on
                close()
    if args.json:
        import json

        print(json.dumps({**out, "error": None}, ensure_ascii=False))
    else:
        sys.stdout.write(out["stdout"])
        sys.stdout.flush()
        sys.stderr.write(out["stderr"])
        if out["setup_error"]:
            print(
                f"codeward: sandbox refused to run the command: {out['setup_error']}",
                file=sys.stderr,
            )
        elif out["timed_out"]:
            print(f"codeward: timed out after {args.timeout_ms} ms", file=sys.stderr)
        elif out["oom_killed"]:
            print("codeward: killed: the sandbox reached its memory bound", file=sys.stderr)
        if not out["sandboxed"]:
            print(
                "codeward: warning: ran on the host with no sandbox (process host)", file=sys.stderr
            )
    code: int = out["exit_code"]
    return code
