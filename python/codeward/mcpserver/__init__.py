"""``codeward mcp serve``: a session's tools served to MCP clients over stdio.

See docs/integrations.md.

Each tools/call is decided and run by the session's kernel (``session.invoke``);
this package adds only the protocol around it: tool definitions with MCP
annotations, results with structured content, confirmations through MCP
elicitation, progress, cancellation, and cleanup when the client goes away.
"""

from ._server import PROTOCOL_VERSIONS, McpToolServer, serve

__all__ = ["PROTOCOL_VERSIONS", "McpToolServer", "serve"]
