"""a3s-code: the security kernel that lets a coding agent run tools without hurting the machine.

Everything public is importable from here; modules whose names start with an
underscore are private and may change without notice.
"""

from . import _native
from ._errors import A3SError, NativeCoreError, PolicyError, PolicyFileError
from ._version import __version__, native_version
from .policy import Decision, LintFinding, PermissionPolicy

__all__ = [
    "A3SError",
    "Decision",
    "LintFinding",
    "NativeCoreError",
    "PermissionPolicy",
    "PolicyError",
    "PolicyFileError",
    "__version__",
    "features",
    "native_version",
]


def features() -> dict[str, bool | int]:
    """What the running kernel offers the sandbox (probed once per process)."""
    result: dict[str, bool | int] = _native.features()
    return result
