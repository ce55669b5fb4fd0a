"""The C core and the Python wheels for macOS (x86_64, arm64) and Windows (x86_64), built on Linux.

For each target, `zig cc` (the ziglang package) compiles native/src/*.c with the warnings of
native/Makefile as errors, and the symbols the build exports must be native/abi/symbols.txt
exactly: for macOS from the linked dylib (llvm-nm), for Windows from the objects' linker
directives (llvm-readobj --coff-directives; -export:NAME is what __declspec(dllexport) asks for).

Then the abi3 extension (python/codeward/_native.c over the core, Py_LIMITED_API 3.10) is linked
as each platform loads it and checked:

- macOS: `_native.abi3.so` linked with `-undefined dynamic_lookup` (the interpreter provides the
  Python symbols), for macOS 11.0 (LC_BUILD_VERSION checked), needing only libSystem; it exports
  PyInit__native and the C ABI.
- Windows: `_native.pyd` linked against python3.dll, the stable ABI's DLL, and nothing else of
  Python. The headers are this machine's with ci/pyconfig_win_amd64.h in place of their Linux
  pyconfig.h; the import library is made by `zig dlltool` from a .def that lists the Python
  symbols the compiled glue references (each compiled only because the limited-API headers
  declare it; data symbols marked DATA, from the headers' PyAPI_DATA). Checked: the imports are
  python3.dll, KERNEL32.dll and the Universal CRT only, the exports PyInit__native and the C ABI.
  The first link makes zig build its MinGW start-up code and CRT import libraries (about a CPU
  minute; cached in zig's global cache afterwards).

Both Python symbol sets must be the same, and each extension is packed into a wheel tagged as
cibuildwheel's would be (cp310-abi3-macosx_11_0_x86_64 ..., win_amd64) with `wheel pack`, from
the package's Python files and the metadata setuptools prepares; the wheel's files, WHEEL tags
and RECORD are checked, and pip must accept it for that platform (`pip install --dry-run
--platform ...`). What the wheels do on their systems is tested by .github/workflows/wheels.yml
on macOS and Windows runners; docs/packaging.md says what each platform gets.

The Go package is built for darwin/arm64 as well (cgo with zig cc: the *_other.c wrappers in,
the *_linux.c ones out); not for windows/amd64, where cgo links a probe program per package.

Run from the repository root with ziglang, wheel and setuptools installed:
``python ci/cross_compile.py [--wheel-dir DIR]`` (DIR keeps the wheels).
"""

from __future__ import annotations

import argparse
import base64
import csv
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted((ROOT / "native" / "src").glob("*.c"))
GLUE = ROOT / "python" / "codeward" / "_native.c"
WIN_PYCONFIG = ROOT / "ci" / "pyconfig_win_amd64.h"
WARN = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-Wpedantic", "-Wshadow", "-Wstrict-prototypes"]
INCLUDE = f"-I{ROOT / 'native' / 'include'}"
FLAGS = [*WARN, "-O2", "-fvisibility=hidden", "-DA3S_BUILDING", INCLUDE]
# the glue's flags are setup.py's (CPython's slot tables need no -Wpedantic)
EXT_FLAGS = [
    "-std=c11", "-Wall", "-Wextra", "-Werror", "-fvisibility=hidden", "-O2", "-DA3S_BUILDING",
    "-DPy_LIMITED_API=0x030A0000", INCLUDE,
]  # fmt: skip
# MSVC, which builds the Windows wheel, has no variable-length arrays: refused here first
MSVC_GUARD = ["-Wvla"]
ABI3 = "cp310-abi3"
MACOS_MIN = "11.0"  # the wheels' macosx_11_0 tags say the same
# what a .pyd linked by zig cc may import besides python3.dll: the Universal CRT and kernel32
WINDOWS_SYSTEM_DLL = re.compile(r"(KERNEL32|api-ms-win-crt-[a-z]+-l1-1-0)\.dll", re.IGNORECASE)


@dataclass(frozen=True)
class Target:
    zig: str  # zig's target triple
    platform_tag: str  # the wheel's platform tag
    go: tuple[str, str] | None = None  # GOOS/GOARCH to build the Go package for

    @property
    def macos(self) -> bool:
        return "-macos" in self.zig


TARGETS = [
    Target(f"x86_64-macos.{MACOS_MIN}", "macosx_11_0_x86_64"),
    Target(f"aarch64-macos.{MACOS_MIN}", "macosx_11_0_arm64", ("darwin", "arm64")),
    Target("x86_64-windows-gnu", "win_amd64"),
]


def run(argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    print("+", " ".join(argv), flush=True)
    done = subprocess.run(
        argv, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, cwd=cwd,
    )  # fmt: skip
    if done.returncode != 0:
        sys.stdout.write(done.stdout)
        sys.exit(f"cross_compile: {argv[0]} exited {done.returncode}")
    return done.stdout


def fail(message: str) -> None:
    sys.exit(f"cross_compile: {message}")


def compile_all(cc: list[str], flags: list[str], sources: list[Path], out: Path) -> list[Path]:
    """Each source to an object in out, as many at once as there are CPUs."""
    objects = [out / f"{src.stem}.o" for src in sources]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        jobs = [
            pool.submit(run, [*cc, *flags, "-c", str(src), "-o", str(obj)])
            for src, obj in zip(sources, objects, strict=True)
        ]
        for job in jobs:
            job.result()
    return objects


def macos_exports(library: Path) -> set[str]:
    """The symbols a Mach-O library exports, without Mach-O's leading underscore."""
    out = run(["llvm-nm", "--extern-only", "--defined-only", str(library)])
    fields = (line.split() for line in out.splitlines())
    return {f[2].removeprefix("_") for f in fields if f[1] == "T"}


def python_symbols(names: set[str]) -> set[str]:
    return {n for n in names if n.startswith(("Py", "_Py"))}


def macos_undefined(library: Path) -> set[str]:
    out = run(["llvm-nm", "--undefined-only", str(library)])
    return {line.split()[-1].removeprefix("_") for line in out.split("\n") if line.strip()}


def windows_exports(objects: list[Path]) -> set[str]:
    """The symbols COFF objects ask the linker to export (-export:NAME directives)."""
    out = run(["llvm-readobj", "--coff-directives", *map(str, objects)])
    return {w.split(":", 1)[1] for w in out.split() if w.startswith("-export:")}


def pe_exports(dll: Path) -> set[str]:
    out = run(["llvm-readobj", "--coff-exports", str(dll)])
    return {line.split(":", 1)[1].strip() for line in out.splitlines() if "Name:" in line}


def pe_imports(dll: Path) -> dict[str, set[str]]:
    """The DLLs a PE file imports from, each with the symbol names it takes."""
    imports: dict[str, set[str]] = {}
    current: set[str] = set()
    for line in run(["llvm-readobj", "--coff-imports", str(dll)]).splitlines():
        key, _, value = line.strip().partition(": ")
        if key == "Name":
            current = imports.setdefault(value.strip(), set())
        elif key == "Symbol":
            current.add(value.split()[0])
    return imports


def expect_exports(what: str, got: set[str], expected: set[str]) -> None:
    if got != expected:
        fail(
            f"{what} exports differ from native/abi/symbols.txt (+ PyInit__native): "
            f"missing {sorted(expected - got)}, extra {sorted(got - expected)}"
        )
    print(f"cross_compile: {what}: {len(got)} exports as expected")


def macos_extension(cc: list[str], core: list[Path], out: Path, extension: set[str]) -> Path:
    """_native.abi3.so for one macOS target; returns it after checking what it needs."""
    include = sysconfig.get_paths()["include"]  # LP64 like macOS: the limited API is the same
    glue = out / "_native.o"
    run([*cc, *EXT_FLAGS, f"-I{include}", "-c", str(GLUE), "-o", str(glue)])
    ext = out / "_native.abi3.so"
    link = [*cc, "-shared", "-s", "-Wl,-undefined,dynamic_lookup", str(glue), *map(str, core)]
    run([*link, "-o", str(ext)])
    expect_exports(f"{out.name} _native.abi3.so", macos_exports(ext), extension)
    minimum = run(["llvm-readobj", "--macho-version-min", str(ext)])
    if not re.search(rf"Version: {re.escape(MACOS_MIN)}\b", minimum):
        fail(f"{out.name} _native.abi3.so is not built for macOS {MACOS_MIN}:\n{minimum}")
    libraries = run(["llvm-objdump", "--macho", "--dylibs-used", str(ext)]).split("\n")[1:]
    others = [lib.split()[0] for lib in libraries if lib.strip()]
    if others != [str(ext), "/usr/lib/libSystem.B.dylib"]:  # (its own install name first)
        fail(f"{out.name} _native.abi3.so links more than libSystem: {others}")
    print(f"cross_compile: {out.name} _native.abi3.so: macOS {MACOS_MIN}, libSystem only")
    return ext


def windows_headers(out: Path) -> Path:
    """This Python's headers with the Windows pyconfig.h in place of the Linux one."""
    include = out / "python-include"
    shutil.copytree(sysconfig.get_paths()["include"], include)
    shutil.copyfile(WIN_PYCONFIG, include / "pyconfig.h")
    return include


def python3_def(glue: Path, include: Path, out: Path) -> tuple[Path, set[str]]:
    """A .def for python3.dll listing the Python symbols the compiled glue imports."""
    undefined = run(["llvm-nm", "--undefined-only", str(glue)]).split()
    names = {n.removeprefix("__imp_") for n in undefined if n.startswith("__imp_")}
    names = python_symbols(names)
    data: set[str] = set()
    for header in include.rglob("*.h"):
        text = header.read_text(errors="replace")
        data |= set(re.findall(r"PyAPI_DATA\([^;]*?\)\s*\**\s*(\w+)\s*(?:\[|;)", text))
    lines = [f"    {n} DATA" if n in data else f"    {n}" for n in sorted(names)]
    definition = out / "python3.def"
    definition.write_text("LIBRARY python3.dll\nEXPORTS\n" + "\n".join(lines) + "\n")
    return definition, names


def windows_extension(
    zig: list[str], cc: list[str], core: list[Path], out: Path, extension: set[str]
) -> tuple[Path, set[str]]:
    """_native.pyd linked against python3.dll; returns it and the Python symbols it imports."""
    include = windows_headers(out)
    glue = out / "_native.o"
    run([*cc, *EXT_FLAGS, *MSVC_GUARD, f"-I{include}", "-c", str(GLUE), "-o", str(glue)])
    definition, names = python3_def(glue, include, out)
    implib = out / "libpython3.a"
    run([*zig, "dlltool", "-m", "i386:x86-64", "-d", str(definition), "-l", str(implib)])
    pyd = out / "_native.pyd"
    run([*cc, "-shared", "-s", str(glue), *map(str, core), f"-L{out}", "-lpython3", "-o", str(pyd)])
    expect_exports(f"{out.name} _native.pyd", pe_exports(pyd), extension)
    imports = pe_imports(pyd)
    python = {dll for dll in imports if dll.lower().startswith("python")}
    if python != {"python3.dll"}:
        fail(f"{out.name} _native.pyd must import python3.dll alone, not {sorted(python)}")
    others = sorted(dll for dll in imports if dll != "python3.dll")
    if not all(WINDOWS_SYSTEM_DLL.fullmatch(dll) for dll in others):
        fail(f"{out.name} _native.pyd imports DLLs beyond the CRT and kernel32: {others}")
    if imports["python3.dll"] != names:
        fail(f"{out.name} _native.pyd: python3.dll imports differ from {definition.name}")
    headers = run(["llvm-readobj", "--file-headers", str(pyd)])
    if "IMAGE_FILE_MACHINE_AMD64" not in headers or "IMAGE_FILE_DLL" not in headers:
        fail(f"{out.name} _native.pyd is not an x86-64 DLL")
    print(
        f"cross_compile: {out.name} _native.pyd: {len(names)} symbols from python3.dll, "
        f"otherwise only {', '.join(others)}"
    )
    return pyd, names


def record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def package_files() -> list[Path]:
    """What the wheel carries of python/codeward besides the extension (pyproject.toml's data)."""
    package = ROOT / "python" / "codeward"
    files = [p for p in package.rglob("*.py") if "__pycache__" not in p.parts]
    return sorted([*files, package / "py.typed", package / "_native.pyi"])


def pack_wheel(extension: Path, tag: str, metadata: Path, out: Path, wheel_dir: Path) -> Path:
    """A wheel of the package with this extension, tagged cp310-abi3-<tag>, by `wheel pack`."""
    tree = out / "wheel"
    for src in package_files():
        dest = tree / src.relative_to(ROOT / "python")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
    shutil.copyfile(extension, tree / "codeward" / extension.name)
    dist_info = tree / metadata.name
    shutil.copytree(metadata, dist_info)
    (dist_info / "WHEEL").write_text(
        "Wheel-Version: 1.0\nGenerator: codeward ci/cross_compile.py\n"
        f"Root-Is-Purelib: false\nTag: {ABI3}-{tag}\n"
    )
    run([sys.executable, "-m", "wheel", "pack", str(tree), "--dest-dir", str(wheel_dir)])
    (wheel,) = wheel_dir.glob(f"codeward-*-{ABI3}-{tag}.whl")
    check_wheel(wheel, extension.name, tag)
    return wheel


def check_wheel(wheel: Path, extension: str, tag: str) -> None:
    """The files, tags and RECORD of a packed wheel; and that pip takes it for its platform."""
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/WHEEL"))
        expected = {f"codeward/{extension}", "codeward/__init__.py", "codeward/py.typed"}
        expected |= {f"{dist_info}/{n}" for n in ("METADATA", "WHEEL", "RECORD")}
        expected |= {f"{dist_info}/entry_points.txt", f"{dist_info}/licenses/LICENSE"}
        if not expected <= names:
            fail(f"{wheel.name} lacks {sorted(expected - names)}")
        natives = sorted(n for n in names if "/_native." in n)
        if natives != sorted([f"codeward/{extension}", "codeward/_native.pyi"]):
            fail(f"{wheel.name}: extension files {natives}")
        meta = zf.read(f"{dist_info}/WHEEL").decode()
        if f"Tag: {ABI3}-{tag}\n" not in meta or "Root-Is-Purelib: false" not in meta:
            fail(f"{wheel.name}: WHEEL says\n{meta}")
        rows = list(csv.reader(io.StringIO(zf.read(f"{dist_info}/RECORD").decode())))
        recorded = {row[0]: row[1] for row in rows}
        if set(recorded) != names:
            fail(f"{wheel.name}: RECORD lists {sorted(set(recorded) ^ names)} wrongly")
        for name, digest in recorded.items():
            if digest and digest != record_hash(zf.read(name)):
                fail(f"{wheel.name}: RECORD hash of {name} is wrong")
    with tempfile.TemporaryDirectory() as target:
        run([
            sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--no-index",
            "--only-binary=:all:", "--platform", tag, "--implementation", "cp",
            "--python-version", "3.13", "--target", target, str(wheel),
        ])  # fmt: skip
    print(f"cross_compile: {wheel.name}: {len(names)} files, tags and RECORD checked; pip takes it")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--wheel-dir", type=Path, help="keep the wheels here")
    args = parser.parse_args()
    zig = [sys.executable, "-m", "ziglang"]
    symbols = set((ROOT / "native" / "abi" / "symbols.txt").read_text().split())
    extension = symbols | {"PyInit__native"}
    imported: dict[str, set[str]] = {}
    with tempfile.TemporaryDirectory(prefix="codeward-cross-") as tmp:
        metadata_dir = Path(tmp) / "metadata"
        metadata_dir.mkdir()
        from setuptools import build_meta  # (cwd: the repository, whose pyproject.toml it reads)

        os.chdir(ROOT)
        metadata = metadata_dir / build_meta.prepare_metadata_for_build_wheel(str(metadata_dir))
        wheel_dir = args.wheel_dir.resolve() if args.wheel_dir else Path(tmp) / "wheels"
        wheel_dir.mkdir(parents=True, exist_ok=True)
        for target in TARGETS:
            out = Path(tmp) / target.zig
            out.mkdir()
            cc = [*zig, "cc", "-target", target.zig]
            flags = FLAGS if target.macos else [*FLAGS, *MSVC_GUARD]
            core = compile_all(cc, flags, SOURCES, out)
            if target.macos:
                library = out / "liba3s.dylib"
                run([*cc, "-shared", *map(str, core), "-o", str(library)])
                expect_exports(f"{target.zig} liba3s.dylib", macos_exports(library), symbols)
                ext = macos_extension(cc, core, out, extension)
                imported[target.zig] = python_symbols(macos_undefined(ext))
            else:
                expect_exports(f"{target.zig} objects", windows_exports(core), symbols)
                ext, imported[target.zig] = windows_extension(zig, cc, core, out, extension)
            pack_wheel(ext, target.platform_tag, metadata, out, wheel_dir)
            if target.go:
                goos, goarch = target.go
                env = {
                    "GOOS": goos, "GOARCH": goarch, "CGO_ENABLED": "1", "GOTOOLCHAIN": "local",
                    "GOFLAGS": "-mod=mod", "CC": " ".join(cc),
                }  # fmt: skip
                run(["go", "build", "-o", str(out / "go.a"), "./bindings/go"], env)
                print(f"cross_compile: {target.zig}: the Go package builds for {goos}/{goarch}")
        if len({frozenset(s) for s in imported.values()}) != 1:
            fail(f"the extensions need different Python symbols: {imported}")
        print(f"cross_compile: every extension needs the same {len(next(iter(imported.values())))}")
    print("cross_compile: ok")


if __name__ == "__main__":
    main()
