"""Fixtures of the verification suite: real workspaces and the real sandbox."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from codeward.sandbox import BashSandbox, select_sandbox


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def real_sandbox() -> Callable[[Path], BashSandbox]:
    """The session's boundary over a workspace; skips where no enforced sandbox runs."""

    def make(root: Path) -> BashSandbox:
        sandbox = select_sandbox(root)
        if not sandbox.sandboxed:
            pytest.skip(f"no enforced sandbox here ({sandbox!r})")
        return sandbox

    return make
