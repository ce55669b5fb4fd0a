"""What a hard guardrail reports when it refuses a call."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GuardrailHit"]


@dataclass(frozen=True)
class GuardrailHit:
    """One refusal: a stable rule id, a message naming what was refused and why, the fragment.

    ``rule`` is a dotted id (``catastrophic.rm_root``, ``privilege.sudo``,
    ``path.symlink_escape`` ...) that hosts and tests branch on; ``fragment``
    is the offending piece of the input (a simple command, a path).
    """

    rule: str
    message: str
    fragment: str
