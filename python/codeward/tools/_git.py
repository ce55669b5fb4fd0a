"""The git tool: read-only status, diff, log and show, paged by bytes, credentials withheld.

A target is a revision or a range, never an option: anything option-like is
refused before git runs. Diffs are regenerated path by path and only for
paths outside the credential boundary: a changed ``.env`` shows that it
changed, never its content. ``show`` of a file's content is only allowed in
the ``REV:path`` form, for a path outside the boundary. Remote URLs are shown
without user, password, query or fragment.

The session's permission policy reaches the content too: a path a scope
denies to ``read`` (``ctx.read_denied``) is withheld from diffs like a
credential (counted in ``metadata.withheld_by_policy``) and refused to
``show REV:path``. git works on a private copy of the index, so no command
of this tool ever changes the repository (plan mode included).
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Mapping
from typing import Any, ClassVar
from urllib.parse import urlsplit, urlunsplit

from .._errors import CredentialBoundaryError, HardLinkRefused, WorkspaceError
from ..workspace import Workspace
from ._base import CancelToken, ErrorKind, ReadDenial, Tool, ToolContext, ToolKind, ToolResult
from ._failure import ToolError
from ._gitrun import TIMEOUT_S, GitOutput, private_index, run_git

__all__ = ["GitTool", "check_target", "redact_url"]

DEFAULT_MAX_BYTES = 50_000
MAX_MAX_BYTES = 1_000_000
MAX_TARGET = 256
_PATHS_PER_RUN = 100
_DIFF_FLAGS = ["--no-color", "--no-ext-diff", "--no-textconv", "--ignore-submodules=all"]
# A '-' right after a range or path separator or a space, or a long option anywhere.
_OPTION_LIKE = re.compile(r"(?:\.\.|[:\s])-|--[A-Za-z]")
_BAD_REVISION = (
    "unknown revision",
    "bad revision",
    "ambiguous argument",
    "not a valid object name",
    "bad default revision",
    "invalid object name",
    "does not have any commits yet",
    "not a tree object",
    "needed a single revision",
    "exists on disk, but not in",
    "does not exist in",
)
_STATUS_WORDS = {"A": "added", "D": "deleted", "M": "modified", "T": "type changed"}


class GitTool(Tool):
    name: ClassVar[str] = "git"
    kind: ClassVar[ToolKind] = ToolKind.GIT
    description: ClassVar[str] = (
        "Read-only git for the workspace repository. command 'status': branch and changed "
        "files (and remotes). 'diff': changes of the working tree against HEAD, or against "
        "`target` (a revision such as HEAD~2, or a range A..B / A...B). 'log': commits of HEAD "
        "or `target`. 'show': a commit (default HEAD) with its diff, or a file as it is in a "
        "revision (`target` REV:path). Output is paged by bytes: pass `byte_offset` from the "
        "previous page's note to continue. Credential files (.env ...) show only that they "
        "changed."
    )
    schema: ClassVar[Mapping[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "required": ["command"],
        "properties": {
            "command": {"type": "string", "enum": ["status", "diff", "log", "show"]},
            "target": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_TARGET,
                "description": "A revision or range (diff, log, show) or REV:path (show).",
            },
            "max_bytes": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_MAX_BYTES,
                "description": f"Bytes of output per page (default {DEFAULT_MAX_BYTES}).",
            },
            "byte_offset": {
                "type": "integer",
                "minimum": 0,
                "description": "Where this page starts in the whole output (default 0).",
            },
        },
    }

    def paths(self, args: Mapping[str, Any]) -> list[str]:
        target = args.get("target")
        if args.get("command") == "show" and isinstance(target, str):
            return _blob_paths(target)
        return []

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        command = args["command"]
        target = args.get("target")
        max_bytes = args.get("max_bytes", DEFAULT_MAX_BYTES)
        offset = args.get("byte_offset", 0)
        if target is not None:
            check_target(target)
            if command == "status":
                raise ToolError(ErrorKind.INVALID_ARGUMENT, "git status takes no target")
        need = offset + max_bytes + 1  # one byte more says whether another page follows
        page = _Output(need)
        deadline = time.monotonic() + TIMEOUT_S
        with private_index(ctx.workspace, deadline, ctx.cancel) as index:
            session = _Git(
                ctx.workspace,
                index=index,
                read_denied=ctx.read_denied,
                deadline=deadline,
                cancel=ctx.cancel,
            )
            if command == "status":
                session.status(page)
            elif command == "log":
                session.log(target, page)
            elif command == "diff":
                session.diff(target, page)
            else:
                session.show(target or "HEAD", page)
        result = _paged(self.name, command, bytes(page.data), page.complete, offset, max_bytes)
        return _with_withheld(result, session.withheld)


def check_target(target: str) -> None:
    """Refuses a target that git could read as an option, before git sees it."""
    if any(ord(c) < 32 or ord(c) == 127 for c in target):
        raise ToolError(ErrorKind.INVALID_ARGUMENT, "the git target contains control characters")
    if target.startswith("-") or _OPTION_LIKE.search(target):
        raise ToolError(
            ErrorKind.INVALID_ARGUMENT,
            f"refused the git target {target!r}: it looks like an option; a target is a "
            "revision (HEAD~1, a branch, a commit id), a range (A..B) or REV:path",
            refused=True,
        )


def redact_url(url: str) -> str:
    """A remote URL without user, password, query or fragment."""
    if "://" in url:
        try:
            parts = urlsplit(url)
        except ValueError:
            return "[unparseable URL withheld]"
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        try:
            port = parts.port
        except ValueError:
            port = None
        netloc = host + (f":{port}" if port else "")
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    m = re.match(r"^(?:[^@/]+@)?([^:/]+):(.*)$", url)  # scp-like user@host:path
    if m and not os.path.isabs(url):
        path = m.group(2).split("?", 1)[0].split("#", 1)[0]
        return f"{m.group(1)}:{path}"
    return url.split("?", 1)[0].split("#", 1)[0]


class _Output:
    """Output bytes collected up to a limit; ``complete`` turns False once anything is cut."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.complete = True

    @property
    def full(self) -> bool:
        return len(self.data) >= self.limit

    def add(self, chunk: bytes, complete: bool = True) -> None:
        room = self.limit - len(self.data)
        if len(chunk) > room:
            self.complete = False
        self.data += chunk[: max(room, 0)]
        if not complete:
            self.complete = False

    @property
    def room(self) -> int:
        return max(self.limit - len(self.data), 0)


class _Git:
    """One git tool call: the workspace and the deadline of all the git runs it makes, the
    private index they use, and what the permission policy lets it show."""

    def __init__(
        self,
        ws: Workspace,
        *,
        index: str | None = None,
        read_denied: ReadDenial | None = None,
        deadline: float | None = None,
        cancel: CancelToken | None = None,
    ) -> None:
        self.ws = ws
        self.cancel = cancel
        self.deadline = deadline if deadline is not None else time.monotonic() + TIMEOUT_S
        self.index = index
        self.read_denied = read_denied
        self.withheld = 0  # changed paths whose content the policy withheld

    def run(self, args: list[str], limit: int | None = None, *, what: str = "") -> GitOutput:
        out = self.run_git(args, limit)
        if out.returncode != 0 and out.complete:
            message = out.stderr.strip() or f"git {args[0]} exited with status {out.returncode}"
            lowered = message.lower()
            if "not a git repository" in lowered:
                raise ToolError(
                    ErrorKind.TOOL_FAILED,
                    "the workspace root is not a git repository (git looks only at the "
                    f"workspace root, never above it): {message}",
                )
            kind = (
                ErrorKind.INVALID_ARGUMENT
                if any(s in lowered for s in _BAD_REVISION)
                else ErrorKind.TOOL_FAILED
            )
            raise ToolError(kind, f"git {what or args[0]} failed: {message[:2000]}")
        return out

    # -- commands --------------------------------------------------------------------------

    def status(self, page: _Output) -> None:
        out = self.run(
            [
                "status",
                "--short",
                "--branch",
                "--untracked-files=normal",
                "--ignore-submodules=all",
            ],
            page.room,
        )
        page.add(out.stdout, out.complete)
        remotes = self.remotes()
        if remotes and not page.full:
            page.add(("remotes:\n" + "".join(f"  {r}\n" for r in remotes)).encode())

    def run_git(self, args: list[str], limit: int | None = None) -> GitOutput:
        """git on this call's private index, within its deadline; no error mapping."""
        return run_git(
            self.ws,
            args,
            limit=limit,
            deadline=self.deadline,
            index_file=self.index,
            cancel=self.cancel,
        )

    def remotes(self) -> list[str]:
        out = self.run_git(["config", "-z", "--get-regexp", r"^remote\..*\.(url|pushurl)$"])
        lines = []
        for entry in out.stdout.split(b"\0"):
            if b"\n" not in entry:
                continue
            key, value = entry.decode("utf-8", "replace").split("\n", 1)
            remote, _, kind = key[len("remote.") :].rpartition(".")
            lines.append(
                f"{remote}  {redact_url(value)}" + ("  (push)" if kind == "pushurl" else "")
            )
        return lines

    def log(self, target: str | None, page: _Output) -> None:
        args = ["log", "--no-color", "--no-notes", "--format=medium", "--date=iso-strict"]
        out = self.run([*args, "--end-of-options", target or "HEAD"], page.room)
        page.add(out.stdout, out.complete)

    def diff(self, target: str | None, page: _Output) -> None:
        """Every endpoint is resolved to a commit first, so only commits and the working tree
        are ever compared (never two blobs, whose diff would be their content)."""
        if target is None:
            base = self._commit("HEAD") if self._has_head() else self._empty_tree()
            self.regenerate([base], worktree=True, page=page)
        elif "..." in target:
            left, right = target.split("...", 1)
            a, b = self._commit(left or "HEAD"), self._commit(right or "HEAD")
            merge_base = self.run(["merge-base", "--end-of-options", a, b], what="diff").stdout
            self.regenerate([merge_base.decode().strip(), b], worktree=False, page=page)
        elif ".." in target:
            left, right = target.split("..", 1)
            revs = [self._commit(left or "HEAD"), self._commit(right or "HEAD")]
            self.regenerate(revs, worktree=False, page=page)
        else:
            self.regenerate([self._commit(target)], worktree=True, page=page)

    def show(self, target: str, page: _Output) -> None:
        self._check_paths(target)  # REV:path of a file or a directory: never a credential one
        self._check_policy(target)
        kind = self._type_of(target)
        if kind == "tag":
            kind = self._type_of(target + "^{}")
        if kind == "blob":
            if not _blob_paths(target):
                raise ToolError(
                    ErrorKind.PERMISSION_DENIED,
                    f"{target!r} names file content without its path; use REV:path "
                    "(HEAD:src/app.py) so the credential boundary can check the path",
                )
            out = self.run(["cat-file", "blob", target], page.room, what="show")
            page.add(out.stdout, out.complete)
            return
        if kind == "tree":
            out = self.run(["show", "--no-color", "--end-of-options", target], page.room)
            page.add(out.stdout, out.complete)
            return
        if kind != "commit":
            raise ToolError(ErrorKind.INVALID_ARGUMENT, f"{target!r} is a {kind}, not a commit")
        commit = self._rev_parse(target + "^{commit}")
        header = self.run(
            ["show", "-s", "--no-color", "--no-notes", "--format=fuller", "--date=iso-strict",
             "--end-of-options", commit],
            page.room,
        )  # fmt: skip
        page.add(header.stdout + b"\n", header.complete)
        if page.full:
            return
        parent = self._rev_parse_optional(commit + "^1") or self._empty_tree()
        self.regenerate([parent, commit], worktree=False, page=page)

    # -- the diff, regenerated path by path -----------------------------------------------

    def regenerate(self, revs: list[str], *, worktree: bool, page: _Output) -> None:
        """The diff of ``revs``, with every protected path's content replaced by a note."""
        names = self.run(
            [
                "diff",
                "--name-status",
                "-z",
                "--no-renames",
                *_DIFF_FLAGS,
                "--end-of-options",
                *revs,
            ],
            what="diff",
        ).stdout.split(b"\0")
        changes = [
            (names[i].decode("ascii", "replace")[:1], os.fsdecode(names[i + 1]))
            for i in range(0, len(names) - 1, 2)
        ]
        allowed: list[str] = []
        for status, path in changes:
            reason = self._protected(path, worktree) or self._denied(path)
            if reason is None:
                allowed.append(path)
                if len(allowed) >= _PATHS_PER_RUN:
                    self._diff_paths(revs, allowed, page)
                    allowed = []
                continue
            self._diff_paths(revs, allowed, page)
            allowed = []
            word = _STATUS_WORDS.get(status, "changed")
            page.add(
                f"diff --git a/{path} b/{path}\n"
                f"[{path} {word}; its content is withheld: {reason}]\n".encode(
                    "utf-8", "surrogateescape"
                )
            )
            if page.full:
                return
        self._diff_paths(revs, allowed, page)

    def _diff_paths(self, revs: list[str], paths: list[str], page: _Output) -> None:
        if not paths or page.full:
            return
        out = self.run(
            ["diff", *_DIFF_FLAGS, "--end-of-options", *revs, "--", *paths], page.room, what="diff"
        )
        page.add(out.stdout, out.complete)

    def _protected(self, path: str, worktree: bool) -> str | None:
        """Why the changed ``path`` must not have its content shown, or None."""
        parts = tuple(p for p in path.split("/") if p)
        reason = self.ws.credential_reason(parts)
        if reason is not None:
            return reason
        if worktree and self.ws.credential_boundary:  # the working tree file is read too
            try:
                st = os.lstat(os.path.join(self.ws.root, *parts))
            except OSError:
                return None
            if stat.S_ISREG(st.st_mode):
                try:
                    self.ws.check_links(st, parts, path)
                except HardLinkRefused:
                    return "it has other hard links, which may be credential files"
        return None

    def _denied(self, path: str) -> str | None:
        """Why the permission policy withholds the content of the changed ``path`` (counted)."""
        if self.read_denied is None:
            return None
        reason = self.read_denied("/".join(p for p in path.split("/") if p))
        if reason is not None:
            self.withheld += 1
        return reason

    def _check_policy(self, target: str) -> None:
        """Refuses ``REV:path`` when the permission policy denies reading the path.

        Every reading of the target is checked, as written (git looks a
        tree path up as it is) and normalized (git resolves ``./`` forms).
        """
        if self.read_denied is None:
            return
        for path in _blob_paths(target):
            raw = "/".join(p for p in path.split("/") if p not in ("", "."))
            try:
                spellings = {raw, self.ws.relpath(path)}
            except WorkspaceError:
                spellings = {raw}
            for relpath in sorted(spellings):
                reason = self.read_denied(relpath) if relpath else None
                if reason is not None:
                    raise ToolError(
                        ErrorKind.PERMISSION_DENIED,
                        f"refused to show {target!r}: {reason} ({relpath})",
                        path=relpath,
                    )

    def _check_paths(self, target: str) -> None:
        """Refuses a target whose path part (in any reading of it) is a credential path.

        Every way of reading the target as REV:path is checked, so a ':'
        inside the revision (HEAD@{10:00}) cannot hide the real path.
        """
        for path in _blob_paths(target):
            try:
                parts = self.ws.parts(path)
            except WorkspaceError as exc:
                raise ToolError(ErrorKind.PERMISSION_DENIED, f"refused {target!r}: {exc}") from None
            raw = tuple(p for p in path.split("/") if p not in ("", "."))
            reason = self.ws.credential_reason(parts) or self.ws.credential_reason(raw)
            if reason is not None:
                raise CredentialBoundaryError(
                    f"refused to show {target!r}: {reason}; the credential boundary keeps it "
                    "from the tools",
                    path=path,
                )

    # -- helpers --------------------------------------------------------------------------

    def _type_of(self, rev: str) -> str:
        return (
            self.run(["cat-file", "-t", "--end-of-options", rev], what="show")
            .stdout.decode()
            .strip()
        )

    def _commit(self, rev: str) -> str:
        """The commit id ``rev`` names (a tag is peeled); anything else is an argument error."""
        out = self.run_git(["rev-parse", "--verify", "-q", "--end-of-options", rev + "^{commit}"])
        if out.returncode != 0:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENT, f"{rev!r} does not name a commit in this repository"
            )
        return out.stdout.decode().strip()

    def _rev_parse(self, rev: str) -> str:
        out = self.run(["rev-parse", "--verify", "--end-of-options", rev], what="show")
        return out.stdout.decode().strip()

    def _rev_parse_optional(self, rev: str) -> str | None:
        out = self.run_git(["rev-parse", "--verify", "-q", "--end-of-options", rev])
        return out.stdout.decode().strip() if out.returncode == 0 else None

    def _has_head(self) -> bool:
        return self._rev_parse_optional("HEAD^{commit}") is not None

    def _empty_tree(self) -> str:
        return self.run(["hash-object", "-t", "tree", "/dev/null"]).stdout.decode().strip()


def _blob_paths(target: str) -> list[str]:
    """Every path that ``target`` could name in the REV:path, :path or :N:path forms."""
    if target.startswith(":/"):  # a commit message search, not a path
        return []
    paths = []
    for i, c in enumerate(target):
        if c != ":":
            continue
        rest = target[i + 1 :]
        if re.match(r"^[0-3]:", rest) and (i == 0):
            rest = rest[2:]
        if rest and not rest.startswith("/"):
            paths.append(rest)
    return paths


def _with_withheld(result: ToolResult, withheld: int) -> ToolResult:
    """``result`` counting the changed paths whose content the permission policy withheld."""
    if not withheld:
        return result
    meta = {**result.metadata, "withheld_by_policy": withheld}
    note = (
        f"\n[the content of {withheld} changed file{'' if withheld == 1 else 's'} was withheld: "
        "the permission policy denies reading " + ("it]" if withheld == 1 else "them]")
    )
    return ToolResult(result.name, result.output + note, metadata=meta)


def _paged(
    name: str, command: str, data: bytes, complete: bool, offset: int, max_bytes: int
) -> ToolResult:
    """One page of ``data`` from ``offset``, ending on a UTF-8 character boundary."""
    if offset > len(data) or (offset == len(data) and offset > 0):
        raise ToolError(
            ErrorKind.INVALID_ARGUMENT,
            f"byte_offset {offset} is past the end of the output ({len(data)} bytes)",
        )
    end = min(offset + max_bytes, len(data))
    more = len(data) > end or not complete
    if len(data) > end:
        back = end
        while back > offset and (data[back] & 0xC0) == 0x80:  # do not split a character
            back -= 1
        if back > offset:
            end = back
    text = data[offset:end].decode("utf-8", "replace")
    if not text:
        text = f"(no output from git {command})"
    meta: dict[str, Any] = {"command": command, "byte_offset": offset, "bytes": end - offset}
    if more:
        meta["next_byte_offset"] = end
        text += f"\n[output continues: call again with byte_offset={end}]"
    else:
        meta["total_bytes"] = len(data)
    return ToolResult(name, text, metadata=meta)
