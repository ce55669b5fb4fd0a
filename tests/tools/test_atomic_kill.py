"""Atomicity under SIGKILL: a writer killed at any point leaves the old file or the new one.

A child process rewrites a large file in a loop through the write, edit or
patch tool; the parent kills it with SIGKILL after a random delay and checks
the destination. What a kill can leave behind, and nothing else:

* write / edit: at most one ``.<name>.<random>.a3s-tmp`` file, the temporary
  file the killed writer was filling (it never replaces the destination);
* patch (several files): each file whole, old or new; after the recovery
  the next patch run starts with (test_patch_journal.py has the step-by-step
  version), every file old or every file new, and no kept original
  (``.a3s-orig``). Only a kill before the commit began (while the new
  contents were being written) can leave ``.a3s-tmp`` files.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import pytest

from codeward.workspace import Workspace
from codeward.workspace._atomic import recover_interrupted_batches

SIZE = 4 * 1024 * 1024
ROUNDS = 5  # at least; more (up to MAX_ROUNDS) until a kill has landed in the middle of a write
MAX_ROUNDS = 40  # a loaded machine can take many rounds before a kill lands mid-write

CHILD = r"""
import sys
from codeward.tools import EditTool, PatchTool, ToolContext, WriteTool, run_tool
from codeward.workspace import Workspace

root, mode, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
PATCHED = [f"p{i}" for i in range(40)]
ctx = ToolContext(Workspace(root), sandbox=None)
i = 0
while True:
    letter = "ab"[i % 2]
    if mode == "write":
        r = run_tool(WriteTool(), {"file_path": "big.txt", "content": letter * size}, ctx)
    elif mode == "edit":
        old, new = f"version {i}\n", f"version {i + 1}\n"
        args = {"file_path": "big.txt", "old_string": old, "new_string": new}
        r = run_tool(EditTool(), args, ctx)
    else:
        other = "ab"[(i + 1) % 2]
        patch = "".join(
            f"--- a/{n}\n+++ b/{n}\n@@ -1 +1 @@\n-{other}\n+{letter}\n" for n in PATCHED
        )
        r = run_tool(PatchTool(), {"patch": patch}, ctx)
    assert r.success, r.output
    if i == 0:
        print("ready", flush=True)
    i += 1
"""


def start(root, mode):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(root), mode, str(SIZE)],
        stdout=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"ready\n", "the child did not start"
    return proc


def kill_at_random(proc, rng):
    time.sleep(rng.uniform(0, 0.15))
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.stdout is not None
    proc.stdout.close()


def leftovers(root, keep):
    return sorted(n for n in os.listdir(root) if n not in keep)


@pytest.mark.parametrize("mode", ["write", "edit"])
def test_kill_never_leaves_a_half_written_file(tmp_path, mode):
    rng = random.Random(0xA35)
    root = tmp_path / "ws"
    root.mkdir()
    body = "x" * SIZE
    seen = set()
    mid_write = 0
    rounds = 0
    while rounds < ROUNDS or (not mid_write and rounds < MAX_ROUNDS):
        rounds += 1
        for name in os.listdir(root):
            os.unlink(root / name)
        (root / "big.txt").write_text("a" * SIZE if mode == "write" else "version 0\n" + body)
        proc = start(root, mode)
        kill_at_random(proc, rng)
        data = (root / "big.txt").read_text()
        if mode == "write":
            assert data in ("a" * SIZE, "b" * SIZE), f"half-written: {len(data)} bytes"
            seen.add(data[0])
        else:
            head, _, rest = data.partition("\n")
            assert head.startswith("version ") and rest == body, "half-written edit"
            seen.add(head)
        stray = leftovers(root, {"big.txt"})
        assert len(stray) <= 1 and all(n.endswith(".a3s-tmp") for n in stray), stray
        mid_write += len(stray)
    assert mid_write, "no kill landed while a temporary file was being written"


def test_kill_during_a_patch_recovers_to_one_version(tmp_path):
    rng = random.Random(7)
    root = tmp_path / "ws"
    root.mkdir()
    names = [f"p{i}" for i in range(40)]
    for _ in range(ROUNDS):
        for name in os.listdir(root):
            os.unlink(root / name)
        for name in names:
            (root / name).write_text("b\n")
        proc = start(root, "patch")
        kill_at_random(proc, rng)
        for name in names:
            assert (root / name).read_text() in ("a\n", "b\n")
        recover_interrupted_batches(Workspace(root))
        versions = {(root / name).read_text() for name in names}
        assert len(versions) == 1, f"files disagree after the recovery: {versions}"
        stray = leftovers(root, set(names))
        assert all(n.endswith(".a3s-tmp") for n in stray), stray
