"""Human in the loop: confirmation requests, who answers them, and the race between answers.

The kernel builds a :class:`ConfirmationRequest` for a call that needs
approval and asks a :class:`ConfirmationManager`, which keeps one pending
request per exact invocation id and settles each with the first of: the
provider's answer, the host's ``confirm()``, ``cancel_all()``, a duplicate
id, or the timeout (which rejects unless the host explicitly chose
``timeout_action="auto_approve"``). See docs/confirmations-and-hooks.md.
"""

from ._elicit import ElicitationProvider
from ._errors import ConfirmationPolicyError, ConfirmationRequestError
from ._manager import (
    ConfirmationManager,
    ConfirmationProvider,
    provider_available,
    provider_name,
)
from ._policy import MAX_TIMEOUT_MS, TIMEOUT_ACTIONS, ConfirmationPolicy
from ._request import ANSWER_KINDS, RISK_LEVELS, Answer, ConfirmationRequest, Risk
from ._static import StaticProvider
from ._summary import summarize_operation
from ._terminal import TerminalConfirmationProvider

__all__ = [
    "ANSWER_KINDS",
    "MAX_TIMEOUT_MS",
    "RISK_LEVELS",
    "TIMEOUT_ACTIONS",
    "Answer",
    "ConfirmationManager",
    "ConfirmationPolicy",
    "ConfirmationPolicyError",
    "ConfirmationProvider",
    "ConfirmationRequest",
    "ConfirmationRequestError",
    "ElicitationProvider",
    "Risk",
    "StaticProvider",
    "TerminalConfirmationProvider",
    "provider_available",
    "provider_name",
    "summarize_operation",
]
