"""check_path and check_paths take a Workspace or its directory, as the docs call them."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeward import WorkspaceError
from codeward.guardrail import check_path, check_paths
from codeward.workspace import Workspace


@pytest.mark.parametrize("as_", [str, Path, Workspace], ids=["str", "Path", "Workspace"])
def test_a_workspace_given_as_a_path(tmp_path: Path, as_) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "a.txt").write_text("x")
    (tmp_path / "out").symlink_to("/etc")
    ws = as_(tmp_path) if as_ is not Workspace else Workspace(str(tmp_path))
    assert check_path(ws, "a.txt") is None
    hit = check_path(ws, "../etc/passwd")
    assert hit is not None and hit.rule.startswith("path.")
    hit = check_path(ws, "out/passwd")
    assert hit is not None and hit.rule == "path.symlink_escape"
    assert check_paths(ws, ["a.txt", "out/x"]) is not None


def test_a_workspace_that_is_not_a_directory(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError):
        check_path(str(tmp_path / "missing"), "a.txt")
