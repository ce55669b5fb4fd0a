"""Helpers of the tool suites (tests/tools): a recording ledger, a fake sandbox, file helpers."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from codeward.sandbox import CommandOutput
from codeward.tools import ToolContext, ToolResult, run_tool
from codeward.tools._base import Tool


class Recorder:
    """A mutation ledger that keeps what it was told."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, str, str]] = []

    def record(self, tool: str, path: str, content_digest: str) -> None:
        self.entries.append((tool, path, content_digest))


class FakeSandbox:
    """A BashSandbox that returns a canned CommandOutput (or raises) and remembers the calls."""

    backend = "fake"
    sandboxed = True

    def __init__(self, output: CommandOutput | None = None, error: Exception | None = None):
        self.output = output or CommandOutput("", "", 0, False, False, 0, True, "fake")
        self.error = error
        self.calls: list[dict[str, Any]] = []

    def exec(self, command: str, **kwargs: Any) -> CommandOutput:
        self.calls.append({"command": command, **kwargs})
        if self.error is not None:
            raise self.error
        return self.output


def call(tool: Tool, ctx: ToolContext, **args: Any) -> ToolResult:
    """Runs one call the way the kernel does, and checks the result contract."""
    result = run_tool(tool, args, ctx)
    assert result.success == (result.error_kind is None)
    assert isinstance(result.metadata, Mapping)
    return result


def put(root: Path, rel: str, content: str | bytes = "x\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        path.write_text(content)
    else:
        path.write_bytes(content)
    return path


def temps(root: Path) -> list[str]:
    """Leftover temporary or kept-original files anywhere under root."""
    found = []
    for dirpath, _dirs, files in os.walk(root):
        found += [os.path.join(dirpath, f) for f in files if f.endswith((".a3s-tmp", ".a3s-orig"))]
    return found


def git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """Runs the real git as a developer would (fixed identity, no system config); its stdout."""
    base = {
        "PATH": os.environ["PATH"],
        "HOME": str(cwd),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Dev",
        "GIT_AUTHOR_EMAIL": "dev@example.com",
        "GIT_COMMITTER_NAME": "Dev",
        "GIT_COMMITTER_EMAIL": "dev@example.com",
    }
    out = subprocess.run(
        ["git", *args], cwd=cwd, env=base | (env or {}), capture_output=True, text=True, check=True
    )
    return out.stdout
