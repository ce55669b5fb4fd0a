#!/usr/bin/env python3
"""Verification benchmark: what bash change detection costs on large workspaces.

    python bench/verification/run.py [--quick] [--cache DIR] [--json OUT]

For generated trees of 1,000, 10,000 and 100,000 files (``--quick``: 1,000
and 10,000) this measures, each against a baseline timed in the same run:

1. ``WorkspaceSnapshot.take``: the metadata walk a session makes before and
   after every bash command, against ``find ROOT -printf '%y %m %s %T@ %C@
   %i'`` (the same lstat walk in C, plus one process start);
2. ``before.diff(after)`` with 1% of the files rewritten, 1% created and 1%
   deleted between the two snapshots;
3. ``record_bash_changes`` for that diff: hashing only the changed files;
4. the memory a snapshot holds per entry (tracemalloc, one separate run).

The trees are deterministic: directories at depth 1-4, ten files of 64 bytes
each, generated in a temp directory and removed at the end unless
``--cache DIR`` keeps them (a tree is reused when ``DIR/<n>.done`` exists).
Times are the median and the best of N warm runs (one untimed run first), in
milliseconds of wall time. No target is enforced; the script exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent
try:
    import codeward  # noqa: F401
except ImportError:  # a source tree with the extension built in place
    sys.path.insert(0, str(ROOT / "python"))

from codeward.verification import (  # noqa: E402
    MutationLedger,
    WorkspaceSnapshot,
    record_bash_changes,
)

FILES_PER_DIR = 10
CONTENT = b"x" * 63 + b"\n"


def generate(root: Path, files: int) -> None:
    """``files`` files of 64 bytes, ten per directory, directories at depth 1-4."""
    for d in range(files // FILES_PER_DIR):
        depth = 1 + d % 4
        parts = [f"d{(d >> (3 * level)) % 8}" for level in range(depth - 1)]
        directory = root.joinpath(*parts, f"leaf{d}")
        directory.mkdir(parents=True, exist_ok=True)
        for i in range(FILES_PER_DIR):
            (directory / f"f{i}.txt").write_bytes(CONTENT)


def tree(base: Path, files: int) -> Path:
    root = base / f"tree{files}"
    done = base / f"tree{files}.done"
    if not done.exists():
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        generate(root, files)
        done.touch()
    return root


def timed(fn: Callable[[], object], runs: int) -> dict[str, float]:
    fn()  # warm the caches once, untimed
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return {"median_ms": statistics.median(samples), "best_ms": min(samples), "runs": runs}


def find_walk(root: Path) -> None:
    subprocess.run(
        ["find", str(root), "-printf", "%y %m %s %T@ %C@ %i\\n"],
        stdout=subprocess.DEVNULL,
        check=True,
    )


def mutate(root: Path, files: int) -> list[Path]:
    """Rewrites, creates and deletes 1% of the files each; returns what to undo."""
    count = max(1, files // 100)
    paths = sorted(root.rglob("f0.txt"))[: count * 3]
    rewritten, deleted, parents = paths[:count], paths[count : 2 * count], paths[2 * count :]
    for path in rewritten:
        path.write_bytes(CONTENT.upper())
    for path in deleted:
        path.unlink()
    created = [p.with_name("new.txt") for p in parents]
    for path in created:
        path.write_bytes(CONTENT)
    return [*rewritten, *deleted, *created]


def restore(root: Path, touched: list[Path]) -> None:
    for path in touched:
        if path.name == "new.txt":
            path.unlink(missing_ok=True)
        else:
            path.write_bytes(CONTENT)


def memory_per_entry(root: Path) -> float:
    tracemalloc.start()
    snap = WorkspaceSnapshot.take(root)
    size, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return size / max(1, len(snap))


def measure(root: Path, files: int, runs: int) -> dict[str, Any]:
    row: dict[str, Any] = {"files": files}
    row["snapshot"] = timed(lambda: WorkspaceSnapshot.take(root), runs)
    row["entries"] = len(WorkspaceSnapshot.take(root))
    if shutil.which("find"):
        row["find_baseline"] = timed(lambda: find_walk(root), runs)
        row["snapshot_vs_find"] = row["snapshot"]["median_ms"] / row["find_baseline"]["median_ms"]
    before = WorkspaceSnapshot.take(root)
    touched = mutate(root, files)
    try:
        after = WorkspaceSnapshot.take(root)
        row["changes"] = len(before.diff(after))
        row["diff"] = timed(lambda: before.diff(after), runs)
        row["record"] = timed(
            lambda: record_bash_changes(MutationLedger(), before, after, root), runs
        )
    finally:
        restore(root, touched)
    row["bytes_per_entry"] = memory_per_entry(root)
    return row


def show(row: dict[str, Any]) -> None:
    find = row.get("find_baseline")
    print(
        f"{row['files']:>7} files ({row['entries']} entries): "
        f"snapshot {row['snapshot']['median_ms']:8.1f} ms (best {row['snapshot']['best_ms']:.1f})"
        + (
            f", find {find['median_ms']:.1f} ms, ratio {row['snapshot_vs_find']:.2f}x"
            if find
            else ""
        )
    )
    print(
        f"{'':>7}   {row['changes']} changes: diff {row['diff']['median_ms']:.1f} ms, "
        f"record (hash changed files) {row['record']['median_ms']:.1f} ms, "
        f"{row['bytes_per_entry']:.0f} bytes/entry held"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CI smoke run: 1k and 10k files")
    parser.add_argument("--cache", type=Path, help="keep the generated trees here and reuse them")
    parser.add_argument("--json", type=Path, help="also write every figure to this file")
    args = parser.parse_args()
    sizes = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000]
    runs = 3 if args.quick else 7
    base = args.cache or Path(tempfile.mkdtemp(prefix="a3s-bench-verification-"))
    base.mkdir(parents=True, exist_ok=True)
    print(
        f"verification benchmark: python {sys.version.split()[0]}, {os.cpu_count()} cpus, "
        f"load {os.getloadavg()[0]:.2f}, trees in {base}"
    )
    results = []
    try:
        for files in sizes:
            started = time.perf_counter()
            root = tree(base, files)
            generated = time.perf_counter() - started
            row = measure(root, files, runs)
            row["generate_s"] = generated
            show(row)
            results.append(row)
    finally:
        if args.cache is None:
            shutil.rmtree(base, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps({"quick": args.quick, "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
