"""The init's builds: the Go package carries it renamed, the others compile the same sources.

native/init/embed.h prefixes every external name of the init's sources, so that a host
program's own C code (a function called ``die`` or ``serve``) cannot collide with them when
the init is compiled into it (the Go package). A function added to native/init without a
line in embed.h fails here, as does a source added to one of the three builds of the
a3s-init program (setup.py, native/Makefile, the Node addon's binding.gyp) but not the others.
"""

from __future__ import annotations

import re
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


@pytest.mark.skipif(not shutil.which("node"), reason="reads the Node build's list with node")
def test_every_build_of_the_init_compiles_the_same_sources() -> None:
    """setup.py, native/Makefile and the Node addon (binding.gyp) list a3s-init's sources."""
    setup = (ROOT / "setup.py").read_text()
    python = re.findall(r'"(native/[^"]+\.c)"', setup.split("INIT_SOURCES = [")[1].split("]")[0])
    make = (ROOT / "native" / "Makefile").read_text()
    make_list = re.search(r"INIT_SRC := ((?:[^\n]*\\\n)*[^\n]*)", make)
    assert make_list, "INIT_SRC not found in native/Makefile"
    native = ["native/" + s for s in make_list.group(1).replace("\\\n", " ").split()]
    node = subprocess.run(
        ["node", str(ROOT / "bindings" / "node" / "scripts" / "init.js"), "sources"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert sorted(python) == sorted(native) == sorted(node)
