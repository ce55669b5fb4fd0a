"""``codeward version``: the package, C core and ABI versions."""

from __future__ import annotations

import os
import sys

from .. import _native
from .._version import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from ._parser import _Commands


def register(commands: _Commands) -> None:
    p = commands.add_parser(
        "version",
        description="Print the Python package, C core and C ABI versions.",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    return show(as_json=args.json)


def show(*, as_json: bool) -> int:
    """Prints the versions (``codeward version`` answers without argparse: _main)."""
    info = {
        "package": __version__,
        "native": _native.version()["string"],
        "abi": _native.abi_version(),
        "python": ".".join(map(str, sys.version_info[:3])),
        "platform": _platform(),
    }
    if as_json:
        import json

        print(json.dumps(info))
    else:
        print(f"codeward {info['package']} (C core {info['native']}, ABI {info['abi']})")
        print(f"Python {info['python']} on {info['platform']}")
    return 0


def _platform() -> str:
    """Like ``platform.platform()`` (``Linux-6.1.0-x86_64-with-glibc2.36``), which can start
    a subprocess: `codeward version` is meant to answer at once."""
    uname = os.uname()
    text = f"{uname.sysname}-{uname.release}-{uname.machine}"
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError):
        libc = ""
    name, _, version = libc.partition(" ")
    return f"{text}-with-{name}{version}" if name == "glibc" else text
