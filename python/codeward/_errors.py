"""The exception tree of codeward.

Every error a caller can cause is one of these, and its message says what was
refused and why. Code never parses messages: branch on the type, or on the
attributes each class documents. The classes of this module are the shared
trunk; subsystems add their own leaves in their packages (shown with their
module).

    CodewardError
    ├── PolicyError            a rule, policy file or call argument is malformed
    │   └── PolicyFileError    a policy file cannot be read or parsed (has .path)
    ├── WorkspaceError         an in-process file access was refused (has .path)
    │   ├── PathOutsideWorkspace   the path, or a symlink on it, leaves the workspace
    │   ├── CredentialBoundaryError  the path is a credential file or store
    │   ├── HardLinkRefused    a file with extra hard links outside a package store
    │   ├── DestinationExists  a write without overwrite found the file there
    │   └── FileChanged        (workspace) the file changed between read and write
    ├── SandboxError           the sandbox could not run a command
    │   ├── SandboxUnavailable no boundary can run here (has .workspace, .cause):
    │   │                      raised by every exec of the error-only handle
    │   └── SandboxArgumentError  a command, variable or option is invalid
    ├── SessionOptionsError    (session) an unknown, mistyped or invalid session option
    ├── SessionClosed          (session) a call on a closed session
    ├── RegistrationError      (kernel) a malformed tool or skill registration
    ├── ConfirmationPolicyError, ConfirmationRequestError   (hitl)
    ├── HookError              (hooks) a malformed hook registration
    ├── VerificationError      (verification) ledger, report, check and waiver errors
    ├── DownloadError          (download) every refusal and failure of a download
    ├── NetworkGrantError      (netgrant) a network grant is malformed, cannot be enforced by
    │                          this sandbox, or its mediator is closed
    ├── McpError               (mcp) an MCP server, its configuration or connection (has .server)
    │   ├── McpConfigError     a .mcp.json / mcpServers entry is malformed (has .path)
    │   ├── McpStartError      the server did not start, or did not complete initialize
    │   │   └── McpUnownedError  a host-mode server cannot be owned here, and was refused
    │   ├── McpConnectionError the connection is closed or broke (has .exit_code, .stderr_tail)
    │   │   └── McpProtocolError  the server broke the protocol; the connection was closed
    │   ├── McpTimeout         no answer in time; the request was cancelled (has .method)
    │   └── McpServerError     the server answered with a JSON-RPC error (has .code, .data)
    └── NativeCoreError        the C core failed in a way no input explains
                               (out of memory, a system call); has .status, .errno

Tool calls never raise through the kernel: their failures are ToolResults with
an ``error_kind`` (codeward.tools.ErrorKind).

``codeward._native.NativeError`` never escapes the package: it is mapped to
one of the above at the call site that knows what the caller was doing.
"""

from __future__ import annotations

__all__ = [
    "CodewardError",
    "CredentialBoundaryError",
    "DestinationExists",
    "HardLinkRefused",
    "NativeCoreError",
    "PathOutsideWorkspace",
    "PolicyError",
    "PolicyFileError",
    "SandboxArgumentError",
    "SandboxError",
    "SandboxUnavailable",
    "WorkspaceError",
]


class CodewardError(Exception):
    """Base class of every error raised by codeward."""


class PolicyError(CodewardError, ValueError):
    """A permission rule, policy or tool-call argument is malformed.

    ``rule`` is the offending rule text when one rule is at fault, else None.
    """

    def __init__(self, message: str, *, rule: str | None = None) -> None:
        super().__init__(message)
        self.rule = rule


class PolicyFileError(PolicyError):
    """A policy file cannot be read or does not parse; ``path`` names it."""

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message)
        self.path = path


class WorkspaceError(CodewardError):
    """An in-process file access (read, write, search ...) was refused.

    ``path`` is the path as the caller gave it.
    """

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message)
        self.path = path


class PathOutsideWorkspace(WorkspaceError):
    """The path is outside the workspace, or a symlink on its way leads outside."""


class CredentialBoundaryError(WorkspaceError):
    """The path is a credential file or store (``.env``, ``.netrc``, ``~/.ssh`` ...)."""


class HardLinkRefused(WorkspaceError):
    """A regular file with more than one hard link, outside a package or build store,
    or aliasing a credential file."""


class DestinationExists(WorkspaceError):
    """A write that must not replace a file found one there (before or during the write)."""


class SandboxError(CodewardError):
    """The sandbox could not run a command."""


class SandboxUnavailable(SandboxError):
    """No enforced boundary can run here, and the host did not opt in to the process host.

    ``workspace`` is the workspace the session was bound to and ``cause`` the
    probe's finding (bubblewrap missing, user namespaces disabled ...).
    """

    def __init__(self, message: str, *, workspace: str, cause: str) -> None:
        super().__init__(message)
        self.workspace = workspace
        self.cause = cause


class SandboxArgumentError(SandboxError, ValueError):
    """A command, environment variable or option given to the sandbox is invalid."""


class NativeCoreError(CodewardError, RuntimeError):
    """The C core failed for a reason outside the caller's input.

    ``status`` is the stable status name (``"nomem"``, ``"system"`` ...) and
    ``errno`` the system error number, 0 if none.
    """

    def __init__(self, message: str, *, status: str, errno: int = 0) -> None:
        super().__init__(message)
        self.status = status
        self.errno = errno
