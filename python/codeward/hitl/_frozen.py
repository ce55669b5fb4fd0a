"""Read-only deep copies of tool arguments, and plain copies back.

A confirmation request and a hook context carry the call's arguments; neither
a provider nor a hook may change what the kernel later executes by mutating
them, so they get a deep copy in which every mapping is a read-only view and
every list a tuple. ``thaw`` turns such a copy back into plain dicts and lists.

Only JSON-like data is copied (mappings, lists, tuples, sets, scalars), which
is all a tool call's arguments may hold. Any other object (a Workspace a host
puts in a hook's ``extra``) is passed by reference: copying it could be costly
or impossible, and it is the host's own object, not the model's data.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

__all__ = ["MAX_DEPTH", "freeze", "thaw"]

MAX_DEPTH = 200  # tool arguments nested deeper than this are refused, not copied
_SCALARS = (str, int, float, bytes, type(None))  # bool is an int


def freeze(value: Any) -> Any:
    """A read-only deep copy; raises ValueError for reference cycles and absurd nesting."""
    return _freeze(value, set(), 0)


def thaw(value: Any) -> Any:
    """A plain, mutable deep copy (dicts and lists) of a frozen or ordinary value."""
    return _thaw(value, set(), 0)


def _enter(value: Any, active: set[int], depth: int) -> int:
    if depth >= MAX_DEPTH:
        raise ValueError(f"tool arguments are nested more than {MAX_DEPTH} levels deep")
    marker = id(value)
    if marker in active:
        raise ValueError("tool arguments contain a reference cycle")
    active.add(marker)
    return marker


def _freeze(value: Any, active: set[int], depth: int) -> Any:
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, Mapping):
        marker = _enter(value, active, depth)
        try:
            return MappingProxyType({k: _freeze(v, active, depth + 1) for k, v in value.items()})
        finally:
            active.discard(marker)
    if isinstance(value, (list, tuple)):
        marker = _enter(value, active, depth)
        try:
            return tuple(_freeze(v, active, depth + 1) for v in value)
        finally:
            active.discard(marker)
    if isinstance(value, (set, frozenset)):
        return frozenset(value)  # members are hashable, hence immutable enough
    if isinstance(value, bytearray):
        return bytes(value)
    return value


def _thaw(value: Any, active: set[int], depth: int) -> Any:
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, Mapping):
        marker = _enter(value, active, depth)
        try:
            return {k: _thaw(v, active, depth + 1) for k, v in value.items()}
        finally:
            active.discard(marker)
    if isinstance(value, (list, tuple)):
        marker = _enter(value, active, depth)
        try:
            return [_thaw(v, active, depth + 1) for v in value]
        finally:
            active.discard(marker)
    if isinstance(value, (set, frozenset)):
        return set(value)
    if isinstance(value, bytearray):
        return bytearray(value)
    return value
