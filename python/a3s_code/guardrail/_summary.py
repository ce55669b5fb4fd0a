"""One readable line per tool call, for confirmations and traces.

``bash: cargo test``, ``write src/main.rs (1.2 KiB)``, ``edit src/a.py
(replace 1 occurrence)``, ``download https://host/path -> artifacts/x``.
The arguments come from a model, so the line is made safe to show: the
values of signed-URL and token query parameters are redacted (as are URL
passwords, ``Authorization: Bearer ...`` and ``--password x``), control and
bidirectional characters are escaped, and the line is clipped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

__all__ = ["REDACTED", "redact", "summarize_call"]

REDACTED = "REDACTED"
_HEAD = 4096  # only this much of a value is looked at: a huge value costs no more

# Query parameters whose value is a credential: names compared without case, '-' and '_'.
_SECRET_PARAMS = frozenset(
    {
        "sig",
        "signature",
        "xamzsignature",
        "xamzcredential",
        "xamzsecuritytoken",
        "xgoogsignature",
        "xgoogcredential",
        "googleaccessid",
        "token",
        "accesstoken",
        "refreshtoken",
        "idtoken",
        "key",
        "apikey",
        "keypairid",
        "policy",
        "expires",
        "code",
        "password",
        "passwd",
        "pwd",
        "secret",
        "clientsecret",
        "auth",
        "authorization",
        "jwt",
        "sv",
        "se",
        "sp",
        "sk",
    }
)
_SECRET_FRAGMENTS = ("sig", "token", "secret", "passw", "credential", "apikey", "auth")
_QUERY = re.compile(r"([?&;])([^=&#\s;'\"]+)=([^&#\s;'\"]*)")
_USERINFO = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://)([^/\s:@]+):([^/\s@]+)@")
_BEARER = re.compile(r"(?i)\b(bearer|basic|token)(\s+)[A-Za-z0-9._~+/=\-]{8,}")
_FLAG_SECRET = re.compile(
    r"(?i)(--?[\w-]*(?:password|passwd|token|secret|api-?key)[\w-]*(?:=|\s+))(['\"]?)[^\s'\"]+"
)
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def _secret_param(name: str) -> bool:
    folded = re.sub(r"[-_.]", "", unquote(name)).casefold()
    return (
        folded in _SECRET_PARAMS
        or folded.endswith(("key", "expires"))
        or any(f in folded for f in _SECRET_FRAGMENTS)
    )


def redact(text: str) -> str:
    """``text`` with signed-URL parameters, URL passwords and tokens replaced by REDACTED."""
    text = _QUERY.sub(
        lambda m: f"{m[1]}{m[2]}={REDACTED}" if _secret_param(m[2]) and m[3] else m[0], text
    )
    text = _USERINFO.sub(lambda m: f"{m[1]}{m[2]}:{REDACTED}@", text)
    text = _BEARER.sub(lambda m: f"{m[1]}{m[2]}{REDACTED}", text)
    return _FLAG_SECRET.sub(lambda m: f"{m[1]}{m[2]}{REDACTED}", text)


def _escape(text: str) -> str:
    def one(m: re.Match[str]) -> str:
        code = ord(m.group())
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    return _UNSAFE.sub(one, text)


def _clean(value: object, *, one_line: bool = True) -> str:
    """A model-supplied value: bounded, redacted, on one line, controls escaped."""
    text = value if isinstance(value, str) else json.dumps(value, default=repr)
    cut = len(text) > _HEAD
    text = text[:_HEAD]
    if one_line:
        text = re.sub(r"\s*\n\s*", " ⏎ ", text.strip())
    text = _escape(redact(text))
    return text + "…" if cut else text


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


def summarize_call(tool: str, args: Mapping[str, Any], limit: int = 160) -> str:
    """The one-line operation summary of a call, at most ``limit`` characters."""
    args = args if isinstance(args, Mapping) else {}
    name = _clean(str(tool))
    describe = _DESCRIBERS.get(str(tool))
    try:
        text = describe(args) if describe is not None else _generic(name, args)
    except Exception:  # a malformed argument must not hide the call: show it generically
        text = _generic(name, args)
    if len(text) > limit:
        text = text[: max(1, limit - 1)] + "…"
    return text


def _path(args: Mapping[str, Any], *keys: str) -> str:
    for key in keys:
        value = args.get(key)
        if isinstance(value, str) and value:
            return _clean(value)
    return "?"


def _bash(args: Mapping[str, Any]) -> str:
    command = _clean(args.get("command", ""))
    mode = args.get("sandbox_permissions", "use_default")
    if mode == "require_escalated":
        return f"bash (outside the sandbox): {command}"
    if mode == "request_network_grant":
        grant = args.get("network_grant")
        where = ""
        if isinstance(grant, Mapping):
            where = f" {_clean(grant.get('host'))}:{_clean(grant.get('port'))}"
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
        secret = any(w in k.casefold() for w in ("token", "secret", "password", "key", "auth"))
        v = REDACTED if secret else _clean(value)
        shown.append(f"{k}={v if len(v) <= 60 else v[:59] + '…'}")
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
