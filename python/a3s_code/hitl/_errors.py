"""The errors of the confirmation layer (both are ValueErrors: a caller passed bad data)."""

from __future__ import annotations

from .._errors import A3SError

__all__ = ["ConfirmationPolicyError", "ConfirmationRequestError"]


class ConfirmationPolicyError(A3SError, ValueError):
    """A ConfirmationPolicy field is out of range or of the wrong type."""


class ConfirmationRequestError(A3SError, ValueError):
    """A ConfirmationRequest, Risk or Answer was built from malformed data."""
