"""MCP stdio servers: owned processes, a transport that cannot be stalled, governed tools.

``McpClient`` runs one server (on the host, or in a sandbox of its own) and
speaks the client side of the Model Context Protocol over newline-delimited
JSON-RPC on its stdio. ``Session.add_mcp_server`` and
``Session.load_mcp_config`` register every tool of a server as
``mcp__<server>__<tool>``, so the mode matrix, the permission policy and
confirmations decide each call. docs/mcp.md is the reference.
"""

from ._client import PROTOCOL_VERSIONS, McpCallResult, McpClient, McpToolInfo
from ._config import McpConfig, McpSandbox, McpServerConfig, load_mcp_config
from ._errors import (
    McpConfigError,
    McpConnectionError,
    McpError,
    McpProtocolError,
    McpServerError,
    McpStartError,
    McpTimeout,
    McpUnownedError,
)
from ._tools import MAX_RESULT_BYTES, McpServers, McpTool, render_result
from ._transport import MAX_LINE, STDERR_RING

__all__ = [
    "MAX_LINE",
    "MAX_RESULT_BYTES",
    "PROTOCOL_VERSIONS",
    "STDERR_RING",
    "McpCallResult",
    "McpClient",
    "McpConfig",
    "McpConfigError",
    "McpConnectionError",
    "McpError",
    "McpProtocolError",
    "McpSandbox",
    "McpServerConfig",
    "McpServerError",
    "McpServers",
    "McpStartError",
    "McpTimeout",
    "McpTool",
    "McpToolInfo",
    "McpUnownedError",
    "load_mcp_config",
    "render_result",
]
