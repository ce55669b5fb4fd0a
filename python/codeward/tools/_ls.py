"""The ls tool: one directory's entries, bounded, credential entries counted but not named."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from typing import Any, ClassVar

from .._errors import WorkspaceError
from ..workspace import Workspace
from ._base import OptionalPathTool, ToolContext, ToolKind, ToolResult

__all__ = ["LsTool"]

MAX_ENTRIES = 1000


class LsTool(OptionalPathTool):
    name: ClassVar[str] = "ls"
    kind: ClassVar[ToolKind] = ToolKind.READ
    action: ClassVar[str] = "list"
    description: ClassVar[str] = (
        "List one directory of the workspace (default: the root), sorted by name. Directories "
        "end with '/', symlinks with '@' (followed by '/' when they lead to a directory inside "
        f"the workspace); regular files show their size in bytes. At most {MAX_ENTRIES} entries."
    )
    schema: ClassVar[Mapping[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "path": {
                "type": "string",
                "minLength": 1,
                "description": "The directory to list, relative to the workspace root.",
            }
        },
    }

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        ws = ctx.workspace
        path = args.get("path", ".")
        omitted = 0
        lines: list[str] = []
        total = 0
        with ws.open_dir(path) as (fd, parts):
            with os.scandir(fd) as it:
                names = sorted(e.name for e in it)
            for entry in names:
                child = (*parts, entry)
                if ws.credential_reason(child) is not None:
                    omitted += 1
                    continue
                try:
                    st = os.stat(entry, dir_fd=fd, follow_symlinks=False)
                except OSError:  # gone since the listing
                    continue
                if _aliases_credential(ws, st):
                    omitted += 1
                    continue
                total += 1
                if len(lines) < MAX_ENTRIES:
                    lines.append(_describe(ws, child, entry, st))
        relpath = "/".join(parts) or "."
        notes = []
        if total > len(lines):
            notes.append(f"showing {len(lines)} of {total} entries")
        if omitted:
            notes.append(
                f"{omitted} protected entr{'y' if omitted == 1 else 'ies'} omitted by the "
                "credential boundary"
            )
        body = "\n".join(lines) if lines else "(empty directory)"
        return ToolResult(
            self.name,
            body + "".join(f"\n[{n}]" for n in notes),
            metadata={
                "path": relpath,
                "entries": total,
                "shown": len(lines),
                "truncated": total > len(lines),
                "omitted": omitted,
            },
        )


def _aliases_credential(ws: Workspace, st: os.stat_result) -> bool:
    """A hard link to a credential file is a credential file under another name."""
    return (
        ws.credential_boundary
        and stat.S_ISREG(st.st_mode)
        and st.st_nlink > 1
        and (st.st_dev, st.st_ino) in ws.credential_inodes()
    )


def _describe(ws: Workspace, child: tuple[str, ...], name: str, st: os.stat_result) -> str:
    if stat.S_ISDIR(st.st_mode):
        return name + "/"
    if stat.S_ISLNK(st.st_mode):
        try:
            target = ws.resolve("/".join(child)).st
        except (OSError, WorkspaceError):  # leads outside, to a credential, loops: a bare link
            target = None
        return name + "@" + ("/" if target is not None and stat.S_ISDIR(target.st_mode) else "")
    if stat.S_ISREG(st.st_mode):
        return f"{name}  {st.st_size}"
    return name + "  (special file)"
