"""The .gitignore rules search needs: patterns, negation, directory-only, anchoring, ``**``.

Rules come from the .gitignore file of each directory (read through the
walked directory descriptor, never through a symlink) and from the root's
``.git/info/exclude``. A deeper file's rules win over a shallower one's, and
within a file the last matching rule wins, as in git. A path inside an
ignored directory is never re-included: the walk does not enter it.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["IgnoreRules", "Rule", "parse_rules", "read_rules_at"]

MAX_IGNORE_FILE_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Rule:
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool
    basename: bool  # no "/" inside the pattern: it matches a name at any depth


def parse_rules(text: str) -> list[Rule]:
    """The rules of one .gitignore file's text."""
    rules = []
    for raw in text.splitlines():
        line = _trim(raw)
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        if negate or line.startswith("\\!") or line.startswith("\\#"):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        basename = "/" not in line
        line = line.lstrip("/") if not basename else line
        try:
            regex = re.compile(_translate(line) + r"\Z", re.DOTALL)
        except re.error:
            continue  # git ignores a pattern it cannot use; so do we
        rules.append(Rule(regex, negate, dir_only, basename))
    return rules


def _trim(line: str) -> str:
    """Trailing spaces go unless escaped with a backslash."""
    stripped = line.rstrip(" ")
    if stripped.endswith("\\") and len(stripped) < len(line):
        return stripped[:-1] + " "
    return stripped


def _translate(pattern: str) -> str:
    segments = pattern.split("/")
    out = []
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        if seg == "**":
            out.append(".*" if last else "(?:[^/]*/)*")
            continue
        out.append(_segment(seg) + ("" if last else "/"))
    return "".join(out)


def _segment(seg: str) -> str:
    out = []
    i = 0
    while i < len(seg):
        c = seg[i]
        if c == "\\" and i + 1 < len(seg):
            out.append(re.escape(seg[i + 1]))
            i += 2
        elif c == "*":
            while i < len(seg) and seg[i] == "*":
                i += 1
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            end, cls = _bracket(seg, i)
            if end < 0:
                out.append(re.escape(c))
                i += 1
            else:
                out.append(cls)
                i = end + 1
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def _bracket(seg: str, start: int) -> tuple[int, str]:
    """The end index and regex class of a ``[...]`` at ``start``, or (-1, "") if unclosed."""
    i = start + 1
    negate = i < len(seg) and seg[i] in "!^"
    if negate:
        i += 1
    body: list[str] = []
    first = True
    while i < len(seg):
        c = seg[i]
        if c == "]" and not first:
            cls = "".join(body)
            return i, f"[^{cls}/]" if negate else f"[{cls}]"
        if c == "\\" and i + 1 < len(seg):
            body.append(re.escape(seg[i + 1]))
            i += 2
        else:
            body.append("\\" + c if c in "\\^[]" else c)
            i += 1
        first = False
    return -1, ""


class IgnoreRules:
    """The rules in force during one walk: per directory, from the root down."""

    def __init__(self) -> None:
        self._by_dir: dict[tuple[str, ...], list[Rule]] = {}

    def add(self, base: tuple[str, ...], rules: Sequence[Rule]) -> None:
        if rules:
            self._by_dir.setdefault(base, []).extend(rules)

    def ignored(self, parts: tuple[str, ...], is_dir: bool) -> bool:
        """Whether ``parts`` (a workspace-relative path) is ignored; its parents are not asked."""
        if not self._by_dir:
            return False
        for depth in range(len(parts) - 1, -1, -1):
            rules = self._by_dir.get(parts[:depth])
            if not rules:
                continue
            rel = "/".join(parts[depth:])
            name = parts[-1]
            for rule in reversed(rules):
                if rule.dir_only and not is_dir:
                    continue
                if rule.regex.match(name if rule.basename else rel):
                    return not rule.negate
        return False


def read_rules_at(dirfd: int, name: str = ".gitignore") -> list[Rule]:
    """The rules in ``name`` inside the directory ``dirfd`` (none if absent or not a plain file)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dirfd)
    except OSError:
        return []
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_IGNORE_FILE_BYTES:
            return []
        data = os.read(fd, MAX_IGNORE_FILE_BYTES)
    except OSError:
        return []
    finally:
        os.close(fd)
    return parse_rules(data.decode("utf-8", "replace"))
