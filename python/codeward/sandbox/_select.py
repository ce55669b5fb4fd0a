"""Choosing a session's boundary, failing closed: never a silent fallback to the host."""

from __future__ import annotations

import os
import sys

from .._errors import SandboxArgumentError, SandboxUnavailable
from .._platform import platform_name
from ._native_runner import NativeBashSandbox, ProcessHostBashSandbox

TYPE_CHECKING = False  # on `codeward exec`'s path: annotations cost no import
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from ._limits import SandboxLimits
    from ._output import CommandOutput
    from ._protocol import BashSandbox

ENV_OPT_IN = "A3S_CODE_ALLOW_PROCESS_HOST_SANDBOX"
_TRUE = {"1", "true", "yes", "on"}


class UnavailableBashSandbox:
    """The error-only handle: every exec raises SandboxUnavailable naming the cause.

    A session gets this when no boundary can run and the host did not opt
    in to the process host; tools then fail closed instead of running
    unconfined.
    """

    backend = "unavailable"
    sandboxed = False

    def __init__(self, workspace: str | os.PathLike[str], cause: str) -> None:
        self.workspace = os.fspath(workspace)
        self.cause = cause

    def exec(
        self,
        command: str,
        *,
        timeout_ms: int = 120_000,
        env: Mapping[str, str] | None = None,
        max_output_bytes: int = 102_400,
        cancel: Any = None,
    ) -> CommandOutput:
        raise unavailable_error(self.workspace, self.cause)

    def __repr__(self) -> str:
        return f"UnavailableBashSandbox({self.workspace!r}, cause={self.cause!r})"


def unavailable_error(workspace: str, cause: str) -> SandboxUnavailable:
    """The error that says no boundary can run for `workspace`, why, and the way out."""
    fix = (
        "Check that /usr/bin/sandbox-exec runs"
        if sys.platform == "darwin"
        else "Install bubblewrap and enable user namespaces"
    )
    return SandboxUnavailable(
        f"bash is unavailable for workspace {workspace}: {cause}. {fix}, or, "
        "only inside an outer container or VM, "
        f"opt in to the process host ({ENV_OPT_IN}=1)",
        workspace=workspace,
        cause=cause,
    )


def process_host_opted_in(environ: Mapping[str, str] | None = None) -> bool:
    """Whether A3S_CODE_ALLOW_PROCESS_HOST_SANDBOX says yes (1/true/yes/on, any case)."""
    value = (os.environ if environ is None else environ).get(ENV_OPT_IN, "")
    return value.strip().lower() in _TRUE


def select_sandbox(
    workspace: str | os.PathLike[str],
    allow_process_host_sandbox: bool = False,
    sandbox_handle: BashSandbox | None = None,
    limits: SandboxLimits | None = None,
    *,
    reuse: bool | None = None,
    strict: bool = False,
) -> BashSandbox:
    """The boundary for a session over `workspace`.

    1. A host-supplied ``sandbox_handle`` always wins.
    2. Otherwise the native boundary is probed (once per process); if it
       works, every command runs inside it, within ``limits`` (the safe
       defaults when omitted; only the native Linux sandbox enforces them),
       in one long-lived sandbox, or with ``reuse=False`` in a sandbox of
       its own per command (for a caller that runs one command and goes,
       such as ``codeward exec``; see :class:`NativeBashSandbox`).
    3. If it does not, and the host opted in (the argument, or the
       environment variable), the process host runs commands unconfined.
    4. Otherwise the error-only handle: every exec raises SandboxUnavailable.

    With ``strict=True`` step 3 and 4 are replaced by raising
    SandboxUnavailable at once: the caller gets an enforcing boundary or an
    error (the environment's opt-in is then ignored, and the argument
    ``allow_process_host_sandbox=True`` is refused as a contradiction).

    On a system with no boundary at all (Windows; Linux has the native sandbox, macOS
    Seatbelt) there is nothing to probe and no process host: without a ``sandbox_handle``
    this raises SandboxUnavailable naming the system, opt-in or not.
    """
    if sandbox_handle is not None:
        if not callable(getattr(sandbox_handle, "exec", None)):
            raise SandboxArgumentError("sandbox_handle must have an exec(command, ...) method")
        return sandbox_handle
    if not isinstance(allow_process_host_sandbox, bool):
        raise SandboxArgumentError("allow_process_host_sandbox must be True or False")
    if not isinstance(strict, bool):
        raise SandboxArgumentError("strict must be True or False")
    if strict and allow_process_host_sandbox:
        raise SandboxArgumentError(
            "strict and allow_process_host_sandbox contradict each other: "
            "the process host enforces nothing"
        )
    if limits is not None:
        from ._limits import SandboxLimits  # (not imported for the defaults)

        if not isinstance(limits, SandboxLimits):
            raise SandboxArgumentError("limits must be a SandboxLimits")
    path = os.fspath(workspace)
    if not os.path.isabs(path):
        path = os.path.abspath(path)
    if os.path.islink(path) or not os.path.isdir(path):
        raise SandboxArgumentError(f"workspace {path} must be an existing directory, not a symlink")
    if sys.platform.startswith("linux"):
        cause = NativeBashSandbox.probe(workspace=path)
        if cause is None:
            return NativeBashSandbox(path, limits=limits, reuse=reuse)
    elif sys.platform == "darwin":
        from ._seatbelt import SeatbeltBashSandbox, seatbelt_probe

        cause = seatbelt_probe()
        if cause is None:
            return SeatbeltBashSandbox(path)
    else:
        # no boundary and no process host (the C runner is Linux only): refused here, not at
        # the first command, whatever the opt-in says
        system = platform_name()
        cause = f"codeward has no sandbox on {system} in this version"
        raise SandboxUnavailable(
            f"no sandbox for workspace {path}: {cause} (the native sandbox needs Linux "
            "namespaces, seccomp and Landlock, macOS has Seatbelt) and commands cannot run on "
            f"the process host there either; bash needs Linux or macOS, or a sandbox_handle",
            workspace=path,
            cause=cause,
        )
    if strict:
        raise unavailable_error(path, cause)
    if allow_process_host_sandbox or process_host_opted_in():
        if sys.platform == "darwin":
            from ._seatbelt import PythonProcessHostBashSandbox

            return PythonProcessHostBashSandbox(path)
        return ProcessHostBashSandbox(path)
    return UnavailableBashSandbox(path, cause)
