"""HookMatcher: which calls a hook sees, in the policy's own terms (tool names and path globs)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import _native
from ..policy import normalize_path
from ._types import HookContext, HookError

__all__ = ["HookMatcher"]

_MAX_PATTERN = 4096
_SEARCH_MODES = frozenset({"grep", "glob", "bm25"})
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _compile(pattern: str, tool_name: bool) -> _native.Glob:
    try:
        return _native.Glob(pattern, tool_name=tool_name)
    except (_native.NativeError, ValueError, TypeError) as exc:
        detail = exc.args[1] if isinstance(exc, _native.NativeError) and len(exc.args) > 1 else exc
        raise HookError(f"invalid hook matcher pattern {pattern[:80]!r}: {detail}") from None


def _check_tool(tool: str) -> str:
    if not isinstance(tool, str):
        raise HookError(f"matcher tool must be a string or None, not {type(tool).__name__}")
    if not tool or len(tool) > _MAX_PATTERN:
        raise HookError("matcher tool must be a non-empty tool name or glob of at most 4 KiB")
    if "(" in tool or ")" in tool:
        raise HookError(
            f"matcher tool {tool[:80]!r} is a rule with a pattern; a matcher names only the "
            "tool (put a path glob in path_pattern)"
        )
    if not all(0x21 <= ord(ch) <= 0x7E for ch in tool):
        raise HookError(
            f"matcher tool {tool[:80]!r} contains whitespace, control or non-ASCII characters"
        )
    return tool.lower()


def _check_path_pattern(pattern: str) -> str:
    if not isinstance(pattern, str):
        raise HookError(f"path_pattern must be a string or None, not {type(pattern).__name__}")
    if not pattern.strip() or "\0" in pattern:
        raise HookError("path_pattern must be a non-blank glob without NUL bytes")
    if pattern.startswith("/") or pattern.startswith("./"):
        raise HookError(
            f"path_pattern {pattern[:80]!r} can never match: calls carry normalized "
            "workspace-relative paths (write 'src/**', not './src/**' or '/abs/src/**')"
        )
    return pattern


@dataclass(frozen=True)
class HookMatcher:
    """Which calls a hook runs for.

    ``tool``: a tool name or glob, compared ASCII-case-insensitively like a
    policy rule's tool part (None or ``*`` = any tool); an MCP server name
    ``mcp__server`` also covers that server's tools ``mcp__server__x``;
    ``grep``/``glob``/``bm25`` also cover ``search`` in that mode, and
    ``search`` covers calls to those names. ``path_pattern``: a policy glob
    that must match at least one of the call's workspace-relative paths; a
    call without paths never matches a matcher that has one. Events without
    a tool (session_start, session_end) match only matchers without ``tool``.
    """

    tool: str | None = None
    path_pattern: str | None = None
    _tool_glob: _native.Glob | None = field(default=None, init=False, repr=False, compare=False)
    _server: str | None = field(default=None, init=False, repr=False, compare=False)
    _path_glob: _native.Glob | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.tool is not None and self.tool != "*":
            canonical = _check_tool(self.tool)
            rest = canonical[len("mcp__") :]
            if canonical.startswith("mcp__") and rest and "*" not in rest and "__" not in rest:
                object.__setattr__(self, "_server", canonical)
            else:
                object.__setattr__(self, "_tool_glob", _compile(canonical, tool_name=True))
        if self.path_pattern is not None:
            pattern = _check_path_pattern(self.path_pattern)
            object.__setattr__(self, "_path_glob", _compile(pattern, tool_name=False))

    @property
    def any_tool(self) -> bool:
        return self._tool_glob is None and self._server is None

    def matches(self, context: HookContext) -> bool:
        """Whether a hook with this matcher runs for ``context``."""
        return self.matches_call(context.tool, context.paths, context.args)

    def matches_call(
        self, tool: str | None, paths: tuple[str, ...] = (), args: Mapping[str, Any] | None = None
    ) -> bool:
        if not self.any_tool and (
            tool is None or not any(self._covers(n) for n in _call_names(tool, args))
        ):
            return False
        if self._path_glob is not None:
            glob = self._path_glob
            return any(p and glob.match(_normalized(p)) for p in paths)
        return True

    def _covers(self, name: str) -> bool:
        if self._server is not None:
            return name == self._server or name.startswith(self._server + "__")
        assert self._tool_glob is not None
        return bool(self._tool_glob.match(name))


def _normalized(path: str) -> str:
    try:
        return normalize_path(path)
    except Exception:  # a path the normalizer refuses matches nothing lexically better
        return path


def _call_names(tool: str, args: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The names a call answers to: its own, plus the search/mode pair of the policy."""
    name = tool.translate(_ASCII_LOWER)
    if name in _SEARCH_MODES:
        return (name, "search")
    if name == "search" and args is not None:
        mode = args.get("mode")
        if isinstance(mode, str) and mode.lower() in _SEARCH_MODES:
            return (name, mode.lower())
    return (name,)
