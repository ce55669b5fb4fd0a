"""The tools a session knows: built-ins, host-registered external (MCP-style) tools, and skills."""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .._errors import CodewardError
from ..tools import ErrorKind, Tool, ToolContext, ToolKind, ToolResult

__all__ = ["ExternalTool", "RegistrationError", "Skill", "ToolAnnotations", "ToolRegistry"]

_ANNOTATION_KEYS = {
    "read_only": "read_only",
    "readOnlyHint": "read_only",
    "destructive": "destructive",
    "destructiveHint": "destructive",
    "idempotent": "idempotent",
    "idempotentHint": "idempotent",
    "open_world": "open_world",
    "openWorldHint": "open_world",
    "title": "title",
}


class RegistrationError(CodewardError, ValueError):
    """A tool, skill or hook registration is malformed (name, schema, annotations ...)."""


@dataclass(frozen=True)
class ToolAnnotations:
    """MCP's tool annotations. Only an explicit, consistent ``read_only=True`` counts as read-only:
    missing, non-boolean or contradictory (read-only yet destructive) ones are side-effecting."""

    read_only: bool | None = None
    destructive: bool | None = None
    idempotent: bool | None = None
    open_world: bool | None = None
    title: str | None = None

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | ToolAnnotations | None) -> ToolAnnotations:
        """Accepts MCP's camelCase hints (``readOnlyHint`` ...) and snake_case names."""
        if data is None:
            return cls()
        if isinstance(data, ToolAnnotations):
            return data
        if not isinstance(data, Mapping):
            raise RegistrationError(f"annotations must be a mapping, not {type(data).__name__}")
        values: dict[str, Any] = {}
        for key, value in data.items():
            field_name = _ANNOTATION_KEYS.get(key)
            if field_name is None:
                raise RegistrationError(f"unknown tool annotation {key!r}")
            if field_name == "title":
                values["title"] = None if value is None else str(value)
            else:  # a non-boolean hint is dropped, so the tool counts as side-effecting
                values[field_name] = value if isinstance(value, bool) else None
        return cls(**values)

    @property
    def side_effecting(self) -> bool:
        return not (self.read_only is True and self.destructive is not True)


class ExternalTool(Tool):
    """A host-registered tool (an MCP server's, or the host's own) behind the same kernel."""

    kind = ToolKind.EXTERNAL

    def __init__(
        self,
        name: str,
        handler: Callable[[Mapping[str, Any]], Any],
        schema: Mapping[str, Any],
        annotations: ToolAnnotations,
        description: str = "",
        *,
        launch: bool = False,
    ) -> None:
        self.name = name  # type: ignore[misc]
        self.handler = handler
        self.schema = schema  # type: ignore[misc]
        self.annotations = annotations
        self.description = description or annotations.title or name  # type: ignore[misc]
        if launch:
            self.kind = ToolKind.LAUNCH  # type: ignore[misc]

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            value = self.handler(copy.deepcopy(dict(args)))
        except Exception as exc:  # a host handler's failure is the call's failure, not the kernel's
            return ToolResult.failure(
                self.name, ErrorKind.TOOL_FAILED, f"{self.name} failed: {type(exc).__name__}: {exc}"
            )
        if isinstance(value, ToolResult):
            return value
        if value is None:
            return ToolResult(self.name, "")
        if isinstance(value, str):
            return ToolResult(self.name, value)
        if isinstance(value, Mapping):
            return ToolResult(
                self.name,
                str(value.get("output", "")),
                int(value.get("exit_code", 0)),
                bool(value.get("success", True)),
                dict(value.get("metadata", {})),
            )
        return ToolResult(self.name, str(value))


@dataclass(frozen=True)
class Skill:
    """A skill: the tools its calls may use (rule-style names or globs), and an optional runner."""

    name: str
    allowed_tools: tuple[str, ...]
    handler: Callable[..., Any] | None = None
    description: str = ""


class ToolRegistry:
    """Name -> tool, plus skills. Thread-safe; names are exact (built-ins are lower case)."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._lock = threading.Lock()
        self._tools: dict[str, Tool] = {}
        self._skills: dict[str, Skill] = {}
        for tool in tools:
            self._tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        with self._lock:
            return self._tools.get(name)

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._tools)

    def add(self, tool: Tool, *, replace: bool = False) -> None:
        _check_name(tool.name, "tool")
        if not isinstance(tool.schema, Mapping) or tool.schema.get("type") != "object":
            raise RegistrationError(f"tool {tool.name!r}: the schema must be a JSON object schema")
        with self._lock:
            if tool.name in self._tools and not replace:
                raise RegistrationError(f"a tool named {tool.name!r} is already registered")
            self._tools[tool.name] = tool

    def remove(self, name: str) -> bool:
        with self._lock:
            return self._tools.pop(name, None) is not None

    def add_skill(self, skill: Skill) -> None:
        _check_name(skill.name, "skill")
        if isinstance(skill.allowed_tools, str) or not all(
            isinstance(t, str) and t.strip() for t in skill.allowed_tools
        ):
            raise RegistrationError(
                f"skill {skill.name!r}: allowed_tools must be a list of tool names"
            )
        with self._lock:
            self._skills[skill.name] = skill

    def skill(self, name: str) -> Skill | None:
        with self._lock:
            return self._skills.get(name)

    def skills(self) -> list[Skill]:
        with self._lock:
            return list(self._skills.values())


def _check_name(name: Any, what: str) -> None:
    if not isinstance(name, str) or not name or len(name) > 128:
        raise RegistrationError(
            f"a {what} name must be a non-empty string of at most 128 characters"
        )
    if not all(c.isalnum() or c in "_-." for c in name):
        raise RegistrationError(
            f"{what} name {name!r} may only hold letters, digits, '_', '-' and '.'"
        )
