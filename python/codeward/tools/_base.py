"""What every tool is and returns: the contract between tools and the invocation kernel.

A tool validates its arguments against its own JSON schema, says which
workspace paths a call names (the guardrails, the mode matrix and path hooks
read them), and runs with a :class:`ToolContext` that carries the session's
workspace boundary and sandbox handle. It never decides whether it may run:
that is the kernel's job, done before ``run`` is called.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from ..netgrant import Admission
from ..sandbox import BashSandbox, ExecRules
from ..workspace import Workspace

__all__ = [
    "CancelToken",
    "ErrorKind",
    "MutationRecorder",
    "PathMap",
    "ReadDenial",
    "Tool",
    "ToolContext",
    "ToolKind",
    "ToolResult",
]


class ErrorKind(str, enum.Enum):
    """Why a tool call failed, as a stable name a model and a host can branch on."""

    INVALID_ARGUMENT = "InvalidArgument"
    PERMISSION_DENIED = "PermissionDenied"
    CREDENTIAL_BOUNDARY = "CredentialBoundary"
    NOT_FOUND = "NotFound"
    TIMEOUT = "Timeout"
    CONFLICT = "Conflict"
    TOO_LARGE = "TooLarge"
    BINARY_FILE = "BinaryFile"
    SANDBOX_UNAVAILABLE = "SandboxUnavailable"
    NETWORK = "Network"
    CANCELLED = "Cancelled"
    IO_ERROR = "IoError"
    TOOL_FAILED = "ToolFailed"
    CONFIRMATION_UNAVAILABLE = "ConfirmationUnavailable"


class ToolKind(str, enum.Enum):
    """The row of the mode matrix a tool's calls fall in."""

    READ = "read"  # read, search, ls: inside the workspace, no side effect
    WRITE = "write"  # write, edit, patch
    BASH = "bash"
    GIT = "git"  # read-only git
    DOWNLOAD = "download"
    LAUNCH = "launch"  # task, skill, workflow: nested calls are checked one by one
    EXTERNAL = "external"  # MCP and host tools: their annotations decide


@dataclass(frozen=True)
class ToolResult:
    """The outcome of one executed tool call.

    ``output`` is what the model sees; ``metadata`` carries structured facts
    (paths, byte counts, ``sandboxed`` ...); ``error_kind`` is set exactly when
    ``success`` is False.
    """

    name: str
    output: str
    exit_code: int = 0
    success: bool = True
    metadata: Mapping[str, Any] = field(default_factory=dict)
    error_kind: ErrorKind | None = None

    @classmethod
    def failure(
        cls, name: str, kind: ErrorKind, message: str, *, exit_code: int = 1, **metadata: Any
    ) -> ToolResult:
        """A failed call whose ``output`` is a message the model can act on."""
        return cls(name, message, exit_code, False, dict(metadata), kind)

    @property
    def cancelled(self) -> bool:
        """Whether the call was cancelled (its ``cancel`` token was set) before it finished."""
        return self.error_kind is ErrorKind.CANCELLED or self.metadata.get("cancelled") is True

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {
            "name": self.name,
            "output": self.output,
            "exit_code": self.exit_code,
            "success": self.success,
            "metadata": dict(self.metadata),
            "error_kind": None if self.error_kind is None else self.error_kind.value,
            "cancelled": self.cancelled,
        }


# Maps a path as a call gives it to the workspace-relative path the tool will open; raises for
# a path the session refuses (see codeward.kernel's resolution).
PathMap = Callable[[str], str]
# Why the session's permission policy denies reading a workspace-relative path, or None.
ReadDenial = Callable[[str], "str | None"]

# The action each kind of tool performs on the paths it names, when it says no more.
_DEFAULT_ACTION = {"read": "read", "write": "write", "git": "read", "download": "write"}


class CancelToken(Protocol):
    def is_set(self) -> bool: ...


class MutationRecorder(Protocol):
    """Receives every change a tool made: the ledger of the verification gate."""

    def record(self, tool: str, path: str, content_digest: str) -> None: ...


@dataclass
class ToolContext:
    """What a running tool may use: the session's boundary, never more.

    ``escalated`` is set only for a bash call whose ``require_escalated``
    request was confirmed: it then runs outside the sandbox. ``network`` is
    set only for a bash call whose ``request_network_grant`` was confirmed:
    the admission its command's proxy connections go through
    (``codeward.netgrant``). ``read_denied``
    says why the permission policy denies reading a workspace-relative path
    (None when it does not): tools that show file content a call did not
    name (search, git) leave such files out, as they leave out credentials.
    ``caller`` is the session that made the call, for the launch tools that
    start a delegated run of it (``task``); other tools never look at it.
    ``exec_rules`` is what the bash tool's exec check holds the command to
    (the policy's bash deny and ask patterns, the commands approved for this
    call), for a sandbox that supports it.
    """

    workspace: Workspace
    sandbox: BashSandbox
    recorder: MutationRecorder | None = None
    cancel: CancelToken | None = None
    escalated: bool = False
    host_sandbox_factory: Callable[[], BashSandbox] | None = None
    caller: Any = None
    read_denied: ReadDenial | None = None
    network: Admission | None = None
    exec_rules: ExecRules | None = None


class Tool(ABC):
    """A session tool. Subclasses set the class attributes and implement ``run``."""

    name: ClassVar[str]
    kind: ClassVar[ToolKind]
    description: ClassVar[str]
    schema: ClassVar[Mapping[str, Any]]  # JSON schema of the arguments, additionalProperties false

    def paths(self, args: Mapping[str, Any]) -> list[str]:
        """The workspace paths this call names, as given (empty for none)."""
        return []

    def resolve(
        self, args: Mapping[str, Any], relpath: PathMap
    ) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        """The call as it will run, and what it touches.

        Returns ``args`` with every path argument replaced by ``relpath(path)``
        (the workspace-relative path the tool will open) and every default the
        tool would pick filled in, and ``(action, path)`` for each workspace
        path the call touches: ``read``, ``list``, ``search``, ``write``,
        ``edit`` or ``delete``. The session decides on exactly this and runs
        the tool with these arguments. ``args`` were validated against the
        schema. This default maps :meth:`paths` and leaves the arguments as
        they are.
        """
        action = _DEFAULT_ACTION.get(self.kind.value, "read")
        return dict(args), [(action, relpath(p)) for p in self.paths(args)]

    @abstractmethod
    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        """Executes an admitted call. Arguments were validated against ``schema``."""

    def model_schema(self) -> dict[str, Any]:
        """The definition a model sees: name, description, parameters."""
        return {"name": self.name, "description": self.description, "parameters": dict(self.schema)}


class OptionalPathTool(Tool):
    """A tool over the one path its optional ``path`` argument names (default: the workspace)."""

    action: ClassVar[str]  # what it does there, as resolve() reports it ("list", "search")

    def paths(self, args: Mapping[str, Any]) -> list[str]:
        return [str(args.get("path", "."))]

    def resolve(
        self, args: Mapping[str, Any], relpath: PathMap
    ) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        out = dict(args)
        out["path"] = relpath(args.get("path", "."))
        return out, [(self.action, out["path"])]
