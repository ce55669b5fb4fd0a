#!/usr/bin/env python3
"""Timeout bound benchmark: when a timed-out command's result comes, with a process in D state.

    python bench/timeout/run.py [--quick] [--runs N] [--json OUT]

For the long-lived sandbox (``reuse=True``) and the one-shot one (``reuse=False``), each run
is a 2 s timeout with the default ``kill_grace_ms`` (500 ms), measured as the wall time of
``exec``:

1. baseline: ``sleep 60``, which dies of the TERM at 2 s;
2. D state: a process of the command frozen by the cgroup v1 freezer (a frozen task does not
   die of SIGKILL until thawed, as one held by a hung device or network file system): the
   init waits the grace, kills, reaps for 0.25 s and answers with ``outlived``.

The documented bound is ``timeout_ms + kill_grace_ms + 0.25 s`` (2.75 s here; the issue asks
for 3 s). The D-state part needs root and the v1 freezer (``/sys/fs/cgroup/freezer``); without
them it says SKIPPED. No target is enforced; the script exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "bench"))
try:
    import codeward  # noqa: F401
except ImportError:  # a source tree with the extension built in place
    sys.path.insert(0, str(ROOT / "python"))

from codeward.sandbox import NativeBashSandbox  # noqa: E402
from report import loadavg, section, table  # noqa: E402

FREEZER = Path("/sys/fs/cgroup/freezer")
TIMEOUT_MS = 2000
BOUND_S = 2.75  # timeout + the default grace (0.5 s) + the init's reap bound (0.25 s)


def _pids_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            # the command itself, not bubblewrap or the init naming it in their arguments
            if (
                len(argv) > 1
                and marker.encode() in argv[-2]
                and b"time.sleep" in argv[-2]
                and not argv[0].endswith((b"bwrap", b"a3s-init", b"/init", b"bash"))
            ):
                found.append(int(entry))
    return found


def _freeze(group: Path, marker: str, done: list[int]) -> None:
    for _ in range(2000):
        pids = _pids_with(marker)
        for pid in pids:
            try:
                (group / "cgroup.procs").write_text(str(pid))
            except OSError:
                continue
            done.append(pid)
        if done:
            (group / "freezer.state").write_text("FROZEN")
            return
        time.sleep(0.005)


def _thaw(group: Path) -> None:
    (group / "freezer.state").write_text("THAWED")
    for _ in range(200):  # the thawed tasks die of their pending SIGKILL
        if not (group / "cgroup.procs").read_text().split():
            return
        time.sleep(0.05)


def one_run(sb: NativeBashSandbox, group: Path | None) -> tuple[float, bool]:
    marker = uuid.uuid4().hex
    if group is None:
        command = f"exec -a sleep-{marker} sleep 60"
    else:
        command = f"python3 -c 'import time; time.sleep(30)  # {marker}'"
    frozen: list[int] = []
    thread = threading.Thread(target=_freeze, args=(group, marker, frozen)) if group else None
    if thread:
        thread.start()
    started = time.monotonic()
    out = sb.exec(command, timeout_ms=TIMEOUT_MS)
    elapsed = time.monotonic() - started
    if thread:
        thread.join()
        assert group is not None
        _thaw(group)
        if not frozen:
            raise SystemExit("the command was not frozen")
    if not out.timed_out:
        raise SystemExit(f"not timed out: {out}")
    return elapsed, out.outlived


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 runs per case")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    runs = 2 if args.quick else args.runs
    can_freeze = os.geteuid() == 0 and (FREEZER / "cgroup.procs").exists()
    group = FREEZER / f"timeout-bench-{uuid.uuid4().hex[:8]}" if can_freeze else None
    if group:
        group.mkdir()
    results: dict[str, Any] = {"load": loadavg(), "runs": runs, "bound_s": BOUND_S}
    rows = []
    workspace = Path(os.environ.get("TMPDIR", "/tmp")) / f"codeward-bench-{uuid.uuid4().hex[:8]}"
    workspace.mkdir()
    try:
        for reuse in (True, False):
            sb = NativeBashSandbox(workspace, reuse=reuse)
            try:
                sb.exec("true", timeout_ms=30_000)  # up (long-lived) and warm
                for case, g in (("baseline: sleep 60", None), ("D state (frozen)", group)):
                    if case.startswith("D") and g is None:
                        rows.append([f"reuse={reuse}", case, "SKIPPED", "", "", ""])
                        continue
                    times, outlived = [], []
                    for _ in range(runs):
                        t, o = one_run(sb, g)
                        times.append(t)
                        outlived.append(o)
                    key = f"reuse={reuse} {case}"
                    results[key] = {"seconds": times, "outlived": outlived}
                    rows.append(
                        [
                            f"reuse={reuse}",
                            case,
                            f"{statistics.median(times):.2f}",
                            f"{max(times):.2f}",
                            f"{max(times) / BOUND_S:.2f}",
                            f"{sum(outlived)}/{runs}",
                        ]
                    )
            finally:
                sb.close()
    finally:
        if group:
            group.rmdir()
        for p in sorted(workspace.rglob("*"), reverse=True):
            p.rmdir() if p.is_dir() else p.unlink()
        workspace.rmdir()
    section(f"2 s timeout, default grace; bound {BOUND_S} s; load {results['load']}")
    table(["sandbox", "case", "median s", "max s", "max/bound", "outlived"], rows, "llrrrr")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
