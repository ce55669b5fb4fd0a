"""Sessions for kernel tests: real workspaces; a host-supplied boundary where decisions matter."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kernelkit import HostBoundary

from codeward.session import Agent, Session, SessionOptions


@pytest.fixture
def workspace(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("alpha\nbeta\n")
    return root


@pytest.fixture
def make_session(workspace) -> Callable[..., Session]:
    sessions: list[Session] = []

    def make(*, boundary: HostBoundary | None = None, **options: Any) -> Session:
        options.setdefault("sandbox_handle", boundary or HostBoundary())
        session = Agent().session(workspace, SessionOptions(**options))
        sessions.append(session)
        return session

    yield make
    for s in sessions:
        s.close()
