"""The Go module as its users get it: the zip a proxy serves, `go get` from a fresh module.

1. ci/gomodzip builds the module zip of this checkout (golang.org/x/mod/zip, as a proxy does) into
   a directory laid out as a proxy; the zip must hold the package, the C core it compiles
   (native/src, native/include), the init's sources (native/init), LICENSE, a package doc
   (doc.go) and a README naming the repository, and none of python/, tests/, bench/, ci/,
   bindings/node/, native/tests/ (each has a go.mod of its own), at the size
   bindings/go/README.md states (within 25%);
2. a copy of ci/go_consumer (a fresh module) runs `go get` with GOPROXY=file://... and GOSUMDB=off,
   builds and runs a program that calls the API and runs a sandboxed command (the sandbox's init
   is the program itself: nothing else is installed), and runs the package's own tests from the
   module cache (with A3S_VECTORS_DIR naming a copy of the shared vectors); as root, the
   program and the sandbox vectors run again as an unprivileged user (setpriv to 65534) from a
   world-readable directory;
3. with CGO_ENABLED=0 the build fails with one error line that says cgo and a C compiler are needed.

Run from the repository root: ``python ci/go_module.py``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODULE = "github.com/codeward/codeward"
VERSION = "v0.1.0"
PACKAGE = f"{MODULE}/bindings/go"
REPOSITORY_URL = "https://github.com/codeward/codeward"
ZIP_LIMIT = 500 << 20  # the go command refuses a larger module zip (compressed or not)
REQUIRED = [
    "LICENSE",
    "README.md",
    "go.mod",
    "bindings/go/codeward.go",
    "bindings/go/nocgo.go",
    "native/include/a3s/a3s.h",
    "native/init/a3s_init.c",
    "native/init/init.h",
    "bindings/go/doc.go",
]
# What a Go user does not need: left out of the zip by a go.mod of their own (python/go.mod ...).
FORBIDDEN_PREFIXES = (
    "python/",
    "tests/",
    "bench/",
    "ci/",
    "node_modules/",
    "prebuilds/",
    "bindings/node/",
    "native/tests/",
)
# The one file a module zip cannot leave out although Go needs none of it: the npm lock file
# of the npm package that shares the repository root (package.json beside go.mod).
TOLERATED = {"package-lock.json"}
# What the consumer prints for the calls in ci/go_consumer/main.go.
EXPECTED = [
    "bash map[command:cargo test --all]: allow",
    "bash map[command:rm -rf /]: deny",
    "bash map[command:git push origin main]: ask",
    "write map[file_path:app/.env.local]: deny",
    "webfetch map[url:https://example.com]: ask",
    "malformed rule: Bash(",
    'sandbox bwrap true: "sandboxed\\n/run/a3s/init\\nrefused\\n" exit 0',
    'streamed "streamed\\n"',
    'process: "ping\\n"',
    'grant: "granted\\n403\\n" connections 1 refused 1',
    "doctor ready true, 10 checks",
    "LD_PRELOAD: invalid argument true, ok false",
    "after Close: closed true",
]
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def run(argv: list[str], cwd: Path, env: dict[str, str], *, check: bool = True) -> str:
    print("+", " ".join(argv), f"(in {cwd})", flush=True)
    done = subprocess.run(
        argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    sys.stdout.write(done.stdout)
    if check and done.returncode != 0:
        sys.exit(f"go_module: {argv[0]} exited {done.returncode}")
    return done.stdout


def fail(message: str) -> None:
    sys.exit(f"go_module: {message}")


def documented_zip_size() -> float:
    """The zip size bindings/go/README.md states ("The zip is about N MB"), in bytes."""
    import re

    text = (ROOT / "bindings" / "go" / "README.md").read_text(encoding="utf-8")
    found = re.search(r"The zip is about ([0-9.]+) (kB|MB)", " ".join(text.split()))
    if not found:
        fail("bindings/go/README.md does not state the module zip's size")
    assert found is not None
    return float(found.group(1)) * (1e3 if found.group(2) == "kB" else 1e6)


def check_zip(zip_path: Path) -> None:
    prefix = f"{MODULE}@{VERSION}/"
    with zipfile.ZipFile(zip_path) as z:
        infos = z.infolist()
        names = {i.filename.removeprefix(prefix) for i in infos}
        readme = z.read(prefix + "README.md").decode()
    core = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "native" / "src").iterdir())
    missing = [n for n in [*REQUIRED, *core] if n not in names]
    if missing:
        fail(f"the module zip lacks {missing}")
    if REPOSITORY_URL not in readme:
        fail(f"the module zip's README.md does not name {REPOSITORY_URL}")
    stray = sorted(n for n in names if n.startswith(FORBIDDEN_PREFIXES))
    if stray:
        fail(f"the module zip carries what Go users do not need: {stray[:10]} ...")
    unpacked = sum(i.file_size for i in infos)
    size = zip_path.stat().st_size
    documented = documented_zip_size()
    if not 0.75 * documented <= size <= 1.25 * documented:
        fail(
            f"the module zip is {size} bytes; bindings/go/README.md says about "
            f"{documented / 1e6:.1f} MB: update the README"
        )
    if size > ZIP_LIMIT or unpacked > ZIP_LIMIT:
        fail(f"the module zip is {size} bytes ({unpacked} unpacked), over the go command's limit")
    print(f"go_module: {zip_path.name}: {size} bytes, {unpacked} unpacked, {len(names)} files")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="codeward-go-") as tmp:
        work = Path(tmp)
        work.chmod(0o755)  # the unprivileged runs read the program and the module cache
        env = {
            **os.environ,
            "GOTOOLCHAIN": "local",
            "GOFLAGS": "-mod=mod -modcacherw",
            "CGO_ENABLED": "1",
        }
        proxy = work / "proxy"
        run(
            ["go", "run", ".", "-repo", str(ROOT), "-version", VERSION, "-out", str(proxy)],
            ROOT / "ci" / "gomodzip",
            env,
        )
        check_zip(proxy / MODULE / "@v" / f"{VERSION}.zip")

        consumer = work / "consumer"
        shutil.copytree(ROOT / "ci" / "go_consumer", consumer)
        env |= {
            "GOPROXY": proxy.as_uri(),
            "GOSUMDB": "off",
            "GOMODCACHE": str(work / "modcache"),
        }
        run(["go", "get", f"{PACKAGE}@{VERSION}"], consumer, env)
        run(["go", "build", "-o", "consumer", "."], consumer, env)
        users = [[], NOBODY] if os.geteuid() == 0 else [[]]
        for user in users:
            out = run([*user, str(consumer / "consumer")], consumer, env).splitlines()
            if out[: len(EXPECTED)] != EXPECTED or not out[-1].startswith("version 0.1.0 abi 1"):
                fail(f"the consumer printed {out}, expected {EXPECTED} and the version")
        # the shared vectors are not in the module (tests/ has a go.mod of its own): a copy
        vectors = work / "vectors"
        shutil.copytree(ROOT / "tests" / "vectors", vectors)
        env |= {"A3S_VECTORS_DIR": str(vectors)}
        run(["go", "test", "-count=1", PACKAGE], consumer, env)
        if os.geteuid() == 0:
            # the package's sandbox tests as 65534, from the module cache (world-readable)
            test_bin = work / "codeward.test"
            run(["go", "test", "-c", "-o", str(test_bin), PACKAGE], consumer, env)
            package_dir = work / "modcache" / f"{MODULE}@{VERSION}" / "bindings" / "go"
            nobody_run = "^(TestSandboxVectors|TestSIGKILLOfTheCallerTakesTheSandboxDown)$"
            run(
                [*NOBODY, str(test_bin), "-test.count=1", f"-test.run={nobody_run}"],
                package_dir,
                env,
            )

        nocgo = run(
            ["go", "build", "-o", "nocgo", "."], consumer, env | {"CGO_ENABLED": "0"}, check=False
        )
        errors = [line for line in nocgo.splitlines() if not line.startswith("#")]
        if len(errors) != 1 or "cgo_and_a_C_compiler" not in errors[0]:
            fail(f"CGO_ENABLED=0 should fail with one line naming cgo and a C compiler: {nocgo!r}")
    print("go_module: ok")


if __name__ == "__main__":
    main()
