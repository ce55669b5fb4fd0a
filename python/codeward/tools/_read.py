"""The read tool: numbered lines of one or several text files, within caps."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .._errors import WorkspaceError
from ._base import ErrorKind, PathMap, Tool, ToolContext, ToolKind, ToolResult
from ._failure import ToolError, as_tool_error
from ._files import BINARY_PROBE_BYTES, MAX_TEXT_FILE_BYTES, binary_error, looks_binary
from ._schema import ArgumentError

__all__ = ["ReadTool"]

DEFAULT_LIMIT = 2000  # lines per file when the call gives no limit
MAX_LIMIT = 10_000
MAX_LINE_CHARS = 2000  # a longer line is cut and marked
MAX_OUTPUT_BYTES = 256 * 1024  # all files of one call together
MAX_FILES = 20
_LINE_READ = 64 * 1024  # bytes of one line held in memory, at most

_RANGE = {
    "offset": {
        "type": "integer",
        "minimum": 1,
        "description": "The first line to show, counting from 1 (default 1).",
    },
    "limit": {
        "type": "integer",
        "minimum": 1,
        "maximum": MAX_LIMIT,
        "description": f"How many lines to show (default {DEFAULT_LIMIT}).",
    },
}


@dataclass
class _Page:
    """What one file contributed to the output."""

    relpath: str
    text: str
    first: int
    last: int  # 0 when no line was shown
    total: int | None  # None when the read stopped before the end
    next_offset: int | None
    truncated_lines: int = 0
    notes: list[str] = field(default_factory=list)


class ReadTool(Tool):
    name: ClassVar[str] = "read"
    kind: ClassVar[ToolKind] = ToolKind.READ
    description: ClassVar[str] = (
        "Read text files in the workspace. Output is numbered like `cat -n` "
        f"(line number, tab, text). Shows up to {DEFAULT_LIMIT} lines from `offset` by default; "
        f"lines longer than {MAX_LINE_CHARS} characters are cut. Give either `file_path` or "
        f"`files` (up to {MAX_FILES} files, each with its own range). Binary files are refused; "
        f"files over {MAX_TEXT_FILE_BYTES // (1024 * 1024)} MiB can only be read by range."
    )
    schema: ClassVar[Mapping[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "file_path": {
                "type": "string",
                "minLength": 1,
                "description": "The file to read, relative to the workspace root.",
            },
            **_RANGE,
            "files": {
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_FILES,
                "description": "Several files to read in one call, instead of file_path.",
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["path"],
                    "properties": {"path": {"type": "string", "minLength": 1}, **_RANGE},
                },
            },
        },
    }

    def paths(self, args: Mapping[str, Any]) -> list[str]:
        if "file_path" in args:
            return [str(args["file_path"])]
        return [str(f.get("path", "")) for f in args.get("files", ()) if isinstance(f, Mapping)]

    def resolve(
        self, args: Mapping[str, Any], relpath: PathMap
    ) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        out = dict(args)
        if isinstance(args.get("file_path"), str):
            out["file_path"] = relpath(args["file_path"])
            return out, [("read", out["file_path"])]
        files = args.get("files")
        if not isinstance(files, (list, tuple)):
            return out, []
        entries = [
            {**f, "path": relpath(f["path"])}
            if isinstance(f, Mapping) and isinstance(f.get("path"), str)
            else f
            for f in files
        ]
        out["files"] = entries
        return out, [("read", f["path"]) for f in entries if isinstance(f, Mapping)]

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        if ("file_path" in args) == ("files" in args):
            raise ArgumentError("give either 'file_path' or 'files', not both and not neither")
        if "files" in args:
            if "offset" in args or "limit" in args:
                raise ArgumentError("with 'files', give offset and limit inside each entry")
            return self._read_many(args["files"], ctx)
        page = _read_one(
            ctx, args["file_path"], args.get("offset", 1), args.get("limit"), MAX_OUTPUT_BYTES
        )
        return ToolResult(self.name, _render(page), metadata=_metadata(page))

    def _read_many(self, files: list[Mapping[str, Any]], ctx: ToolContext) -> ToolResult:
        sections = []
        results: list[dict[str, Any]] = []
        budget = MAX_OUTPUT_BYTES
        first_error: ToolError | None = None
        for entry in files:
            path = entry["path"]
            if budget <= 0:
                sections.append(f"==> {path} <==\n[not read: the output limit was reached]")
                results.append({"path": path, "success": False, "error_kind": None})
                continue
            try:
                page = _read_one(ctx, path, entry.get("offset", 1), entry.get("limit"), budget)
            except (ToolError, WorkspaceError, OSError) as exc:
                error = as_tool_error(exc, path)
                first_error = first_error or error
                sections.append(f"==> {path} <==\n[error ({error.kind.value}): {error}]")
                results.append({"path": path, "success": False, "error_kind": error.kind.value})
                continue
            text = _render(page)
            budget -= len(text.encode("utf-8", "replace"))
            sections.append(f"==> {page.relpath} <==\n{text}")
            results.append({"success": True, **_metadata(page)})
        output = "\n\n".join(sections)
        if first_error is not None and not any(r["success"] for r in results):
            return ToolResult.failure(self.name, first_error.kind, output, files=results)
        return ToolResult(self.name, output, metadata={"files": results})


def _read_one(ctx: ToolContext, path: str, offset: int, limit: int | None, budget: int) -> _Page:
    fd, resolved = ctx.workspace.open_file(path)
    with io.BufferedReader(io.FileIO(fd, "rb"), buffer_size=_LINE_READ) as f:
        size = os.fstat(f.fileno()).st_size
        ranged = limit is not None or offset != 1
        if size > MAX_TEXT_FILE_BYTES and not ranged:
            raise ToolError(
                ErrorKind.TOO_LARGE,
                f"{path!r} is {size} bytes, over the {MAX_TEXT_FILE_BYTES}-byte limit of a whole "
                "read; read it in parts with offset and limit, or search it with the search tool",
                path=resolved.relpath,
                size=size,
            )
        if looks_binary(f.peek(BINARY_PROBE_BYTES)[:BINARY_PROBE_BYTES]):
            raise binary_error(path)
        return _page(f, resolved.relpath, offset, limit or DEFAULT_LIMIT, budget)


def _page(
    f: io.BufferedReader[io.FileIO], relpath: str, offset: int, limit: int, budget: int
) -> _Page:
    page = _Page(relpath, "", offset, 0, None, None)
    out: list[str] = []
    used = 0
    number = 0
    for number, (raw, cut) in enumerate(_lines(f), start=1):
        if number < offset:
            continue
        if number >= offset + limit:
            page.next_offset = number
            break
        text = raw.decode("utf-8", "replace").rstrip("\r\n")
        if cut or len(text) > MAX_LINE_CHARS:
            text = text[:MAX_LINE_CHARS] + " [… line cut]"
            page.truncated_lines += 1
        line = f"{number:>6}\t{text}"
        size = len(line.encode("utf-8")) + 1
        if out and used + size > budget:
            page.next_offset = number
            page.notes.append(f"output limit of {MAX_OUTPUT_BYTES} bytes reached")
            break
        out.append(line)
        used += size
        page.last = number
    else:
        page.total = number
    page.text = "\n".join(out)
    return page


def _lines(f: io.BufferedReader[io.FileIO]) -> Iterator[tuple[bytes, bool]]:
    """Each line's first bytes (at most _LINE_READ) and whether the rest was dropped."""
    while True:
        line = f.readline(_LINE_READ)
        if not line:
            return
        cut = False
        while not line.endswith(b"\n") and len(line) >= _LINE_READ:
            rest = f.readline(_LINE_READ)  # skip the rest of an overlong line
            if not rest:
                break
            cut = True
            if rest.endswith(b"\n"):
                break
        yield line, cut


def _render(page: _Page) -> str:
    notes = list(page.notes)
    if page.total == 0:
        notes.insert(0, "empty file")
    elif page.last == 0 and page.total is not None:
        notes.insert(0, f"the file has {page.total} lines; offset {page.first} is past the end")
    if page.truncated_lines:
        notes.append(f"{page.truncated_lines} long line(s) cut at {MAX_LINE_CHARS} characters")
    if page.next_offset is not None:
        notes.append(
            f"showing lines {page.first}-{page.last}; more follow: "
            f"continue with offset={page.next_offset}"
        )
    lines = [page.text] if page.text else []
    return "\n".join(lines + [f"[{n}]" for n in notes])


def _metadata(page: _Page) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "path": page.relpath,
        "first_line": page.first,
        "last_line": page.last,
        "total_lines": page.total,
        "truncated": page.next_offset is not None or page.truncated_lines > 0,
    }
    if page.next_offset is not None:
        meta["next_offset"] = page.next_offset
    return meta
