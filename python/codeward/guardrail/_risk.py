"""How dangerous a call is, for the person asked to confirm it.

The level is the highest that any finding reaches:

* low: reads inside the workspace, read-only git, read-only external tools;
* medium: workspace writes, bash inside the sandbox, launching nested calls;
* high: a protected name, bash without a sandbox, a network grant, a
  download, an external tool with side effects or no annotations, an
  unknown tool;
* critical: bash escalated to run outside the sandbox, a path leaving the
  workspace, a command a hard guardrail refuses.

Reasons are short sentences, most severe first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from .._hostname import canonical_or_none, host_warnings
from .._summary import grant_target
from ..hitl import RISK_LEVELS, Risk
from ..workspace import Workspace
from ._command import check_command
from ._paths import check_paths
from ._protected import is_protected_name, is_protected_path

__all__ = ["Risk", "assess_risk"]

_Add = Callable[[tuple[str, str]], None]
_MUTATING = frozenset({"write", "bash", "download", "external", "unknown", "launch"})


def assess_risk(
    tool: str,
    args: Mapping[str, Any],
    *,
    kind: str,
    sandboxed: bool,
    paths: Sequence[str],
    annotations: Mapping[str, Any] | object | None = None,
    workspace: Workspace | None = None,
) -> Risk:
    """The risk of calling ``tool`` with ``args``.

    ``kind`` is the tool's ToolKind value ("read", "write", "bash", "git",
    "download", "launch", "external") or "unknown"; ``sandboxed`` whether
    bash would run inside the sandbox; ``paths`` the workspace paths the call
    names. ``annotations`` (MCP tool annotations: ``read_only``,
    ``destructive``, ``open_world``, or their ``...Hint`` spellings) refine
    an external tool; with ``workspace`` the paths are checked against the
    real tree (escapes, symlinks into protected names), otherwise by name.
    """
    kind = str(getattr(kind, "value", kind))
    findings: list[tuple[str, str]] = []
    add = findings.append
    if kind == "read":
        add(("low", "reads inside the workspace"))
    elif kind == "git":
        add(("low", "read-only git (status, diff, log, show)"))
    elif kind == "write":
        add(("medium", _count(paths, "changes {} in the workspace")))
    elif kind == "bash":
        _bash(args, sandboxed, add)
    elif kind == "download":
        url = args.get("url")
        host = _host(url) if isinstance(url, str) else None
        where = f" from {canonical_or_none(host) or host}" if host else ""
        add(("high", f"downloads content{where} into the workspace"))
        for warning in host_warnings(host) if host else ():
            add(("high", warning))
    elif kind == "launch":
        add(("medium", "starts nested calls; each is checked on its own"))
    elif kind == "external":
        _external(annotations, add)
    else:
        add(("high", f"{tool!r} is not a known tool"))
    _paths(kind, paths, workspace, add)
    return _combine(findings)


def _bash(args: Mapping[str, Any], sandboxed: bool, add: _Add) -> None:
    mode = args.get("sandbox_permissions", "use_default")
    if mode == "require_escalated":
        add(("critical", "runs on the host outside the sandbox (require_escalated)"))
    elif sandboxed:
        add(("medium", "runs in the sandbox; it can change workspace files"))
    else:
        add(("high", "runs without a sandbox, with the user's full rights"))
    if mode == "request_network_grant":
        grant = args.get("network_grant")
        target = ""
        if isinstance(grant, Mapping):
            target = f" to {grant_target(grant.get('host'), grant.get('port'))}"
        add(("high", f"asks for network access{target}"))
        if isinstance(grant, Mapping):
            for warning in host_warnings(grant.get("host")):
                add(("high", warning))
    command = args.get("command")
    if isinstance(command, str):
        hit = check_command(command)
        if hit is not None:
            add(("critical", f"matches the hard guardrail {hit.rule}"))


def _external(annotations: Mapping[str, Any] | object | None, add: _Add) -> None:
    read_only = _annotation(annotations, "read_only", "readOnlyHint")
    destructive = _annotation(annotations, "destructive", "destructiveHint")
    open_world = _annotation(annotations, "open_world", "openWorldHint")
    if annotations is None:
        add(("high", "an external tool without annotations counts as side-effecting"))
    elif read_only is True and destructive is not True:
        add(("low", "an external tool declared read-only"))
    elif destructive is True:
        add(("high", "an external tool declared destructive"))
    else:
        add(("high", "an external tool with side effects"))
    if open_world is True and read_only is not True:
        add(("high", "reaches systems outside this machine"))


def _annotation(annotations: Mapping[str, Any] | object | None, *names: str) -> object:
    for name in names:
        if isinstance(annotations, Mapping):
            if name in annotations:
                return annotations[name]
        elif annotations is not None and hasattr(annotations, name):
            return getattr(annotations, name)
    return None


def _paths(kind: str, paths: Sequence[str], workspace: Workspace | None, add: _Add) -> None:
    if workspace is not None:
        hit = check_paths(workspace, paths)
        if hit is not None:
            add(("critical", f"{_shown(hit.fragment)} is outside the workspace ({hit.rule})"))
            return
    if kind not in _MUTATING:
        return
    protected = [p for p in paths if _protected(workspace, p)]
    if protected:
        add(("high", f"touches the protected name {_shown(protected[0])}"))


def _protected(workspace: Workspace | None, path: str) -> bool:
    if workspace is not None:
        return is_protected_path(workspace, path)
    first = next((c for c in str(path).replace("\\", "/").split("/") if c not in ("", ".")), "")
    return is_protected_name(first)


def _combine(findings: list[tuple[str, str]]) -> Risk:
    ranked = sorted(findings, key=lambda f: -RISK_LEVELS.index(f[0]))
    level = ranked[0][0] if ranked else "low"
    reasons = tuple(dict.fromkeys(reason for _level, reason in ranked))
    return Risk(level, reasons)


def _count(paths: Sequence[str], template: str) -> str:
    if len(paths) == 1:
        return template.format(_shown(paths[0]))
    return template.format(f"{len(paths)} paths" if paths else "files")


def _shown(path: object) -> str:
    """A path for a reason: quoted, at most 80 characters (the renderer escapes controls)."""
    text = repr(str(path))
    return text if len(text) <= 80 else text[:79] + "…"


def _host(url: str) -> str | None:
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    return host
