"""The C core for macOS (x86_64, arm64) and Windows (x86_64), compiled and linked on Linux.

For each target, `zig cc` (the ziglang package) compiles native/src/*.c with the warnings of
native/Makefile as errors, and the symbols the build exports must be native/abi/symbols.txt
exactly. For macOS the sources are linked into a dylib and llvm-nm reads its exports. For Windows
each source is compiled to an object and llvm-readobj reads the objects' linker directives
(-export:NAME, what __declspec(dllexport) asks the linker for): linking a DLL would first make zig
build the MinGW C runtime, two CPU-minutes on a fresh machine. Where the headers allow, the Python
extension is built too: for macOS against this Python's headers (the limited API, which does not
depend on the platform for what _native.c uses), exporting PyInit__native besides the ABI; for
Windows there is no pyconfig.h on Linux, so it is left out. The Go package is built for
darwin/arm64 as well (cgo with zig cc: the *_other.c wrappers in, the *_linux.c ones out); not
for windows/amd64, where cgo links a probe program and so needs the MinGW runtime too.

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
# zig target, GOOS/GOARCH to build the Go package for (None: none, see the docstring)
TARGETS = [
    ("x86_64-macos", None),
    ("aarch64-macos", ("darwin", "arm64")),
    ("x86_64-windows-gnu", None),
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


def macos_exports(library: Path) -> set[str]:
    """The symbols a Mach-O library exports, without Mach-O's leading underscore."""
    out = run(["llvm-nm", "--extern-only", "--defined-only", str(library)])
    fields = (line.split() for line in out.splitlines())
    return {f[2].removeprefix("_") for f in fields if f[1] == "T"}


def windows_exports(objects: list[Path]) -> set[str]:
    """The symbols COFF objects ask the linker to export (-export:NAME directives)."""
    out = run(["llvm-readobj", "--coff-directives", *map(str, objects)])
    return {w.split(":", 1)[1] for w in out.split() if w.startswith("-export:")}


def expect_exports(what: str, got: set[str], expected: set[str]) -> None:
    if got != expected:
        sys.exit(
            f"cross_compile: {what} exports differ from native/abi/symbols.txt: "
            f"missing {sorted(expected - got)}, extra {sorted(got - expected)}"
        )
    print(f"cross_compile: {what}: {len(got)} exports as expected")


def main() -> None:
    zig_cc = [sys.executable, "-m", "ziglang", "cc"]
    symbols = set((ROOT / "native" / "abi" / "symbols.txt").read_text().split())
    extension = symbols | {"PyInit__native"}
    py_include = sysconfig.get_paths()["include"]
    with tempfile.TemporaryDirectory(prefix="codeward-cross-") as tmp:
        for target, go_target in TARGETS:
            out = Path(tmp) / target
            out.mkdir()
            cc = [*zig_cc, "-target", target]
            if target.endswith("-macos"):
                library = out / "liba3s.dylib"
                run([*cc, *FLAGS, "-shared", *SOURCES, "-o", str(library)])
                expect_exports(f"{target} liba3s.dylib", macos_exports(library), symbols)
                ext = out / "_native.abi3.so"
                glue = str(ROOT / "python" / "codeward" / "_native.c")
                run([
                    *cc, *EXT_FLAGS, "-DPy_LIMITED_API=0x030A0000", f"-I{py_include}", "-shared",
                    "-Wl,-undefined,dynamic_lookup", glue, *SOURCES, "-o", str(ext),
                ])  # fmt: skip
                expect_exports(f"{target} _native.abi3.so", macos_exports(ext), extension)
            else:
                objects = [out / f"{Path(src).stem}.o" for src in SOURCES]
                for src, obj in zip(SOURCES, objects, strict=True):
                    run([*cc, *FLAGS, "-c", src, "-o", str(obj)])
                expect_exports(f"{target} objects", windows_exports(objects), symbols)
                print(f"cross_compile: {target}: the Python extension needs Windows' pyconfig.h")
            if go_target:
                goos, goarch = go_target
                env = {
                    "GOOS": goos, "GOARCH": goarch, "CGO_ENABLED": "1", "GOTOOLCHAIN": "local",
                    "GOFLAGS": "-mod=mod", "CC": " ".join(cc),
                }  # fmt: skip
                run(["go", "build", "-o", str(out / "go.a"), "./bindings/go"], env)
                print(f"cross_compile: {target}: the Go package builds for {goos}/{goarch}")
    print("cross_compile: ok")


if __name__ == "__main__":
    main()
