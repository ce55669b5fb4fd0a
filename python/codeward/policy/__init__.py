"""Permission policy: ``Tool(pattern)`` rules evaluated deny, then allow, then ask, then a default.

The reference for rule syntax, glob semantics and argument strings is
docs/policy.md; tests/vectors/policy.json pins it for every language.
"""

from ._lint import LintFinding, lint_policy
from ._policy import Decision, Evaluation, PermissionPolicy, RuleView
from ._subject import argument_string, canonical_json, normalize_path

__all__ = [
    "Decision",
    "Evaluation",
    "LintFinding",
    "PermissionPolicy",
    "RuleView",
    "argument_string",
    "canonical_json",
    "lint_policy",
    "normalize_path",
]
