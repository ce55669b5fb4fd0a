"""The patch tool: a unified diff over one or more files, checked first, applied all or nothing."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from .._errors import WorkspaceError
from ..verification import path_digest
from ..workspace import Workspace
from ..workspace._atomic import AtomicBatch, Entry, entry_lstat, recover_interrupted_batches
from ._base import ErrorKind, PathMap, Tool, ToolContext, ToolKind, ToolResult
from ._diff import FilePatch, PatchError, apply_hunks, parse_patch
from ._failure import ToolError
from ._files import MAX_TEXT_FILE_BYTES, decode_text, read_text_file, record_change, sha256_hex
from ._write import encode_text

__all__ = ["PatchTool"]

MAX_PATCH_CHARS = 4 * 1024 * 1024
MAX_FILES = 200


@dataclass
class _Planned:
    """One file's change, computed in memory before anything is written."""

    patch: FilePatch
    action: str  # "modify", "create", "delete", "rename"
    old_rel: str | None
    new_rel: str | None
    data: bytes | None  # the new content (None for a deletion)
    expect: Any = None  # os.stat_result of the file the change was computed from


class PatchTool(Tool):
    name: ClassVar[str] = "patch"
    kind: ClassVar[ToolKind] = ToolKind.WRITE
    description: ClassVar[str] = (
        "Apply a unified diff (as `diff -u` or `git diff` print it) to one or more files: "
        "changes, new files (--- /dev/null), deleted files (+++ /dev/null) and git renames. "
        "Every hunk's context and removed lines must match the file exactly (a hunk may sit at "
        "another line than its header says; the nearest match is used). The whole patch is "
        "checked first and then applied all or nothing: if any part does not fit, no file "
        "changes."
    )
    schema: ClassVar[Mapping[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "required": ["patch"],
        "properties": {
            "patch": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_PATCH_CHARS,
                "description": "The unified diff text.",
            }
        },
    }

    def paths(self, args: Mapping[str, Any]) -> list[str]:
        text = args.get("patch")
        if not isinstance(text, str):
            return []
        try:
            patches = parse_patch(text)
        except PatchError:
            return []  # run() fails on the same text before touching any file
        names: list[str] = []
        for p in patches:
            for name in (p.old_path, p.new_path):
                if name is not None and name not in names:
                    names.append(name)
        return names

    def resolve(
        self, args: Mapping[str, Any], relpath: PathMap
    ) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        """Every file the patch touches, with the names decoded as :meth:`run` decodes them:
        a new file is a ``write``, a change an ``edit``, a deletion a ``delete``, and a
        rename the deletion of the old name and the write of the new one."""
        text = args.get("patch")
        if not isinstance(text, str):
            return dict(args), []
        try:
            patches = parse_patch(text)
        except PatchError:
            return dict(args), []  # run() fails on the same text before touching any file
        touched: list[tuple[str, str]] = []
        for p in patches:
            if p.old_path is None:
                assert p.new_path is not None
                changes = [("write", p.new_path)]
            elif p.new_path is None:
                changes = [("delete", p.old_path)]
            elif relpath(p.old_path) == relpath(p.new_path):
                changes = [("edit", p.old_path)]
            else:
                changes = [("delete", p.old_path), ("write", p.new_path)]
            for action, name in changes:
                entry = (action, relpath(name))
                if entry not in touched:
                    touched.append(entry)
        return dict(args), touched

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        recovered = _recover(ctx, self.name)
        try:
            patches = parse_patch(args["patch"])
        except PatchError as exc:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENT, f"the patch does not parse: {exc}"
            ) from None
        if len(patches) > MAX_FILES:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENT,
                f"the patch changes {len(patches)} files; at most {MAX_FILES}",
            )
        plan, notes = _plan(ctx.workspace, patches)
        notes = recovered + notes
        with AtomicBatch(ctx.workspace) as batch:
            for item in plan:
                _stage(batch, item)
            changes = batch.commit()
        for change in changes:
            digest = "deleted" if change.action == "deleted" else _digest_of(plan, change.relpath)
            record_change(ctx, self.name, change.relpath, digest)
        return ToolResult(
            self.name,
            _summary(plan, notes),
            metadata={
                "files": [
                    {"path": c.relpath, "action": c.action, "bytes": c.bytes} for c in changes
                ],
                "notes": notes,
            },
        )


def _recover(ctx: ToolContext, tool: str) -> list[str]:
    """Finishes the patches of this workspace a kill interrupted; notes and records what changed.

    Before a patch reads anything: an interrupted one may have left some
    files new and others old, and this one must start from a consistent tree.
    """
    notes = []
    for r in recover_interrupted_batches(ctx.workspace):
        for rel in r.changed:
            record_change(ctx, tool, rel, path_digest(ctx.workspace.root, rel))
        if r.committed or not (r.changed or r.left):
            continue
        done = [f"restored {', '.join(r.restored)}"] if r.restored else []
        done += [f"removed {', '.join(r.removed)}"] if r.removed else []
        done += [f"left {', '.join(r.left)} (changed since)"] if r.left else []
        notes.append(
            f"an earlier patch (process {r.pid}) was interrupted and has been rolled back: "
            + "; ".join(done)
        )
    return notes


def _plan(ws: Workspace, patches: list[FilePatch]) -> tuple[list[_Planned], list[str]]:
    """Reads every file the patch touches and computes every new content, or raises."""
    plan: list[_Planned] = []
    notes: list[str] = []
    touched: set[str] = set()
    for p in patches:
        old_rel = None if p.old_path is None else ws.relpath(p.old_path)
        new_rel = None if p.new_path is None else ws.relpath(p.new_path)
        for rel in {r for r in (old_rel, new_rel) if r is not None}:
            if rel in touched:
                raise ToolError(
                    ErrorKind.INVALID_ARGUMENT,
                    f"the patch changes {rel} more than once; merge those parts into one",
                )
            touched.add(rel)
        if old_rel is None:
            assert new_rel is not None and p.new_path is not None
            if _exists(ws, p.new_path):
                raise ToolError(
                    ErrorKind.CONFLICT,
                    f"the patch creates {new_rel}, which already exists; read it and patch it "
                    "as a change instead",
                    path=new_rel,
                )
            text, _ = _apply(new_rel, "", p)
            plan.append(_Planned(p, "create", None, new_rel, _encode(text, new_rel)))
            continue
        assert p.old_path is not None
        if new_rel != old_rel:  # the old name goes: a symlink goes itself, never its target
            entry = entry_lstat(ws, p.old_path)
            if entry.link is not None:
                if new_rel is not None:
                    raise ToolError(
                        ErrorKind.INVALID_ARGUMENT,
                        f"the patch renames {old_rel}, which is a symbolic link; patch moves "
                        "regular files only (use bash: mv)",
                        path=old_rel,
                    )
                plan.append(_link_deletion(ws, p, old_rel, entry))
                continue
        data, st, _ = read_text_file(ws, p.old_path)
        text, hunk_notes = _apply(old_rel, decode_text(data, p.old_path), p)
        notes.extend(hunk_notes)
        if p.mode_change:
            notes.append(f"{p.display}: the mode change was not applied (use bash chmod)")
        if new_rel is None:
            if text:
                raise ToolError(
                    ErrorKind.CONFLICT,
                    f"the patch deletes {old_rel} but does not remove all of its content; "
                    "read the file and regenerate the patch",
                    path=old_rel,
                )
            plan.append(_Planned(p, "delete", old_rel, None, None, st))
        elif new_rel == old_rel:
            plan.append(_Planned(p, "modify", old_rel, new_rel, _encode(text, new_rel), st))
        else:
            assert p.new_path is not None
            if _exists(ws, p.new_path):
                raise ToolError(
                    ErrorKind.CONFLICT,
                    f"the patch renames {old_rel} to {new_rel}, which already exists",
                    path=new_rel,
                )
            plan.append(_Planned(p, "rename", old_rel, new_rel, _encode(text, new_rel), st))
    return plan, notes


def _link_deletion(ws: Workspace, p: FilePatch, rel: str, entry: Entry) -> _Planned:
    """The deletion of the symlink ``rel`` (the link, not what it points to).

    Its hunks must remove the link's text (as git shows a symlink) or all of
    the content of the file it points to (as ``diff -u`` does). A link that
    leads out of the workspace, or to a credential, is refused as every path
    through it is.
    """
    assert p.old_path is not None and entry.link is not None
    ws.resolve(p.old_path)
    if _removes_all(rel, entry.link, p):
        return _Planned(p, "delete", rel, None, None, entry.st)
    try:
        data, _, _ = read_text_file(ws, p.old_path)
        content: str | None = decode_text(data, p.old_path)
    except (OSError, WorkspaceError, ToolError):  # dangling, a directory, binary, too large
        content = None
    if content is not None and _removes_all(rel, content, p):
        return _Planned(p, "delete", rel, None, None, entry.st)
    raise ToolError(
        ErrorKind.CONFLICT,
        f"the patch deletes {rel}, a symbolic link to {entry.link!r}, but its hunks remove "
        "neither the link's text nor all of the content it points to; read it and regenerate "
        "the patch (no file was changed)",
        path=rel,
    )


def _removes_all(rel: str, text: str, p: FilePatch) -> bool:
    try:
        return apply_hunks(rel, text, p.hunks)[0] == ""
    except PatchError:
        return False


def _exists(ws: Workspace, path: str) -> bool:
    """Whether something is at ``path`` (a missing parent directory means no)."""
    try:
        return ws.resolve(path).st is not None
    except FileNotFoundError:
        return False


def _apply(rel: str, text: str, p: FilePatch) -> tuple[str, list[str]]:
    try:
        return apply_hunks(rel, text, p.hunks)
    except PatchError as exc:
        kind = ErrorKind.CONFLICT if exc.conflict else ErrorKind.INVALID_ARGUMENT
        raise ToolError(kind, f"{exc} (no file was changed)", path=rel) from None


def _encode(text: str, rel: str) -> bytes:
    data = encode_text(text, f"the new content of {rel}")
    if len(data) > MAX_TEXT_FILE_BYTES:
        raise ToolError(
            ErrorKind.TOO_LARGE,
            f"{rel} would be {len(data)} bytes, over the {MAX_TEXT_FILE_BYTES}-byte limit",
            path=rel,
        )
    return data


def _stage(batch: AtomicBatch, item: _Planned) -> None:
    if item.action == "create":
        assert item.new_rel is not None and item.data is not None
        batch.write(item.new_rel, item.data, create=True)
    elif item.action == "modify":
        assert item.new_rel is not None and item.data is not None
        batch.write(item.new_rel, item.data, expect=item.expect)
    elif item.action == "delete":
        assert item.old_rel is not None
        batch.delete(item.old_rel, expect=item.expect)
    else:
        assert item.old_rel is not None and item.new_rel is not None and item.data is not None
        batch.write(item.new_rel, item.data, create=True)
        batch.delete(item.old_rel, expect=item.expect)


def _digest_of(plan: list[_Planned], relpath: str) -> str:
    for item in plan:
        if item.new_rel == relpath and item.data is not None:
            return sha256_hex(item.data)
    return "deleted"


def _summary(plan: list[_Planned], notes: list[str]) -> str:
    letter = {"modify": "M", "create": "A", "delete": "D", "rename": "R"}
    lines = [f"Applied the patch to {len(plan)} file(s):"]
    for item in plan:
        name = item.new_rel or item.old_rel
        if item.action == "rename":
            name = f"{item.old_rel} -> {item.new_rel}"
        lines.append(f"  {letter[item.action]} {name} (+{item.patch.added} -{item.patch.removed})")
    lines.extend(f"[{n}]" for n in notes)
    return "\n".join(lines)
