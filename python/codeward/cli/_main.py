"""Argument parsing and dispatch; each command lives in its own module."""

from __future__ import annotations

import os
import sys

from .._errors import CodewardError

TYPE_CHECKING = False  # typing itself costs a few ms on every call
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, NoReturn

# Each command lives in its own module, imported only when that command runs: `codeward
# version` must not pay for the sandbox, nor `codeward exec` for the policy engine. The
# one-line summaries are here so that `codeward --help` can list every command without
# importing any.
COMMANDS = {
    "version": ("_version", "print the package, C core and ABI versions"),
    "doctor": ("_doctor", "check what this machine offers the sandbox"),
    "exec": ("_exec", "run a command inside the sandbox"),
    "policy": ("_policy", "check a call against a policy, or lint a policy"),
    "replay": ("_replay", "replay a transcript of model tool calls through the kernel"),
    "mcp": ("_mcp", "list MCP servers' tools, or serve a session's tools over MCP"),
    "hook": ("_hook", "decide a Claude Code hook's tool call with the kernel"),
}

DESCRIPTION = """\
codeward: the security kernel of a coding agent.

Every tool call an agent makes is checked against a permission policy
(deny, then allow, then ask, then a default) and runs inside an enforced
sandbox. These commands let you inspect this machine and try policies
before you trust them."""

EPILOG = """\
examples:
  codeward doctor
  codeward exec -- make test
  codeward policy check --policy policy.yaml bash '{"command": "cargo test"}'
  codeward policy lint policy.yaml
  codeward replay calls.jsonl --workspace . --mode plan --policy policy.yaml
  codeward mcp list --config .mcp.json --policy policy.yaml

Policy files are YAML or JSON with the keys deny, allow, ask,
default_decision and enabled; see docs/policy.md."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit code."""
    as_program = argv is None
    if argv is None:
        argv = sys.argv[1:]
    answered = _answer_at_once(list(argv))
    if answered is not None:
        return answered
    args = None
    if argv[:1] == ["exec"]:
        from ._exec import quick_args

        args = quick_args(list(argv[1:]))
    if args is None:
        from ._parser import build_parser

        args = build_parser(argv).parse_args(argv)
    code = _dispatch(args)
    if as_program and getattr(args, "skip_teardown", False):
        _end_process(code)
    return code


def _dispatch(args: Any) -> int:
    """Runs the parsed command; its exit code, or the one its error stands for."""
    try:
        code: int = args.run(args)
    except CodewardError as exc:
        print(f"codeward: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("codeward: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    return code


def _end_process(code: int) -> NoReturn:
    """Ends `codeward exec` without the interpreter's teardown.

    By now the command has ended, every process of its sandbox is gone and its
    files are removed (the command closes its sandbox before it returns), and the
    output is written: what is left is the interpreter freeing every module and
    object one by one, about as long as the sandbox's own start. Only the output
    streams need flushing.
    """
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # nobody reads the output any more: the command's code stands
        pass
    except OSError:
        code = 120  # what the interpreter's own exit makes of an output it cannot flush
    try:  # noqa: SIM105 (contextlib is one more import on this path)
        sys.stderr.flush()
    except OSError:
        pass
    os._exit(code)


# `codeward version` and `codeward --help` answer without argparse, whose import (re, enum,
# gettext, locale) costs more than the rest of the call. The help text is argparse's own
# layout, composed here only while nothing in it would wrap; tests/test_cli_startup.py
# compares it with argparse's at every width.
_HELP_COLUMN = 14  # where argparse starts a help text here: len("  -h, --help") + 2


def _answer_at_once(argv: list[str]) -> int | None:
    """The exit code of a call answered without the parser, or None to parse it."""
    if argv in (["version"], ["version", "--json"]):
        from ._version import show

        return show(as_json=len(argv) == 2)
    if argv in (["--help"], ["-h"]):
        text = top_help(help_width())
        if text is not None:
            sys.stdout.write(text)
            raise SystemExit(0)  # as argparse ends after printing the help
    return None


def help_width() -> int:
    """The help's width, as argparse would find it (COLUMNS, else the terminal), less 2."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 80
    return max(columns - 2, 11)


def top_help(width: int) -> str | None:
    """``codeward --help`` as argparse lays it out at ``width``, or None if a line would wrap."""
    rows = [("  -h, --help", "show this help message and exit")]
    rows += [(f"    {name}", summary) for name, (_, summary) in COMMANDS.items()]
    if width < 44 or any(len(left) > _HELP_COLUMN - 2 for left, _ in rows):
        return None  # argparse would move the help column
    usage = "usage: codeward [-h] COMMAND ..."
    lines = [f"{left:<{_HELP_COLUMN}}{text}" for left, text in rows]
    if any(len(line) > width for line in [usage, *lines]):
        return None  # argparse would wrap it
    commands = "\n".join(lines[1:])
    return (
        f"{usage}\n\n{DESCRIPTION}\n\npositional arguments:\n"
        f"  COMMAND\n{commands}\n\noptions:\n{lines[0]}\n\n{EPILOG}\n"
    )


if __name__ == "__main__":
    sys.exit(main())
