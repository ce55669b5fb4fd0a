"""One readable line per tool call, for confirmations and traces.

``bash: cargo test``, ``write src/main.rs (1.2 KiB)``, ``edit src/a.py
(replace 1 occurrence)``, ``download https://host/path -> artifacts/x``, and
``tool: key=value ...`` for any other tool. The arguments come from a model,
so every piece goes through :mod:`codeward._redact`: credentials are masked,
arguments named like secrets show ``REDACTED``, newlines show as ``⏎``,
controls and bidirectional characters are escaped, and the line is clipped.
This is the one summary: the guardrail exports it as ``summarize_call`` and
the confirmations as ``summarize_operation``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ._redact import REDACTED, clip, is_secret_name, safe_text

__all__ = ["DEFAULT_GRANT_PORTS", "grant_target", "summarize_call"]

DEFAULT_GRANT_PORTS = (443, 80)  # what a network grant without a port covers: HTTPS and HTTP

_VALUE_LIMIT = 4096  # a value is cut here before the line is: a huge value costs no more
_MAX_DEPTH = 8  # nested deeper than this (or a cycle) shows as "..."


def _clean(value: object) -> str:
    """A model-supplied value: bounded, redacted, on one line, controls escaped."""
    text = value if isinstance(value, str) else json.dumps(_mask(value, 0), default=repr)
    return safe_text(text, _VALUE_LIMIT, one_line=True, show_length=False)


def _mask(value: object, depth: int) -> object:
    """A nested value with the entries named like secrets replaced, cut below ``_MAX_DEPTH``."""
    if isinstance(value, Mapping):
        if depth >= _MAX_DEPTH:
            return "..."
        return {
            str(k): REDACTED if is_secret_name(str(k)) else _mask(v, depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [_mask(v, depth + 1) for v in value] if depth < _MAX_DEPTH else "..."
    return value


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB"):
        value /= 1024
        if value < 1024 or unit == "GiB":
            break
    return f"{value:.1f} {unit}"


def _text_size(value: object) -> str:
    return _size(len(value.encode("utf-8", "surrogatepass"))) if isinstance(value, str) else "?"


def summarize_call(tool: str, args: Mapping[str, Any] | None, limit: int = 160) -> str:
    """The one-line operation summary of a call, at most ``limit`` characters; never raises."""
    args = args if isinstance(args, Mapping) else {}
    name = _clean(str(tool))
    describe = _DESCRIBERS.get(str(tool))
    try:
        text = describe(args) if describe is not None else _generic(name, args)
    except Exception:  # a malformed argument must not hide the call: show it generically
        try:
            text = _generic(name, args)
        except Exception:  # arguments that cannot even be listed: the tool's name alone
            text = name
    return clip(text, limit, show_length=False)


def _path(args: Mapping[str, Any], *keys: str) -> str:
    for key in keys:
        value = args.get(key)
        if isinstance(value, str) and value:
            return _clean(value)
    return "?"


def grant_target(host: object, port: object) -> str:
    """Where a network grant reaches, as a person should read it before approving it:
    ``host:port``, or both web ports when no port is given (an IPv6 host in brackets)."""
    name = _clean(host)
    if ":" in name and not name.startswith("["):
        name = f"[{name}]"
    if port is None:
        https, http = DEFAULT_GRANT_PORTS
        return f"{name}:{https} and {name}:{http} (no port given: HTTPS and HTTP)"
    return f"{name}:{_clean(port)}"


def _bash(args: Mapping[str, Any]) -> str:
    command = _clean(args.get("command", ""))
    mode = args.get("sandbox_permissions", "use_default")
    if mode == "require_escalated":
        return f"bash (outside the sandbox): {command}"
    if mode == "request_network_grant":
        grant = args.get("network_grant")
        where = ""
        if isinstance(grant, Mapping):
            where = f" {grant_target(grant.get('host'), grant.get('port'))}"
        return f"bash (network{where}): {command}"
    return f"bash: {command}"


def _read(args: Mapping[str, Any]) -> str:
    files = args.get("files")
    if isinstance(files, list) and files:
        shown = [_clean(f.get("path", "?")) if isinstance(f, Mapping) else "?" for f in files[:3]]
        more = f" +{len(files) - 3} more" if len(files) > 3 else ""
        return f"read {len(files)} file{'s' if len(files) != 1 else ''}: {', '.join(shown)}{more}"
    text = f"read {_path(args, 'file_path', 'path')}"
    offset, lim = args.get("offset"), args.get("limit")
    if isinstance(offset, int) or isinstance(lim, int):
        start = offset if isinstance(offset, int) else 1
        end = f"{start + lim - 1}" if isinstance(lim, int) else "end"
        text += f" (lines {start}-{end})"
    return text


def _write(args: Mapping[str, Any]) -> str:
    return f"write {_path(args, 'file_path', 'path')} ({_text_size(args.get('content'))})"


def _edit(args: Mapping[str, Any]) -> str:
    how = "replace all occurrences" if args.get("replace_all") is True else "replace 1 occurrence"
    return f"edit {_path(args, 'file_path', 'path')} ({how})"


_PATCH_FILE = re.compile(r"^\+\+\+ (?:b/)?(\S+)", re.M)


def _patch(args: Mapping[str, Any]) -> str:
    patch = args.get("patch")
    if not isinstance(patch, str):
        return "patch ?"
    files = [f for f in dict.fromkeys(_PATCH_FILE.findall(patch)) if f != "/dev/null"]
    lines = patch.splitlines()
    added = sum(1 for ln in lines if ln.startswith("+") and not ln.startswith("+++"))
    removed = sum(1 for ln in lines if ln.startswith("-") and not ln.startswith("---"))
    shown = ", ".join(_clean(f) for f in files[:3]) or "?"
    more = f" +{len(files) - 3} more" if len(files) > 3 else ""
    return f"patch {shown}{more} (+{added} -{removed} lines)"


def _search(args: Mapping[str, Any]) -> str:
    mode = _clean(args.get("mode", "grep"))
    where = f" in {_clean(args['path'])}" if isinstance(args.get("path"), str) else ""
    return f"search {mode} {_clean(json.dumps(str(args.get('query', ''))))}{where}"


def _ls(args: Mapping[str, Any]) -> str:
    return f"ls {_path(args, 'path') if args.get('path') else '.'}"


def _git(args: Mapping[str, Any]) -> str:
    target = args.get("target")
    extra = f" {_clean(target)}" if isinstance(target, str) and target else ""
    return f"git {_clean(args.get('command', '?'))}{extra}"


def _download(args: Mapping[str, Any]) -> str:
    url = _clean(args.get("url", "?"))
    dest = _path(args, "file_path", "path", "dest", "destination", "output")
    return f"download {url} -> {dest}"


def _generic(name: str, args: Mapping[str, Any]) -> str:
    shown = []
    for key, value in list(args.items())[:6]:
        k = _clean(str(key))
        v = REDACTED if is_secret_name(k) else clip(_clean(value), 60, show_length=False)
        shown.append(f"{k}={v}")
    more = f" +{len(args) - 6} more" if len(args) > 6 else ""
    return f"{name}: {' '.join(shown)}{more}" if shown else name


_DESCRIBERS = {
    "bash": _bash,
    "read": _read,
    "write": _write,
    "edit": _edit,
    "patch": _patch,
    "search": _search,
    "ls": _ls,
    "git": _git,
    "download": _download,
}
