#!/usr/bin/env python3
"""What keeping missing protected names missing costs (native/init/names.c, issue 23).

    python bench/names/run.py [--rounds N] [--files N]

Measured in one run, interleaved, so a busy neighbour slows every variant alike:

1. ``codeward exec -- true`` with the emulation (the default where the kernel has
   SECCOMP_ADDFD_FLAG_SEND) and with the placeholder fallback forced
   (``A3S_CODE_PROTECT_NAMES=placeholders``: placeholders, journal, janitor), each a fresh
   process, in a workspace with every protected name missing;
2. N file creations (``open(O_CREAT)`` + close, a Python loop inside a long-lived sandbox) with
   and without the emulation: every creation is a round trip through the init's supervisor;
   in the workspace (the disk) and in the sandbox's own /tmp (a tmpfs: the round trip alone);
3. the same loop writing into files that already exist (``open`` without ``O_CREAT``), which
   the filter lets through: the baseline cost of the sandbox without a name made.

Every loop creates into a directory of its own that nothing deleted files from just before:
on an ext4 without a journal, a creation right after many deletions scans past every inode
freed in the last seconds (``recently_deleted``), which costs far more than the emulation and
would make whichever variant runs after an ``rm -rf`` look slow.

Prints medians (and ratios against the fallback). Nothing here fails; the numbers are for the
report and docs/security.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from codeward import _native
from codeward.sandbox import NativeBashSandbox

CODEWARD = [sys.executable, "-m", "codeward"]
LOOP = """
import os, sys, time
n = int(sys.argv[1]); creat = sys.argv[2] == "creat"; d = sys.argv[3]
os.makedirs(d, exist_ok=True)
flags = os.O_WRONLY | (os.O_CREAT if creat else 0)
t = time.perf_counter()
for i in range(n):
    os.close(os.open(f"{d}/f{i}", flags, 0o644))
print(time.perf_counter() - t)
"""


def env(mode: str) -> dict[str, str]:
    e = dict(os.environ)
    e.pop("A3S_CODE_PROTECT_NAMES", None)
    if mode == "placeholders":
        e["A3S_CODE_PROTECT_NAMES"] = "placeholders"
    return e


def exec_true(ws: Path, mode: str) -> float:
    t = time.perf_counter()
    subprocess.run([*CODEWARD, "exec", "--workspace", str(ws), "--", "true"], env=env(mode),
                   check=True, stdout=subprocess.DEVNULL)  # fmt: skip
    return time.perf_counter() - t


def loop(ws: Path, mode: str, n: int, creat: bool, where: str) -> float:
    old = os.environ.get("A3S_CODE_PROTECT_NAMES")
    os.environ.update({"A3S_CODE_PROTECT_NAMES": mode} if mode == "placeholders" else {})
    if mode != "placeholders":
        os.environ.pop("A3S_CODE_PROTECT_NAMES", None)
    try:
        python = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
        d = f"{where}/loop-{uuid.uuid4().hex}"  # fresh: see the module docstring
        with NativeBashSandbox(ws, reuse=True) as sb:
            if not creat:
                sb.exec(f"{python} loop.py {n} creat {d}")
            out = sb.exec(
                f"{python} loop.py {n} {'creat' if creat else 'open'} {d}", timeout_ms=600_000
            )
            assert out.exit_code == 0, out
            return float(out.stdout.strip())
    finally:
        if old is None:
            os.environ.pop("A3S_CODE_PROTECT_NAMES", None)
        else:
            os.environ["A3S_CODE_PROTECT_NAMES"] = old


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--quick", action="store_true", help="CI smoke run: 3 rounds of 1,000 files")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.files = min(args.rounds, 3), min(args.files, 1_000)
    if not _native.features().get("names_emulated"):
        print("this kernel cannot emulate (no SECCOMP_ADDFD_FLAG_SEND): only placeholders here")
        return
    base = Path(tempfile.mkdtemp(prefix="a3s-names-bench-", dir="/var/tmp"))
    ws = base / "ws"
    ws.mkdir()
    (ws / "loop.py").write_text(LOOP)
    modes = ("emulated", "placeholders")
    times: dict[str, list[float]] = {m: [] for m in modes}
    for _ in range(args.rounds):
        for m in modes:
            times[m].append(exec_true(ws, m))
    print(f"codeward exec -- true ({args.rounds} rounds, medians):")
    ref = statistics.median(times["placeholders"])
    for m in modes:
        med = statistics.median(times[m])
        print(f"  {m:13s} {med * 1000:7.1f} ms  ({med / ref:.2f}x the fallback)")
    print(f"{args.files} files in a long-lived sandbox (3 rounds, medians):")
    rows: dict[str, list[float]] = {}
    for _ in range(3):
        for where, label in (("loops", "workspace"), ("/tmp", "tmpfs")):
            for m in modes:
                for creat in (True, False) if label == "workspace" else (True,):
                    # the sandbox's /tmp is emptied after each command: nothing to reopen
                    key = f"{label} {m} {'create' if creat else 'reopen'}"
                    rows.setdefault(key, []).append(loop(ws, m, args.files, creat, where))
    for key, vals in rows.items():
        med = statistics.median(vals)
        print(f"  {key:32s} {med * 1000:8.1f} ms  ({med / args.files * 1e6:6.1f} us per file)")
    subprocess.run(["rm", "-rf", str(base)], check=False)


if __name__ == "__main__":
    main()
