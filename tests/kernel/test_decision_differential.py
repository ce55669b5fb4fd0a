"""Differential: for random spellings, the paths the policy decides on are the files the tool opens.

A session with a recording policy runs real read, write and search calls on
a tree with symlinks inside the workspace; ``os.open``, ``os.rename`` and
``os.link`` are instrumented while the tool runs, so what is compared is
the file the real tool opened or replaced (found through /proc/self/fd),
not a re-implementation of its walk.
"""

from __future__ import annotations

import contextlib
import os
import stat
import unicodedata
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kernelkit import HostBoundary

from codeward.kernel import ToolCall
from codeward.policy import Decision, PermissionPolicy, argument_string
from codeward.session import Agent, SessionOptions

NAMES = [
    "src", "docs", "deep", "a", "app.py", "guide.md", "c.txt", "up", "abs", "file", "chain",
    "back", "ünï.txt", "new.txt", ".", "..", "", "SRC",
]  # fmt: skip
SEPARATORS = ["/", "/", "/", "//", "\\"]


class RecordingPolicy(PermissionPolicy):
    """Allows everything and remembers the argument strings each call was decided on.

    (It records ``check`` too, as a policy without ``evaluate`` was consulted.)
    """

    decided: list[tuple[str, ...]]
    checked: list[tuple[str, ...]]

    def check(self, tool: str, args: Mapping[str, Any] | None = None) -> Decision:
        self.checked.append((argument_string(tool, args)[1],))
        return super().check(tool, args)

    def evaluate(
        self,
        tool: str,
        args: Mapping[str, Any] | None = None,
        *,
        paths: Any = None,
    ) -> Any:
        result = super().evaluate(tool, args, paths=paths)
        self.decided.append(tuple(result.subjects))
        return result


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("differential") / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("app\n")
    (root / "src" / "ünï.txt").write_text("unicode\n")
    (root / "docs").mkdir()
    (root / "docs" / "guide.md").write_text("guide\n")
    (root / "docs" / "up").symlink_to("../src")
    (root / "docs" / "abs").symlink_to(root / "src")
    (root / "docs" / "file").symlink_to("../src/app.py")
    (root / "chain").symlink_to("docs/up")
    (root / "deep" / "a").mkdir(parents=True)
    (root / "deep" / "a" / "c.txt").write_text("c\n")
    (root / "deep" / "a" / "back").symlink_to("../../docs")
    policy = RecordingPolicy(default_decision="allow")
    policy.decided = []
    policy.checked = []
    session = Agent().session(
        root, SessionOptions(permission_policy=policy, sandbox_handle=HostBoundary())
    )
    yield root, session, policy
    session.close()


@contextlib.contextmanager
def opened_files(root: str) -> Iterator[list[str]]:
    """Workspace-relative paths of the regular files opened, and of rename and link targets."""
    seen: list[str] = []
    real_open, real_rename, real_link = os.open, os.rename, os.link

    def where(fd: int) -> str:
        return os.path.relpath(os.readlink(f"/proc/self/fd/{fd}"), root)

    def traced_open(path, flags, mode=0o777, *, dir_fd=None):
        fd = real_open(path, flags, mode, dir_fd=dir_fd)
        if stat.S_ISREG(os.fstat(fd).st_mode) and ".a3s-" not in os.fsdecode(path):
            seen.append(where(fd))
        return fd

    def traced_rename(src, dst, *, src_dir_fd=None, dst_dir_fd=None):
        real_rename(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)
        if dst_dir_fd is not None:
            seen.append(os.path.normpath(os.path.join(where(dst_dir_fd), os.fsdecode(dst))))

    def traced_link(src, dst, *, src_dir_fd=None, dst_dir_fd=None, follow_symlinks=True):
        real_link(
            src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd, follow_symlinks=follow_symlinks
        )
        if dst_dir_fd is not None:
            seen.append(os.path.normpath(os.path.join(where(dst_dir_fd), os.fsdecode(dst))))

    mp = pytest.MonkeyPatch()
    mp.setattr(os, "open", traced_open)
    mp.setattr(os, "rename", traced_rename)
    mp.setattr(os, "link", traced_link)
    try:
        yield seen
    finally:
        mp.undo()


KNOWN = [
    "src/app.py", "src/ünï.txt", "docs/guide.md", "docs/file", "docs/up/app.py",
    "docs/abs/ünï.txt", "chain/app.py", "deep/a/c.txt", "deep/a/back/guide.md",
    "deep/a/back/up/app.py", "docs/new.txt", "deep/a/back/new.txt", "src",
]  # fmt: skip


@st.composite
def detours(draw, path: str) -> str:
    """A known path spelled another way: detours through '..' (also after a symlink), '.'
    segments, doubled slashes, a backslash, decomposed Unicode."""
    parts = path.split("/")
    out: list[str] = []
    for part in parts:
        for _ in range(draw(st.integers(0, 2))):
            out += draw(st.sampled_from([["."], ["up", ".."], ["a", ".."], ["file", ".."], [""]]))
        out.append(part)
    text = out[0]
    for part in out[1:]:
        text += draw(st.sampled_from(SEPARATORS)) + part
    if draw(st.booleans()):
        text = unicodedata.normalize("NFD", text)  # another file on Linux: a missing one
    return text


@st.composite
def spellings(draw, root: str) -> str:
    if draw(st.booleans()):
        text = draw(detours(draw(st.sampled_from(KNOWN))))
    else:
        names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=6))
        text = names[0]
        for name in names[1:]:
            text += draw(st.sampled_from(SEPARATORS)) + name
    prefix = draw(st.sampled_from(["", "", "./", root + "/", root + "//"]))
    return prefix + text


def _run(world, data, tool: str, args_for) -> tuple[str, list[str], tuple[str, ...], Any] | None:
    """Draws a spelling and runs ``tool`` on it; None when the call was refused, after checking
    that nothing was opened and nothing decided on."""
    root, session, policy = world
    path = data.draw(spellings(str(root)))
    policy.decided.clear()
    policy.checked.clear()
    with opened_files(str(root)) as seen:
        outcome = session.invoke(ToolCall("c", tool, args_for(path)))
    decided = policy.decided[0] if policy.decided else None
    if decided is None and policy.checked:
        decided = policy.checked[0]
    if not outcome.executed:
        assert seen == [] and decided is None, (path, outcome.reason)
        return None
    assert decided is not None
    return path, seen, decided, outcome


PROPERTY = settings(
    max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@PROPERTY
@given(data=st.data())
def test_a_read_opens_exactly_a_path_it_was_decided_on(world, data):
    ran = _run(world, data, "read", lambda p: {"file_path": p})
    if ran is None:
        return
    path, seen, decided, outcome = ran
    if outcome.result.success:
        assert len(seen) == 1, (path, seen)
        assert seen[0] in decided, (path, seen, decided)
        assert seen[0] == decided[-1]  # the symlink target, or the spelling when there is none
    else:
        assert all(s in decided for s in seen), (path, seen, decided)


@PROPERTY
@given(data=st.data())
def test_a_write_replaces_exactly_a_path_it_was_decided_on(world, data):
    ran = _run(world, data, "write", lambda p: {"file_path": p, "content": "w\n"})
    if ran is None:
        return
    path, seen, decided, outcome = ran
    # the session hashes what the write left (read-only opens of the same path): not a write
    written = list(dict.fromkeys(s for s in seen if s in decided))
    if outcome.result.success:
        assert written == [decided[-1]], (path, seen, decided)
    assert all(s in decided for s in seen), (path, seen, decided)


@PROPERTY
@given(data=st.data())
def test_a_grep_of_one_file_opens_exactly_a_path_it_was_decided_on(world, data):
    ran = _run(world, data, "search", lambda p: {"mode": "grep", "query": "x", "path": p})
    if ran is None:
        return
    path, seen, decided, _outcome = ran
    spelled, real = decided[0].split(" ", 2)[2], decided[-1].split(" ", 2)[2]
    for opened in seen:  # a file named by the call, or files below the directory it named
        assert opened == real or opened.startswith(real.rstrip(".") + "/") or real == ".", (
            path,
            opened,
            decided,
        )
    assert spelled  # never decided on an empty path
