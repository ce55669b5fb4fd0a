"""The built-in tools and the one way to run a tool call without anything escaping it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._base import ErrorKind, Tool, ToolContext, ToolResult
from ._bash import BashTool
from ._edit import EditTool
from ._failure import ToolError, error_for
from ._git import GitTool
from ._ls import LsTool
from ._patch import PatchTool
from ._read import ReadTool
from ._schema import ArgumentError, validate
from ._search import SearchTool
from ._write import WriteTool

__all__ = ["builtin_tools", "run_tool"]


def builtin_tools() -> list[Tool]:
    """Fresh instances of read, write, edit, patch, search, ls, git and bash."""
    return [
        ReadTool(),
        WriteTool(),
        EditTool(),
        PatchTool(),
        SearchTool(),
        LsTool(),
        GitTool(),
        BashTool(),
    ]


def run_tool(tool: Tool, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    """Validates ``args`` against the tool's schema, runs it, and returns its result.

    Never raises for anything the call can cause: invalid arguments, a
    refusal of the credential boundary, a missing file, a system error or a
    bug in the tool all come back as a failed ToolResult with an ErrorKind
    and a message the model can act on. (KeyboardInterrupt and SystemExit
    still propagate.)
    """
    if not isinstance(args, Mapping):
        return ToolResult.failure(
            tool.name,
            ErrorKind.INVALID_ARGUMENT,
            f"{tool.name}: the arguments must be a JSON object, not {type(args).__name__}",
        )
    try:
        validate(tool.schema, dict(args))
    except ArgumentError as exc:
        return ToolResult.failure(
            tool.name, ErrorKind.INVALID_ARGUMENT, f"{tool.name}: invalid arguments: {exc}"
        )
    if ctx.cancel is not None and ctx.cancel.is_set():
        return ToolResult.failure(
            tool.name, ErrorKind.CANCELLED, f"{tool.name}: cancelled before it started"
        )
    try:
        return tool.run(args, ctx)
    except Exception as exc:  # the contract: a failure is a result, never an exception
        return _failure(tool, args, exc)


def _failure(tool: Tool, args: Mapping[str, Any], exc: Exception) -> ToolResult:
    try:
        named = tool.paths(args)
    except Exception:
        named = []
    kind, message = error_for(exc, named[0] if len(named) == 1 else None)
    metadata: dict[str, Any] = dict(exc.metadata) if isinstance(exc, ToolError) else {}
    if isinstance(exc, OSError) and len(named) == 1:
        metadata.setdefault("path", named[0])
    path = getattr(exc, "path", None)
    if isinstance(path, str) and path:
        metadata.setdefault("path", path)
    return ToolResult.failure(tool.name, kind, f"{tool.name}: {message}", **metadata)
