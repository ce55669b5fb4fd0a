"""Helpers of the MCP suites: where the real servers are, host process views, memory."""

from __future__ import annotations

import os
import random
import sys
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


def sdk_config(name: str = "sdk", **kw: object) -> McpServerConfig:
    require_sdk()
    return McpServerConfig(name, sys.executable, (str(SERVERS / "sdk_server.py"),), **kw)  # type: ignore[arg-type]


def hostile_config(
    mode: str, arg: str = "", name: str = "hostile", **kw: object
) -> McpServerConfig:
    args = [str(SERVERS / "hostile.py"), mode] + ([arg] if arg else [])
    return McpServerConfig(name, sys.executable, tuple(args), **kw)  # type: ignore[arg-type]


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
