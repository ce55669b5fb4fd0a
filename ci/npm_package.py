"""The npm package as its users get it: pack it, install it into fresh projects, run the vectors.

1. prebuildify makes the linux-x64 (glibc) prebuild in prebuilds/, compiled by `zig cc` for glibc
   2.28 (the floor of Node's own Linux builds), so it loads wherever an official Node 18+ runs;
2. `npm pack` makes codeward-<version>.tgz, which must carry every C source and header the addon
   compiles, the init's sources, the prebuild, LICENSE and the project URLs, and nothing else;
3. in a fresh directory `npm install <tgz>` with npm_config_build_from_source=true compiles the
   addon from the tarball's sources; in another, `npm install <tgz>` finds the prebuild and
   compiles nothing (CC=false); in a third, `npm install --ignore-scripts <tgz>` runs no script
   and loads the prebuild; in each, `require('codeward')` runs the shared vectors
   (bindings/node/test/vectors.test.js of this checkout, pointed at the installed package).

Run from the repository root after `npm ci`: ``python ci/npm_package.py [--zig PYTHON]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PREBUILD = ROOT / "prebuilds" / "linux-x64" / "codeward.glibc.node"
GLIBC_FLOOR = "2.28"
# What the tarball must hold besides the files of "files": npm adds README, LICENSE, package.json.
REQUIRED = [
    "LICENSE",
    "README.md",
    "package.json",
    "binding.gyp",
    "bindings/node/binding.c",
    "bindings/node/index.js",
    "bindings/node/index.d.ts",
    "bindings/node/lib/native.js",
    "bindings/node/scripts/sources.js",
    "native/include/a3s/a3s.h",
    "native/init/a3s_init.c",
    "native/init/init.h",
    "prebuilds/linux-x64/codeward.glibc.node",
]
ALLOWED_TOP = {
    "LICENSE",
    "README.md",
    "package.json",
    "binding.gyp",
    "bindings",
    "native",
    "prebuilds",
}


def run(
    argv: list[str],
    cwd: Path = ROOT,
    env: dict[str, str] | None = None,
    *,
    summary: bool = False,
    quiet: bool = False,
) -> str:
    """Runs argv and echoes its output: none if quiet, only a TAP stream's "# " lines if summary."""
    print("+", " ".join(argv), f"(in {cwd})", flush=True)
    done = subprocess.run(
        argv, cwd=cwd, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE, text=True
    )
    out = done.stdout
    if quiet and done.returncode == 0:
        out = ""
    elif summary and done.returncode == 0:
        out = "".join(line for line in out.splitlines(True) if line.startswith("# "))
    sys.stdout.write(out)
    if done.returncode != 0:
        sys.exit(f"npm_package: {argv[0]} exited {done.returncode}")
    return done.stdout


def fail(message: str) -> None:
    sys.exit(f"npm_package: {message}")


def node_dir() -> dict[str, str]:
    """npm_config_nodedir for node-gyp when this Node's headers are installed (no download)."""
    nodedir = run(["node", "bindings/node/scripts/nodedir.js"]).strip()
    return {"npm_config_nodedir": nodedir} if nodedir else {}


def prebuild(zig_python: str) -> None:
    """prebuildify with zig cc for x86_64 glibc GLIBC_FLOOR (C only: the link is zig cc too)."""
    shutil.rmtree(ROOT / "prebuilds", ignore_errors=True)
    cc = f"{zig_python} -m ziglang cc -target x86_64-linux-gnu.{GLIBC_FLOOR}"
    run(["npm", "run", "prebuildify"], env={**node_dir(), "CC": cc, "CXX": cc, "LINK": cc})
    if not PREBUILD.is_file():
        fail(f"prebuildify made no {PREBUILD.relative_to(ROOT)}")
    versions = run(["objdump", "-T", str(PREBUILD)], quiet=True)
    needed = {w.strip("()") for w in versions.split() if w.strip("()").startswith("GLIBC_")}
    newest = max((tuple(map(int, v[6:].split("."))) for v in needed), default=(0,))
    if newest > tuple(map(int, GLIBC_FLOOR.split("."))):
        fail(f"the prebuild needs GLIBC_{'.'.join(map(str, newest))}, above {GLIBC_FLOOR}")
    if ".symtab" in run(["objdump", "-h", str(PREBUILD)], quiet=True):
        fail("the prebuild is not stripped")


def pack(out: Path) -> Path:
    pack = ["npm", "pack", "--json", "--pack-destination", str(out)]
    listing = json.loads(run(pack, quiet=True))
    tgz = out / listing[0]["filename"]
    with tarfile.open(tgz) as tar:
        names = {n.removeprefix("package/") for n in tar.getnames()}
        manifest = json.load(tar.extractfile("package/package.json"))  # type: ignore[arg-type]
    missing = [n for n in REQUIRED if n not in names]
    core = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "native" / "src").iterdir())
    missing += [n for n in core if n not in names]
    if missing:
        fail(f"{tgz.name} lacks {missing}")
    stray = sorted(n for n in names if n.split("/")[0] not in ALLOWED_TOP)
    if stray or any("/test/" in n or n.startswith("build/") for n in names):
        fail(f"{tgz.name} carries files users do not need: {stray}")
    if manifest.get("private"):
        fail("package.json is private")
    for key in ("repository", "homepage", "bugs", "license"):
        if not manifest.get(key):
            fail(f"package.json has no {key}")
    print(f"npm_package: {tgz.name}: {tgz.stat().st_size} bytes, {len(names)} files")
    return tgz


def consume(tgz: Path, work: Path, how: str) -> None:
    """A fresh project installs the tarball, requires it and runs the shared vectors.

    how: "source" (install script compiles), "default" (install script finds the prebuild),
    "ignore-scripts" (no install script; the prebuild is loaded at require time).
    """
    project = work / how
    project.mkdir()
    run(["npm", "init", "-y"], cwd=project)
    flags = ["--no-audit", "--no-fund"]
    # a compile outside "source" would fail: none may happen
    env = {"CC": "false", "CXX": "false", "LINK": "false"}
    if how == "source":
        env = {"npm_config_build_from_source": "true", **node_dir()}
    elif how == "ignore-scripts":
        flags.append("--ignore-scripts")
    run(["npm", "install", *flags, str(tgz)], cwd=project, env=env)
    installed = project / "node_modules" / "codeward"
    built = sorted((installed / "build" / "Release").glob("*.node"))
    if how == "source" and not built:
        fail("npm install with npm_config_build_from_source compiled nothing")
    if how != "source" and (installed / "build").exists():
        fail(f"npm install ({how}) made a build/ directory")
    which = "const dir = require('path').dirname(require.resolve('codeward/package.json'));"
    which += (
        " console.log(require('codeward').version().string, require('node-gyp-build').path(dir));"
    )
    loaded = run(["node", "-e", which], cwd=project).split()
    expected = built[0] if how == "source" else installed / PREBUILD.relative_to(ROOT)
    if Path(loaded[-1]) != expected:
        fail(f"the installed package loads {loaded[-1]}, not {expected}")
    run(
        ["node", "--test", str(ROOT / "bindings" / "node" / "test" / "vectors.test.js")],
        cwd=project,
        env={"CODEWARD_TEST_INSTALLED": str(project)},
        summary=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zig", default=sys.executable, help="a Python with ziglang installed")
    args = parser.parse_args()
    prebuild(args.zig)
    with tempfile.TemporaryDirectory(prefix="codeward-npm-") as tmp:
        work = Path(tmp)
        tgz = pack(work)
        for how in ("source", "default", "ignore-scripts"):
            consume(tgz, work, how)
    print("npm_package: ok")


if __name__ == "__main__":
    main()
