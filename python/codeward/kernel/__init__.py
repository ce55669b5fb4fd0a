"""The invocation kernel: one path, fixed precedence, fail closed (docs/kernel.md)."""

from ._kernel import CallScope, InvocationKernel, strictest
from ._matrix import MODE_MATRIX, MatrixRow, cell
from ._registry import ExternalTool, RegistrationError, Skill, ToolAnnotations, ToolRegistry
from ._resolve import PathRefused, Resolution, Target, Verdict, policy_verdict, resolve_call
from ._types import InvocationOutcome, Mode, Origin, ToolCall, TraceEntry

__all__ = [
    "MODE_MATRIX",
    "CallScope",
    "ExternalTool",
    "InvocationKernel",
    "InvocationOutcome",
    "MatrixRow",
    "Mode",
    "Origin",
    "PathRefused",
    "RegistrationError",
    "Resolution",
    "Skill",
    "Target",
    "ToolAnnotations",
    "ToolCall",
    "ToolRegistry",
    "TraceEntry",
    "Verdict",
    "cell",
    "policy_verdict",
    "resolve_call",
    "strictest",
]
