"""The argument string a rule's pattern is matched against, one per tool.

This is half of the matching contract (the glob is the other half), and the
Node and Go bindings build exactly the same strings: the shared vectors in
tests/vectors/policy.json pin it. docs/policy.md is the prose reference.
"""

from __future__ import annotations

import decimal
import json
import math
from collections.abc import Mapping
from typing import Any, NamedTuple

from .. import _native
from .._errors import PolicyError

__all__ = [
    "SEPARATOR_STAND_IN",
    "Subject",
    "argument_string",
    "canonical_json",
    "canonical_tool",
    "decision_subjects",
    "normalize_path",
]

FILE_PATH_TOOLS = frozenset({"read", "write", "edit", "download"})
SEARCH_MODE_TOOLS = frozenset({"grep", "glob", "bm25"})
# The tools whose argument string is a path once the paths of a call are known (see
# decision_subjects): the file tools, ls, search ("<mode> <query> <path>") and patch (each file).
PATH_SUBJECT_TOOLS = FILE_PATH_TOOLS | {"ls", "search", "patch"}
# Stands for a space inside the mode, query or path of a search in the form an allow rule is
# matched on, so that a literal space of a pattern can only match the two separators.
SEPARATOR_STAND_IN = "\x1f"

_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


_TOOL_CACHE: dict[str, str] = {}


def canonical_tool(tool: str) -> str:
    """ASCII lower-case, the only case folding tool names get."""
    cached = _TOOL_CACHE.get(tool) if type(tool) is str else None
    if cached is not None:
        return cached
    if not isinstance(tool, str):
        raise PolicyError(f"tool name must be a string, not {type(tool).__name__}")
    name = tool.lower() if tool.isascii() else tool.translate(_ASCII_LOWER)
    if len(_TOOL_CACHE) < 4096:
        _TOOL_CACHE[tool] = name
    return name


def normalize_path(path: str) -> str:
    """Lexical normal form of a file path (see a3s_path_normalize)."""
    if "\\" in path or "//" in path or "/." in path or path.startswith(".") or path.endswith("/"):
        result: str = _native.path_normalize(path)
        return result
    return path


def _number(value: float) -> str:
    """ECMAScript Number::toString, so Python, Node and Go print a number alike."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    # repr() gives the shortest digits that round-trip, as ECMAScript requires.
    exact = decimal.Decimal(repr(abs(value))).as_tuple()
    all_digits = "".join(map(str, exact.digits))
    digits = all_digits.rstrip("0")
    k = len(digits)
    n = len(all_digits) + int(exact.exponent)  # value = 0.<digits> * 10**n
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * -n + digits
    mantissa = digits[0] + ("." + digits[1:] if k > 1 else "")
    return f"{sign}{mantissa}e{'+' if n > 0 else '-'}{abs(n - 1)}"


def _encode(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(json.dumps(value, ensure_ascii=False))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        out.append(_number(float(value)))
    elif isinstance(value, Mapping):
        keys = list(value)
        if any(not isinstance(k, str) for k in keys):
            raise PolicyError("tool arguments are not representable as JSON: non-string key")
        out.append("{")
        for i, key in enumerate(sorted(keys)):
            if i:
                out.append(",")
            out.append(json.dumps(key, ensure_ascii=False))
            out.append(":")
            _encode(value[key], out)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _encode(item, out)
        out.append("]")
    else:
        raise PolicyError(
            f"tool arguments are not representable as JSON: {type(value).__name__} value"
        )


def _reference_json(value: Any) -> str:
    out: list[str] = []
    try:
        _encode(value, out)
    except RecursionError:
        raise PolicyError("tool arguments are nested too deeply") from None
    return "".join(out)


def canonical_json(value: Any) -> str:
    """Compact JSON with keys sorted by code point and minimal string escaping.

    Numbers are printed as ECMAScript prints them (``1.0`` is ``1``,
    ``1e-7`` is ``1e-7``), because Node cannot tell 1.0 from 1; NaN and
    Infinity, which JSON lacks, are the bare words. Node and Go reproduce
    exactly this text.

    _encode above is the specification; the C extension prints the same
    text for the common values (dicts with str keys, lists, tuples, str,
    int, float, bool, None) and raises TypeError or ValueError for anything
    else (another Mapping, a float subclass, a lone surrogate, nesting
    deeper than 1000), which _encode then prints or rejects.
    """
    try:
        text: str = _native.canonical_json(value)
        return text
    except (TypeError, ValueError):  # UnicodeEncodeError is a ValueError
        pass
    return _reference_json(value)


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return canonical_json(value)


def _path_field(args: Mapping[str, Any], key: str) -> str:
    value = args.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        return canonical_json(value)
    return normalize_path(value)


def _read_paths(args: Mapping[str, Any]) -> list[str]:
    files = args.get("files")
    if not isinstance(files, (list, tuple)):
        return ["" if files is None else canonical_json(files)]
    paths = []
    for entry in files:
        if isinstance(entry, Mapping):
            paths.append(_path_field(entry, "path"))
        elif isinstance(entry, str):
            paths.append(normalize_path(entry))
        else:
            paths.append(_text(entry))
    return paths or [""]


def is_multi_read(name: str, args: Mapping[str, Any]) -> bool:
    """A read of several files: each path is checked on its own (see subjects())."""
    return name == "read" and "file_path" not in args and "files" in args


class Subject(NamedTuple):
    """One argument string a call is decided on.

    ``strict`` is set for search: the same string with every space inside
    the mode, the query and the path replaced by :data:`SEPARATOR_STAND_IN`.
    A deny or ask rule matches when it matches either form; an allow rule
    only when it matches ``strict``, where its literal spaces can only be
    the separators, so text in the query can never stand in for the path.
    """

    text: str
    strict: str | None = None


def _search_subject(mode: str, query: str, path: str) -> Subject:
    strict = " ".join(p.replace(" ", SEPARATOR_STAND_IN) for p in (mode, query, path))
    return Subject(f"{mode} {query} {path}", strict)


def _tree_path(path: str) -> str:
    """A path inside a tree as git resolves it: `.` and empty parts dropped, `..` applied.
    A `..` above the tree's top stays at the top, as `/..` is `/`: git refuses such a path
    (or, run below the top, reads the file it names there), and a rule must see the
    strictest reading (fail closed), so ``HEAD:../secrets/k`` is also ``HEAD:secrets/k``."""
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
        else:
            parts.append(part)
    return "/".join(parts)


def git_target_spellings(target: str) -> list[str]:
    """The other spellings of a git ``REV:path`` target, with the path normalized
    (``HEAD:./secrets/k``, ``HEAD:a/../secrets/k`` are ``HEAD:secrets/k``), for every
    ':' that could end the revision: a rule names the normal form, and a deny or ask
    rule must not be passed by writing the path another way."""
    out: list[str] = []
    for i, ch in enumerate(target):
        if ch != ":":
            continue
        rev, path = target[:i], target[i + 1 :]
        if path.startswith("/"):
            continue
        normal = _tree_path(path)
        if normal != path:
            spelled = f"{rev}:{normal}"
            if spelled not in out:
                out.append(spelled)
    return out


def search_parts(tool: str, args: Mapping[str, Any]) -> tuple[str, str, str]:
    """A search call's mode, query and path, as its subjects are built from them."""
    called = canonical_tool(tool)
    mode = called if called != "search" else _text(args.get("mode"))
    return mode, _text(args.get("query")), _path_field(args, "path")


def search_texts(name: str, args: Mapping[str, Any]) -> tuple[str, str | None]:
    """A search call's subject text and its strict form (None when they are the same string:
    no space inside the mode, query or path). ``name`` is the canonical tool name."""
    mode = name if name != "search" else _text(args.get("mode"))
    query = _text(args.get("query"))
    path = _path_field(args, "path")
    text = f"{mode} {query} {path}"
    if " " not in mode and " " not in query and " " not in path:
        return text, None
    return text, " ".join(p.replace(" ", SEPARATOR_STAND_IN) for p in (mode, query, path))


def search_subject(tool: str, args: Mapping[str, Any]) -> Subject:
    """The one subject of a search call without known paths."""
    return _search_subject(*search_parts(tool, args))


def decision_subjects(
    tool: str, args: Mapping[str, Any] | None, paths: list[str] | None = None
) -> tuple[str, list[Subject]]:
    """The canonical tool name and every argument string the call is decided on.

    One per file of a multi-file read; one per path in ``paths`` when the
    caller knows the paths the call will touch (the session resolves them
    against the workspace: the spelling and the symlink target of each path,
    each file of a patch) for the tools whose argument string is a path
    (read, write, edit, download, ls, search, patch); otherwise the one
    argument string. A search subject carries its strict form.
    """
    name, subject = argument_string(tool, args)
    checked: Mapping[str, Any] = args if isinstance(args, Mapping) else {}
    if name == "search":
        mode, query, path = search_parts(tool, checked)
        each = paths if paths is not None else [path]
        return name, [_search_subject(mode, query, p) for p in each]
    if paths is not None and name in PATH_SUBJECT_TOOLS:
        return name, [Subject(p) for p in paths]
    if name == "git" and isinstance(checked.get("target"), str):
        targets = git_target_spellings(checked["target"])
        if targets:
            return name, [Subject(subject)] + [
                Subject(canonical_json({**checked, "target": t})) for t in targets
            ]
    if is_multi_read(name, checked):
        return name, [Subject(p) for p in _read_paths(checked)]
    return name, [Subject(subject)]


def argument_string(tool: str, args: Mapping[str, Any] | None) -> tuple[str, str]:
    """Returns (canonical tool name, argument string) for one call.

    Calls to ``grep``/``glob``/``bm25`` are calls to that mode of ``search``.
    A missing field gives ``""``; a field of another JSON type gives its
    compact JSON text, so no value can slip past a rule by its type.
    """
    return named_argument_string(canonical_tool(tool), args)


def named_argument_string(name: str, args: Mapping[str, Any] | None) -> tuple[str, str]:
    """argument_string() for a tool name already canonical (PermissionPolicy.check's hot path)."""
    if args is None:
        args = {}
    elif type(args) is not dict and not isinstance(args, Mapping):
        raise PolicyError(f"tool arguments must be a mapping, not {type(args).__name__}")
    if name == "bash":
        command = args.get("command", "")
        return name, command if type(command) is str else _text(command)
    if name in FILE_PATH_TOOLS:
        if name == "read" and "file_path" not in args and "files" in args:  # is_multi_read
            return name, "\n".join(_read_paths(args))
        path = args.get("file_path")
        if type(path) is not str:
            return name, _path_field(args, "file_path")
        return name, normalize_path(path)
    if name == "search" or name in SEARCH_MODE_TOOLS:
        mode = name if name != "search" else _text(args.get("mode"))
        return "search", f"{mode} {_text(args.get('query'))} {_path_field(args, 'path')}"
    if name == "ls":
        return name, _path_field(args, "path")
    if type(args) is not dict:
        args = dict(args)
    return name, canonical_json(args)
