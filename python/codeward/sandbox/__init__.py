"""The enforced execution boundary every session binds before any tool runs.

``select_sandbox`` picks it and fails closed; docs/security.md says what the
native boundary does and does not promise.
"""

from ._limits import UNLIMITED, SandboxLimits
from ._native_runner import NativeBashSandbox, ProcessHostBashSandbox
from ._output import CommandOutput, SandboxPolicy
from ._protocol import BashSandbox
from ._select import ENV_OPT_IN, UnavailableBashSandbox, process_host_opted_in, select_sandbox

__all__ = [
    "ENV_OPT_IN",
    "UNLIMITED",
    "BashSandbox",
    "CommandOutput",
    "NativeBashSandbox",
    "ProcessHostBashSandbox",
    "PythonProcessHostBashSandbox",
    "SandboxLimits",
    "SandboxPolicy",
    "SeatbeltBashSandbox",
    "UnavailableBashSandbox",
    "process_host_opted_in",
    "seatbelt_probe",
    "select_sandbox",
]


_MACOS = {"PythonProcessHostBashSandbox", "SeatbeltBashSandbox", "seatbelt_probe"}


def __getattr__(name: str) -> object:
    """The macOS backends load on first use: Linux hosts never pay for them."""
    if name in _MACOS:
        from . import _seatbelt

        return getattr(_seatbelt, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
