"""The write tool: a whole file, written atomically inside the workspace."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ..workspace import write_atomic
from ._base import ErrorKind, PathMap, Tool, ToolContext, ToolKind, ToolResult
from ._failure import ToolError
from ._files import MAX_TEXT_FILE_BYTES, record_change, sha256_hex

__all__ = ["WriteTool"]


class WriteTool(Tool):
    name: ClassVar[str] = "write"
    kind: ClassVar[ToolKind] = ToolKind.WRITE
    description: ClassVar[str] = (
        "Write a whole text file in the workspace, replacing it if it exists (its permission "
        "bits are kept) and creating missing parent directories. The write is atomic: readers "
        "see the old file or the new one, never a part. Prefer `edit` or `patch` to change part "
        "of an existing file."
    )
    schema: ClassVar[Mapping[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "required": ["file_path", "content"],
        "properties": {
            "file_path": {
                "type": "string",
                "minLength": 1,
                "description": "The file to write, relative to the workspace root.",
            },
            "content": {"type": "string", "description": "The complete new content (UTF-8)."},
        },
    }

    def paths(self, args: Mapping[str, Any]) -> list[str]:
        return [str(args.get("file_path", ""))]

    def resolve(
        self, args: Mapping[str, Any], relpath: PathMap
    ) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        return resolve_file_path(args, relpath, "write")

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        path = args["file_path"]
        data = encode_text(args["content"], "content")
        if len(data) > MAX_TEXT_FILE_BYTES:
            raise ToolError(
                ErrorKind.TOO_LARGE,
                f"the content is {len(data)} bytes, over the {MAX_TEXT_FILE_BYTES}-byte limit",
            )
        result = write_atomic(ctx.workspace, path, data, overwrite=True, create_parents=True)
        digest = sha256_hex(data)
        record_change(ctx, self.name, result.relpath, digest)
        verb = "replaced" if result.overwritten else "created"
        return ToolResult(
            self.name,
            f"Wrote {result.bytes} bytes to {result.relpath} ({verb}).",
            metadata={
                "path": result.relpath,
                "bytes": result.bytes,
                "created": not result.overwritten,
                "sha256": digest,
            },
        )


def resolve_file_path(
    args: Mapping[str, Any], relpath: PathMap, action: str
) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """``file_path`` made workspace-relative: the one path of a write or an edit."""
    out = dict(args)
    path = args.get("file_path")
    if not isinstance(path, str):
        return out, []
    out["file_path"] = relpath(path)
    return out, [(action, out["file_path"])]


def encode_text(text: str, field: str) -> bytes:
    """UTF-8 bytes of a model-given string; a lone surrogate is an argument error."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ToolError(
            ErrorKind.INVALID_ARGUMENT,
            f"{field} is not valid Unicode text (a lone surrogate at index {exc.start})",
        ) from None
