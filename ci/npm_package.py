"""The npm package as its users get it: pack it, install it into fresh projects, run the vectors.

1. prebuildify makes the linux-x64 (glibc) prebuild in prebuilds/, compiled by `zig cc` for glibc
   2.28 (the floor of Node's own Linux builds), so it loads wherever an official Node 18+ runs;
   next to it goes a3s-init, the sandbox's init, linked statically (it depends on no library);
2. `npm pack` makes codeward-<version>.tgz, which must carry every C source and header the addon
   compiles, the init's sources, the prebuild and its init, LICENSE and the project URLs, and
   nothing else;
3. in a fresh directory `npm install <tgz>` with npm_config_build_from_source=true compiles the
   addon and the init from the tarball's sources; in another, `npm install <tgz>` finds the
   prebuild and compiles nothing (CC=false); in a third, `npm install --ignore-scripts <tgz>`
   runs no script and loads the prebuild; in each, `require('codeward')` runs the shared policy
   vectors and, with a real sandbox, the shared sandbox vectors (the test files of this
   checkout, pointed at the installed package), and in the last two also as an unprivileged
   user (setpriv to 65534, from a copy of the tests in the world-readable project), where the
   prebuild-only install also runs the sandbox's lifetime tests (a worker's exit, SIGKILL), and
   as root the network grant and owned process tests.

Before 1, `npm pack` without a prebuild must refuse and name the command that builds it (its
prepack script, bindings/node/scripts/pack.js), and the tarball's README.md must be the Node one.

Run from the repository root after `npm ci`: ``python ci/npm_package.py [--zig PYTHON]``;
``--prebuild-only`` makes the prebuild (and the stamp `npm pack` checks) and stops: what a
maintainer runs before `npm publish`.
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
PREBUILD_INIT = PREBUILD.parent / "a3s-init"
GLIBC_FLOOR = "2.28"
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
# What the tarball must hold besides the files of "files": npm adds README, LICENSE, package.json.
REQUIRED = [
    "LICENSE",
    "README.md",
    "package.json",
    "binding.gyp",
    "bindings/node/binding.c",
    "bindings/node/sandbox.c",
    "bindings/node/glue.h",
    "bindings/node/index.js",
    "bindings/node/index.d.ts",
    "bindings/node/lib/native.js",
    "bindings/node/scripts/sources.js",
    "bindings/node/scripts/init.js",
    "native/include/a3s/a3s.h",
    "native/init/a3s_init.c",
    "native/init/init.h",
    "prebuilds/linux-x64/codeward.glibc.node",
    "prebuilds/linux-x64/a3s-init",
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
    # the init first: the addon is compiled with its SHA-256 (bindings/node/scripts/init.js);
    # outside build/, which node-gyp rebuild empties
    init = Path(tempfile.mkdtemp(prefix="codeward-prebuild-")) / "a3s-init"
    prebuild_init(init)
    env = {**node_dir(), "CC": cc, "CXX": cc, "LINK": cc, "A3S_PREBUILD_INIT": str(init)}
    run(["npm", "run", "prebuildify"], env=env)
    if not PREBUILD.is_file():
        fail(f"prebuildify made no {PREBUILD.relative_to(ROOT)}")
    versions = run(["objdump", "-T", str(PREBUILD)], quiet=True)
    needed = {w.strip("()") for w in versions.split() if w.strip("()").startswith("GLIBC_")}
    newest = max((tuple(map(int, v[6:].split("."))) for v in needed), default=(0,))
    if newest > tuple(map(int, GLIBC_FLOOR.split("."))):
        fail(f"the prebuild needs GLIBC_{'.'.join(map(str, newest))}, above {GLIBC_FLOOR}")
    if ".symtab" in run(["objdump", "-h", str(PREBUILD)], quiet=True):
        fail("the prebuild is not stripped")
    shutil.copy2(init, PREBUILD_INIT)
    shutil.rmtree(init.parent)
    run(["node", "bindings/node/scripts/pack.js", "stamp"])  # what prepack checks


def pack_refuses_without_prebuild() -> None:
    """A checkout with no prebuild: `npm pack` (and so `npm publish`) stops, naming the command."""
    shutil.rmtree(ROOT / "prebuilds", ignore_errors=True)
    done = subprocess.run(
        ["npm", "pack", "--dry-run"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if done.returncode == 0 or "ci/npm_package.py --prebuild-only" not in done.stderr:
        fail(f"npm pack without a prebuild did not refuse with the command: {done.stderr!r}")
    if (ROOT / ".pack-saved-readme.md").exists():
        fail("a refused npm pack left the README swapped")


def prebuild_init(out: Path) -> None:
    """a3s-init for the prebuild: static (a static C library runs on any kernel glibc supports,
    whatever C library the machine has), stripped, from the sources binding.gyp compiles."""
    sources = run(["node", "bindings/node/scripts/init.js", "sources"], quiet=True).split()
    flags = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-O2", "-Inative/include", "-static", "-s"]
    run(["cc", *flags, *sources, "-o", str(out)])
    headers = run(["objdump", "-p", str(out)], quiet=True)
    if "NEEDED" in headers or "INTERP" in headers:
        fail(f"the prebuild's {out.name} is not static")


def pack(out: Path) -> Path:
    pack = ["npm", "pack", "--json", "--pack-destination", str(out)]
    listing = json.loads(run(pack, quiet=True))
    tgz = out / listing[0]["filename"]
    with tarfile.open(tgz) as tar:
        names = {n.removeprefix("package/") for n in tar.getnames()}
        manifest = json.load(tar.extractfile("package/package.json"))  # type: ignore[arg-type]
        readme = tar.extractfile("package/README.md").read().decode()  # type: ignore[union-attr]
    if not readme.startswith("# codeward for Node.js") or "](../../" in readme:
        fail(f"{tgz.name}'s README.md is not the Node README with absolute links")
    repository_readme = (ROOT / "README.md").read_text(encoding="utf-8")
    restored = repository_readme.startswith("# codeward\n")
    if (ROOT / ".pack-saved-readme.md").exists() or not restored:
        fail("npm pack did not put the repository's README.md back")
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
    size = tgz.stat().st_size
    documented = documented_size()
    if not 0.75 * documented <= size <= 1.25 * documented:
        fail(f"{tgz.name} is {size} bytes; docs/packaging.md says {documented / 1e6:.1f} MB")
    print(f"npm_package: {tgz.name}: {size} bytes, {len(names)} files")
    return tgz


def documented_size() -> float:
    """The tarball's size in docs/packaging.md's table ("| `codeward-0.1.0.tgz` | N MB"), bytes."""
    import re

    text = (ROOT / "docs" / "packaging.md").read_text(encoding="utf-8")
    found = re.search(r"\| `codeward-[0-9.]+\.tgz` \| ([0-9.]+) MB", text)
    if not found:
        fail("docs/packaging.md does not state the tarball's size")
    assert found is not None
    return float(found.group(1)) * 1e6


def node_test(project: Path, tests: list[str], *, nobody: bool = False) -> None:
    """node --test of this checkout's test files against the package installed in project.

    As 65534 the tests run from a copy in the (world-readable) project, the vectors with them.
    """
    env = {"CODEWARD_TEST_INSTALLED": str(project)}
    files = [ROOT / "bindings" / "node" / "test" / t for t in tests]
    prefix: list[str] = []
    if nobody:
        copies = project / "codeward-tests"
        if not copies.exists():
            copies.mkdir()
            shutil.copy(ROOT / "tests" / "vectors" / "sandbox.json", copies)
            home = copies / "home"
            home.mkdir()
            os.chown(home, 65534, 65534)
        # the test files' shared helper (bindings/node/test/sandboxkit.js) goes along
        for f in [*files, ROOT / "bindings" / "node" / "test" / "sandboxkit.js"]:
            shutil.copy(f, copies)
        files = [copies / f.name for f in files]
        env |= {"A3S_VECTORS_DIR": str(copies), "HOME": str(copies / "home")}
        prefix = NOBODY
    run([*prefix, "node", "--test", *map(str, files)], cwd=project, env=env, summary=True)


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
    init = expected.parent / "a3s-init"
    if not os.access(init, os.X_OK) or os.stat(init).st_mode & 0o005 != 0o005:
        fail(f"{init} is missing, or not executable by every user")
    node_test(
        project,
        [
            "vectors.test.js",
            "sandbox-vectors.test.js",
            "errors.test.js",
            "netgrant-vectors.test.js",
        ],
    )
    if how == "ignore-scripts":  # the grant's mediator and owned processes, as installed
        node_test(project, ["netgrant.test.js", "process.test.js", "signal-vectors.test.js"])
    if how != "default" and os.geteuid() == 0:
        lifetime = ["sandbox.test.js"] if how == "ignore-scripts" else []
        node_test(project, ["sandbox-vectors.test.js", *lifetime], nobody=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zig", default=sys.executable, help="a Python with ziglang installed")
    parser.add_argument(
        "--prebuild-only", action="store_true", help="make the prebuild npm pack needs, and stop"
    )
    args = parser.parse_args()
    if args.prebuild_only:
        prebuild(args.zig)
        print("npm_package: the prebuild is in prebuilds/linux-x64: npm pack / npm publish now")
        return
    pack_refuses_without_prebuild()
    prebuild(args.zig)
    with tempfile.TemporaryDirectory(prefix="codeward-npm-") as tmp:
        work = Path(tmp)
        work.chmod(0o755)  # the unprivileged runs read the installed package
        tgz = pack(work)
        for how in ("source", "default", "ignore-scripts"):
            consume(tgz, work, how)
    print("npm_package: ok")


if __name__ == "__main__":
    main()
