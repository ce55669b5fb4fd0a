"""The credential scan's inotify watches are bounded: beyond the budget it checks by metadata.

The scan watches each workspace directory it reads, so a command that makes
thousands of directories used to cost the caller's user one inotify watch
each (25,040 after one command made 25,000), out of a per-user budget its
editor and file watchers share. With SandboxLimits.inotify_watch_budget the
scan stops adding watches at the budget and keeps the rest current by their
metadata: a credential file made afterwards deep in an unwatched directory
is still masked for the next command.
"""

from __future__ import annotations

import gc
import os

from codeward.sandbox import NativeBashSandbox, SandboxLimits


def inotify_watches() -> int:
    """Watches held by this process's inotify instances."""
    total = 0
    for fd in os.listdir("/proc/self/fdinfo"):
        try:
            with open(f"/proc/self/fdinfo/{fd}") as f:
                total += sum(line.startswith("inotify wd:") for line in f)
        except OSError:
            continue
    return total


def test_a_command_making_many_directories_costs_at_most_the_budget(
    workspace, fs_boundary_ready
) -> None:
    gc.collect()  # handles earlier tests left in reference cycles: their watches go now, not later
    before = inotify_watches()
    with NativeBashSandbox(workspace, limits=SandboxLimits(inotify_watch_budget=100)) as sb:
        made = sb.exec("mkdir -p $(seq -f 'd%g/e/f' 1 300) && echo made", timeout_ms=60_000)
        assert made.stdout == "made\n", made
        sb.exec("true")  # the scan reads the new tree before this one
        held = inotify_watches() - before
        assert held <= 100 + 20, f"{held} watches for a budget of 100"  # + the hard-link walk's
        (workspace / "d297" / "e" / "f" / ".env").write_text("SECRET=1\n")
        out = sb.exec("cat d297/e/f/.env 2>&1; echo rc=$?")
        assert "SECRET" not in out.stdout and "rc=1" in out.stdout, out
    del sb
    gc.collect()
    assert inotify_watches() == before, "the handle's watches outlived it"
