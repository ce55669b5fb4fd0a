"""Parsing unified diffs (plain and git-style) into file patches, and applying hunks to text.

Pure functions over strings: nothing here touches the disk, so a patch is
parsed and checked completely before any file changes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["FilePatch", "Hunk", "PatchError", "apply_hunks", "parse_patch"]

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_DEV_NULL = "/dev/null"
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "a": "\a", "b": "\b", "f": "\f",
            "r": "\r", "v": "\v"}  # fmt: skip


class PatchError(ValueError):
    """The patch does not parse (``conflict`` False) or does not fit the files (True)."""

    def __init__(self, message: str, *, conflict: bool = False) -> None:
        super().__init__(message)
        self.conflict = conflict


@dataclass
class Hunk:
    old_start: int
    new_start: int
    lines: list[tuple[str, str]] = field(default_factory=list)  # (" " | "-" | "+", text)
    old_no_eol: bool = False  # "\ No newline at end of file" after an old-side line
    new_no_eol: bool = False

    @property
    def old(self) -> list[str]:
        return [t for k, t in self.lines if k != "+"]

    @property
    def new(self) -> list[str]:
        return [t for k, t in self.lines if k != "-"]


@dataclass
class FilePatch:
    """One file's part of a patch. ``old_path`` is None for a new file, ``new_path`` for a
    deleted one; both set and different is a rename."""

    old_path: str | None
    new_path: str | None
    hunks: list[Hunk] = field(default_factory=list)
    mode_change: bool = False

    @property
    def display(self) -> str:
        return self.new_path or self.old_path or "?"

    @property
    def added(self) -> int:
        return sum(1 for h in self.hunks for k, _ in h.lines if k == "+")

    @property
    def removed(self) -> int:
        return sum(1 for h in self.hunks for k, _ in h.lines if k == "-")


def parse_patch(text: str) -> list[FilePatch]:
    """The file patches in ``text``; lines outside any file's header or hunks are ignored."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    patches: list[FilePatch] = []
    current: FilePatch | None = None
    git_names: tuple[str | None, str | None] | None = None
    i = 0
    while i < len(lines):
        line = lines[i].rstrip("\r") if not lines[i].startswith(("+", "-", " ")) else lines[i]
        if line.startswith("diff --git "):
            git_names = _git_header_names(line[len("diff --git ") :], i + 1)
            current = FilePatch(git_names[0], git_names[1])
            patches.append(current)
        elif line.startswith(("GIT binary patch", "Binary files ")):
            raise PatchError(f"line {i + 1}: binary patches are not supported")
        elif line.startswith(("copy from ", "copy to ")):
            raise PatchError(f"line {i + 1}: copy patches are not supported")
        elif current is not None and line.startswith("rename from "):
            current.old_path = _strip_prefix(_unquote(line[len("rename from ") :], i + 1), "")
        elif current is not None and line.startswith("rename to "):
            current.new_path = _strip_prefix(_unquote(line[len("rename to ") :], i + 1), "")
        elif current is not None and line.startswith("new file mode "):
            current.old_path = None
        elif current is not None and line.startswith("deleted file mode "):
            current.new_path = None
        elif current is not None and line.startswith(("old mode ", "new mode ")):
            current.mode_change = True
        elif line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            old = _header_name(line[4:], i + 1)
            new = _header_name(lines[i + 1].rstrip("\r")[4:], i + 2)
            old, new = _strip_pair(old, new, git=git_names is not None)
            if current is None or current.hunks or git_names is None:
                current = FilePatch(old, new)
                patches.append(current)
            else:  # the ---/+++ of a git file header: they win over the diff --git line
                current.old_path, current.new_path = old, new
            git_names = None
            i += 1
        elif line.startswith("@@"):
            if current is None:
                raise PatchError(f"line {i + 1}: a hunk before any file header (--- / +++)")
            hunk, i = _parse_hunk(lines, i)
            current.hunks.append(hunk)
            continue
        i += 1
    if not patches:
        raise PatchError("no file changes found: expected a unified diff with --- / +++ headers")
    for p in patches:
        if p.old_path is None and p.new_path is None:
            raise PatchError("a file patch names no file (both sides are /dev/null)")
        if not p.hunks and p.mode_change and p.old_path == p.new_path:
            raise PatchError(
                f"{p.display}: mode changes are not supported by patch; use bash (chmod)"
            )
    return patches


def _parse_hunk(lines: list[str], i: int) -> tuple[Hunk, int]:
    header, header_no = lines[i], i + 1
    m = _HUNK.match(header)
    if m is None:
        raise PatchError(f"line {i + 1}: malformed hunk header {header[:80]!r}")
    old_count = 1 if m.group(2) is None else int(m.group(2))
    new_count = 1 if m.group(4) is None else int(m.group(4))
    hunk = Hunk(int(m.group(1)), int(m.group(3)))
    i += 1
    old_seen = new_seen = 0
    last = ""
    while (
        old_seen < old_count
        or new_seen < new_count
        or (i < len(lines) and lines[i].startswith("\\"))
    ):
        if i >= len(lines):
            raise PatchError(
                f"hunk at line {header_no}: the patch ends before the hunk does "
                f"(it declares {old_count} old and {new_count} new lines)"
            )
        body = lines[i]
        kind, text = (body[:1], body[1:]) if body else (" ", "")
        if kind == "\\":
            if last == "-":
                hunk.old_no_eol = True
            elif last == "+":
                hunk.new_no_eol = True
            elif last == " ":
                hunk.old_no_eol = hunk.new_no_eol = True
            i += 1
            continue
        if kind not in (" ", "-", "+"):
            raise PatchError(
                f"line {i + 1}: expected a hunk line starting with ' ', '-' or '+' "
                f"(the hunk header declares {old_count} old and {new_count} new lines)"
            )
        if kind != "+":
            old_seen += 1
        if kind != "-":
            new_seen += 1
        if old_seen > old_count or new_seen > new_count:
            raise PatchError(
                f"line {i + 1}: the hunk has more lines than its header declares "
                f"(-{m.group(1)},{old_count} +{m.group(3)},{new_count})"
            )
        hunk.lines.append((kind, text))
        last = kind
        i += 1
    return hunk, i


def apply_hunks(path: str, text: str, hunks: list[Hunk]) -> tuple[str, list[str]]:
    """``text`` with ``hunks`` applied, and notes on hunks that applied at an offset.

    Each hunk's context and removed lines must match the file exactly; a hunk
    that does not match where its header says is looked for nearby (nearest
    position first, after the previous hunk), as GNU patch does without fuzz.
    """
    lines, eol = _split(text)
    crlf = bool(lines) and all(line.endswith("\r") for line in (lines if eol else lines[:-1]))
    if crlf:
        lines = [line.removesuffix("\r") for line in lines]
    out: list[str] = []
    pos = 0  # lines before pos are done
    shift = 0
    notes: list[str] = []
    for n, hunk in enumerate(hunks, start=1):
        old = [t.removesuffix("\r") for t in hunk.old] if crlf else hunk.old
        new = [t.removesuffix("\r") for t in hunk.new] if crlf else hunk.new
        want = (hunk.old_start if not old else hunk.old_start - 1) + shift
        at = _find(lines, old, want, pos)
        if at is None:
            raise PatchError(_mismatch(path, n, hunk, lines, want), conflict=True)
        if at != want:
            notes.append(f"{path}: hunk {n} applied at line {at + 1} (offset {at - want:+d})")
        end = at + len(old)
        if end == len(lines) and hunk.old_no_eol and eol:
            raise PatchError(
                f"{path}: hunk {n} says the file has no newline at its end, but it has one",
                conflict=True,
            )
        out.extend(lines[pos:at])
        out.extend(new)
        pos = end
        shift = at - (hunk.old_start - 1 if old else hunk.old_start)
        if end == len(lines) and (hunk.old_no_eol or hunk.new_no_eol):
            eol = not hunk.new_no_eol
    out.extend(lines[pos:])
    sep = "\r\n" if crlf else "\n"
    result = sep.join(out)
    if out and eol:
        result += sep
    return result, notes


def _split(text: str) -> tuple[list[str], bool]:
    if not text:
        return [], True
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
        return lines, True
    return lines, False


def _find(lines: list[str], old: list[str], want: int, low: int) -> int | None:
    high = len(lines) - len(old)
    if high < low:
        return None
    want = min(max(want, low), high)
    for d in range(max(want - low, high - want) + 1):
        for at in (want + d, want - d) if d else (want,):
            if low <= at <= high and lines[at : at + len(old)] == old:
                return at
    return None


def _mismatch(path: str, n: int, hunk: Hunk, lines: list[str], want: int) -> str:
    old = hunk.old
    message = (
        f"{path}: hunk {n} (@@ -{hunk.old_start} ...) does not match the file: its context and "
        "removed lines were not found"
    )
    if old and 0 <= want < len(lines):
        for k, expected in enumerate(old):
            actual = lines[want + k] if want + k < len(lines) else "<end of file>"
            if actual != expected:
                return (
                    f"{message}. At line {want + k + 1} the hunk expects {expected[:200]!r} but "
                    f"the file has {actual[:200]!r}. Read the file again and regenerate the patch."
                )
    return message + ". Read the file again and regenerate the patch."


def _header_name(raw: str, line_no: int) -> str | None:
    name = raw.split("\t", 1)[0] if not raw.startswith('"') else raw
    name = _unquote(name.rstrip("\r"), line_no)
    if not raw.startswith('"'):
        name = re.sub(r"\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)? [+-]\d{4}$", "", name)
    return None if name == _DEV_NULL else name


def _strip_pair(old: str | None, new: str | None, *, git: bool) -> tuple[str | None, str | None]:
    """Drops git's a/ and b/ prefixes when both sides have them (or the other side is absent)."""
    old_ok = old is None or old.startswith("a/")
    new_ok = new is None or new.startswith("b/")
    if git or (old_ok and new_ok and (old or new)):
        return _strip_prefix(old, "a/"), _strip_prefix(new, "b/")
    return old, new


def _strip_prefix(name: str | None, prefix: str) -> str | None:
    if name is None or not prefix:
        return name
    return name[len(prefix) :] if name.startswith(prefix) else name


def _git_header_names(rest: str, line_no: int) -> tuple[str | None, str | None]:
    """The names on a ``diff --git a/X b/Y`` line (used when no ---/+++ lines follow)."""
    if rest.startswith('"'):
        end = _quoted_end(rest, line_no)
        old, tail = _unquote(rest[: end + 1], line_no), rest[end + 1 :].lstrip(" ")
        new = _unquote(tail, line_no)
    else:
        half = rest.split(" b/", 1)
        if len(half) != 2:
            raise PatchError(f"line {line_no}: cannot read the file names of {rest[:80]!r}")
        old, new = half[0], "b/" + half[1]
    return _strip_prefix(old, "a/"), _strip_prefix(new, "b/")


def _quoted_end(s: str, line_no: int) -> int:
    i = 1
    while i < len(s):
        if s[i] == "\\":
            i += 2
            continue
        if s[i] == '"':
            return i
        i += 1
    raise PatchError(f"line {line_no}: unterminated quoted file name")


def _unquote(name: str, line_no: int) -> str:
    """Git's C-style quoted names ("a/t\\303\\251st") back to text; other names as they are."""
    if not (name.startswith('"') and name.endswith('"') and len(name) >= 2):
        return name
    body = name[1:-1]
    out = bytearray()
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
            continue
        nxt = body[i + 1 : i + 2]
        if nxt in _ESCAPES:
            out += _ESCAPES[nxt].encode()
            i += 2
        elif re.fullmatch(r"[0-7]{3}", body[i + 1 : i + 4]):
            out.append(int(body[i + 1 : i + 4], 8))
            i += 4
        else:
            raise PatchError(f"line {line_no}: bad escape in the quoted name {name[:80]!r}")
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError:
        raise PatchError(f"line {line_no}: the quoted name {name[:80]!r} is not UTF-8") from None
