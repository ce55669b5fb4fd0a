"""ConfirmationManager: one pending confirmation per exact invocation id, first answer wins.

A request is settled by whichever comes first: the provider's return value,
the provider raising, the host's confirm(), cancel_all(), a duplicate request
with the same id, or the timeout. Every settlement goes through one lock, so
two of them can never both win, and removing the pending entry checks that
it is still the same request, so settling one request never settles another.
"""

from __future__ import annotations

import itertools
import logging
import threading
from typing import Any, Protocol, runtime_checkable

from ._policy import ConfirmationPolicy
from ._request import Answer, ConfirmationRequest

__all__ = ["ConfirmationManager", "ConfirmationProvider", "provider_available", "provider_name"]

_log = logging.getLogger("codeward.hitl")


@runtime_checkable
class ConfirmationProvider(Protocol):
    """Anything that can ask a human: ``request(confirmation) -> bool``.

    ``request`` blocks until it has an answer; only a real ``True`` approves.
    It should give up by ``confirmation.timeout_ms`` and may stop early once
    ``confirmation.settled`` is True (someone else answered). A provider may
    also define ``available_for(call) -> bool`` (see :func:`provider_available`)
    and a ``name`` attribute (shown as ``Answer.answered_by``).
    """

    def request(self, confirmation: ConfirmationRequest) -> bool: ...


def provider_name(provider: object) -> str:
    name = getattr(provider, "name", None)
    return name if isinstance(name, str) and name else type(provider).__name__


def provider_available(provider: object | None, call: Any) -> bool:
    """Whether ``provider`` can answer for ``call``: fails closed.

    None is never available; a provider without ``available_for`` is available
    for everything; otherwise only a real ``True`` from ``available_for`` counts,
    and an exception counts as unavailable (logged).
    """
    if provider is None:
        return False
    check = getattr(provider, "available_for", None)
    if check is None:
        return True
    try:
        return check(call) is True
    except Exception as exc:
        _log.warning(
            "confirmation provider %s: available_for raised %s: %s; treating it as unavailable",
            provider_name(provider),
            type(exc).__name__,
            exc,
        )
        return False


class _Entry:
    __slots__ = ("request", "seq")

    def __init__(self, request: ConfirmationRequest, seq: int) -> None:
        self.request = request
        self.seq = seq


class ConfirmationManager:
    """Pending confirmations of one session, and the race between their possible answers.

    Thread-safe: ``ask`` blocks its caller (normally the kernel, one thread
    per call) while ``confirm``, ``cancel_all`` and ``pending`` may be called
    from any other thread.
    """

    def __init__(self, policy: ConfirmationPolicy | None = None) -> None:
        self.policy = ConfirmationPolicy() if policy is None else policy
        if not isinstance(self.policy, ConfirmationPolicy):
            raise TypeError(f"policy must be a ConfirmationPolicy, not {type(policy).__name__}")
        self._lock = threading.Lock()
        self._pending: dict[str, _Entry] = {}
        self._seq = itertools.count()

    # -- asking -----------------------------------------------------------------------------

    def ask(self, request: ConfirmationRequest, provider: ConfirmationProvider | None) -> Answer:
        """Asks ``provider`` about ``request`` and blocks until the request is settled.

        Returns the winning answer. Never raises for anything a provider or a
        host does; a KeyboardInterrupt while waiting cancels the request and
        propagates.
        """
        if not isinstance(request, ConfirmationRequest):
            raise TypeError(f"ask() needs a ConfirmationRequest, not {type(request).__name__}")
        if not self.policy.enabled:
            return self._refuse(request, "unavailable", "confirmations are disabled by the policy")
        if provider is None:
            return self._refuse(request, "unavailable", "no confirmation provider is configured")
        with self._lock:
            existing = self._pending.pop(request.id, None)
            if existing is not None:
                reason = (
                    f"a second confirmation request for invocation id {request.id!r} arrived "
                    "while one was pending; both are rejected"
                )
                existing.request._settlement.settle(Answer(False, "duplicate", reason))
                duplicate = Answer(False, "duplicate", reason)
                request._settlement.settle(duplicate)
                return duplicate
            if request.settled:
                reason = f"request {request.id!r} was already settled; build a new request to ask"
                return Answer(False, "duplicate", reason)
            entry = _Entry(request, next(self._seq))
            self._pending[request.id] = entry
        try:
            self._start_provider(entry, provider)
            if not request.wait_settled(request.timeout_ms / 1000):
                self._settle(entry, self._timeout_answer(request))
        finally:
            if not request.settled:  # interrupted while waiting
                self._settle(
                    entry, Answer(False, "cancelled", "the waiting caller was interrupted")
                )
        answer = request.answer
        assert answer is not None
        return answer

    def _refuse(self, request: ConfirmationRequest, how: str, reason: str) -> Answer:
        answer = Answer(False, how, reason)
        request._settlement.settle(answer)
        return request.answer or answer

    def _timeout_answer(self, request: ConfirmationRequest) -> Answer:
        waited = f"no answer within {request.timeout_ms} ms"
        if self.policy.approves_on_timeout:
            return Answer(True, "timeout", f"{waited}; the host's policy approves on timeout")
        return Answer(False, "timeout", f"{waited}; a timeout rejects")

    def _start_provider(self, entry: _Entry, provider: ConfirmationProvider) -> None:
        thread = threading.Thread(
            target=self._run_provider,
            args=(entry, provider),
            name=f"a3s-confirm-{entry.request.id[:40]}",
            daemon=True,
        )
        try:
            thread.start()
        except RuntimeError as exc:  # cannot start a thread: fail closed
            self._settle(entry, Answer(False, "provider_error", f"cannot ask the provider: {exc}"))

    def _run_provider(self, entry: _Entry, provider: ConfirmationProvider) -> None:
        name = provider_name(provider)
        if entry.request.settled:
            return
        try:
            result = provider.request(entry.request)
        except BaseException as exc:  # a provider bug must reject, never approve or hang
            reason = f"the provider {name} raised {type(exc).__name__}: {exc}"
            self._settle(entry, Answer(False, "provider_error", reason, name))
            return
        if result is True:
            answer = Answer(True, "provider", f"approved by {name}", name)
        elif result is False:
            answer = Answer(False, "provider", f"rejected by {name}", name)
        else:
            answer = Answer(
                False,
                "provider",
                f"the provider {name} returned {type(result).__name__}, not a bool; "
                "only True approves",
                name,
            )
        self._settle(entry, answer)

    def _settle(self, entry: _Entry, answer: Answer) -> bool:
        """The only way a pending request gets its answer: first one wins."""
        with self._lock:
            won = entry.request._settlement.settle(answer)
            if self._pending.get(entry.request.id) is entry:
                del self._pending[entry.request.id]
        return won

    # -- the host's side --------------------------------------------------------------------

    def pending(self) -> list[ConfirmationRequest]:
        """The requests still waiting, oldest first."""
        with self._lock:
            entries = sorted(self._pending.values(), key=lambda e: e.seq)
        return [e.request for e in entries]

    def confirm(self, id: str, approved: bool, reason: str | None = None) -> bool:
        """Answers the pending request ``id``; True if this settled it.

        An unknown or already settled id returns False. Only a real ``True``
        approves. ``reason`` is recorded in the answer.
        """
        if type(approved) is not bool:
            raise TypeError(f"approved must be True or False, not {type(approved).__name__}")
        if not isinstance(id, str):
            return False
        if reason is None or not isinstance(reason, str) or not reason.strip():
            reason = "approved by the host" if approved else "rejected by the host"
        with self._lock:
            entry = self._pending.get(id)
            if entry is None:
                return False
            won = entry.request._settlement.settle(Answer(approved, "host", reason, "host"))
            del self._pending[id]
        return won

    def cancel_all(self, reason: str | None = None) -> int:
        """Rejects every pending request (how="cancelled"); returns how many it settled."""
        text = reason if isinstance(reason, str) and reason.strip() else "cancelled by the host"
        with self._lock:
            entries = list(self._pending.values())
            self._pending.clear()
            return sum(
                e.request._settlement.settle(Answer(False, "cancelled", text)) for e in entries
            )

    def __len__(self) -> int:
        with self._lock:
            return len(self._pending)

    def __repr__(self) -> str:
        return f"ConfirmationManager(pending={len(self)}, policy={self.policy!r})"
