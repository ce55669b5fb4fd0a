"""The errors of MCP servers: configuration, start, connection, protocol, timeouts, server replies.

Messages that quote a server (its error text, its stderr) are escaped: the
server is untrusted, and a terminal or a log must not run its control
sequences.
"""

from __future__ import annotations

from typing import Any

from .._errors import CodewardError

__all__ = [
    "McpConfigError",
    "McpConnectionError",
    "McpError",
    "McpProtocolError",
    "McpServerError",
    "McpStartError",
    "McpTimeout",
    "McpUnownedError",
]


class McpError(CodewardError):
    """An MCP server, its configuration or its connection failed; ``server`` names it (or None)."""

    def __init__(self, message: str, *, server: str | None = None) -> None:
        super().__init__(message)
        self.server = server


class McpConfigError(McpError, ValueError):
    """A ``.mcp.json`` file or ``mcpServers`` entry is malformed; ``path`` names the file."""

    def __init__(self, message: str, *, path: str | None = None, server: str | None = None) -> None:
        super().__init__(message, server=server)
        self.path = path


class McpStartError(McpError):
    """The server could not be started, or it did not complete ``initialize``."""


class McpUnownedError(McpStartError):
    """A host-mode server was refused: it cannot be owned here (no user and pid namespaces or
    no bubblewrap, and no cgroup of its own can be made), and the host did not allow an
    unowned server (``allow_unowned``)."""


class McpConnectionError(McpError):
    """The connection is closed or broke: the server exited, was closed, or stopped reading.

    ``exit_code`` is the server's exit status once it is known (128+N for
    signal N), else None; ``stderr_tail`` the end of what it wrote to stderr
    (escaped).
    """

    def __init__(
        self,
        message: str,
        *,
        server: str | None = None,
        exit_code: int | None = None,
        stderr_tail: str = "",
    ) -> None:
        super().__init__(message, server=server)
        self.exit_code = exit_code
        self.stderr_tail = stderr_tail


class McpProtocolError(McpConnectionError):
    """The server broke the protocol (a line over the size cap, a stream of malformed messages,
    an unsupported protocol version); the connection was closed."""


class McpTimeout(McpError, TimeoutError):
    """No answer within ``timeout_ms``; the request was cancelled (``notifications/cancelled``)."""

    def __init__(self, message: str, *, server: str | None, method: str, timeout_ms: int) -> None:
        super().__init__(message, server=server)
        self.method = method
        self.timeout_ms = timeout_ms


class McpCancelled(McpError):
    """The caller cancelled the request before its answer came; the server was told
    (``notifications/cancelled``)."""

    def __init__(self, message: str, *, server: str | None, method: str) -> None:
        super().__init__(message, server=server)
        self.method = method


class McpServerError(McpError):
    """The server answered with a JSON-RPC error: ``code`` (int) and ``data`` (any JSON)."""

    def __init__(self, message: str, *, server: str | None, code: int, data: Any = None) -> None:
        super().__init__(message, server=server)
        self.code = code
        self.data = data
