"""Helpers of the MCP suites: where the real servers are, host process views, memory."""

from __future__ import annotations

import json
import os
import random
import shlex
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest

from codeward.mcp import McpServerConfig

HERE = Path(__file__).parent
SERVERS = HERE / "servers"
NODE_BIN = HERE / "node_modules" / ".bin"
# Developer machines without the servers may set this to skip their suites; CI never does.
ALLOW_MISSING = "CODEWARD_TEST_ALLOW_MISSING_MCP"


def _missing(what: str, fix: str) -> None:
    message = f"{what} is not installed ({fix})"
    if os.environ.get(ALLOW_MISSING) == "1":
        pytest.skip(message)
    pytest.fail(f"{message}; set {ALLOW_MISSING}=1 to skip on a developer machine")


def require_sdk() -> None:
    try:
        import mcp  # noqa: F401
    except ImportError:
        _missing("the MCP Python SDK (mcp)", "pip install -c ci/constraints.txt mcp")


def npm_server(name: str) -> str:
    """The path of an npm server's executable, installed by ci/install-deps.sh (npm ci)."""
    path = NODE_BIN / name
    if not os.access(path, os.X_OK):
        _missing(f"{name} from npm", "cd tests/mcp && npm ci")
    return str(path)


def sdk_config(
    name: str = "sdk", *, workspace: Path | None = None, **kw: object
) -> McpServerConfig:
    """The SDK server; with ``workspace`` (a sandboxed server's) placed where its sandbox sees
    it."""
    require_sdk()
    if workspace is None:
        return McpServerConfig(name, sys.executable, (str(SERVERS / "sdk_server.py"),), **kw)  # type: ignore[arg-type]
    python, script, env = boxed_program(workspace, "sdk_server.py", imports="mcp.server.mcpserver")
    env.update(kw.pop("env", {}))  # type: ignore[call-overload]
    return McpServerConfig(name, python, (script,), env=env, **kw)  # type: ignore[arg-type]


def hostile_config(
    mode: str,
    arg: str = "",
    name: str = "hostile",
    *,
    workspace: Path | None = None,
    **kw: object,
) -> McpServerConfig:
    """The hostile server; with ``workspace`` (a sandboxed server's) placed where its sandbox sees
    it."""
    extra = [mode] + ([arg] if arg else [])
    if workspace is None:
        return McpServerConfig(name, sys.executable, (str(SERVERS / "hostile.py"), *extra), **kw)  # type: ignore[arg-type]
    python, script, env = boxed_program(workspace, "hostile.py")
    env.update(kw.pop("env", {}))  # type: ignore[call-overload]
    return McpServerConfig(name, python, (script, *extra), env=env, **kw)  # type: ignore[arg-type]


BOXED = ".mcp-test-servers"  # in the workspace: what a sandboxed test server runs from


def boxed_program(
    workspace: Path, server: str, imports: str = ""
) -> tuple[str, str, dict[str, str]]:
    """(interpreter, script, env) that a server's sandbox can run, wherever this checkout is.

    A sandbox sees the read-only root and the workspace, but not /tmp or a home: a checkout or a
    venv under either is hidden in it (``execve .../.nox/tests/bin/python: No such file``). So
    the script is copied into the workspace, the interpreter is the one the venv was made from
    (sys._base_executable; /usr/bin or a toolchain root the sandbox re-exposes), and what the
    server imports from the venv (``imports``, with its dependencies) is copied next to it,
    on PYTHONPATH.
    """
    base = Path(workspace) / BOXED
    base.mkdir(exist_ok=True)
    script = base / server
    shutil.copy(SERVERS / server, script)
    python = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    env: dict[str, str] = {}
    if imports:
        site = base / "site-packages"
        if not site.exists():
            _copy_imports(imports, site)
        env["PYTHONPATH"] = str(site)
    return python, str(script), env


def _copy_imports(module: str, dest: Path) -> None:
    """Copies the top-level packages of the venv that importing ``module`` loads, and their
    distribution metadata, into dest."""
    purelib = Path(sysconfig.get_paths()["purelib"])
    probe = (
        f"import sys, {module}\n"
        "print(__import__('json').dumps(sorted({getattr(m, '__file__', None) or '' "
        "for m in list(sys.modules.values())})))"
    )
    files = json.loads(subprocess.check_output([sys.executable, "-c", probe], text=True))
    tops = {
        Path(f).relative_to(purelib).parts[0]
        for f in files
        if f and Path(f).is_relative_to(purelib)
    }
    dest.mkdir(parents=True)
    for top in sorted(tops) + sorted(p.name for p in purelib.glob("*.dist-info")):
        src = purelib / top
        if src.is_dir():
            shutil.copytree(src, dest / top, ignore=shutil.ignore_patterns("__pycache__"))
        elif src.is_file():
            shutil.copy(src, dest / top)


def without_cgroups(argv: list[str]) -> list[str]:
    """argv run where no cgroup can be made: as root, in a mount namespace of its own
    without the cgroup file systems (an unprivileged user has no cgroup to write to)."""
    if os.geteuid() != 0:
        return argv
    hide = "umount -R /sys/fs/cgroup 2>/dev/null; exec " + " ".join(map(shlex.quote, argv))
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", hide]


def new_marker() -> str:
    return f"917.{random.randint(100000, 999999)}"


def sleeping(marker: str) -> list[int]:
    """Host pids of ``sleep MARKER`` processes."""
    needle = b"sleep\0" + marker.encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if Path(f"/proc/{entry}/cmdline").read_bytes().startswith(needle):
                    found.append(int(entry))
            except OSError:
                continue
    return found


def wait_for(predicate, timeout_s: float = 10.0, step_s: float = 0.02) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step_s)
    return bool(predicate())


def rss_bytes() -> int:
    """This process's resident set size."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def marked(marker: str) -> list[int]:
    """Host pids whose environment holds ``CODEWARD_TEST_MARK=<marker>``."""
    needle = f"CODEWARD_TEST_MARK={marker}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if needle in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0"):
                    found.append(int(entry))
            except OSError:
                continue
    return found


class RecordingProvider:
    """A confirmation provider that answers ``answer`` and keeps the tool names it was asked."""

    def __init__(self, answer: bool = False) -> None:
        self.answer = answer
        self.asked: list[str] = []

    def request(self, confirmation) -> bool:  # type: ignore[no-untyped-def]
        self.asked.append(confirmation.tool)
        return self.answer


class NoBash:
    """A host-supplied sandbox handle for sessions that never run bash (MCP tools only)."""

    backend = "none"
    sandboxed = True

    def exec(self, command: str, **kw: object):  # type: ignore[no-untyped-def]
        raise AssertionError("these tests run no bash")
