"""The C core for macOS (x86_64, arm64) and Windows (x86_64), compiled and linked on Linux.

For each target, `zig cc` (the ziglang package) builds native/src/*.c into a shared library with
the warnings of native/Makefile as errors, and its exported symbols must be native/abi/symbols.txt
exactly (llvm-nm for Mach-O, llvm-readobj for the DLL's export table). Where the headers allow, the
Python extension is built too: for macOS against this Python's headers (the limited API, which
does not depend on the platform for what _native.c uses), exporting PyInit__native besides the
ABI; for Windows there is no pyconfig.h on Linux, so it is left out. The Go package is built for
each target as well (cgo with zig cc: the *_other.c wrappers in, the *_linux.c ones out).

Run from the repository root with ziglang installed: ``python ci/cross_compile.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(str(p) for p in (ROOT / "native" / "src").glob("*.c"))
WARN = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-Wpedantic", "-Wshadow", "-Wstrict-prototypes"]
INCLUDE = f"-I{ROOT / 'native' / 'include'}"
FLAGS = [*WARN, "-O2", "-fvisibility=hidden", "-DA3S_BUILDING", INCLUDE]
# the extension's flags are setup.py's (CPython's slot tables need no -Wpedantic)
EXT_FLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-fvisibility=hidden", "-O2", INCLUDE]
# zig target, library file name, GOOS/GOARCH, whether this Python's headers fit it
TARGETS = [
    ("x86_64-macos", "liba3s.dylib", ("darwin", "amd64"), True),
    ("aarch64-macos", "liba3s.dylib", ("darwin", "arm64"), True),
    ("x86_64-windows-gnu", "a3s.dll", ("windows", "amd64"), False),
]


def run(argv: list[str], env: dict[str, str] | None = None) -> str:
    print("+", " ".join(argv), flush=True)
    done = subprocess.run(
        argv, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip
    if done.returncode != 0:
        sys.stdout.write(done.stdout)
        sys.exit(f"cross_compile: {argv[0]} exited {done.returncode}")
    return done.stdout


def exports(library: Path) -> set[str]:
    """The symbols a Mach-O library or a DLL exports, without Mach-O's leading underscore."""
    if library.suffix == ".dll":
        out = run(["llvm-readobj", "--coff-exports", str(library)])
        return {line.split(":", 1)[1].strip() for line in out.splitlines() if "Name:" in line}
    out = run(["llvm-nm", "--extern-only", "--defined-only", str(library)])
    return {
        f[2].removeprefix("_") for f in (line.split() for line in out.splitlines()) if f[1] == "T"
    }


def expect_exports(library: Path, expected: set[str]) -> None:
    got = exports(library)
    if got != expected:
        sys.exit(
            f"cross_compile: {library} exports differ from native/abi/symbols.txt: "
            f"missing {sorted(expected - got)}, extra {sorted(got - expected)}"
        )
    print(f"cross_compile: {library.parent.name}/{library.name}: {len(got)} exports as expected")


def main() -> None:
    zig_cc = [sys.executable, "-m", "ziglang", "cc"]
    symbols = set((ROOT / "native" / "abi" / "symbols.txt").read_text().split())
    py_include = sysconfig.get_paths()["include"]
    with tempfile.TemporaryDirectory(prefix="codeward-cross-") as tmp:
        for target, name, (goos, goarch), python_headers in TARGETS:
            out = Path(tmp) / target
            out.mkdir()
            cc = [*zig_cc, "-target", target]
            library = out / name
            run([*cc, *FLAGS, "-shared", *SOURCES, "-o", str(library)])
            expect_exports(library, symbols)
            if python_headers:
                ext = out / "_native.abi3.so"
                glue = str(ROOT / "python" / "codeward" / "_native.c")
                run([
                    *cc, *EXT_FLAGS, "-DPy_LIMITED_API=0x030A0000", f"-I{py_include}", "-shared",
                    "-Wl,-undefined,dynamic_lookup", glue, *SOURCES, "-o", str(ext),
                ])  # fmt: skip
                expect_exports(ext, symbols | {"PyInit__native"})
            else:
                print(f"cross_compile: {target}: the Python extension needs Windows' pyconfig.h")
            env = {
                "GOOS": goos, "GOARCH": goarch, "CGO_ENABLED": "1", "GOTOOLCHAIN": "local",
                "GOFLAGS": "-mod=mod", "CC": " ".join(cc),
            }  # fmt: skip
            run(["go", "build", "-o", str(out / "go.a"), "./bindings/go"], env)
            print(f"cross_compile: {target}: the Go package builds for {goos}/{goarch}")
    print("cross_compile: ok")


if __name__ == "__main__":
    main()
