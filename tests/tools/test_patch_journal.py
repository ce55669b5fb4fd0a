"""patch across a SIGKILL: the journal outside the workspace and the recovery of the next run.

A forked child applies a multi-file patch (changes in several directories, a
new file, a deletion, a rename) and stops at each step of the batch's commit
(journal written, originals kept, each rename, the commit point, each
cleanup) until the parent lets it go on; the parent kills it with SIGKILL at
a step. After the recovery every file is old (killed before the commit
point) or every file is new (after it), and nothing else is left: no
``.a3s-tmp``, no ``.a3s-orig``, no journal.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from toolkit import Recorder, call, put, temps

from codeward.tools import PatchTool, ToolContext, run_tool
from codeward.workspace import Workspace, _atomic
from codeward.workspace._atomic import recover_interrupted_batches

PATCH = PatchTool()
CHANGED = [f"d{d}/f{i}.txt" for d in range(3) for i in range(3)]  # 9 files in 3 directories
OLD = {
    **{rel: f"old {rel}\n" for rel in CHANGED},
    "gone.txt": "bye\n",
    "moved/from.txt": "moving\n",
}
NEW = {
    **{rel: f"new {rel}\n" for rel in CHANGED},
    "made/new.txt": "hello\n",
    "moved/to.txt": "moved\n",
}
THE_PATCH = (
    "".join(f"--- a/{r}\n+++ b/{r}\n@@ -1 +1 @@\n-old {r}\n+new {r}\n" for r in CHANGED)
    + "--- /dev/null\n+++ b/made/new.txt\n@@ -0,0 +1 @@\n+hello\n"
    + "--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n"
    + "diff --git a/moved/from.txt b/moved/to.txt\nrename from moved/from.txt\n"
    + "rename to moved/to.txt\n--- a/moved/from.txt\n+++ b/moved/to.txt\n"
    + "@@ -1 +1 @@\n-moving\n+moved\n"
)
STAGED = len(CHANGED) + 1 + 1 + 2  # the rename is a creation and a deletion
STEPS = (
    ["journaled", "kept"]
    + [f"renamed:{i}" for i in range(STAGED)]
    + ["committed"]
    + [f"cleaned:{i}" for i in range(STAGED)]
)


class Child:
    """A forked process applying a patch that stops at each commit step until told to go on."""

    def __init__(self, root: Path, patch: str) -> None:
        steps_r, steps_w = os.pipe()
        go_r, go_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            code = 1
            try:
                os.close(steps_r)
                os.close(go_w)

                def hook(step: str) -> None:
                    os.write(steps_w, f"{step}\n".encode())
                    if not os.read(go_r, 1):
                        os._exit(3)

                _atomic._step_hook = hook
                ctx = ToolContext(Workspace(root), sandbox=None)  # type: ignore[arg-type]
                r = run_tool(PatchTool(), {"patch": patch}, ctx)
                os.write(steps_w, f"done {r.success} {r.output!r}\n".encode())
                code = 0
            finally:
                os._exit(code)
        os.close(steps_w)
        os.close(go_r)
        self.pid = pid
        self._go = go_w
        self._steps = os.fdopen(steps_r)

    def step(self) -> str:
        return self._steps.readline().strip()

    def go(self) -> None:
        os.write(self._go, b"g")

    def run_to(self, wanted: str) -> None:
        """Lets the child go on until it stops at ``wanted``."""
        while (step := self.step()) != wanted:
            assert step and not step.startswith("done"), f"never reached {wanted}: {step}"
            self.go()

    def kill(self) -> None:
        os.kill(self.pid, signal.SIGKILL)
        self._close()

    def finish(self) -> str:
        """Lets the child (stopped at a step) run to the end; returns its last line."""
        self.go()
        while not (step := self.step()).startswith("done"):
            assert step, "the child died"
            self.go()
        self._close()
        return step

    def _close(self) -> None:
        os.waitpid(self.pid, 0)
        os.close(self._go)
        self._steps.close()


def reset(root: Path) -> None:
    for dirpath, dirs, files in os.walk(root, topdown=False):
        for f in files:
            os.unlink(os.path.join(dirpath, f))
        for d in dirs:
            os.rmdir(os.path.join(dirpath, d))
    for rel, text in OLD.items():
        put(root, rel, text)


def tree(root: Path) -> dict[str, str]:
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            p = os.path.join(dirpath, f)
            with open(p) as fh:
                out[os.path.relpath(p, root)] = fh.read()
    return out


def journals(state: Path) -> list[str]:
    d = state / "codeward" / "patch-journals"
    return sorted(os.listdir(d)) if d.is_dir() else []


def assert_each_file_whole(root: Path) -> None:
    for rel, text in tree(root).items():
        if not rel.endswith((".a3s-tmp", ".a3s-orig")):
            assert text in (OLD.get(rel), NEW.get(rel)), f"{rel} is neither old nor new: {text!r}"


def test_killed_at_every_step_recovers_to_all_old_or_all_new(root, state_home):
    steps = list(STEPS)
    random.Random(0xA35).shuffle(steps)
    for n, kill_at in enumerate(steps):
        reset(root)
        child = Child(root, THE_PATCH)
        child.run_to(kill_at)
        child.kill()
        assert_each_file_whole(root)
        assert len(journals(state_home)) == 1, kill_at
        recorder = Recorder()
        if n % 2:  # the next patch run recovers first, even one that then fails to parse
            ctx = ToolContext(Workspace(root), sandbox=None, recorder=recorder)  # type: ignore[arg-type]
            assert not call(PATCH, ctx, patch="not a patch").success
        else:
            recover_interrupted_batches(Workspace(root))
        expected = NEW if STEPS.index(kill_at) >= STEPS.index("committed") else OLD
        assert tree(root) == expected, f"killed at {kill_at}"
        assert temps(root) == [] and journals(state_home) == [], kill_at
        if n % 2 and expected is OLD and kill_at != "journaled" and kill_at != "kept":
            assert recorder.entries, "the recovery's changes were not recorded"
            assert all(tool == "patch" for tool, _, _ in recorder.entries)


def _slow_step_hook(started: int, step: str) -> None:
    """The child's commit-step hook: says once that it is patching, then takes 2 ms a step."""
    if started >= 0:
        os.write(started, b"s")
        os.close(started)
        _atomic._step_hook = functools.partial(_slow_step_hook, -1)
    time.sleep(0.002)


def test_killed_at_random_times_recovers_to_one_version(root, state_home):
    """No pause: a child patches 40 files back and forth until a SIGKILL at a random instant.

    The hook only slows each commit step down (2 ms) so that most kills land
    in the commit rather than while the new contents are written.
    """
    rng = random.Random(0x5EED)
    names = [f"p{i:02d}" for i in range(40)]
    flip = {
        letter: "".join(f"--- a/{n}\n+++ b/{n}\n@@ -1 +1 @@\n-{other}\n+{letter}\n" for n in names)
        for letter, other in (("a", "b"), ("b", "a"))
    }
    outcomes = []
    for _ in range(20):
        reset(root)
        for name in names:
            put(root, name, "b\n")
        started_r, started_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            try:
                os.close(started_r)
                _atomic._step_hook = functools.partial(_slow_step_hook, started_w)
                ctx = ToolContext(Workspace(root), sandbox=None)  # type: ignore[arg-type]
                for i in itertools.count():
                    run_tool(PatchTool(), {"patch": flip["ab"[i % 2]]}, ctx)
            finally:
                os._exit(1)
        os.close(started_w)
        # a loaded machine may not run the child for a while: count from its first commit step
        os.read(started_r, 1)
        os.close(started_r)
        time.sleep(rng.uniform(0, 0.15))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        for name in names:
            assert (root / name).read_text() in ("a\n", "b\n")
        recovered = recover_interrupted_batches(Workspace(root))
        versions = {(root / name).read_text() for name in names}
        assert len(versions) == 1, f"files disagree after the recovery: {versions}"
        assert not [p for p in temps(root) if p.endswith(".a3s-orig")]
        assert journals(state_home) == []
        outcomes.append("committed" if any(r.committed for r in recovered) else len(recovered))
    assert any(o == 1 for o in outcomes), f"no kill landed before a commit point: {outcomes}"


def test_the_next_patch_reports_the_rollback_and_applies_on_the_old_tree(root, state_home):
    reset(root)
    child = Child(root, THE_PATCH)
    child.run_to("renamed:10")  # the changes, the new file and the deletion are done
    child.kill()
    recorder = Recorder()
    ctx = ToolContext(Workspace(root), sandbox=None, recorder=recorder)  # type: ignore[arg-type]
    r = call(PATCH, ctx, patch=THE_PATCH)  # applies only to the old tree: the rollback came first
    assert r.success, r.output
    assert "interrupted and has been rolled back: restored d0/f0.txt" in r.output
    assert "gone.txt" in r.output and "removed made/new.txt" in r.output
    assert "left" not in r.output
    assert ("patch", "made/new.txt", "deleted") in recorder.entries
    assert tree(root) == NEW and temps(root) == [] and journals(state_home) == []


def test_a_live_patch_is_never_recovered_by_another_process(root, state_home):
    reset(root)
    child = Child(root, THE_PATCH)
    child.run_to(f"renamed:{STAGED // 2}")  # half the files are new, the writer lives
    during = tree(root)
    assert during != OLD and len(journals(state_home)) == 1
    assert recover_interrupted_batches(Workspace(root)) == []
    code = (
        "import sys\n"
        "from codeward.workspace import Workspace\n"
        "from codeward.workspace._atomic import recover_interrupted_batches\n"
        "print(len(recover_interrupted_batches(Workspace(sys.argv[1]))))\n"
    )
    other = subprocess.run(
        [sys.executable, "-c", code, str(root)], capture_output=True, text=True, check=True
    )
    assert other.stdout.strip() == "0"
    ctx = ToolContext(Workspace(root), sandbox=None)  # type: ignore[arg-type]
    r = call(PATCH, ctx, patch="--- /dev/null\n+++ b/other.txt\n@@ -0,0 +1 @@\n+x\n")
    assert r.success and "rolled back" not in r.output
    assert {k: v for k, v in tree(root).items() if k != "other.txt"} == during
    assert child.finish().startswith("done True")
    os.unlink(root / "other.txt")
    assert tree(root) == NEW and temps(root) == [] and journals(state_home) == []


def test_pid_reuse_is_not_a_live_writer(root, state_home):
    """The journal names its writer's pid and start time: a live process with that pid but
    another start time is a reused pid; with the same start time it is the writer."""
    reset(root)
    child = Child(root, THE_PATCH)
    child.run_to("renamed:2")
    child.kill()
    (name,) = journals(state_home)
    folder = state_home / "codeward" / "patch-journals"
    key, _pid, _start, rand, state = name.split(".")
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        with open(f"/proc/{sleeper.pid}/stat") as fh:
            start = int(fh.read().rsplit(")", 1)[1].split()[19])
        alive = f"{key}.{sleeper.pid}.{start}.{rand}.{state}"
        os.rename(folder / name, folder / alive)
        assert recover_interrupted_batches(Workspace(root)) == []  # its writer looks alive
        assert tree(root) != OLD
        reused = f"{key}.{sleeper.pid}.{start + 1}.{rand}.{state}"
        os.rename(folder / alive, folder / reused)
        (done,) = recover_interrupted_batches(Workspace(root))
        assert not done.committed and done.complete and done.pid == sleeper.pid
    finally:
        sleeper.kill()
        sleeper.wait()
    assert tree(root) == OLD and journals(state_home) == []


def test_a_journal_whose_lock_is_held_is_left_alone(root, state_home):
    import fcntl

    reset(root)
    child = Child(root, THE_PATCH)
    child.run_to("renamed:1")
    child.kill()
    (name,) = journals(state_home)
    fd = os.open(state_home / "codeward" / "patch-journals" / name, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as a recovery in another process would
        assert recover_interrupted_batches(Workspace(root)) == []
    finally:
        os.close(fd)
    assert len(recover_interrupted_batches(Workspace(root))) == 1
    assert tree(root) == OLD


def test_recovery_touches_only_the_inodes_the_batch_made(root, state_home):
    """A file someone wrote over a new one after the kill stays; its original is kept aside."""
    reset(root)
    child = Child(root, THE_PATCH)
    child.run_to("renamed:10")  # every change and the creation are in place
    child.kill()
    put(root, "side1", "someone else's\n")  # new inodes, as an editor saving atomically makes
    os.rename(root / "side1", root / "made/new.txt")
    put(root, "side2", "edited after the kill\n")
    os.rename(root / "side2", root / "d0/f0.txt")
    (done,) = recover_interrupted_batches(Workspace(root))
    assert done.left == ("d0/f0.txt",) and "made/new.txt" not in done.removed
    now = tree(root)
    assert now["made/new.txt"] == "someone else's\n"
    assert now["d0/f0.txt"] == "edited after the kill\n"
    origs = [p for p in temps(root) if p.endswith(".a3s-orig")]
    assert len(origs) == 1 and Path(origs[0]).read_text() == OLD["d0/f0.txt"]
    for rel in CHANGED[1:]:
        assert now[rel] == OLD[rel]


def test_a_forged_journal_moves_nothing(root, state_home, tmp_path):
    """A journal naming files the batch could not have made is not acted on."""
    put(root, "victim.txt", "keep me\n")
    put(root, "other.txt", "and me\n")
    ws = Workspace(root)
    st = os.stat(root / "victim.txt")
    folder = state_home / "codeward" / "patch-journals"
    folder.mkdir(parents=True, mode=0o700)
    key = _journal_key(ws.root)
    entry = {
        "parent": [],
        "name": "other.txt",
        "temp": "",
        "temp_id": None,
        "orig": "victim.txt",  # not a name the batch gives a kept original
        "orig_id": [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns],
        "existed": True,
    }
    record = {"version": 1, "workspace": ws.root, "pid": 999999999, "entries": [entry]}
    (folder / f"{key}.999999999.1.{'0' * 16}.journal").write_text(json.dumps(record))
    assert recover_interrupted_batches(ws) == []
    assert (root / "victim.txt").read_text() == "keep me\n"
    assert (root / "other.txt").read_text() == "and me\n"


def test_a_torn_journal_of_a_dead_writer_is_dropped(root, state_home):
    ws = Workspace(root)
    folder = state_home / "codeward" / "patch-journals"
    folder.mkdir(parents=True, mode=0o700)
    key = _journal_key(ws.root)
    (folder / f"{key}.999999999.1.{'1' * 16}.writing").write_text('{"version": 1, "wor')
    mine = folder / f"{key}.{os.getpid()}.1.{'2' * 16}.writing"  # ours: being written
    mine.write_text("")
    assert recover_interrupted_batches(ws) == []
    assert sorted(os.listdir(folder)) == [mine.name]


def _journal_key(root: str) -> str:
    import hashlib

    return hashlib.sha256(os.fsencode(root)).hexdigest()[:32]
