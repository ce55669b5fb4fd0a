"""The argparse parser of the command line (`_main` answers `version` and `--help` without it)."""

from __future__ import annotations

import argparse
import importlib

from ._main import COMMANDS, DESCRIPTION, EPILOG, help_width

TYPE_CHECKING = False  # typing itself costs a few ms on every call
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, NoReturn


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2, like every other error
        self.exit(2, f"codeward: error: {message} (see '{self.prog} --help')\n")

    def _get_formatter(self) -> argparse.HelpFormatter:
        # argparse makes a formatter for every argument added, and a formatter without a
        # width imports shutil (with bz2 and lzma) to ask the terminal: give it the width.
        formatter: argparse.HelpFormatter = self.formatter_class(
            prog=self.prog,
            width=help_width(),  # type: ignore[call-arg]
        )
        return formatter


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
