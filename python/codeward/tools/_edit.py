"""The edit tool: replace one exact string in a text file, atomically."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ..workspace import write_atomic
from ._base import ErrorKind, PathMap, Tool, ToolContext, ToolKind, ToolResult
from ._failure import ToolError
from ._files import decode_text, read_text_file, record_change, sha256_hex
from ._write import encode_text, resolve_file_path

__all__ = ["EditTool"]


class EditTool(Tool):
    name: ClassVar[str] = "edit"
    kind: ClassVar[ToolKind] = ToolKind.WRITE
    description: ClassVar[str] = (
        "Replace text in an existing file. `old_string` must appear exactly once in the file "
        "(include enough surrounding lines to make it unique), unless `replace_all` is true, "
        "which replaces every occurrence. Matching is exact, whitespace included. The file is "
        "rewritten atomically and keeps its permission bits."
    )
    schema: ClassVar[Mapping[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "required": ["file_path", "old_string", "new_string"],
        "properties": {
            "file_path": {
                "type": "string",
                "minLength": 1,
                "description": "The file to edit, relative to the workspace root.",
            },
            "old_string": {"type": "string", "minLength": 1, "description": "The exact text."},
            "new_string": {"type": "string", "description": "What replaces it."},
            "replace_all": {
                "type": "boolean",
                "description": "Replace every occurrence instead of exactly one (default false).",
            },
        },
    }

    def paths(self, args: Mapping[str, Any]) -> list[str]:
        return [str(args.get("file_path", ""))]

    def resolve(
        self, args: Mapping[str, Any], relpath: PathMap
    ) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        return resolve_file_path(args, relpath, "edit")

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        path = args["file_path"]
        old, new = args["old_string"], args["new_string"]
        replace_all = bool(args.get("replace_all", False))
        if old == new:
            raise ToolError(ErrorKind.INVALID_ARGUMENT, "old_string and new_string are the same")
        encode_text(old, "old_string")
        encode_text(new, "new_string")
        data, st, resolved = read_text_file(ctx.workspace, path)
        text = decode_text(data, path)
        count = text.count(old)
        if count == 0 and "\r\n" in text and "\n" in old and "\r\n" not in old:
            old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")  # a CRLF file
            count = text.count(old)
        if count == 0:
            raise ToolError(
                ErrorKind.CONFLICT,
                f"old_string was not found in {resolved.relpath}; read the file and copy the "
                "exact text, whitespace and indentation included",
                path=resolved.relpath,
                match_count=0,
            )
        if count > 1 and not replace_all:
            raise ToolError(
                ErrorKind.CONFLICT,
                f"old_string appears {count} times in {resolved.relpath}; add surrounding lines "
                "to make it unique, or set replace_all to replace every occurrence",
                path=resolved.relpath,
                match_count=count,
            )
        updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
        out = updated.encode("utf-8")
        result = write_atomic(ctx.workspace, path, out, create_parents=False, expect=st)
        digest = sha256_hex(out)
        record_change(ctx, self.name, result.relpath, digest)
        return ToolResult(
            self.name,
            f"Replaced {count if replace_all else 1} occurrence(s) in {result.relpath}.",
            metadata={
                "path": result.relpath,
                "replacements": count if replace_all else 1,
                "bytes": result.bytes,
                "sha256": digest,
            },
        )
