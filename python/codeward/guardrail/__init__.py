"""Hard guardrails: the floor that no mode, policy, hook or confirmation can lower.

Stage 1 of the invocation kernel refuses catastrophic shell commands
(:func:`check_command`) and paths outside the workspace or through a
symlink leading out (:func:`check_path`, :func:`check_paths`). The module
also names the protected top-level entries (:data:`PROTECTED_NAMES`,
:func:`is_protected_path`) and describes a call for a confirmation
(:func:`assess_risk`, :func:`summarize_call`). See docs/guardrails.md.
"""

from .._redact import redact
from .._summary import summarize_call
from ._command import MAX_NESTING, check_command
from ._hit import GuardrailHit
from ._paths import check_path, check_paths
from ._protected import (
    PROTECTED_DIRS,
    PROTECTED_FILES,
    PROTECTED_NAMES,
    is_protected_name,
    is_protected_path,
    protected_depth,
)
from ._risk import Risk, assess_risk

__all__ = [
    "MAX_NESTING",
    "PROTECTED_DIRS",
    "PROTECTED_FILES",
    "PROTECTED_NAMES",
    "GuardrailHit",
    "Risk",
    "assess_risk",
    "check_command",
    "check_path",
    "check_paths",
    "is_protected_name",
    "is_protected_path",
    "protected_depth",
    "redact",
    "summarize_call",
]
