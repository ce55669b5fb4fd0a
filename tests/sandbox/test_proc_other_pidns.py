"""Another caller in another pid namespace sharing the scratch parent (issue 9, item 6).

A run directory (scratch, mask objects) is swept when its owner is gone. Its
owner used to be judged by the pid in its name: from another pid namespace
(a container, flatpak, a CI runner sharing /tmp) every pid looks dead, and a
sweep removed live sandboxes' run directories (`bwrap: Can't find source
path .../mask`). Liveness is now a lock the owner holds.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from codeward import _native
from codeward.sandbox._locate import find_bwrap, init_path
from codeward.sandbox._native_runner import _CoreSandbox

SWEEPER = """
import sys
from codeward import _native
from codeward.sandbox._native_runner import _CoreSandbox
ws, scratch, init, bwrap, rounds = sys.argv[1:6]
failures = 0
for _ in range(int(rounds)):
    handle = _native.Sandbox(ws, init, bwrap=bwrap, scratch_parent=scratch, reuse=False)
    out = _CoreSandbox(ws, _handle=handle).exec("true", timeout_ms=20000)  # sweeps once
    failures += out.exit_code != 0
print(failures)
"""


def _handle(ws: Path, scratch: Path, reuse: bool) -> _CoreSandbox:
    h = _native.Sandbox(
        str(ws), init_path(), bwrap=find_bwrap(str(ws)), scratch_parent=str(scratch), reuse=reuse
    )
    return _CoreSandbox(ws, _handle=h)


@pytest.mark.skipif(os.geteuid() != 0, reason="unshare --pid needs root here")
def test_a_caller_in_another_pid_namespace_never_removes_a_live_run_directory(
    tmp_path, fs_boundary_ready
):
    if shutil.which("unshare") is None:
        pytest.fail("unshare is needed")
    scratch, mine, theirs = tmp_path / "scratch", tmp_path / "mine", tmp_path / "theirs"
    for d in (scratch, mine, theirs):
        d.mkdir()
    (mine / ".env").write_text("SECRET\n")  # a mask object in the run directory
    long_lived = _handle(mine, scratch, reuse=True)
    one_shot = _handle(mine, scratch, reuse=False)
    with long_lived, one_shot:
        assert long_lived.exec("true").exit_code == 0
        live = sorted(p.name for p in scratch.glob("a3s-run-*"))
        assert len(live) == 1
        sweeper = subprocess.Popen(
            [
                "unshare",
                "--fork",
                "--pid",
                "--mount-proc",
                sys.executable,
                "-c",
                textwrap.dedent(SWEEPER),
                str(theirs),
                str(scratch),
                str(init_path()),
                str(find_bwrap(str(theirs))),
                "12",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        failures = []
        while sweeper.poll() is None:
            for sb in (one_shot, long_lived):
                out = sb.exec("cat .env 2>/dev/null; echo ok", timeout_ms=20000)
                if out.exit_code != 0 or out.stdout != "ok\n":
                    failures.append(out)
        stdout, stderr = sweeper.communicate(timeout=120)
        assert sweeper.returncode == 0 and stdout.strip() == "0", (stdout, stderr)
        assert failures == [], failures
        assert (scratch / live[0] / "mask").exists(), "a live run directory was swept"
    left = [p.name for p in scratch.iterdir() if p.name.startswith("a3s-run-")]
    assert left == [], f"run directories left behind: {left}"
