"""The search tool: grep (a regex over text files) and glob (matching paths), both bounded.

Both walk the tree by descriptor through the workspace, skip ``.git`` and
what .gitignore files exclude, follow no symlink, and leave out credential
files and directories, counting them without naming them. Files the
session's permission policy denies reading (``read(secrets/**)``) are left
out and counted the same way: a search never shows what a read may not.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .. import _native
from .._errors import CredentialBoundaryError, HardLinkRefused, WorkspaceError
from ..workspace import Workspace
from ..workspace._workspace import WalkDir
from ._base import ErrorKind, OptionalPathTool, ToolContext, ToolKind, ToolResult
from ._failure import ToolError
from ._files import BINARY_PROBE_BYTES, looks_binary
from ._gitignore import IgnoreRules, read_rules_at
from ._pattern import Pattern, PatternTimeout

__all__ = ["SearchTool"]

MAX_MATCHES = 200  # matching lines shown by grep
MAX_RESULTS = 1000  # paths shown by glob
MAX_OUTPUT_BYTES = 64 * 1024
MAX_LINE_CHARS = 300
MAX_FILE_BYTES = 8 * 1024 * 1024  # grep skips larger files
MAX_ENTRIES = 200_000  # directory entries visited per call
TIME_LIMIT_S = 20.0


@dataclass
class _Counts:
    """What a walk left out, reported in notes and metadata (counts, never names)."""

    omitted: int = 0  # credential files and directories, hard-link aliases
    denied: int = 0  # files the permission policy denies reading
    ignored: int = 0  # excluded by .gitignore
    binary: int = 0
    large: int = 0
    unreadable: int = 0
    visited: int = 0
    stopped: str = ""  # why the walk stopped early, if it did
    notes: list[str] = field(default_factory=list)


class SearchTool(OptionalPathTool):
    name: ClassVar[str] = "search"
    kind: ClassVar[ToolKind] = ToolKind.READ
    action: ClassVar[str] = "search"
    description: ClassVar[str] = (
        "Search the workspace. mode 'grep': `query` is a Python regular expression matched "
        "against the lines of text files (`^`/`$` match at line ends; use (?i) to ignore case); "
        "output is `path:line:text`. mode 'glob': `query` is a path pattern matched against "
        "paths relative to `path` (`*` stays within one directory, `**` crosses directories: "
        "`**/*.py`); directories end with '/'. Both search under `path` (default: the whole "
        "workspace), skip .git and .gitignore'd files, follow no symlinks, and cap their output "
        f"({MAX_MATCHES} matching lines, {MAX_RESULTS} paths)."
    )
    schema: ClassVar[Mapping[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "required": ["mode", "query"],
        "properties": {
            "mode": {"type": "string", "enum": ["grep", "glob"]},
            "query": {"type": "string", "minLength": 1, "maxLength": 4096},
            "path": {
                "type": "string",
                "minLength": 1,
                "description": "A directory (or, for grep, a file) to search; default '.'.",
            },
        },
    }

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        path = args.get("path", ".")
        if args["mode"] == "grep":
            return _grep(self.name, ctx, args["query"], path)
        return _glob(self.name, ctx, args["query"], path)


# -- walking ---------------------------------------------------------------------------------


def _tree(ws: Workspace, start: str, counts: _Counts, ctx: ToolContext) -> Iterator[WalkDir]:
    """The walk shared by grep and glob: .git and ignored entries pruned, counts kept."""
    rules = IgnoreRules()
    first = True
    deadline = time.monotonic() + TIME_LIMIT_S
    for step in ws.walk(start):
        if first:
            _load_ancestor_rules(ws, step.parts, rules)
            first = False
        if ctx.cancel is not None and ctx.cancel.is_set():
            raise ToolError(ErrorKind.CANCELLED, "the search was cancelled")
        rules.add(step.parts, read_rules_at(step.fd))
        counts.omitted += step.omitted
        counts.visited += len(step.dirs) + len(step.files) + len(step.links) + step.omitted
        kept_dirs = [d for d in step.dirs if d.casefold() != ".git"]
        step.files[:] = [f for f in step.files if f.casefold() != ".git"]
        before = len(kept_dirs) + len(step.files) + len(step.links)
        step.dirs[:] = [d for d in kept_dirs if not rules.ignored((*step.parts, d), True)]
        step.files[:] = [f for f in step.files if not rules.ignored((*step.parts, f), False)]
        step.links[:] = [n for n in step.links if not rules.ignored((*step.parts, n), False)]
        counts.ignored += before - len(step.dirs) - len(step.files) - len(step.links)
        yield step
        if counts.visited >= MAX_ENTRIES:
            counts.stopped = f"stopped after visiting {MAX_ENTRIES} entries; narrow `path`"
            return
        if time.monotonic() > deadline:
            counts.stopped = f"stopped after {TIME_LIMIT_S:.0f} s; narrow `path`"
            return


def _load_ancestor_rules(ws: Workspace, parts: tuple[str, ...], rules: IgnoreRules) -> None:
    """The .gitignore rules of the directories above the start, and .git/info/exclude."""
    try:
        with ws.open_dir(".git/info") as (fd, _):
            rules.add((), read_rules_at(fd, "exclude"))
    except (OSError, WorkspaceError):
        pass
    for depth in range(len(parts)):
        try:
            with ws.open_dir("/".join(parts[:depth]) or ".") as (fd, _):
                rules.add(parts[:depth], read_rules_at(fd))
        except (OSError, WorkspaceError):
            pass


def _kind_of(ws: Workspace, path: str) -> os.stat_result:
    if not ws.parts(path):  # the root
        return os.stat(ws.root)
    st = ws.resolve(path).st
    if st is None:
        raise FileNotFoundError(2, f"{path!r} does not exist", path)
    return st


# -- grep ------------------------------------------------------------------------------------


@dataclass
class _Hits:
    lines: list[str] = field(default_factory=list)
    files: int = 0
    bytes: int = 0
    full: bool = False  # a cap was reached


def _grep(name: str, ctx: ToolContext, query: str, path: str) -> ToolResult:
    try:
        pattern = Pattern(query)
    except ValueError as exc:
        raise ToolError(ErrorKind.INVALID_ARGUMENT, str(exc)) from None
    ws = ctx.workspace
    counts = _Counts()
    hits = _Hits()
    deadline = time.monotonic() + TIME_LIMIT_S
    searched = 0
    mode = _kind_of(ws, path).st_mode
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise ToolError(ErrorKind.INVALID_ARGUMENT, f"{path!r} is neither a file nor a directory")
    try:
        if stat.S_ISREG(mode):
            fd, resolved = ws.open_file(path)  # named explicitly: refusals are errors here
            if _denied(ctx, resolved.relpath, counts):
                os.close(fd)
            else:
                searched = 1
                _grep_fd(fd, resolved.relpath, pattern, deadline, hits, counts)
        else:
            for step in _tree(ws, path, counts, ctx):
                for fname in step.files:
                    parts = (*step.parts, fname)
                    if _denied(ctx, "/".join(parts), counts):
                        continue
                    try:
                        fd, _ = ws.open_entry(step.fd, parts)
                    except (CredentialBoundaryError, HardLinkRefused):
                        counts.omitted += 1
                        continue
                    except (OSError, WorkspaceError):  # gone, swapped for a symlink, unreadable
                        counts.unreadable += 1
                        continue
                    searched += 1
                    _grep_fd(fd, "/".join(parts), pattern, deadline, hits, counts)
                    if hits.full:
                        break
                if hits.full:
                    break
    except PatternTimeout:
        raise ToolError(
            ErrorKind.TIMEOUT,
            f"the search ran past its {TIME_LIMIT_S:.0f} s limit after {searched} file(s); the "
            "pattern may backtrack catastrophically (nested quantifiers such as (a+)+), or the "
            "tree is too large: simplify the pattern or narrow `path`\n" + "\n".join(hits.lines),
            matches=len(hits.lines),
        ) from None
    notes = []
    if hits.full:
        notes.append(
            f"output stopped at {len(hits.lines)} matching lines; narrow the pattern or `path` "
            "to see the rest"
        )
    notes.extend(_count_notes(counts))
    body = "\n".join(hits.lines) if hits.lines else "No matches."
    return ToolResult(
        name,
        body + "".join(f"\n[{n}]" for n in notes),
        metadata={
            "mode": "grep",
            "matches": len(hits.lines),
            "files_with_matches": hits.files,
            "files_searched": searched,
            "truncated": hits.full or bool(counts.stopped),
            **_count_metadata(counts),
        },
    )


def _denied(ctx: ToolContext, relpath: str, counts: _Counts, *also: str) -> bool:
    """Whether the permission policy denies reading ``relpath`` or any of ``also`` (one file's
    names); counted once when it does."""
    check = ctx.read_denied
    if check is None or all(check(p) is None for p in (relpath, *also)):
        return False
    counts.denied += 1
    return True


def _grep_fd(
    fd: int, relpath: str, pattern: Pattern, deadline: float, hits: _Hits, counts: _Counts
) -> None:
    """Searches one open file (and closes it)."""
    try:
        if os.fstat(fd).st_size > MAX_FILE_BYTES:
            counts.large += 1
            return
        data = _read_all(fd, BINARY_PROBE_BYTES)
        if looks_binary(data):  # decided on the first block, before reading the rest
            counts.binary += 1
            return
        if len(data) == BINARY_PROBE_BYTES:
            data += _read_all(fd, MAX_FILE_BYTES + 1 - len(data))
    except OSError:
        counts.unreadable += 1
        return
    finally:
        os.close(fd)
    if len(data) > MAX_FILE_BYTES:  # it grew since the fstat
        counts.large += 1
        return
    text = data.decode("utf-8", "replace")
    line_no = 1
    scanned = 0  # text[:scanned] holds line_no - 1 newlines
    last_line = 0
    found = False
    for start in pattern.starts(text, deadline):
        line_no += text.count("\n", scanned, start)
        scanned = start
        if line_no == last_line:
            continue
        last_line = line_no
        begin = text.rfind("\n", 0, start) + 1
        end = text.find("\n", start)
        line = text[begin : end if end >= 0 else len(text)].rstrip("\r")
        if len(line) > MAX_LINE_CHARS:
            line = line[:MAX_LINE_CHARS] + " [… line cut]"
        entry = f"{relpath}:{line_no}:{line}"
        size = len(entry.encode("utf-8")) + 1
        if len(hits.lines) >= MAX_MATCHES or hits.bytes + size > MAX_OUTPUT_BYTES:
            hits.full = True
            break
        hits.lines.append(entry)
        hits.bytes += size
        found = True
    if found:
        hits.files += 1


def _read_all(fd: int, limit: int) -> bytes:
    chunks = []
    total = 0
    while total < limit:
        chunk = os.read(fd, min(1 << 20, limit - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


# -- glob ------------------------------------------------------------------------------------


def _glob(name: str, ctx: ToolContext, query: str, path: str) -> ToolResult:
    ws = ctx.workspace
    pattern = query[2:] if query.startswith("./") else query
    if pattern.startswith("/"):
        raise ToolError(
            ErrorKind.INVALID_ARGUMENT,
            "a glob pattern is relative to `path` (the workspace root by default); "
            f"drop the leading '/' from {query!r}",
        )
    try:
        glob = _native.Glob(pattern)
    except _native.NativeError as exc:
        raise ToolError(
            ErrorKind.INVALID_ARGUMENT, f"invalid glob {query!r}: {exc.args[1]}"
        ) from None
    base = ws.parts(path)
    if not stat.S_ISDIR(_kind_of(ws, path).st_mode):
        raise ToolError(ErrorKind.INVALID_ARGUMENT, f"{path!r} is not a directory")
    prefix = _literal_prefix(pattern)
    counts = _Counts()
    results: list[str] = []
    full = False
    start = "/".join((*base, *prefix)) or "."
    try:
        st = ws.resolve(start).st if prefix else None
    except OSError:  # a missing or non-directory component: nothing can match
        st = None
    if not prefix or (st is not None and stat.S_ISDIR(st.st_mode)):
        top: tuple[str, ...] | None = None
        for step in _tree(ws, start, counts, ctx):
            if top is None:
                top = step.parts
            below = (*prefix, *step.parts[len(top) :])  # relative to `path`, as the caller wrote it
            for entry, is_dir in _entries(ws, step, counts, ctx):
                rel = "/".join((*below, entry))
                if glob.match(rel):
                    if len(results) >= MAX_RESULTS:
                        full = True
                        break
                    results.append("/".join((*base, rel)) + ("/" if is_dir else ""))
            if full:
                break
    notes = []
    if full:
        notes.append(f"output stopped at {MAX_RESULTS} paths; narrow the pattern or `path`")
    notes.extend(_count_notes(counts))
    if not results and counts.ignored:
        notes.append(f"{counts.ignored} entries excluded by .gitignore were not searched")
    body = "\n".join(results) if results else "No matches."
    return ToolResult(
        name,
        body + "".join(f"\n[{n}]" for n in notes),
        metadata={
            "mode": "glob",
            "matches": len(results),
            "truncated": full or bool(counts.stopped),
            **_count_metadata(counts),
        },
    )


def _entries(
    ws: Workspace, step: WalkDir, counts: _Counts, ctx: ToolContext
) -> Iterator[tuple[str, bool]]:
    """The names in one directory, sorted, with whether each is a directory.

    A symlink is listed (by its own name, not followed) only when it stays
    inside the workspace and does not lead to a credential. A file the
    policy denies reading (under its name or, for a link, its target's) is
    left out.
    """
    names = [(d, True) for d in step.dirs]
    names += [
        (f, False) for f in step.files if not _denied(ctx, "/".join((*step.parts, f)), counts)
    ]
    for link in step.links:
        spelled = "/".join((*step.parts, link))
        try:
            resolved = ws.resolve(spelled)
        except CredentialBoundaryError:
            counts.omitted += 1
            continue
        except (OSError, WorkspaceError):  # leads outside, loops, or is broken
            continue
        st = resolved.st
        if st is None:
            continue
        is_dir = stat.S_ISDIR(st.st_mode)
        if not is_dir and _denied(ctx, spelled, counts, resolved.relpath):
            continue
        names.append((link, is_dir))
    yield from sorted(names)


def _literal_prefix(pattern: str) -> tuple[str, ...]:
    """The leading directory names of a pattern that contain no wildcard (where the walk starts)."""
    segments = pattern.split("/")[:-1]
    prefix = []
    for seg in segments:
        if "*" in seg or "\\" in seg or seg in ("", ".", ".."):
            break
        prefix.append(seg)
    return tuple(prefix)


# -- notes -----------------------------------------------------------------------------------


def _count_notes(counts: _Counts) -> list[str]:
    notes = []
    if counts.omitted:
        notes.append(
            f"{counts.omitted} protected entr{'y' if counts.omitted == 1 else 'ies'} (credential "
            "files or directories, or hard links to them) omitted by the credential boundary"
        )
    if counts.denied:
        notes.append(
            f"{counts.denied} file{'' if counts.denied == 1 else 's'} omitted: the permission "
            "policy denies reading " + ("it" if counts.denied == 1 else "them")
        )
    skipped = []
    if counts.binary:
        skipped.append(f"{counts.binary} binary file(s)")
    if counts.large:
        skipped.append(f"{counts.large} file(s) over {MAX_FILE_BYTES // (1024 * 1024)} MiB")
    if counts.unreadable:
        skipped.append(f"{counts.unreadable} unreadable file(s)")
    if skipped:
        notes.append("skipped " + ", ".join(skipped))
    if counts.stopped:
        notes.append(counts.stopped)
    return notes


def _count_metadata(counts: _Counts) -> dict[str, Any]:
    return {
        "omitted": counts.omitted,
        "omitted_by_policy": counts.denied,
        "ignored": counts.ignored,
        "skipped_binary": counts.binary,
        "skipped_large": counts.large,
        "skipped_unreadable": counts.unreadable,
        "entries_visited": counts.visited,
    }
