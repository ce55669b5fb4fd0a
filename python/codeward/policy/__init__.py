"""Permission policy: ``Tool(pattern)`` rules evaluated deny, then allow, then ask, then a default.

The reference for rule syntax, glob semantics and argument strings is
docs/policy.md; tests/vectors/policy.json pins it for every language.
"""

from ._bash import BashVerdict, CommandVerdict
from ._decision import Decision
from ._lint import LintFinding, lint_policy
from ._policy import Evaluation, PermissionPolicy, RuleView
from ._subject import argument_string, canonical_json, normalize_path

__all__ = [
    "BashVerdict",
    "CommandVerdict",
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
