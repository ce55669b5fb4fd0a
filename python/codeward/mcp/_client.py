"""The MCP client over one stdio server: initialize, tools/list, tools/call, list-changed.

Everything a server sends is untrusted: tool names must be plain ASCII
identifiers, descriptions and titles are escaped where a human sees them,
pagination is bounded, and results are size-capped by the layer that shows
them (``_result.py``).
"""

from __future__ import annotations

import logging
import os
import re
import threading
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from .._version import __version__
from ._config import McpServerConfig
from ._errors import McpError, McpProtocolError, McpStartError
from ._process import SandboxSpec, spawn
from ._text import cap_text, one_line, untrusted
from ._transport import CancelToken, StdioTransport

__all__ = ["PROTOCOL_VERSIONS", "McpCallResult", "McpClient", "McpToolInfo"]

log = logging.getLogger("codeward.mcp")

# Newest first: the first is offered, any of them is accepted in the answer.
PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
MAX_PAGES = 100  # of tools/list
MAX_TOOLS = 4096
MAX_INSTRUCTIONS = 65536  # bytes of the server's instructions kept
_TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")
_ANNOTATION_KEYS = ("title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


@dataclass(frozen=True)
class McpToolInfo:
    """One tool as the server lists it (texts as sent; escape them before showing them)."""

    name: str
    description: str = ""
    title: str | None = None
    input_schema: Mapping[str, Any] = field(default_factory=lambda: {"type": "object"})
    output_schema: Mapping[str, Any] | None = None
    annotations: Mapping[str, Any] = field(default_factory=dict)  # the MCP hints only


@dataclass(frozen=True)
class McpCallResult:
    """A ``tools/call`` result: its content blocks, structured content, and the error flag."""

    content: tuple[Mapping[str, Any], ...]
    structured_content: Any = None
    is_error: bool = False


class McpClient:
    """One MCP server: its owned process, the transport, and the client side of the protocol.

    Starting it runs ``initialize`` (protocol version negotiated) and
    ``notifications/initialized``; ``close()`` (or leaving a ``with`` block,
    or garbage collection) ends every process of the server. ``workspace``
    is required when the configuration asks for a sandbox.
    """

    def __init__(self, config: McpServerConfig, *, workspace: str | os.PathLike[str] | None = None):
        if not isinstance(config, McpServerConfig):
            raise TypeError(f"config must be an McpServerConfig, not {type(config).__name__}")
        self.config = config
        self.name = config.name
        sandbox = None
        if config.sandbox is not None:
            if workspace is None:
                raise McpStartError(
                    f"server {config.name!r} asks for a sandbox: give the workspace it runs over",
                    server=config.name,
                )
            sandbox = SandboxSpec(
                os.path.realpath(workspace),
                config.sandbox.writable_workspace,
                config.sandbox.network,
            )
        process = spawn(
            config.name,
            config.command,
            config.args,
            config.env,
            config.cwd,
            sandbox,
            config.kill_grace_ms,
            allow_unowned=config.allow_unowned,
        )
        self._transport = StdioTransport(config.name, process)
        self._tools_changed: Callable[[], None] | None = None
        self._lock = threading.Lock()
        try:
            self._initialize()
        except McpError as exc:
            tail = self._transport.stderr_tail()
            self._transport.close()
            message = f"MCP server {config.name!r} did not initialize: {exc}"
            if tail and tail not in message:
                message += f"; its stderr ends: {one_line(tail[-300:], 300)}"
            raise McpStartError(message, server=config.name) from exc
        relay_to = weakref.WeakMethod(self._on_tools_changed)  # the threads must not keep us alive

        def relay() -> None:
            method = relay_to()
            if method is not None:
                method()

        self._transport.set_tools_changed(relay)

    # -- the handshake -----------------------------------------------------------------

    def _initialize(self) -> None:
        result = self._transport.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSIONS[0],
                "capabilities": {},
                "clientInfo": {"name": "codeward", "version": __version__},
            },
            self.config.startup_timeout_ms,
        )
        if not isinstance(result, Mapping):
            raise McpProtocolError("initialize returned no object", server=self.name)
        version = result.get("protocolVersion")
        if version not in PROTOCOL_VERSIONS:
            raise McpProtocolError(
                f"the server speaks protocol version {one_line(version, 40)}, which codeward does "
                f"not (it speaks {', '.join(PROTOCOL_VERSIONS)})",
                server=self.name,
            )
        capabilities = result.get("capabilities")
        info = result.get("serverInfo")
        self.protocol_version: str = version
        self.capabilities: Mapping[str, Any] = (
            capabilities if isinstance(capabilities, Mapping) else {}
        )
        self.server_info: Mapping[str, Any] = info if isinstance(info, Mapping) else {}
        instructions = result.get("instructions")
        # escaped and capped: a host may show it, or hand it to a model
        self.instructions: str | None = (
            untrusted(cap_text(instructions, MAX_INSTRUCTIONS)[0])
            if isinstance(instructions, str)
            else None
        )
        self._transport.notify("notifications/initialized")

    # -- tools -------------------------------------------------------------------------

    @property
    def has_tools(self) -> bool:
        return isinstance(self.capabilities.get("tools"), Mapping)

    def list_tools(self, *, timeout_ms: int | None = None) -> list[McpToolInfo]:
        """Every tool, following ``nextCursor`` (at most 100 pages and 4096 tools).

        A tool whose name is not 1-128 of ``A-Z a-z 0-9 _ . -`` is left out
        (logged): its name would not survive the trip through policies and logs.
        """
        if not self.has_tools:
            return []
        timeout = timeout_ms or self.config.request_timeout_ms
        tools: list[McpToolInfo] = []
        seen: set[str] = set()
        cursor: Any = None
        for _ in range(MAX_PAGES):
            params = {"cursor": cursor} if cursor is not None else {}
            page = self._transport.request("tools/list", params, timeout)
            if not isinstance(page, Mapping) or not isinstance(page.get("tools"), list):
                raise McpProtocolError("tools/list returned no tools array", server=self.name)
            for raw in page["tools"]:
                tool = self._tool_info(raw)
                if tool is not None and tool.name not in seen:
                    seen.add(tool.name)
                    tools.append(tool)
                if len(tools) >= MAX_TOOLS:
                    log.warning(
                        "mcp %s lists more than %d tools; the rest are left out",
                        self.name,
                        MAX_TOOLS,
                    )
                    return tools
            cursor = page.get("nextCursor")
            if not isinstance(cursor, str) or not cursor:
                return tools
        log.warning(
            "mcp %s: tools/list has more than %d pages; the rest are left out", self.name, MAX_PAGES
        )
        return tools

    def _tool_info(self, raw: Any) -> McpToolInfo | None:
        if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
            log.warning("mcp %s lists a malformed tool; it is left out", self.name)
            return None
        name = raw["name"]
        if not _TOOL_NAME.fullmatch(name):
            log.warning(
                "mcp %s lists a tool with an unusable name %s; it is left out",
                self.name,
                one_line(name, 80),
            )
            return None
        schema = raw.get("inputSchema")
        if not isinstance(schema, Mapping) or schema.get("type") != "object":
            schema = {"type": "object"}
        output = raw.get("outputSchema")
        hints = raw.get("annotations")
        hints = hints if isinstance(hints, Mapping) else {}
        title = raw.get("title", hints.get("title"))
        description = raw.get("description")
        return McpToolInfo(
            name=name,
            description=description if isinstance(description, str) else "",
            title=title if isinstance(title, str) else None,
            input_schema=dict(schema),
            output_schema=dict(output) if isinstance(output, Mapping) else None,
            annotations={k: hints[k] for k in _ANNOTATION_KEYS if k in hints},
        )

    def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout_ms: int | None = None,
        cancel: CancelToken | None = None,
    ) -> McpCallResult:
        """Calls one tool. A tool-level failure is a result with ``is_error``; a JSON-RPC error
        raises McpServerError; no answer in time raises McpTimeout; ``cancel`` (``is_set()``)
        set before the answer tells the server and raises McpCancelled."""
        result = self._transport.request(
            "tools/call",
            {"name": name, "arguments": dict(arguments or {})},
            timeout_ms or self.config.request_timeout_ms,
            cancel,
        )
        if not isinstance(result, Mapping):
            raise McpProtocolError(f"tools/call {name} returned no object", server=self.name)
        content = result.get("content")
        blocks = (
            tuple(b for b in content if isinstance(b, Mapping)) if isinstance(content, list) else ()
        )
        return McpCallResult(blocks, result.get("structuredContent"), result.get("isError") is True)

    def ping(self, *, timeout_ms: int | None = None) -> None:
        self._transport.request("ping", None, timeout_ms or self.config.request_timeout_ms)

    # -- notifications -----------------------------------------------------------------

    def on_tools_changed(self, callback: Callable[[], None] | None) -> None:
        """Runs ``callback`` (on the transport's dispatcher thread) after ``tools/list_changed``."""
        with self._lock:
            self._tools_changed = callback

    def _on_tools_changed(self) -> None:
        with self._lock:
            callback = self._tools_changed
        if callback is not None:
            callback()

    # -- state -------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._transport.closed

    @property
    def pid(self) -> int:
        """The pid of the server's supervisor (a3s-init, or bubblewrap when sandboxed)."""
        return self._transport.process.pid

    @property
    def sandboxed(self) -> bool:
        return self._transport.process.sandboxed

    @property
    def owned(self) -> bool:
        """Whether every process of the server is the client's to end: it runs in a pid
        namespace of its own (on the host, or sandboxed) or, on the host where no user
        namespace can be made, in a cgroup of its own; False only for a host-mode server the
        host allowed to run unowned."""
        return self.ownership != "none"

    @property
    def ownership(self) -> str:
        """How the server is owned: "pid-namespace", "cgroup" or "none" (docs/mcp.md says
        what each guarantees)."""
        process = self._transport.process
        if process.pid_namespace:
            return "pid-namespace"
        return "cgroup" if process.cgroup else "none"

    @property
    def transport(self) -> StdioTransport:
        return self._transport

    def stderr_tail(self) -> str:
        """The last 64 KiB the server wrote to stderr, escaped."""
        return self._transport.stderr_tail()

    def send_signal(self, sig: int) -> None:
        """Sends ``sig`` (a ``signal.Signals``, e.g. SIGHUP to make a server reload) to every
        process of the server, through its init, without closing the connection. ValueError
        for what is not a signal number (1 to 64); nothing once the server has ended."""
        self._transport.process.send_signal(sig)

    def close(self) -> int | None:
        """Closes the connection and ends every process of the server: end of input, then
        SIGTERM, then SIGKILL after ``kill_grace_ms``; its exit status (the server's own when
        it exits on end of input or in its TERM handler)."""
        return self._transport.close()

    def __enter__(self) -> McpClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "connected"
        return f"<McpClient {self.name} {state} pid={self.pid}>"
