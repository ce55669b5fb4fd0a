"""Argument parsing and dispatch; each command lives in its own module."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from .._errors import CodewardError
from . import _doctor, _exec, _mcp, _policy, _replay, _version

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


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="codeward",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True
    _version.register(commands)
    _doctor.register(commands)
    _exec.register(commands)
    _policy.register(commands)
    _replay.register(commands)
    _mcp.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit code."""
    parser = build_parser()
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
