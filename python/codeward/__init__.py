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
from .hitl import ConfirmationPolicy, ConfirmationRequest, Risk, TerminalConfirmationProvider
from .hooks import HookConfig, HookContext, HookEvent, HookMatcher, HookResult
from .kernel import InvocationOutcome, Mode, Origin, ToolCall, TraceEntry
from .policy import Decision, LintFinding, PermissionPolicy
from .sandbox import SandboxLimits
from .session import Agent, Session, SessionClosed, SessionOptions, SessionOptionsError
from .tools import ErrorKind, ToolResult
from .verification import CheckSpec, TurnOutcome, VerificationReport

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
