"""``codeward version``: the package, C core and ABI versions."""

from __future__ import annotations

import argparse
import json
import platform

from .. import _native
from .._version import __version__


def register(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = commands.add_parser(
        "version",
        help="print the package, C core and ABI versions",
        description="Print the Python package, C core and C ABI versions.",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    info = {
        "package": __version__,
        "native": _native.version()["string"],
        "abi": _native.abi_version(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    if args.json:
        print(json.dumps(info))
    else:
        print(f"codeward {info['package']} (C core {info['native']}, ABI {info['abi']})")
        print(f"Python {info['python']} on {info['platform']}")
    return 0
