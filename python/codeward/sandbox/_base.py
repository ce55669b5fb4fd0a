"""What every sandbox reports about itself: its backend, whether it confines, its workspace."""

from __future__ import annotations


class SandboxBase:
    """Subclasses set ``_backend`` and ``_sandboxed`` and assign ``_workspace`` in __init__."""

    _backend = "unknown"
    _sandboxed = True
    _workspace = ""

    @property
    def backend(self) -> str:
        return self._backend

    @property
    def sandboxed(self) -> bool:
        return self._sandboxed

    @property
    def workspace(self) -> str:
        return self._workspace

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._workspace!r})"
