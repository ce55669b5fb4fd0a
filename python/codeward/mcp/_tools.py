"""MCP tools in a session: ``mcp__<server>__<tool>``, decided by the kernel like any external tool.

Each tool is registered with the server's annotations, so the mode matrix,
the permission policy and confirmations apply exactly as for a host's own
external tools: only an explicit, consistent ``readOnlyHint: true`` makes a
call read-only. Results are untrusted: capped at ``MAX_RESULT_BYTES`` and
escaped (controls and bidirectional characters) before anyone sees them.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping
from typing import Any

from ..kernel import ExternalTool, ToolAnnotations, ToolRegistry
from ..tools import ErrorKind, ToolContext, ToolResult
from ._client import McpCallResult, McpClient, McpToolInfo
from ._config import McpServerConfig
from ._errors import McpCancelled, McpConfigError, McpError, McpTimeout
from ._text import cap_text, one_line, untrusted

__all__ = ["MAX_RESULT_BYTES", "McpServers", "McpTool", "render_result", "tool_name"]

log = logging.getLogger("codeward.mcp")

MAX_RESULT_BYTES = 102_400  # what the model sees of one result, as for bash output
_DESCRIPTION_LIMIT = 4096


def tool_name(server: str, tool: str) -> str:
    return f"mcp__{server}__{tool}"


def render_result(result: McpCallResult, limit: int = MAX_RESULT_BYTES) -> tuple[str, bool]:
    """The text a model and a human see: every content block, capped and escaped; (text, cut)."""
    parts: list[str] = []
    for block in result.content:
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif kind in ("image", "audio"):
            data = block.get("data")
            size = len(data) * 3 // 4 if isinstance(data, str) else 0
            parts.append(f"[{kind}: {block.get('mimeType', '?')}, about {size} bytes]")
        elif kind == "resource_link":
            parts.append(f"[resource link: {block.get('uri', '?')} {block.get('name', '')}]")
        elif kind == "resource" and isinstance(block.get("resource"), Mapping):
            resource = block["resource"]
            if isinstance(resource.get("text"), str):
                parts.append(resource["text"])
            else:
                parts.append(
                    f"[resource: {resource.get('uri', '?')}, {resource.get('mimeType', '?')}]"
                )
        else:
            parts.append(f"[{str(kind)[:40]} content]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, default=str))
    text, cut = cap_text("\n".join(parts), limit)
    shown, cut_again = cap_text(untrusted(text), limit)  # escapes can lengthen it
    return shown, cut or cut_again


class McpTool(ExternalTool):
    """One tool of one server, as the kernel sees it. Its arguments go to the server as given."""

    def __init__(self, client: McpClient, info: McpToolInfo) -> None:
        self.client = client
        self.info = info
        annotations = ToolAnnotations.from_mapping(info.annotations)
        description = untrusted(info.description or info.title or info.name)
        super().__init__(
            tool_name(client.name, info.name),
            self._unused,
            # what the kernel checks; the server validates the full schema itself
            _validation_schema(info.input_schema),
            annotations,
            description[:_DESCRIPTION_LIMIT],
        )

    @staticmethod
    def _unused(args: Mapping[str, Any]) -> Any:  # run() is overridden
        raise NotImplementedError

    def model_schema(self) -> dict[str, Any]:
        """The server's own input schema, which a model needs to form arguments."""
        return {
            "name": self.name,
            "description": self.description,
            "parameters": dict(self.info.input_schema),
        }

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        meta: dict[str, Any] = {"mcp_server": self.client.name, "mcp_tool": self.info.name}
        try:
            result = self.client.call_tool(self.info.name, args, cancel=ctx.cancel)
        except McpCancelled as exc:
            return ToolResult.failure(self.name, ErrorKind.CANCELLED, str(exc), **meta)
        except McpTimeout as exc:
            return ToolResult.failure(self.name, ErrorKind.TIMEOUT, str(exc), **meta)
        except McpError as exc:
            return ToolResult.failure(self.name, ErrorKind.TOOL_FAILED, str(exc), **meta)
        text, cut = render_result(result)
        meta["truncated"] = cut
        if result.structured_content is not None:
            encoded = json.dumps(result.structured_content, default=str)
            if len(encoded) <= MAX_RESULT_BYTES:
                meta["structured_content"] = json.loads(encoded)
            else:
                meta["structured_content_truncated"] = True
        if result.is_error:
            return ToolResult(self.name, text, 1, False, meta, ErrorKind.TOOL_FAILED)
        return ToolResult(self.name, text, 0, True, meta)


def _validation_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a server's schema the kernel's validator can honour: an object and its
    required keys. Nothing else is promised (the server checks the rest)."""
    out: dict[str, Any] = {"type": "object"}
    required = schema.get("required")
    if isinstance(required, list) and all(isinstance(r, str) for r in required):
        out["required"] = list(required)
    return out


def _taken_reason(holder: object, name: str) -> str:
    """Why a tool name cannot be registered: who already holds it."""
    if isinstance(holder, McpTool):
        return (
            f"{name} is already the name of tool {holder.info.name!r} of server "
            f"{holder.client.name!r}; calls must not go to the wrong server"
        )
    return f"{name} is already the name of one of the host's own tools"


class McpServers:
    """The MCP servers of one session and the tools they registered; thread-safe."""

    def __init__(self, registry: ToolRegistry, workspace: str) -> None:
        self._registry = registry
        self._workspace = workspace
        self._lock = threading.RLock()
        self._clients: dict[str, McpClient] = {}
        self._tools: dict[str, set[str]] = {}  # server -> registered tool names
        self._refused: dict[str, dict[str, str]] = {}  # server -> tool name -> why not
        self._closed = False

    def add(self, config: McpServerConfig) -> list[str]:
        """Starts the server, lists its tools and registers them; returns their names."""
        with self._lock:
            if self._closed:
                raise McpError("the session's MCP servers are closed", server=config.name)
            if config.name in self._clients:
                raise McpConfigError(
                    f"an MCP server named {config.name!r} is already added", server=config.name
                )
        client = McpClient(config, workspace=self._workspace)
        registered = False
        try:
            with self._lock:
                if self._closed or config.name in self._clients:
                    raise McpConfigError(f"MCP server {config.name!r} was added twice at once")
                self._clients[config.name] = client
                self._tools[config.name] = set()
                registered = True
            names = self._sync(config.name)
        except BaseException:
            if registered:
                self.remove(config.name)
            else:
                client.close()
            raise
        client.on_tools_changed(lambda: self._refresh(config.name))
        return names

    def _refresh(self, server: str) -> None:
        try:
            self._sync(server)
        except McpError as exc:
            log.warning("mcp %s: the tool list could not be refreshed: %s", server, exc)

    def _sync(self, server: str) -> list[str]:
        """Makes the registry hold exactly the server's current tools."""
        with self._lock:
            client = self._clients.get(server)
        if client is None:
            return []
        infos = client.list_tools()
        with self._lock:
            if self._clients.get(server) is not client:
                return []  # removed meanwhile
            owned = self._tools[server]
            wanted: dict[str, McpTool] = {}
            refused: dict[str, str] = {}
            for info in infos:
                tool = McpTool(client, info)
                if tool.name in wanted:
                    refused[tool.name] = "the server lists this tool twice"
                elif tool.name in owned or self._registry.get(tool.name) is None:
                    wanted[tool.name] = tool
                else:
                    refused[tool.name] = _taken_reason(self._registry.get(tool.name), tool.name)
            for name, reason in refused.items():
                log.warning("mcp %s: tool %s not registered: %s", server, one_line(name), reason)
            for name in owned - set(wanted):
                self._registry.remove(name)
            for tool in wanted.values():
                self._registry.add(tool, replace=True)
            self._tools[server] = set(wanted)
            self._refused[server] = refused
            return sorted(wanted)

    def remove(self, server: str) -> bool:
        """Unregisters the server's tools and ends its processes; False if there is none."""
        with self._lock:
            client = self._clients.pop(server, None)
            self._refused.pop(server, None)
            for name in self._tools.pop(server, set()):
                self._registry.remove(name)
        if client is None:
            return False
        client.close()
        return True

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._clients)

    def client(self, server: str) -> McpClient | None:
        with self._lock:
            return self._clients.get(server)

    def tools(self, server: str) -> list[str]:
        with self._lock:
            return sorted(self._tools.get(server, ()))

    def refused_tools(self, server: str) -> dict[str, str]:
        """The server's tools that were not registered, each with the reason."""
        with self._lock:
            return dict(self._refused.get(server, {}))

    def close(self) -> None:
        """Closes every server (all processes of each end); later adds fail."""
        with self._lock:
            self._closed = True
            servers = list(self._clients)
        errors = []
        for server in servers:
            try:
                self.remove(server)
            except Exception as exc:  # one server's failure must not keep the others running
                errors.append(exc)
        if errors:
            raise errors[0]
