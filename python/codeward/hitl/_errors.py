"""The errors of the confirmation layer (both are ValueErrors: a caller passed bad data)."""

from __future__ import annotations

from .._errors import CodewardError

__all__ = ["ConfirmationPolicyError", "ConfirmationRequestError"]


class ConfirmationPolicyError(CodewardError, ValueError):
    """A ConfirmationPolicy field is out of range or of the wrong type."""


class ConfirmationRequestError(CodewardError, ValueError):
    """A ConfirmationRequest, Risk or Answer was built from malformed data."""
