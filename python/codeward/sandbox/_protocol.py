"""The BashSandbox protocol: what a session needs from any boundary."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from ._output import CommandOutput


@runtime_checkable
class BashSandbox(Protocol):
    """Anything that runs ``bash -c COMMAND`` for a session.

    A host may pass its own implementation as ``sandbox_handle``; it then
    replaces the native boundary and must be at least as strict.
    """

    @property
    def backend(self) -> str:
        """A short name: "bwrap", "seatbelt", "process-host", "unavailable", or the host's own."""
        ...

    @property
    def sandboxed(self) -> bool:
        """False when commands run with no boundary around them."""
        ...

    def exec(
        self,
        command: str,
        *,
        timeout_ms: int = 120_000,
        env: Mapping[str, str] | None = None,
        max_output_bytes: int = 102_400,
        cancel: Any = None,
    ) -> CommandOutput:
        """Runs ``bash -c command``; `cancel` (anything with ``is_set()``) stops it early."""
        ...
