"""Helpers of the placeholder tests (test_fs_placeholders.py, test_fs_workspace_lock.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from protectednames import ALL_PROTECTED


def isolated_state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An isolated journal directory (the sandbox reads XDG_STATE_HOME when it is built)."""
    state = tmp_path / "state"
    state.mkdir()
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    return state


def present(ws: Path) -> list[str]:
    """The protected names that exist in the workspace."""
    return sorted(n for n in ALL_PROTECTED if os.path.lexists(ws / n))


def journals(state: Path, *, handed_over: bool = False) -> list[Path]:
    """The state directory's journals; with handed_over, also those a run left to a later one
    (renamed .done)."""
    return sorted(state.glob("codeward/placeholders-*.d/*.journal" + ("*" if handed_over else "")))
