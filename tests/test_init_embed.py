"""A program that carries the init (the Go package) gets none of the init's names but a3s_init_*.

native/init/embed.h prefixes every external name of the init's sources, so that a host
program's own C code (a function called ``die`` or ``serve``) cannot collide with them when
the init is compiled into it. A function added to native/init without a line in embed.h
fails here.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
INIT = ROOT / "native" / "init"

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not shutil.which("cc") or not shutil.which("nm"),
    reason="compiles the Linux init with cc and reads it with nm",
)


@pytest.mark.parametrize("source", sorted(p.name for p in INIT.glob("*.c")))
def test_every_external_name_of_the_init_is_prefixed(source: str, tmp_path: Path) -> None:
    obj = tmp_path / "x.o"
    include = str(ROOT / "native" / "include")
    embed = str(INIT / "embed.h")
    subprocess.run(
        [
            "cc",
            "-std=c11",
            "-I",
            include,
            "-include",
            embed,
            "-c",
            str(INIT / source),
            "-o",
            str(obj),
        ],
        check=True,
    )
    symbols = subprocess.run(
        ["nm", "--defined-only", "--extern-only", str(obj)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()[2::3]
    stray = [s for s in symbols if not s.startswith("a3s_init_")]
    assert stray == [], f"{source} defines {stray}: add them to native/init/embed.h"
