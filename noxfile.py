"""Every check of the project, one session per concern.

``python3 -m nox`` runs the default sessions (everything CI runs); ``-s NAME``
runs one. Sessions that need a toolchain fail when it is missing: nothing is
skipped silently.
"""

from __future__ import annotations

import os
import shutil
import sys
import zipfile
from pathlib import Path

import nox

ROOT = Path(__file__).parent
nox.options.sessions = ["lint", "native", "tests", "node", "go", "dist", "bench"]
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True

PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
CONSTRAINTS = str(ROOT / "ci" / "constraints.txt")
TEST_DEPS = ["-c", CONSTRAINTS, "pytest", "hypothesis", "cryptography", "mcp"]
MCP_NPM = ROOT / "tests" / "mcp"  # the npm MCP servers the tests run (package-lock.json)


def _require(session: nox.Session, tool: str) -> None:
    if shutil.which(tool) is None:
        session.error(f"{tool} is required for this session; run ci/install-deps.sh")


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff, mypy --strict, the public header as C11 and C++, the frozen export list."""
    session.install("-c", CONSTRAINTS, "ruff", "mypy", "types-PyYAML", "-e", ".")
    session.run("ruff", "format", "--check", "python", "tests", "bench", "noxfile.py", "setup.py")
    session.run("ruff", "check", "python", "tests", "bench", "noxfile.py", "setup.py")
    session.run("mypy")
    _require(session, "make")
    session.run("make", "-C", "native", "check-header", "check-symbols", external=True)


@nox.session(python=False)
def native(session: nox.Session) -> None:
    """C unit tests, plain and under ASan + UBSan."""
    _require(session, "make")
    session.run("make", "-C", "native", "test", "test-sanitize", external=True)


def _npm_servers(session: nox.Session) -> None:
    """npm ci in tests/mcp, unless node_modules already matches package-lock.json."""
    import hashlib

    lock = hashlib.sha256((MCP_NPM / "package-lock.json").read_bytes()).hexdigest()
    stamp = MCP_NPM / "node_modules" / ".codeward-lock"
    if stamp.is_file() and stamp.read_text() == lock:
        return
    _require(session, "npm")
    with session.chdir(MCP_NPM):
        session.run("npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts", external=True)
    stamp.write_text(lock)


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """pytest against the installed (not the source-tree) package."""
    session.install(*TEST_DEPS)
    session.install(".")
    _npm_servers(session)
    session.run("pytest", "-q", *session.posargs)


@nox.session(python=False)
def node(session: nox.Session) -> None:
    """The Node addon: build from native/src with the installed Node's headers, node --test."""
    _require(session, "node")
    _require(session, "npm")
    with session.chdir(ROOT / "bindings" / "node"):
        session.run("npm", "ci", "--no-audit", "--no-fund", external=True)
        session.run("npm", "run", "build", external=True)
        session.run("npm", "test", external=True)


@nox.session(python=False)
def go(session: nox.Session) -> None:
    """The cgo package: go vet and go test (offline, no toolchain download)."""
    _require(session, "go")
    env = {"GOTOOLCHAIN": "local", "GOFLAGS": "-mod=mod", "CGO_ENABLED": "1"}
    with session.chdir(ROOT / "bindings" / "go"):
        session.run("go", "vet", "./...", env=env, external=True)
        session.run("go", "test", "-count=1", "./...", env=env, external=True)


@nox.session(python=PYTHON)
def dist(session: nox.Session) -> None:
    """Wheel + sdist; the sdist builds and installs in a clean venv; cibuildwheel config."""
    session.install("-c", CONSTRAINTS, "build", "cibuildwheel")
    out = Path(session.create_tmp()) / "dist"
    shutil.rmtree(out, ignore_errors=True)
    session.run("python", "-m", "build", "--outdir", str(out))
    sdists = list(out.glob("codeward-*.tar.gz"))
    wheels = list(out.glob("codeward-*-cp310-abi3-*.whl"))
    if len(sdists) != 1 or len(wheels) != 1:
        session.error(f"expected one sdist and one abi3 wheel, got {sorted(os.listdir(out))}")
    with zipfile.ZipFile(wheels[0]) as wheel:
        names = set(wheel.namelist())
    for required in ("codeward/_bin/a3s-init", "codeward/_native.abi3.so", "codeward/py.typed"):
        if required not in names:
            session.error(f"the wheel lacks {required}")
    # the sdist alone must build and work in a fresh environment
    venv = Path(session.create_tmp()) / "sdist-venv"
    shutil.rmtree(venv, ignore_errors=True)
    session.run("python", "-m", "venv", str(venv))
    py = str(venv / "bin" / "python")
    session.run(py, "-m", "pip", "install", "-q", str(sdists[0]), external=True)
    session.run(
        py,
        "-c",
        "import codeward; p = codeward.PermissionPolicy(allow=['read(*)']); "
        "assert p.check('read', {'file_path': 'x'}) == 'allow'; print('sdist install ok')",
        external=True,
    )
    session.run(str(venv / "bin" / "codeward"), "version", external=True)
    session.run(str(venv / "bin" / "codeward"), "exec", "--", "echo", "sandboxed", external=True)
    session.run("cibuildwheel", "--print-build-identifiers", "--platform", "linux", silent=False)
    session.run("cibuildwheel", "--print-build-identifiers", "--platform", "macos", silent=False)
    session.run("cibuildwheel", "--print-build-identifiers", "--platform", "windows", silent=False)


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """Benchmarks; in CI a quick smoke run (pass --full for the real figures)."""
    session.install("-c", CONSTRAINTS, "wcmatch", "mcp", ".")
    full = "--full" in session.posargs
    for script in sorted((ROOT / "bench").glob("*/run.py")):
        session.run("python", str(script), *([] if full else ["--quick"]))
