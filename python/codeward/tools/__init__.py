"""The session's built-in tools and the contract every tool follows (see _base).

``run_tool(tool, args, ctx)`` is how a call runs: schema validation, then the
tool, with every failure returned as a typed ToolResult. The file tools go
through the workspace's credential boundary (codeward.workspace); bash goes
through the session's sandbox; git runs read-only with its configuration
defanged. docs/tools.md is the reference.
"""

from ._base import CancelToken, ErrorKind, MutationRecorder, Tool, ToolContext, ToolKind, ToolResult
from ._bash import BashTool, NetworkGrantRequest, SandboxRequest, parse_sandbox_permissions
from ._download import DownloadTool
from ._edit import EditTool
from ._failure import ToolError
from ._git import GitTool
from ._ls import LsTool
from ._patch import PatchTool
from ._read import ReadTool
from ._registry import builtin_tools, run_tool
from ._schema import ArgumentError, validate
from ._search import SearchTool
from ._write import WriteTool

__all__ = [
    "ArgumentError",
    "BashTool",
    "CancelToken",
    "DownloadTool",
    "EditTool",
    "ErrorKind",
    "GitTool",
    "LsTool",
    "MutationRecorder",
    "NetworkGrantRequest",
    "PatchTool",
    "ReadTool",
    "SandboxRequest",
    "SearchTool",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolKind",
    "ToolResult",
    "WriteTool",
    "builtin_tools",
    "parse_sandbox_permissions",
    "run_tool",
    "validate",
]
