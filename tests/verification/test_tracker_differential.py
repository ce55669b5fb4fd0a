"""Differential: random command scripts through a real session; the tracker always equals a walk.

Each bash call runs one random script in the session's real sandbox: files
created, appended to, truncated and deleted, renames across directories,
chmod of files and directories, hard links made and removed, symlinks made
and flipped, a directory replaced by a file and a file by a directory,
rewrites that keep the size and the mtime (``touch -r``), FIFOs, deep new
trees filled at once, whole trees removed or moved. After every call the
snapshot the session took (incrementally, through its tracker) must be
exactly what a full walk of the workspace sees, and the change it recorded
must be the diff a full walk gives.

``A3S_TEST_TRACKER_SCRIPTS`` sets how many scripts (bash calls) run; CI runs
the default, the full run (3,000 or more) is reported with the issue.
"""

from __future__ import annotations

import os
import random
import shlex
from pathlib import Path

import pytest

from codeward import Agent, PermissionPolicy, SessionOptions, ToolCall, _native
from codeward.verification import WorkspaceSnapshot

pytestmark = pytest.mark.skipif(
    not hasattr(_native, "inotify_init"), reason="the tracker's events need Linux inotify"
)

SCRIPTS = int(os.environ.get("A3S_TEST_TRACKER_SCRIPTS", "150"))
SEED = int(os.environ.get("A3S_TEST_TRACKER_SEED", "16"))
DIRS = ["a", "b", "a/x", "a/x/y", "b/z", "c", "c/d/e"]
NAMES = ["f1", "f2", "f3", "g", "h.txt", ".hidden"]  # no credential name: a linked one refuses runs


class Scripts:
    """Random bash scripts over a small set of names, so that they collide often."""

    def __init__(self, rnd: random.Random) -> None:
        self.rnd = rnd

    def path(self) -> str:
        return f"{self.rnd.choice(DIRS)}/{self.rnd.choice(NAMES)}"

    def directory(self) -> str:
        return self.rnd.choice(DIRS)

    def op(self) -> str:
        r, p, d = self.rnd, self.path(), self.directory()
        q = shlex.quote
        choices = [
            (  # never into a FIFO (it would block), nor through a symlink (to one)
                f"mkdir -p {q(os.path.dirname(p))} && [ ! -p {q(p)} ] && [ ! -L {q(p)} ] && "
                f"printf '%s' {r.randrange(10**6)} > {q(p)}"
            ),
            f"[ -f {q(p)} ] && printf more >> {q(p)}",
            f"rm -f {q(p)}",
            f"mkdir -p {q(d)} && mv -f {q(self.path())} {q(d)}/ 2>/dev/null",
            f"mv -f {q(self.path())} {q(self.path())} 2>/dev/null",
            f"chmod {r.choice(['600', '644', '755', '700'])} {q(p)} 2>/dev/null",
            f"chmod {r.choice(['700', '755', '711'])} {q(d)} 2>/dev/null",
            f"mkdir -p {q(os.path.dirname(p))} && ln -f {q(self.path())} {q(p)} 2>/dev/null",
            f"mkdir -p {q(os.path.dirname(p))} && ln -sfn {q(self.rnd.choice(NAMES))} {q(p)}",
            f"rm -rf {q(d)} && mkdir -p {q(os.path.dirname(d) or '.')} && printf x > {q(d)}",
            f"rm -f {q(p)} 2>/dev/null; mkdir -p {q(p)} 2>/dev/null",
            (
                f'[ -f {q(p)} ] && [ ! -L {q(p)} ] && touch -r {q(p)} "$TMPDIR/ref" && '
                f"printf Z | dd of={q(p)} bs=1 count=1 conv=notrunc status=none && "
                f'touch -r "$TMPDIR/ref" {q(p)}'
            ),
            f"mkdir -p {q(os.path.dirname(p))} && rm -f {q(p)} && mkfifo {q(p)}",
            f"[ -f {q(p)} ] && truncate -s {r.randrange(0, 9)} {q(p)}",
            self.deep_tree(),
            f"rm -rf {q(d)}",
            f"mkdir -p {q(d)} && mv {q(self.directory())} {q(d)}/m{r.randrange(99)} 2>/dev/null",
        ]
        return choices[r.randrange(len(choices))] + " || true"

    def deep_tree(self) -> str:
        base = f"{self.directory()}/t{self.rnd.randrange(5)}"
        levels = "/".join(f"l{i}" for i in range(self.rnd.randrange(2, 7)))
        files = " ".join(f"{base}/{levels}/n{i}" for i in range(self.rnd.randrange(1, 12)))
        return f"mkdir -p {base}/{levels} && touch {files}"

    def script(self) -> str:
        return "; ".join(self.op() for _ in range(self.rnd.randrange(1, 9)))


def test_random_scripts_the_tracker_equals_a_full_walk(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    options = SessionOptions(mode="auto", permission_policy=PermissionPolicy(allow=["bash"]))
    rnd = random.Random(SEED)
    scripts = Scripts(rnd)
    fallbacks: dict[str, int] = {}
    incremental = changed = linked = 0
    with Agent().session(root, options) as session:
        if not session.sandbox.sandboxed:
            pytest.fail(f"no enforced sandbox here ({session.sandbox!r}): the suite needs one")
        walked = WorkspaceSnapshot.take(root)
        for n in range(SCRIPTS):
            script = scripts.script()
            call = ToolCall(f"s{n}", "bash", {"command": script, "timeout": 20_000})
            outcome = session.invoke(call)
            assert outcome.result is not None and outcome.result.success, (script, outcome)
            tracked = session._observer._baseline  # type: ignore[union-attr]  # the "after" it took
            now = WorkspaceSnapshot.take(root)
            assert tracked.same_as(now), _explain(script, tracked, now)
            assert tracked.diff(now) == []
            diff = walked.diff(now)
            assert diff == walked.diff(tracked)  # what a walk would have recorded
            changed += bool(diff)
            linked += any(_links(root, c.path) > 1 for c in diff)
            walked = now
            detection = outcome.result.metadata["change_detection"]
            if detection["incremental"]:
                incremental += 1
            if detection["fallback"]:
                key = detection["fallback"].split(":")[0][:60]
                fallbacks[key] = fallbacks.get(key, 0) + 1
    # most calls are incremental; the walks are the calls that made hard links, named
    assert incremental >= SCRIPTS // 2, (incremental, fallbacks)
    assert all("link" in key for key in fallbacks), fallbacks
    assert changed >= SCRIPTS // 2 and linked >= SCRIPTS // 50, (changed, linked)
    print(
        f"\n{SCRIPTS} scripts: {changed} changed the workspace, {linked} made hard links; "
        f"{incremental} incremental, walks: {fallbacks}"
    )


def _links(root: Path, path: str) -> int:
    try:
        return os.lstat(root / path).st_nlink
    except OSError:
        return 0


def _explain(script: str, tracked: WorkspaceSnapshot, now: WorkspaceSnapshot) -> str:
    inc = {p: tracked.state(p) for p in tracked.paths()}
    walk = {p: now.state(p) for p in now.paths()}
    states = sorted(p for p in inc.keys() & walk.keys() if inc[p] != walk[p])
    return (
        f"after {script!r}: only tracked {sorted(inc.keys() - walk.keys())}, only walked "
        f"{sorted(walk.keys() - inc.keys())}, states differ {states}, unreadable "
        f"{sorted(tracked.unreadable)} / {sorted(now.unreadable)}"
    )


def test_a_hard_link_made_and_removed_again_is_not_missed(tmp_path: Path) -> None:
    """The one change no directory watch reports: a file changed through a second name that
    is gone by the end of the command. The sandbox tells (every link() is watched), and the
    session walks the tree for that call."""
    root = tmp_path / "ws"
    (root / "quiet").mkdir(parents=True)
    (root / "quiet" / "code.py").write_text("good = True\n")
    (root / "busy").mkdir()
    options = SessionOptions(mode="auto", permission_policy=PermissionPolicy(allow=["bash"]))
    with Agent().session(root, options) as session:
        if not session.sandbox.sandboxed:
            pytest.fail(f"no enforced sandbox here ({session.sandbox!r}): the suite needs one")
        plain = session.invoke(ToolCall("p", "bash", {"command": "echo x > busy/log"}))
        assert plain.result is not None and plain.result.metadata["hard_linked"] is False
        assert plain.result.metadata["change_detection"]["incremental"]
        sneaky = "ln quiet/code.py busy/t && echo 'good = False' >> busy/t && rm busy/t"
        out = session.invoke(ToolCall("s", "bash", {"command": sneaky}))
        assert out.result is not None and out.result.success, out
        assert out.result.metadata["hard_linked"] is True
        detection = out.result.metadata["change_detection"]
        assert not detection["incremental"] and "link()" in detection["fallback"]
        tracked = session._observer._baseline  # type: ignore[union-attr]
        assert tracked.same_as(WorkspaceSnapshot.take(root))
        assert "quiet/code.py" in {e.path for e in session._ledger.entries()}
        after = session.invoke(ToolCall("n", "bash", {"command": "echo y > busy/log"}))
        assert after.result is not None
        assert after.result.metadata["change_detection"]["incremental"]  # back to events


def test_a_command_cannot_take_the_link_notifications(tmp_path: Path) -> None:
    """A command that stacked a notifying seccomp filter of its own would get the link()
    notifications before the init: installing one is refused (EPERM, not the EFAULT a NULL
    program gets from the kernel)."""
    options = SessionOptions(mode="auto", permission_policy=PermissionPolicy(allow=["bash"]))
    probe = (
        "python3 -c 'import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); "
        "libc.syscall.restype = ctypes.c_long; "
        "r = libc.syscall(317, 1, 8, None); print(r, os.strerror(ctypes.get_errno()))'"
    )
    if os.uname().machine != "x86_64":
        pytest.skip("the probe uses x86_64's number of seccomp()")
    with Agent().session(tmp_path, options) as session:
        out = session.invoke(ToolCall("s", "bash", {"command": probe}))
        assert out.result is not None
        assert "-1 Operation not permitted" in out.result.output, out.result.output


def test_a_write_through_a_shared_mapping_is_not_missed(tmp_path: Path) -> None:
    """A write through a shared mapping sends no inotify event, and the command closes the
    descriptor before it writes; the file's last close, when the mapping goes with the
    process, does report to its directory, before the command's end is reported."""
    root = tmp_path / "ws"
    (root / "quiet").mkdir(parents=True)
    (root / "quiet" / "data.bin").write_bytes(b"a" * 4096)
    os.utime(root / "quiet" / "data.bin", (1_000_000_000, 1_000_000_000))
    (root / "busy").mkdir()
    writer = (
        'python3 -c \'import mmap, os; fd = os.open("quiet/data.bin", os.O_RDWR); '
        'm = mmap.mmap(fd, 0); os.close(fd); m[:4] = b"evil"; m.flush()\' && echo x > busy/log'
    )
    options = SessionOptions(mode="auto", permission_policy=PermissionPolicy(allow=["bash"]))
    with Agent().session(root, options) as session:
        if not session.sandbox.sandboxed:
            pytest.fail(f"no enforced sandbox here ({session.sandbox!r}): the suite needs one")
        session.invoke(ToolCall("p", "bash", {"command": "true"}))  # the first, full walk
        out = session.invoke(ToolCall("m", "bash", {"command": writer}))
        assert out.result is not None and out.result.success, out
        assert out.result.metadata["change_detection"]["incremental"]
        tracked = session._observer._baseline  # type: ignore[union-attr]
        assert tracked.same_as(WorkspaceSnapshot.take(root))
        assert (root / "quiet" / "data.bin").read_bytes()[:4] == b"evil"
        assert "quiet/data.bin" in {e.path for e in session._ledger.entries()}


def test_closing_the_session_releases_its_watches(tmp_path: Path) -> None:
    """One watch per directory of the workspace, held in the process's one instance: a closed
    session gives them back at once, not when the collector finds its tracker."""
    from codeward.verification._inotify import hub

    root = tmp_path / "ws"
    for d in range(20):
        (root / f"d{d}").mkdir(parents=True)
    options = SessionOptions(mode="auto", permission_policy=PermissionPolicy(allow=["bash"]))
    session = Agent().session(root, options)
    try:
        out = session.invoke(ToolCall("p", "bash", {"command": "echo x > d0/f"}))
        assert out.result is not None and out.result.metadata["change_detection"]["incremental"]
        held = hub().watches()
        assert held >= 21
    finally:
        session.close()
    assert hub().watches() <= held - 21  # (others' collected trackers may go too)
    assert session._tracking.tracker() is None  # a call still running walks
