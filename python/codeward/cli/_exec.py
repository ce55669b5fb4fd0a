"""``codeward exec``: run one command through the session boundary, as a host would."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import asdict
from types import FrameType

from .._errors import CodewardError, SandboxArgumentError, SandboxUnavailable
from ..sandbox import ENV_OPT_IN, CommandOutput, SandboxLimits, select_sandbox

EXIT_UNAVAILABLE = 125
EXIT_USAGE = 2  # what main() returns for any other refusal


def register(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = commands.add_parser(
        "exec",
        help="run a command inside the sandbox",
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
    p.set_defaults(run=run)


def _parse_env(items: list[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SandboxArgumentError(f"--env takes K=V, not {item!r}")
        env[key] = value
    return env


def _run_interruptibly(run: Callable[[threading.Event], CommandOutput]) -> CommandOutput:
    """Runs in a worker thread so that Ctrl-C or SIGTERM cancels the command, never orphans it."""
    cancel = threading.Event()
    box: dict[str, object] = {}

    def work() -> None:
        try:
            box["out"] = run(cancel)
        except BaseException as exc:  # re-raised in the main thread
            box["err"] = exc

    def stop(signum: int, frame: FrameType | None) -> None:
        cancel.set()

    previous = signal.signal(signal.SIGTERM, stop)
    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            try:
                worker.join(0.1)
            except KeyboardInterrupt:
                cancel.set()
    finally:
        signal.signal(signal.SIGTERM, previous)
    error = box.get("err")
    if isinstance(error, BaseException):
        raise error
    result = box["out"]
    assert isinstance(result, CommandOutput)
    return result


def run(args: argparse.Namespace) -> int:
    if not args.json:
        return _run(args)
    try:
        return _run(args)
    except CodewardError as exc:  # refused before the command started: still one JSON object
        code = EXIT_UNAVAILABLE if isinstance(exc, SandboxUnavailable) else EXIT_USAGE
        refusal = CommandOutput("", "", code, False, False, 0, False, "none", str(exc))
        print(json.dumps({**asdict(refusal), "error": type(exc).__name__}, ensure_ascii=False))
        return code


def _run(args: argparse.Namespace) -> int:
    words = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not words:
        raise SandboxArgumentError("no command given: codeward exec [options] -- COMMAND...")
    command = " ".join(words)
    env = _parse_env(args.env)
    workspace = os.path.abspath(os.path.expanduser(args.workspace))
    limits = SandboxLimits(
        memory_max_bytes=args.memory_max,
        max_processes=args.max_processes,
        tmpfs_max_bytes=args.tmpfs_max,
    )
    sandbox = select_sandbox(
        workspace, allow_process_host_sandbox=args.allow_process_host_sandbox, limits=limits
    )
    try:
        out = _run_interruptibly(
            lambda cancel: sandbox.exec(
                command,
                timeout_ms=args.timeout_ms,
                env=env,
                max_output_bytes=args.max_output_bytes,
                cancel=cancel,
            )
        )
    except SandboxUnavailable as exc:
        if args.json:
            raise
        print(f"codeward: sandbox unavailable: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    if args.json:
        print(json.dumps({**asdict(out), "error": None}, ensure_ascii=False))
    else:
        sys.stdout.write(out.stdout)
        sys.stdout.flush()
        sys.stderr.write(out.stderr)
        if out.setup_error:
            print(
                f"codeward: sandbox refused to run the command: {out.setup_error}", file=sys.stderr
            )
        elif out.timed_out:
            print(f"codeward: timed out after {args.timeout_ms} ms", file=sys.stderr)
        elif out.oom_killed:
            print("codeward: killed: the sandbox reached its memory bound", file=sys.stderr)
        if not out.sandboxed:
            print(
                "codeward: warning: ran on the host with no sandbox (process host)", file=sys.stderr
            )
    return out.exit_code
