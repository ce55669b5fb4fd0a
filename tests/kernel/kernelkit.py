"""Helpers of the kernel tests: a host-supplied boundary and a counting confirmation provider."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from codeward.hitl import ConfirmationRequest
from codeward.sandbox import CommandOutput


class HostBoundary:
    """A host-supplied sandbox handle (the ``sandbox_handle`` option) that records commands.

    Decision tests use it to choose "sandboxed or not" without depending on
    bubblewrap; tests of the real boundary use ``select_sandbox`` (see
    test_end_to_end.py).
    """

    def __init__(self, sandboxed: bool = True) -> None:
        self._sandboxed = sandboxed
        self.commands: list[str] = []

    @property
    def backend(self) -> str:
        return "host-test"

    @property
    def sandboxed(self) -> bool:
        return self._sandboxed

    def exec(
        self,
        command: str,
        *,
        timeout_ms: int = 120_000,
        env: Mapping[str, str] | None = None,
        max_output_bytes: int = 102_400,
        cancel: Any = None,
    ) -> CommandOutput:
        self.commands.append(command)
        return CommandOutput(
            stdout=f"ran: {command}\n",
            stderr="",
            exit_code=0,
            timed_out=False,
            truncated=False,
            total_bytes=len(command) + 5,
            sandboxed=self._sandboxed,
            backend=self.backend,
        )


class CountingProvider:
    """Answers every confirmation with ``answer`` (or a callable) and keeps the requests."""

    def __init__(self, answer: bool | Callable[[ConfirmationRequest], bool] = True) -> None:
        self.answer = answer
        self.requests: list[ConfirmationRequest] = []
        self.lock = threading.Lock()

    def request(self, confirmation: ConfirmationRequest) -> bool:
        with self.lock:
            self.requests.append(confirmation)
        return self.answer(confirmation) if callable(self.answer) else self.answer
