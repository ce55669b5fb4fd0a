"""Fixtures of the tool suites: a real workspace on disk, a context, a recording ledger."""

from __future__ import annotations

from pathlib import Path

import pytest
from toolkit import FakeSandbox, Recorder

from codeward.tools import ToolContext
from codeward.workspace import Workspace


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private state directory per test: the patch journals land there, not in ~/.local."""
    state = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    return state


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "ws"
    r.mkdir()
    return r


@pytest.fixture
def ws(root: Path) -> Workspace:
    return Workspace(root)


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def ctx(ws: Workspace, recorder: Recorder) -> ToolContext:
    return ToolContext(workspace=ws, sandbox=FakeSandbox(), recorder=recorder)
