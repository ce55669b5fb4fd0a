"""The enforced execution boundary every session binds before any tool runs.

``select_sandbox`` picks it and fails closed; docs/security.md says what the
native boundary does and does not promise.
"""

TYPE_CHECKING = False
if TYPE_CHECKING:  # what the names below resolve to, for type checkers and readers
    from ._limits import UNLIMITED, SandboxLimits
    from ._native_runner import NativeBashSandbox, ProcessHostBashSandbox
    from ._output import CommandOutput, ExecRules, ExecStop, SandboxPolicy
    from ._protocol import BashSandbox
    from ._seatbelt import PythonProcessHostBashSandbox, SeatbeltBashSandbox, seatbelt_probe
    from ._select import ENV_OPT_IN, UnavailableBashSandbox, process_host_opted_in, select_sandbox

__all__ = [
    "ENV_OPT_IN",
    "UNLIMITED",
    "BashSandbox",
    "CommandOutput",
    "ExecRules",
    "ExecStop",
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

# Each name loads its module on first use: `codeward exec` imports the selection and the
# native runner, not the protocol's typing machinery, the output dataclass or (on Linux)
# the macOS backends.
_HOME = {
    "ENV_OPT_IN": "_select",
    "UNLIMITED": "_limits",
    "SandboxLimits": "_limits",
    "SandboxPolicy": "_output",
    "BashSandbox": "_protocol",
    "CommandOutput": "_output",
    "ExecRules": "_output",
    "ExecStop": "_output",
    "NativeBashSandbox": "_native_runner",
    "ProcessHostBashSandbox": "_native_runner",
    "PythonProcessHostBashSandbox": "_seatbelt",
    "SeatbeltBashSandbox": "_seatbelt",
    "UnavailableBashSandbox": "_select",
    "process_host_opted_in": "_select",
    "seatbelt_probe": "_seatbelt",
    "select_sandbox": "_select",
}


def __getattr__(name: str) -> object:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # __import__ rather than importlib.import_module: importlib (and the warnings module it
    # imports) would be two more imports on `codeward exec`'s path
    value = getattr(__import__(module, globals(), None, [name], 1), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
