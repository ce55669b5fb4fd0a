"""Sessions: a workspace, its bound sandbox, and the kernel every call goes through."""

from ._options import SessionOptions, SessionOptionsError
from ._session import Agent, Session, SessionClosed, SkillSession

__all__ = [
    "Agent",
    "Session",
    "SessionClosed",
    "SessionOptions",
    "SessionOptionsError",
    "SkillSession",
]
