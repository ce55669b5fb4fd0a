"""Argument parsing and dispatch; each command lives in its own module."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from .._errors import CodewardError

TYPE_CHECKING = False  # typing itself costs a few ms on every call
if TYPE_CHECKING:
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
    "replay": ("_replay", "run a recorded transcript of model tool calls through the kernel"),
    "mcp": ("_mcp", "list the tools of configured MCP servers and how the kernel decides them"),
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


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2, like every other error
        self.exit(2, f"codeward: error: {message} (see '{self.prog} --help')\n")

    def _get_formatter(self) -> argparse.HelpFormatter:
        # argparse makes a formatter for every argument added, and a formatter without a
        # width imports shutil (with bz2 and lzma) to ask the terminal: give it the width.
        formatter: argparse.HelpFormatter = self.formatter_class(
            prog=self.prog,
            width=_width(),  # type: ignore[call-arg]
        )
        return formatter


def _width() -> int:
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


class _Commands:
    """What a command module's ``register`` gets: the subparsers, with the summary listed here."""

    def __init__(self, action: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
        self._action = action

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = self._action.add_parser(
            name, help=COMMANDS[name][1], **kwargs
        )
        return parser


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; given the arguments, it imports only the command they name.

    Without ``argv`` every command is registered in full. With it, only the
    command named by its first word is; the others are listed by name and
    summary (``codeward --help``) and refused if used.
    """
    chosen = None if argv is None else next((a for a in argv if not a.startswith("-")), "")
    parser = _Parser(
        prog="codeward",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True
    for name, (module, summary) in COMMANDS.items():
        if chosen is None or chosen == name:
            importlib.import_module(f".{module}", __package__).register(_Commands(commands))
        else:
            commands.add_parser(name, help=summary)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit code."""
    if argv is None:
        argv = sys.argv[1:]
    parser = build_parser(argv)
    args = parser.parse_args(argv)
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


if __name__ == "__main__":
    sys.exit(main())
