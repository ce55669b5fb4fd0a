"""ConfirmationPolicy: whether confirmations exist, how long one waits, what a timeout means."""

from __future__ import annotations

from dataclasses import dataclass

from ._errors import ConfirmationPolicyError

__all__ = ["MAX_TIMEOUT_MS", "TIMEOUT_ACTIONS", "ConfirmationPolicy", "check_timeout_ms"]

MAX_TIMEOUT_MS = 3_600_000
TIMEOUT_ACTIONS = ("reject", "auto_approve")


def check_timeout_ms(value: object, what: str, error: type[ValueError]) -> int:
    """A timeout in milliseconds: an int (not a bool) in 1..MAX_TIMEOUT_MS."""
    if type(value) is not int:
        raise error(f"{what} must be an integer number of milliseconds, not {type(value).__name__}")
    if not 1 <= value <= MAX_TIMEOUT_MS:
        raise error(f"{what} must be between 1 and {MAX_TIMEOUT_MS} ms (one hour), not {value}")
    return value


@dataclass(frozen=True)
class ConfirmationPolicy:
    """How a session handles confirmation requests.

    ``enabled=False`` turns confirmations off: every ask is rejected (the
    kernel treats it as having no provider). ``timeout_action`` is what an
    unanswered request becomes: ``"reject"`` (the default, and the only value
    the CLI accepts) or ``"auto_approve"``, which a host may set explicitly
    for itself; nothing in codeward sets it on a user's behalf.
    """

    enabled: bool = True
    default_timeout_ms: int = 30_000
    timeout_action: str = "reject"

    def __post_init__(self) -> None:
        if type(self.enabled) is not bool:
            raise ConfirmationPolicyError(
                f"enabled must be True or False, not {type(self.enabled).__name__}"
            )
        check_timeout_ms(self.default_timeout_ms, "default_timeout_ms", ConfirmationPolicyError)
        if not isinstance(self.timeout_action, str) or self.timeout_action not in TIMEOUT_ACTIONS:
            raise ConfirmationPolicyError(
                f"timeout_action must be 'reject' or 'auto_approve', not {self.timeout_action!r}"
            )

    @property
    def approves_on_timeout(self) -> bool:
        return self.timeout_action == "auto_approve"
