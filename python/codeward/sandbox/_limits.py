"""SandboxLimits: how much one native sandbox may use (canonical list: native/abi/options.json)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Final

from .._errors import SandboxArgumentError

UNLIMITED: Final = 2**64 - 1
"""A bound that leaves its resource unbounded (the C ABI's ``A3S_NO_LIMIT``)."""


@dataclass(frozen=True, kw_only=True)
class SandboxLimits:
    """The resource bounds of the native Linux sandbox; ``None`` keeps the safe default.

    - ``memory_max_bytes``: the whole sandbox (every process of it and what
      its tmpfs mounts hold). A memory cgroup of its own where the caller may
      create one, else the init's watchdog. Default: half the machine's memory.
    - ``max_processes``: processes and threads. ``pids.max`` of that cgroup,
      and ``RLIMIT_NPROC`` inside the sandbox's user namespace (which the
      kernel does not apply to root). Default: 4096.
    - ``tmpfs_max_bytes``: each tmpfs a command writes to (``/tmp``,
      ``/var/tmp``, ``/run`` with the scratch directories, ``/dev/shm``, the
      masked homes); a full one gives ENOSPC. Default: an eighth of the
      machine's memory.
    - ``inotify_watch_budget``: watches the credential scan may hold; beyond
      them it checks directories by their metadata. Default: a quarter of
      ``fs.inotify.max_user_watches`` (the user's whole budget).
    - ``idle_stop_ms``: a long-lived sandbox that ran no command for this
      long is stopped (its processes, placeholders, descriptors and watches
      released); the next command starts a new one. Default: 300,000 (five
      minutes); UNLIMITED: never.

    Each also takes :data:`UNLIMITED`. docs/security.md ("Resource bounds")
    says what each bound does and does not cover; the Seatbelt (macOS) and
    process-host backends enforce none of them.
    """

    memory_max_bytes: int | None = None
    max_processes: int | None = None
    tmpfs_max_bytes: int | None = None
    inotify_watch_budget: int | None = None
    idle_stop_ms: int | None = None

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= UNLIMITED:
                raise SandboxArgumentError(
                    f"SandboxLimits.{f.name} must be None, a positive integer or UNLIMITED, "
                    f"not {value!r}"
                )

    def native_kwargs(self) -> dict[str, int]:
        """The C core's spelling: 0 for the default."""
        return {f.name: getattr(self, f.name) or 0 for f in fields(self)}
