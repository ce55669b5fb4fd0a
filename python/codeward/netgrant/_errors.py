"""The network grant's own error (a leaf of the codeward exception tree)."""

from __future__ import annotations

from .._errors import CodewardError

__all__ = ["NetworkGrantError"]


class NetworkGrantError(CodewardError, ValueError):
    """A network grant is malformed, cannot be enforced by this sandbox, or its mediator is closed.

    A connection the mediator refuses is not an error of the host's: the
    command's tool gets the refusal (an HTTP 403 or a SOCKS reply).
    """
