"""Every fenced example in README.md and docs/*.md (and the bindings' READMEs) runs as written.

A block in python or sh runs here, each in a fresh directory holding a copy of examples/ (a
python block with this test run's interpreter, where `codeward` is importable); a js block runs in
the Node suite (bindings/node/test/docs.test.js). A block that cannot run as written (it installs
system packages, reaches the network, or is a fragment of a larger program) says so on the line
before its fence, with the reason:

    <!-- example: not run (installs system packages with apt) -->

and those few are listed here by test_not_run_blocks_give_a_reason. Go blocks have no runner
yet: each is marked.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FILES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "bindings" / "node" / "README.md",
    ROOT / "bindings" / "go" / "README.md",
]
LANGUAGES = {"python", "sh", "js", "go"}
NOT_RUN = re.compile(r"<!-- example: not run \((.+)\) -->")
# a hang guard only: every example finishes in seconds on a loaded machine
HANG_GUARD_S = 600


@dataclass(frozen=True)
class Block:
    file: Path
    line: int
    language: str
    code: str
    not_run: str | None  # the reason, when marked

    @property
    def id(self) -> str:
        return f"{self.file.relative_to(ROOT)}:{self.line}"


def blocks() -> list[Block]:
    found = []
    for path in FILES:
        lines = path.read_text(encoding="utf-8").splitlines()
        i = 0
        while i < len(lines):
            fence = re.fullmatch(r"```(\w+)", lines[i])
            if not fence:
                i += 1
                continue
            end = next(j for j in range(i + 1, len(lines)) if lines[j] == "```")
            if fence.group(1) in LANGUAGES:
                before = lines[i - 1] if i else ""
                mark = NOT_RUN.fullmatch(before.strip())
                found.append(
                    Block(
                        path,
                        i + 1,
                        fence.group(1),
                        "\n".join(lines[i + 1 : end]) + "\n",
                        mark.group(1) if mark else None,
                    )
                )
            i = end + 1
    return found


BLOCKS = blocks()
RUN_HERE = [b for b in BLOCKS if b.not_run is None and b.language in {"python", "sh"}]


def test_blocks_are_found() -> None:
    assert len(RUN_HERE) >= 5, [b.id for b in BLOCKS]
    assert any(b.language == "js" and b.not_run is None for b in BLOCKS)


def test_not_run_blocks_give_a_reason() -> None:
    marked = [b for b in BLOCKS if b.not_run is not None]
    for b in marked:
        assert len(b.not_run.split()) >= 3, f"{b.id}: say why it is not run"  # type: ignore[union-attr]
    unrunnable = [b.id for b in BLOCKS if b.language == "go" and b.not_run is None]
    assert unrunnable == [], f"no runner for these Go blocks: mark them {unrunnable}"
    # the few that cannot run stay few
    assert len(marked) <= len(BLOCKS) // 2 + 6, [b.id for b in marked]


@pytest.mark.parametrize("block", RUN_HERE, ids=lambda b: b.id)
def test_example_runs_as_written(block: Block, tmp_path: Path) -> None:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    if block.language == "python":
        argv = [sys.executable, "-c", block.code]
    else:
        argv = ["bash", "-euo", "pipefail", "-c", block.code]
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    done = subprocess.run(
        argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=HANG_GUARD_S
    )
    assert done.returncode == 0, f"{block.id} failed:\n{done.stdout}\n{done.stderr}"
