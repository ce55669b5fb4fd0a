"""Validation of the arguments every sandbox's exec takes, shared by all backends."""

from __future__ import annotations

from .._errors import SandboxArgumentError

MAX_TIMEOUT_MS = 24 * 3600 * 1000
MAX_OUTPUT_BYTES = 1 << 30
MAX_GRACE_MS = 600_000


def positive(name: str, value: int, upper: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= upper:
        raise SandboxArgumentError(f"{name} must be an integer from 1 to {upper}, not {value!r}")
    return value


def check_exec_args(
    command: str, timeout_ms: int, max_output_bytes: int, kill_grace_ms: int
) -> None:
    """Raises SandboxArgumentError for a command or bound no sandbox can honour."""
    if not isinstance(command, str):
        raise SandboxArgumentError(f"command must be a string, not {type(command).__name__}")
    if "\0" in command:
        raise SandboxArgumentError("the command contains a NUL byte")
    positive("timeout_ms", timeout_ms, MAX_TIMEOUT_MS)
    positive("max_output_bytes", max_output_bytes, MAX_OUTPUT_BYTES)
    positive("kill_grace_ms", kill_grace_ms, MAX_GRACE_MS)
