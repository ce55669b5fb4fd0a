"""ToolError: a failure a tool reports from deep inside, turned into a ToolResult by run_tool."""

from __future__ import annotations

from typing import Any

from .._errors import (
    CodewardError,
    CredentialBoundaryError,
    DestinationExists,
    HardLinkRefused,
    PathOutsideWorkspace,
    SandboxArgumentError,
    SandboxUnavailable,
    WorkspaceError,
)
from ..workspace._atomic import FileChanged
from ._base import ErrorKind
from ._schema import ArgumentError

__all__ = ["ToolError", "as_tool_error", "error_for"]


class ToolError(CodewardError):
    """A tool call failed for a reason the model can act on.

    ``kind`` is the :class:`ErrorKind` the result carries and ``metadata``
    the structured facts that go with it. Tools raise it; :func:`run_tool`
    returns it as ``ToolResult.failure``.
    """

    def __init__(self, kind: ErrorKind, message: str, **metadata: Any) -> None:
        super().__init__(message)
        self.kind = kind
        self.metadata = metadata


def as_tool_error(exc: BaseException, path: str | None = None) -> ToolError:
    """``exc`` as a ToolError with the kind and message run_tool would give it."""
    if isinstance(exc, ToolError):
        return exc
    kind, message = error_for(exc, path)
    return ToolError(kind, message)


def error_for(exc: BaseException, path: str | None = None) -> tuple[ErrorKind, str]:
    """The ErrorKind and model-facing message of an exception a tool let out.

    The one mapping of exceptions to kinds: workspace refusals keep their own
    messages (they say what was refused and why); a system error is named
    with ``path``, the one path the call named, when there is one.
    """
    if isinstance(exc, ToolError):
        return exc.kind, str(exc)
    if isinstance(exc, ArgumentError):
        return ErrorKind.INVALID_ARGUMENT, f"invalid arguments: {exc}"
    if isinstance(exc, CredentialBoundaryError):
        return ErrorKind.CREDENTIAL_BOUNDARY, str(exc)
    if isinstance(exc, (PathOutsideWorkspace, HardLinkRefused)):
        return ErrorKind.PERMISSION_DENIED, str(exc)
    if isinstance(exc, (DestinationExists, FileChanged)):
        return ErrorKind.CONFLICT, str(exc)
    if isinstance(exc, WorkspaceError):  # an impossible path, a directory, a symlink loop
        return ErrorKind.INVALID_ARGUMENT, str(exc)
    if isinstance(exc, SandboxUnavailable):
        return ErrorKind.SANDBOX_UNAVAILABLE, str(exc)
    if isinstance(exc, SandboxArgumentError):
        return ErrorKind.INVALID_ARGUMENT, str(exc)
    if isinstance(exc, OSError):
        subject = repr(path) if path else (repr(exc.filename) if exc.filename else "the path")
        reason = exc.strerror or str(exc)
        if isinstance(exc, FileNotFoundError):
            return ErrorKind.NOT_FOUND, f"{subject} does not exist (or a directory on its way)"
        if isinstance(exc, IsADirectoryError):
            return ErrorKind.INVALID_ARGUMENT, f"{subject} is a directory"
        if isinstance(exc, NotADirectoryError):
            return ErrorKind.INVALID_ARGUMENT, f"a component of {subject} is not a directory"
        if isinstance(exc, PermissionError):
            return ErrorKind.PERMISSION_DENIED, f"the system refused access to {subject}: {reason}"
        return ErrorKind.IO_ERROR, f"input/output error on {subject}: {reason}"
    return ErrorKind.TOOL_FAILED, f"the tool failed unexpectedly: {type(exc).__name__}: {exc}"
