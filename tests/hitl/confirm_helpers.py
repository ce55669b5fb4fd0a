"""Request factories and providers that block on cue, for the confirmation tests."""

from __future__ import annotations

import threading

from codeward.hitl import ConfirmationRequest, Risk

LONG = 30.0  # seconds: a bound that is never reached in a passing run


def make_request(id: str = "call_1", timeout_ms: int = 30_000, **overrides) -> ConfirmationRequest:
    fields = {
        "id": id,
        "tool": "bash",
        "args": {"command": "cargo test"},
        "reason": "mode default: bash without a sandbox asks",
        "risk": Risk("high", ("runs on the host",)),
        "origin": "model",
        "timeout_ms": timeout_ms,
        "scope": {"paths": ["src/main.rs"], "sandboxed": False},
    }
    fields.update(overrides)
    return ConfirmationRequest.create(**fields)


class GateProvider:
    """Signals when asked, then blocks until released (or LONG passes) and returns ``value``."""

    name = "gate"

    def __init__(self, value: object = True) -> None:
        self.value = value
        self.asked = threading.Event()
        self.release = threading.Event()
        self.requests: list[ConfirmationRequest] = []
        self.returned = threading.Event()

    def request(self, confirmation: ConfirmationRequest) -> object:
        self.requests.append(confirmation)
        self.asked.set()
        self.release.wait(LONG)
        self.returned.set()
        return self.value


class AskInThread:
    """Runs manager.ask on a thread and keeps its answer."""

    def __init__(self, manager, request, provider) -> None:
        self.answer = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(manager, request, provider))
        self.thread.start()

    def _run(self, manager, request, provider) -> None:
        try:
            self.answer = manager.ask(request, provider)
        except BaseException as exc:
            self.error = exc

    def result(self):
        self.thread.join(LONG)
        assert not self.thread.is_alive(), "ask() did not return"
        assert self.error is None, self.error
        return self.answer
