"""codeward: the security kernel that lets a coding agent run tools without hurting the machine.

The names here are what most hosts need: a session over a workspace, its
options, the calls and outcomes of its kernel, and the error tree. Subsystems
are public packages of their own (``codeward.sandbox``, ``codeward.tools``,
``codeward.workspace``, ``codeward.hitl``, ``codeward.hooks``,
``codeward.verification``, ``codeward.download``, ``codeward.guardrail``,
``codeward.kernel``); modules whose names start with an underscore are
private and may change without notice.
"""

from . import _native
from ._errors import (
    CodewardError,
    CredentialBoundaryError,
    DestinationExists,
    HardLinkRefused,
    NativeCoreError,
    PathOutsideWorkspace,
    PolicyError,
    PolicyFileError,
    SandboxArgumentError,
    SandboxError,
    SandboxUnavailable,
    WorkspaceError,
)
from ._version import __version__, native_version

TYPE_CHECKING = False  # (typing itself is not worth importing for this)
if TYPE_CHECKING:  # what the lazy names below resolve to, for type checkers and readers
    from .hitl import ConfirmationPolicy, ConfirmationRequest, Risk, TerminalConfirmationProvider
    from .hooks import HookConfig, HookContext, HookEvent, HookMatcher, HookResult
    from .kernel import InvocationOutcome, Mode, Origin, ToolCall, TraceEntry
    from .policy import Decision, LintFinding, PermissionPolicy
    from .sandbox import SandboxLimits
    from .session import Agent, Session, SessionClosed, SessionOptions, SessionOptionsError
    from .tools import ErrorKind, ToolResult
    from .verification import CheckSpec, TurnOutcome, VerificationReport

# The subsystems load on first use of one of their names: a command-line call such as
# `codeward version` or `codeward exec` must not pay for importing the whole package.
_LAZY = {
    "hitl": ("ConfirmationPolicy", "ConfirmationRequest", "Risk", "TerminalConfirmationProvider"),
    "hooks": ("HookConfig", "HookContext", "HookEvent", "HookMatcher", "HookResult"),
    "kernel": ("InvocationOutcome", "Mode", "Origin", "ToolCall", "TraceEntry"),
    "policy": ("Decision", "LintFinding", "PermissionPolicy"),
    "sandbox": ("SandboxLimits",),
    "session": ("Agent", "Session", "SessionClosed", "SessionOptions", "SessionOptionsError"),
    "tools": ("ErrorKind", "ToolResult"),
    "verification": ("CheckSpec", "TurnOutcome", "VerificationReport"),
}
_HOME = {name: package for package, names in _LAZY.items() for name in names}

__all__ = [
    "Agent",
    "CheckSpec",
    "CodewardError",
    "ConfirmationPolicy",
    "ConfirmationRequest",
    "CredentialBoundaryError",
    "Decision",
    "DestinationExists",
    "ErrorKind",
    "HardLinkRefused",
    "HookConfig",
    "HookContext",
    "HookEvent",
    "HookMatcher",
    "HookResult",
    "InvocationOutcome",
    "LintFinding",
    "Mode",
    "NativeCoreError",
    "Origin",
    "PathOutsideWorkspace",
    "PermissionPolicy",
    "PolicyError",
    "PolicyFileError",
    "Risk",
    "SandboxArgumentError",
    "SandboxError",
    "SandboxLimits",
    "SandboxUnavailable",
    "Session",
    "SessionClosed",
    "SessionOptions",
    "SessionOptionsError",
    "TerminalConfirmationProvider",
    "ToolCall",
    "ToolResult",
    "TraceEntry",
    "TurnOutcome",
    "VerificationReport",
    "WorkspaceError",
    "__version__",
    "features",
    "native_version",
]


def features() -> dict[str, bool | int]:
    """What the running kernel offers the sandbox (probed once per process)."""
    result: dict[str, bool | int] = _native.features()
    return result


def __getattr__(name: str) -> object:
    """Imports the subsystem that defines ``name`` the first time it is asked for."""
    package = _HOME.get(name)
    if package is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{package}", __name__), name)
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
