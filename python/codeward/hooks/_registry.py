"""HookRegistry: hooks by id, run in order, each on a worker thread bounded by its timeout.

A hook is code the host trusts, but it can still be slow or broken. On a
gating event (pre_tool_use, permission_request) a broken hook must not open
the gate, so raising, timing out or answering nonsense blocks the call. On
the other events the hook only observes, so its failure is logged and the
call goes on.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..hitl._frozen import thaw
from ._matcher import HookMatcher
from ._types import (
    GATING_EVENTS,
    HookConfig,
    HookContext,
    HookError,
    HookEvent,
    HookOutcome,
    HookResult,
    HookTrace,
)

__all__ = ["HookHandler", "HookRegistry", "Refresh"]

HookHandler = Callable[[HookContext], "HookResult | Mapping[str, Any] | None"]
# Gives the arguments a rewritten call will run with and the workspace paths it touches.
Refresh = Callable[[Mapping[str, Any]], tuple[Mapping[str, Any], Sequence[str]]]
_log = logging.getLogger("codeward.hooks")


@dataclass(frozen=True)
class _Hook:
    id: str
    event: HookEvent
    matcher: HookMatcher
    config: HookConfig
    handler: HookHandler
    seq: int


class _Failure(Exception):
    """Why a handler produced no usable answer (raised, timed out, answered nonsense)."""


class HookRegistry:
    """The hooks of one session. Thread-safe; ``run`` works on a snapshot, so a handler may
    register or unregister hooks (the change applies to the next run)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._hooks: dict[str, _Hook] = {}
        self._seq = itertools.count()

    def register(
        self,
        id: str,
        event: HookEvent | str,
        matcher: HookMatcher | None,
        config: HookConfig | None,
        handler: HookHandler,
    ) -> None:
        """Adds a hook, or replaces the hook with the same id (nothing of the old one is kept:
        the new one runs in the new one's place in registration order)."""
        if not isinstance(id, str) or not id.strip():
            raise HookError("a hook id must be a non-blank string")
        parsed = HookEvent.parse(event)
        matcher = HookMatcher() if matcher is None else matcher
        if not isinstance(matcher, HookMatcher):
            raise HookError(f"matcher must be a HookMatcher or None, not {type(matcher).__name__}")
        config = HookConfig() if config is None else config
        if not isinstance(config, HookConfig):
            raise HookError(f"config must be a HookConfig or None, not {type(config).__name__}")
        if not callable(handler):
            raise HookError(f"hook {id!r}: the handler must be callable")
        with self._lock:
            self._hooks.pop(id, None)
            self._hooks[id] = _Hook(id, parsed, matcher, config, handler, next(self._seq))

    def unregister(self, id: str) -> bool:
        """Removes the hook ``id``; False if there was none."""
        with self._lock:
            return self._hooks.pop(id, None) is not None

    def count(self) -> int:
        with self._lock:
            return len(self._hooks)

    __len__ = count

    def __contains__(self, id: object) -> bool:
        with self._lock:
            return id in self._hooks

    def ids(self) -> list[str]:
        """Hook ids in registration order."""
        with self._lock:
            return [h.id for h in sorted(self._hooks.values(), key=lambda h: h.seq)]

    def matching(self, event: HookEvent | str, context: HookContext) -> list[str]:
        """The ids of the hooks ``run`` would call, in the order it would call them, as long as
        no hook rewrites the arguments (each matcher sees the call as the hooks before it left
        it)."""
        parsed = HookEvent.parse(event)
        return [h.id for h in self._ordered(parsed) if h.matcher.matches(context)]

    def _ordered(self, event: HookEvent) -> list[_Hook]:
        with self._lock:
            hooks = [h for h in self._hooks.values() if h.event is event]
        hooks.sort(key=lambda h: (h.config.priority, h.seq))
        return hooks

    def run(
        self,
        event: HookEvent | str,
        context: HookContext,
        *,
        refresh: Refresh | None = None,
    ) -> HookOutcome:
        """Runs the matching hooks of ``event`` in order and combines their answers.

        Priority ascending, then registration order. A "block" stops at once;
        a "skip" abstains; a "continue" with arguments replaces the arguments
        the next hooks see (and the outcome's ``args``). Each hook's matcher is
        checked against the call as the hooks before it left it: after a
        rewrite, ``refresh`` (the session's resolution) gives the arguments as
        they will run and their paths. When it cannot (the rewrite is invalid,
        so the call will be refused), the next hooks see the rewritten
        arguments and no paths; without ``refresh`` the paths stay those of
        ``context``.
        """
        parsed = HookEvent.parse(event)
        if not isinstance(context, HookContext):
            raise HookError(f"run() needs a HookContext, not {type(context).__name__}")
        if context.event is not parsed:
            raise HookError(
                f"run({parsed.value!r}) was given a context for {context.event.value!r}"
            )
        gating = parsed in GATING_EVENTS
        current = context
        modified = False
        trace: list[HookTrace] = []
        for hook in self._ordered(parsed):
            if not hook.matcher.matches(current):
                continue
            started = time.monotonic()
            try:
                result = _call(hook, current)
            except _Failure as failure:
                elapsed = (time.monotonic() - started) * 1000
                reason = f"hook {hook.id!r} failed on {parsed.value}: {failure}"
                if gating:
                    reason += "; hooks on gating events fail closed, so the call is blocked"
                    trace.append(HookTrace(hook.id, "block", reason, elapsed, failed=True))
                    return _outcome("block", current, modified, reason, hook.id, trace)
                _log.warning("%s; ignored (not a gating event)", reason)
                trace.append(HookTrace(hook.id, "skip", reason, elapsed, failed=True))
                continue
            elapsed = (time.monotonic() - started) * 1000
            if result.action == "block":
                trace.append(HookTrace(hook.id, "block", result.reason, elapsed))
                return _outcome("block", current, modified, result.reason, hook.id, trace)
            if result.action == "skip":
                trace.append(HookTrace(hook.id, "skip", result.reason, elapsed))
                continue
            note = result.reason
            if result.args is not None and result.args != current.args:
                current = _refreshed(replace(current, args=result.args), refresh)
                modified = True
                note = note or "modified the arguments"
            trace.append(HookTrace(hook.id, "continue", note, elapsed))
        return _outcome("continue", current, modified, None, None, trace)

    def __repr__(self) -> str:
        return f"HookRegistry({self.count()} hooks)"


def _refreshed(context: HookContext, refresh: Refresh | None) -> HookContext:
    """``context`` with the arguments as they will run and their paths, when ``refresh`` can
    say; otherwise with the rewritten arguments and no paths."""
    if refresh is None:
        return context
    try:
        args, paths = refresh(thaw(context.args))
    except Exception:  # an invalid rewrite: the kernel refuses the call after the hooks
        return replace(context, paths=())
    return replace(context, args=args, paths=tuple(paths))


def _outcome(
    action: str,
    context: HookContext,
    modified: bool,
    reason: str | None,
    blocked_by: str | None,
    trace: list[HookTrace],
) -> HookOutcome:
    args: Mapping[str, Any] | None = thaw(context.args) if modified else None
    return HookOutcome(action, args, reason, blocked_by, tuple(trace))


def _call(hook: _Hook, context: HookContext) -> HookResult:
    """Runs one handler on a daemon thread; a handler that outlives its timeout is abandoned."""
    box: list[Any] = []
    done = threading.Event()

    def work() -> None:
        try:
            box.append(("ok", hook.handler(context)))
        except BaseException as exc:  # anything a handler does is its failure, not ours
            box.append(("raised", exc))
        finally:
            done.set()

    thread = threading.Thread(target=work, name=f"a3s-hook-{hook.id[:40]}", daemon=True)
    try:
        thread.start()
    except RuntimeError as exc:
        raise _Failure(f"could not start a thread for it: {exc}") from None
    if not done.wait(hook.config.timeout_ms / 1000):
        raise _Failure(f"no answer within {hook.config.timeout_ms} ms (timed out)")
    kind, value = box[0]
    if kind == "raised":
        raise _Failure(f"raised {type(value).__name__}: {value}")
    if value is None:
        return HookResult.proceed()
    if isinstance(value, Mapping) and not isinstance(value, HookResult):
        try:
            return HookResult.from_mapping(value)
        except HookError as exc:
            raise _Failure(f"returned a mapping that is not a hook result: {exc}") from None
    if not isinstance(value, HookResult):
        raise _Failure(
            f"returned {type(value).__name__}, not a HookResult, a mapping of one, or None"
        )
    return value
