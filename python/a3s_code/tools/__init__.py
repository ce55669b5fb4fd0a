"""The session's built-in tools and the contract every tool follows (see _base)."""

from ._base import CancelToken, ErrorKind, MutationRecorder, Tool, ToolContext, ToolKind, ToolResult
from ._schema import ArgumentError, validate

__all__ = [
    "ArgumentError",
    "CancelToken",
    "ErrorKind",
    "MutationRecorder",
    "Tool",
    "ToolContext",
    "ToolKind",
    "ToolResult",
    "validate",
]
