"""ElicitationProvider: a confirmation asked through the MCP client that made the call.

``codeward mcp serve`` answers a kernel Ask by sending the client an MCP
``elicitation/create`` request whose message is the kernel's own rendering of
the request (:meth:`ConfirmationRequest.render`: operation, why, scope,
risk), with one boolean field, ``approve``, that defaults to false. Only an
``accept`` whose ``approve`` is a real ``true`` approves; ``decline``,
``cancel``, an error, a malformed answer, a timeout or a client that went
away all reject. A client that did not declare the elicitation capability is
not available, so the kernel denies before anything is asked.

The transport is the caller's: ``elicit(message, schema, timeout_s, settled)``
sends the request and returns the client's result (a mapping), or anything
else (which rejects).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ._request import ConfirmationRequest

__all__ = ["APPROVE_FIELD", "ElicitationProvider"]

APPROVE_FIELD = "approve"
_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        APPROVE_FIELD: {
            "type": "boolean",
            "title": "Run this call",
            "description": "Check to let this exact call run once.",
            "default": False,
        }
    },
    "required": [APPROVE_FIELD],
}

# elicit(message, schema, timeout_s, settled) -> the client's result; settled() turns true
# once someone else (the host, a cancel, the timeout) answered, and the question can go
Elicit = Callable[[str, Mapping[str, Any], float, Callable[[], bool]], Any]


class ElicitationProvider:
    """Asks the MCP client (``elicit``) about each confirmation; fails closed.

    ``supported()`` says whether the client declared the elicitation
    capability; the kernel calls ``available_for`` before any request, so a
    client without it gets a Deny that names the rule that asked.
    """

    name = "mcp-elicitation"

    def __init__(self, elicit: Elicit, supported: Callable[[], bool]) -> None:
        self._elicit = elicit
        self._supported = supported

    def available_for(self, call: Any) -> bool:
        return self._supported() is True

    def request(self, confirmation: ConfirmationRequest) -> bool:
        if not self._supported():
            return False
        answer = self._elicit(
            confirmation.render(color=False),
            _SCHEMA,
            confirmation.timeout_ms / 1000,
            lambda: confirmation.settled,
        )
        return approves(answer)


def approves(answer: object) -> bool:
    """Whether an elicitation result approves: ``accept`` with ``approve`` exactly true."""
    if not isinstance(answer, Mapping) or answer.get("action") != "accept":
        return False
    content = answer.get("content")
    return isinstance(content, Mapping) and content.get(APPROVE_FIELD) is True
