"""StaticProvider: answers without a human (scripted hosts, ``--yes-to ID``, tests)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._request import ConfirmationRequest

__all__ = ["StaticProvider"]


class StaticProvider:
    """Approves or rejects by a fixed bool or by calling ``approve(request)``.

    ``available=False`` makes :func:`provider_available` report it unavailable,
    so the kernel denies before emitting a request. Only a real ``True`` from
    the callable approves. ``requests`` records every request it was asked.
    """

    name = "static"

    def __init__(
        self,
        approve: bool | Callable[[ConfirmationRequest], bool],
        available: bool = True,
    ) -> None:
        if not isinstance(approve, bool) and not callable(approve):
            raise TypeError("approve must be a bool or a callable taking the request")
        self._approve = approve
        self._available = available is True
        self.requests: list[ConfirmationRequest] = []

    def available_for(self, call: Any) -> bool:
        return self._available

    def request(self, confirmation: ConfirmationRequest) -> bool:
        self.requests.append(confirmation)
        if isinstance(self._approve, bool):
            return self._approve
        return self._approve(confirmation) is True

    def __repr__(self) -> str:
        return f"StaticProvider(approve={self._approve!r}, available={self._available})"
