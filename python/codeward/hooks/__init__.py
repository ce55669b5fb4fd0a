"""Hooks: host code that runs at fixed points of a call and may block it or rewrite its arguments.

Hooks of an event run in priority order (lower first, ties in registration
order), each on a worker thread bounded by its timeout. On the gating events
(pre_tool_use, permission_request) a hook that raises, times out or answers
nonsense blocks the call; elsewhere its failure is logged and ignored. See
docs/confirmations-and-hooks.md.
"""

from ._matcher import HookMatcher
from ._registry import HookHandler, HookRegistry
from ._types import (
    GATING_EVENTS,
    HOOK_ACTIONS,
    HookConfig,
    HookContext,
    HookError,
    HookEvent,
    HookOutcome,
    HookResult,
    HookTrace,
)

__all__ = [
    "GATING_EVENTS",
    "HOOK_ACTIONS",
    "HookConfig",
    "HookContext",
    "HookError",
    "HookEvent",
    "HookHandler",
    "HookMatcher",
    "HookOutcome",
    "HookRegistry",
    "HookResult",
    "HookTrace",
]
