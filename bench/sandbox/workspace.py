"""The workspaces the sandbox benchmark runs in: a small one and a 100,000-file tree.

    python bench/sandbox/workspace.py DIR     # generate the large tree under DIR (or reuse it)

The large tree is deterministic (``random.Random(SEED)``): ``DIRS`` directories
at depths 1-6 (few near the top, most at depth 3-5, like a source tree), each
with ``FILES_PER_DIR`` empty files named like source files, plus a handful of
credential files (``.env``, ``.env.local``, ``.envrc`` ...) nested at various
depths, which the sandbox masks. No ``.git``/``node_modules`` trees: the
credential scan skips those, and the point is to make it walk everything.

Files are empty: the scan lists directories, it never reads file contents.
Generation is ``os.makedirs`` plus ``open``/``close`` (files from a few threads);
a finished tree is marked by ``<tree>.done`` next to it (outside the workspace,
so the marker is not part of what the sandbox scans) and reused from then on.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

SEED = 0xA35C0DE
DIRS = 10_000
FILES_PER_DIR = 10
MAX_DEPTH = 6
# share of directories at each depth 1..6
DEPTH_WEIGHTS = (0.01, 0.07, 0.22, 0.30, 0.25, 0.15)
VERSION = 1  # bump when the shape changes: a cached tree of another version is regenerated

DIR_WORDS = (
    "src", "lib", "pkg", "app", "core", "util", "api", "internal", "cmd", "test",
    "tests", "docs", "components", "models", "views", "services", "handlers", "config",
    "scripts", "tools", "common", "shared", "vendor", "assets", "build", "io", "net",
)  # fmt: skip
FILE_STEMS = ("index", "main", "mod", "util", "types", "test", "README", "config", "handler")
FILE_EXTS = (".py", ".ts", ".rs", ".go", ".md", ".json", ".c", ".h", ".txt", ".yaml")
# (depth, name): credential files the sandbox masks, nested at several depths
CREDENTIALS = (
    (1, ".env"),
    (2, ".env.local"),
    (3, ".envrc"),
    (4, ".env.production"),
    (5, ".env"),
    (6, ".env.test"),
    (3, ".npmrc"),
)


def _plan(seed: int = SEED) -> tuple[list[str], list[str]]:
    """(directories, files) as relative paths, parents before children."""
    rnd = random.Random(seed)
    by_depth: list[list[str]] = [[""]] + [[] for _ in range(MAX_DEPTH)]
    counts = [round(w * DIRS) for w in DEPTH_WEIGHTS]
    counts[-1] += DIRS - sum(counts)
    dirs: list[str] = []
    for depth in range(1, MAX_DEPTH + 1):
        parents = by_depth[depth - 1]
        for i in range(counts[depth - 1]):
            parent = parents[rnd.randrange(len(parents))]
            name = f"{rnd.choice(DIR_WORDS)}_{i}"
            rel = f"{parent}/{name}" if parent else name
            by_depth[depth].append(rel)
            dirs.append(rel)
    files: list[str] = []
    for rel in dirs:
        for j in range(FILES_PER_DIR):
            files.append(f"{rel}/{rnd.choice(FILE_STEMS)}_{j}{rnd.choice(FILE_EXTS)}")
    for depth, name in CREDENTIALS:
        files.append(f"{rnd.choice(by_depth[depth])}/{name}")
    return dirs, files


def _create_files(root: str, rels: list[str]) -> None:
    flags = os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC
    for rel in rels:
        os.close(os.open(os.path.join(root, rel), flags, 0o644))


def generate(path: Path, threads: int = 4) -> dict[str, object]:
    """Creates the tree at `path` (which must not exist); returns what was made."""
    t0 = time.perf_counter()
    dirs, files = _plan()
    path.mkdir(parents=True)
    root = str(path)
    for rel in dirs:
        os.makedirs(os.path.join(root, rel), exist_ok=True)
    t1 = time.perf_counter()
    # contiguous slices: a thread creates whole directories, so that threads do not
    # contend for the same directory's lock
    size = -(-len(files) // threads)
    chunks = [files[i : i + size] for i in range(0, len(files), size)]
    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(lambda c: _create_files(root, c), chunks))
    t2 = time.perf_counter()
    return {
        "dirs": len(dirs),
        "files": len(files),
        "credential_files": len(CREDENTIALS),
        "dirs_s": t1 - t0,
        "files_s": t2 - t1,
        "total_s": t2 - t0,
    }


def large_workspace(cache: Path | None, tmp: Path) -> tuple[Path, dict[str, object]]:
    """The 100k-file tree: reused from `cache` if complete there, else generated.

    Without a cache it goes under `tmp` (the caller removes it). Returns the
    path and an info dict (``reused``, counts, generation time).
    """
    base = cache if cache is not None else tmp
    base.mkdir(parents=True, exist_ok=True)
    name = f"ws-{DIRS}x{FILES_PER_DIR}-v{VERSION}"
    path = base / name
    marker = base / f"{name}.done"
    if marker.exists() and path.is_dir():
        info = json.loads(marker.read_text())
        info["reused"] = True
        return path, info
    if path.exists():  # an interrupted generation
        shutil.rmtree(path)
    info = generate(path)
    info["finished_at"] = time.time()
    marker.write_text(json.dumps(info) + "\n")
    info["reused"] = False
    return path, info


def remove(path: Path, threads: int = 4) -> None:
    """Removes a generated tree, its top-level directories from a few threads."""
    entries = [path / e for e in os.listdir(path)] if path.is_dir() else []
    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(lambda p: shutil.rmtree(p, ignore_errors=True), entries))
    shutil.rmtree(path, ignore_errors=True)


def small_workspace(path: Path) -> Path:
    """A few files in a few directories, no protected names, no credentials."""
    for d in ("src", "src/pkg", "tests"):
        (path / d).mkdir(parents=True, exist_ok=True)
    for f in ("README.md", "pyproject.toml", "src/main.py", "src/pkg/__init__.py",
              "src/pkg/util.py", "tests/test_main.py"):  # fmt: skip
        (path / f).write_text("# small workspace\n")
    return path


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[2].strip())
    where, made = large_workspace(Path(sys.argv[1]), Path(sys.argv[1]))
    print(where, json.dumps(made))
