"""Argument validation against the JSON-schema subset the tool schemas use.

Supported keywords: type (one name or a list), properties, required,
additionalProperties (false or absent), items, enum, minimum, maximum,
minLength, maxLength, minItems, maxItems, pattern. An unknown keyword in a
schema is a programming error and raises at validation time, so a schema can
never silently promise a check that does not happen.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["ArgumentError", "validate"]

_KNOWN = {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "pattern",
    "description",
    "default",
    "title",
}
_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list, tuple),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


class ArgumentError(ValueError):
    """Arguments do not match the schema; the message names the field and the rule."""


def validate(schema: Mapping[str, Any], value: Any, where: str = "arguments") -> None:
    """Raises ArgumentError unless ``value`` satisfies ``schema``."""
    unknown = set(schema) - _KNOWN
    if unknown:
        raise TypeError(f"schema keyword(s) not supported: {sorted(unknown)}")
    types = schema.get("type")
    if types is not None:
        names = [types] if isinstance(types, str) else list(types)
        if not any(_is_type(value, n) for n in names):
            raise ArgumentError(f"{where} must be {' or '.join(names)}, not {_type_name(value)}")
    if "enum" in schema and value not in schema["enum"]:
        choices = ", ".join(repr(c) for c in schema["enum"])
        raise ArgumentError(f"{where} must be one of {choices}, not {value!r}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            raise ArgumentError(f"{where} must be at least {schema['minimum']}, not {value}")
        if "maximum" in schema and value > schema["maximum"]:
            raise ArgumentError(f"{where} must be at most {schema['maximum']}, not {value}")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            raise ArgumentError(f"{where} must have at least {schema['minLength']} character(s)")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            raise ArgumentError(f"{where} must have at most {schema['maxLength']} characters")
        if "pattern" in schema and re.search(schema["pattern"], value) is None:
            raise ArgumentError(f"{where} does not match the pattern {schema['pattern']!r}")
    if isinstance(value, (list, tuple)):
        if len(value) < schema.get("minItems", 0):
            raise ArgumentError(f"{where} must have at least {schema['minItems']} item(s)")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            raise ArgumentError(f"{where} must have at most {schema['maxItems']} items")
        if "items" in schema:
            for i, item in enumerate(value):
                validate(schema["items"], item, f"{where}[{i}]")
    if isinstance(value, dict):
        props: Mapping[str, Any] = schema.get("properties", {})
        for key in schema.get("required", ()):
            if key not in value:
                raise ArgumentError(f"{where}: the field {key!r} is required")
        if schema.get("additionalProperties", True) is False:
            extra = sorted(str(k) for k in value if k not in props)
            if extra:
                raise ArgumentError(f"{where}: unknown field(s) {', '.join(map(repr, extra))}")
        for key, sub in props.items():
            if key in value:
                validate(sub, value[key], f"{where}.{key}" if where != "arguments" else key)


def _is_type(value: Any, name: str) -> bool:
    if name in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, _TYPES[name])


def _type_name(value: Any) -> str:
    return {
        dict: "an object",
        list: "an array",
        str: "a string",
        bool: "a boolean",
        type(None): "null",
    }.get(type(value), type(value).__name__)
