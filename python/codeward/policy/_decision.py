"""Decision: what a policy says about one call, and which of several is the strictest."""

from __future__ import annotations

import enum

__all__ = ["Decision", "strictest"]


class Decision(str, enum.Enum):
    """What the policy says about one call."""

    ALLOW = "allow"
    DENY = "deny"
    ASK = "ask"

    def __str__(self) -> str:
        return self.value


_RANK = {Decision.ALLOW: 0, Decision.ASK: 1, Decision.DENY: 2}


def strictest(*decisions: Decision) -> Decision:
    """deny > ask > allow."""
    return max(decisions, key=_RANK.__getitem__)
