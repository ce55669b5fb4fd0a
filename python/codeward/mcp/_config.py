"""MCP server configurations: one in code, or the standard ``.mcp.json`` (``mcpServers``) file.

A file looks like::

    {"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]},
        "github": {"command": "github-mcp", "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"},
                   "sandbox": {"network": true}}
    }}

Each entry takes ``command``, ``args``, ``env``, ``cwd``, ``type`` (only
``"stdio"`` runs; ``http``/``sse`` entries are listed as skipped) and
codeward's ``sandbox`` (``true``, or ``{"writable_workspace": bool,
"network": bool}``). ``${VAR}`` and ``${VAR:-default}`` in those strings
come from the host's environment. Any other key is refused. Loading a
configuration runs the commands it names with the environment it names:
load only files you trust (a repository's ``.mcp.json`` is that
repository's code).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._errors import McpConfigError

__all__ = ["McpConfig", "McpSandbox", "McpServerConfig", "load_mcp_config"]

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_KEYS = {"type", "command", "args", "env", "cwd", "sandbox"}
_SANDBOX_KEYS = {"writable_workspace", "network"}
_MAX_SERVERS = 64


@dataclass(frozen=True)
class McpSandbox:
    """Run the server in a sandbox of its own: the workspace read-only unless
    ``writable_workspace``, no network unless ``network``."""

    writable_workspace: bool = False
    network: bool = False


@dataclass(frozen=True)
class McpServerConfig:
    """One stdio server: how to start it, where it runs, and its time limits.

    ``env`` entries are added to the allowlisted part of the host's
    environment as given (they are the host's own configuration, secrets
    included). ``sandbox`` None runs the server on the host, as the trusted
    extension the design makes it, owned in a pid namespace of its own; an
    McpSandbox runs it confined. ``allow_unowned`` (the host's choice in code,
    never a key of a .mcp.json) lets a host-mode server run where it cannot be
    owned, under a supervisor it can escape; without it such a server is
    refused with McpUnownedError (docs/mcp.md).
    """

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    sandbox: McpSandbox | None = None
    startup_timeout_ms: int = 60_000  # start-up and initialize (npx may download first)
    request_timeout_ms: int = 60_000  # every later request (tools/call included)
    kill_grace_ms: int = 2_000  # SIGTERM to SIGKILL when it is stopped
    allow_unowned: bool = False  # run on the host even where it cannot be owned

    def __post_init__(self) -> None:
        check_server_name(self.name)
        if not isinstance(self.command, str) or not self.command or "\0" in self.command:
            raise McpConfigError(f"server {self.name!r}: command must be a non-empty string")
        args = self.args
        if isinstance(args, str) or not all(isinstance(a, str) and "\0" not in a for a in args):
            raise McpConfigError(f"server {self.name!r}: args must be a list of strings")
        object.__setattr__(self, "args", tuple(args))
        if not isinstance(self.env, Mapping):
            raise McpConfigError(f"server {self.name!r}: env must be an object of strings")
        for key, value in self.env.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise McpConfigError(f"server {self.name!r}: env must map strings to strings")
            if not key or "=" in key or "\0" in key or "\0" in value:
                raise McpConfigError(
                    f"server {self.name!r}: invalid environment variable name {key!r}"
                )
        object.__setattr__(self, "env", dict(self.env))
        if self.cwd is not None and (not isinstance(self.cwd, str) or not os.path.isabs(self.cwd)):
            raise McpConfigError(f"server {self.name!r}: cwd must be an absolute path")
        if self.sandbox is not None and not isinstance(self.sandbox, McpSandbox):
            raise McpConfigError(f"server {self.name!r}: sandbox must be an McpSandbox or None")
        for what in ("startup_timeout_ms", "request_timeout_ms", "kill_grace_ms"):
            value = getattr(self, what)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise McpConfigError(f"server {self.name!r}: {what} must be a positive integer")


@dataclass(frozen=True)
class McpConfig:
    """A loaded file: the stdio servers to start, and the entries skipped with the reason."""

    servers: tuple[McpServerConfig, ...]
    skipped: tuple[tuple[str, str], ...] = ()
    path: str | None = None


def check_server_name(name: object) -> str:
    """A server name becomes part of tool names (``mcp__<server>__<tool>``) and policy rules.

    The name must make that split unique: with no ``__`` inside and no ``_``
    at its end, the first ``__`` after ``mcp__`` is the separator, so two
    servers' tools never share a name (server ``a_`` with tool ``b`` and
    server ``a`` with tool ``_b`` would both be ``mcp__a___b``) and a rule
    ``mcp__a`` never reaches server ``a_``.
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name) or "__" in name:
        raise McpConfigError(
            f"invalid MCP server name {name!r}: use 1-64 ASCII letters, digits, '-' and '_' "
            "(no '__', which separates the parts of a tool name)"
        )
    if name.endswith("_"):
        raise McpConfigError(
            f"invalid MCP server name {name!r}: it must not end with '_': its tools' names "
            f"would be ambiguous (mcp__{name}_<tool> also reads as server {name[:-1]!r} "
            f"with a tool starting with '_')"
        )
    return name


def load_mcp_config(
    source: str | os.PathLike[str] | Mapping[str, Any],
    *,
    environ: Mapping[str, str] | None = None,
) -> McpConfig:
    """Reads a ``.mcp.json`` file (or the parsed mapping) into server configurations.

    Relative ``cwd`` values and relative program paths are taken from the
    file's directory (the current directory for a mapping).
    """
    path: str | None = None
    if isinstance(source, Mapping):
        data: Any = source
        base = os.getcwd()
    else:
        path = os.path.abspath(os.fspath(source))
        base = os.path.dirname(path)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read(4 * 1024 * 1024 + 1)
        except OSError as exc:
            raise McpConfigError(f"cannot read {path}: {exc.strerror}", path=path) from None
        if len(text) > 4 * 1024 * 1024:
            raise McpConfigError(f"{path} is larger than 4 MiB", path=path)
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise McpConfigError(f"{path} is not valid JSON: {exc}", path=path) from None
    env = os.environ if environ is None else environ
    where = path or "the configuration"
    if not isinstance(data, Mapping) or not isinstance(data.get("mcpServers"), Mapping):
        raise McpConfigError(f'{where} has no "mcpServers" object', path=path)
    entries = data["mcpServers"]
    if len(entries) > _MAX_SERVERS:
        raise McpConfigError(f"{where} names more than {_MAX_SERVERS} servers", path=path)
    servers, skipped = [], []
    for name, entry in entries.items():
        reason = _skip_reason(entry)
        if reason:
            skipped.append((check_server_name(name), reason))
            continue
        servers.append(_server(name, entry, env, base, path))
    return McpConfig(tuple(servers), tuple(skipped), path)


def _skip_reason(entry: Any) -> str | None:
    if not isinstance(entry, Mapping):
        return None  # _server reports it
    kind = entry.get("type", "stdio")
    if kind != "stdio" or ("url" in entry and "command" not in entry):
        return f"transport {kind if kind != 'stdio' else 'url'!r} is not supported (stdio only)"
    return None


def _server(
    name: str, entry: Any, env: Mapping[str, str], base: str, path: str | None
) -> McpServerConfig:
    check_server_name(name)
    if not isinstance(entry, Mapping):
        raise McpConfigError(f"server {name!r}: its entry must be an object", path=path)
    unknown = sorted(set(entry) - _KEYS)
    if unknown:
        raise McpConfigError(
            f"server {name!r}: unknown key(s) {', '.join(map(repr, unknown))} "
            f"(known: {', '.join(sorted(_KEYS))})",
            path=path,
            server=name,
        )

    def expand(value: Any, what: str) -> str:
        if not isinstance(value, str):
            raise McpConfigError(f"server {name!r}: {what} must be a string", path=path)

        def one(match: re.Match[str]) -> str:
            var, default = match.group(1), match.group(2)
            if var in env:
                return env[var]
            if default is not None:
                return default
            raise McpConfigError(
                f"server {name!r}: {what} uses ${{{var}}}, which is not set", path=path
            )

        return _VAR.sub(one, value)

    command = expand(entry.get("command"), "command")
    if os.sep in command and not os.path.isabs(command):
        command = os.path.normpath(os.path.join(base, command))
    args = entry.get("args", [])
    if not isinstance(args, list):
        raise McpConfigError(f"server {name!r}: args must be a list of strings", path=path)
    raw_env = entry.get("env", {})
    if not isinstance(raw_env, Mapping):
        raise McpConfigError(f"server {name!r}: env must be an object of strings", path=path)
    cwd = entry.get("cwd")
    if cwd is not None:
        cwd = os.path.normpath(os.path.join(base, expand(cwd, "cwd")))
    try:
        return McpServerConfig(
            name=name,
            command=command,
            args=tuple(expand(a, "an argument") for a in args),
            env={str(k): expand(v, f"env {k}") for k, v in raw_env.items()},
            cwd=cwd,
            sandbox=_sandbox(name, entry.get("sandbox"), path),
        )
    except McpConfigError as exc:
        raise McpConfigError(str(exc), path=path, server=name) from None


def _sandbox(name: str, value: Any, path: str | None) -> McpSandbox | None:
    if value is None or value is False:
        return None
    if value is True:
        return McpSandbox()
    if not isinstance(value, Mapping):
        raise McpConfigError(
            f"server {name!r}: sandbox must be true, false or an object", path=path
        )
    unknown = sorted(set(value) - _SANDBOX_KEYS)
    if unknown or not all(isinstance(v, bool) for v in value.values()):
        raise McpConfigError(
            f"server {name!r}: sandbox takes writable_workspace and network, both booleans",
            path=path,
        )
    return McpSandbox(**value)
