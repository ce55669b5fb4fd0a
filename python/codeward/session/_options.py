"""SessionOptions: everything a host decides about a session, checked when it is built."""

from __future__ import annotations

import dataclasses
import socket
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._errors import CodewardError
from ..hitl import ConfirmationPolicy
from ..kernel import Mode
from ..policy import PermissionPolicy
from ..sandbox import BashSandbox, SandboxLimits
from ..verification import CheckSpec

__all__ = ["SessionOptions", "SessionOptionsError"]


class SessionOptionsError(CodewardError, ValueError):
    """A session option is unknown or has the wrong type or value; the message names it."""


@dataclass(frozen=True, kw_only=True)
class SessionOptions:
    """How a session behaves. Every field has a safe default.

    ``confirmation_provider=None`` makes every Ask fail closed;
    ``credential_boundary=False`` turns off the credential rules of the
    in-process file tools (a host decision, never reachable from a model).
    ``verification_checks`` are the host's own checks for ``session.verify()``,
    run after the detected ones (``detect_checks=False``: only these).
    ``sandbox_limits`` bounds the memory, processes, tmpfs sizes and inotify
    watches of the sandbox the session selects (safe defaults when omitted;
    a host's own ``sandbox_handle`` brings its own bounds).
    ``network_resolver`` and ``network_dialer`` are the host's seams for the
    network grants' mediator (its own DNS and network stack, or tests), as
    for ``codeward.download.download``: ``resolver(host, port)`` returns IP
    address strings, ``dialer(ip, port, timeout_s)`` a connected socket; the
    address checks stay in the mediator. None: the system's.
    """

    mode: Mode | str = Mode.DEFAULT
    permission_policy: PermissionPolicy | None = None
    confirmation_policy: ConfirmationPolicy = field(default_factory=ConfirmationPolicy)
    confirmation_provider: Any = None
    sandbox_handle: BashSandbox | None = None
    allow_process_host_sandbox: bool = False
    sandbox_limits: SandboxLimits | None = None
    credential_boundary: bool = True
    verification_checks: tuple[CheckSpec, ...] = ()
    detect_checks: bool = True
    network_resolver: Callable[[str, int], Sequence[str]] | None = None
    network_dialer: Callable[[str, int, float], socket.socket] | None = None

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "mode", Mode.parse(self.mode))
        except ValueError as exc:
            raise SessionOptionsError(f"SessionOptions.mode: {exc}") from None
        _expect(self.permission_policy, PermissionPolicy, "permission_policy", optional=True)
        _expect(self.confirmation_policy, ConfirmationPolicy, "confirmation_policy")
        for flag in ("allow_process_host_sandbox", "credential_boundary", "detect_checks"):
            _expect(getattr(self, flag), bool, flag)
        checks = self.verification_checks
        if isinstance(checks, (str, bytes)) or not all(isinstance(c, CheckSpec) for c in checks):
            raise SessionOptionsError(
                "SessionOptions.verification_checks must be a sequence of CheckSpec"
            )
        object.__setattr__(self, "verification_checks", tuple(checks))
        provider = self.confirmation_provider
        if provider is not None and not callable(getattr(provider, "request", None)):
            raise SessionOptionsError(
                "SessionOptions.confirmation_provider must have a request(confirmation) method"
            )
        if self.sandbox_handle is not None and not isinstance(self.sandbox_handle, BashSandbox):
            raise SessionOptionsError(
                "SessionOptions.sandbox_handle must implement the BashSandbox protocol "
                "(backend, sandboxed, exec)"
            )
        _expect(self.sandbox_limits, SandboxLimits, "sandbox_limits", optional=True)
        for seam in ("network_resolver", "network_dialer"):
            if getattr(self, seam) is not None and not callable(getattr(self, seam)):
                raise SessionOptionsError(f"SessionOptions.{seam} must be callable or None")
        if self.sandbox_limits is not None and self.sandbox_handle is not None:
            raise SessionOptionsError(
                "SessionOptions.sandbox_limits bounds the sandbox the session selects; "
                "a sandbox_handle brings its own bounds: give one or the other"
            )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SessionOptions:
        """Builds options from a mapping, refusing keys that are not options."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise SessionOptionsError(
                f"unknown session option(s): {', '.join(unknown)}; "
                f"known: {', '.join(sorted(known))}"
            )
        return cls(**data)


def _expect(value: Any, kind: type, name: str, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if kind is bool and not isinstance(value, bool):
        raise SessionOptionsError(f"SessionOptions.{name} must be True or False, not {value!r}")
    if not isinstance(value, kind):
        raise SessionOptionsError(
            f"SessionOptions.{name} must be a {kind.__name__}, not {type(value).__name__}"
        )
