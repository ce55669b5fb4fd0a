"""Type stubs of the C extension (python/codeward/_native.c)."""

from collections.abc import Callable
from typing import Any

ABI_VERSION: int
BASH_MAX_DEPTH: int
INIT_SHA256: str | None  # the SHA-256 of the a3s-init built with this module
LIST_NONE: int
LIST_DENY: int
LIST_ALLOW: int
LIST_ASK: int
RULE_ANY_ARGS: int
RULE_TOOL_GLOB: int
RULE_MCP_SERVER: int
RULE_REWRITTEN: int
RULE_PREFIX: int
BASH_INCOMPLETE: int
BASH_EXPLICIT: int
BASH_WHY_RULE: int
BASH_WHY_DEFAULT: int
BASH_WHY_DYNAMIC: int
BASH_WHY_INCOMPLETE: int

class NativeError(Exception):
    """args: (status_name, message, detail, sys_errno)."""

class Glob:
    def __init__(self, pattern: str | bytes, tool_name: bool = False) -> None: ...
    def match(self, subject: str | bytes) -> bool: ...

class Ruleset:
    def __init__(self) -> None: ...
    def add(self, list: int, rule: str | bytes, id: int) -> None: ...
    def check(self, tool: str | bytes, subject: str | bytes) -> int: ...
    def matches(self, tool: str | bytes, subject: str | bytes) -> list[int]: ...
    def check_search(self, text: str | bytes, strict: str | bytes | None) -> int: ...
    def rule(self, index: int) -> tuple[int, int, int, str, bytes]: ...
    def set_default(self, list: int) -> None: ...
    def check_bash(
        self, line: str | bytes
    ) -> tuple[int, int, list[tuple[int, int, int, bytes, bytes]], tuple[int, ...]]: ...
    def set_outcomes(self, outcomes: tuple[Any, Any, Any, Any]) -> None: ...
    def decide(self, tool: object, args: object) -> Any: ...
    def set_fallback(self, fn: Callable[[Any, Any], Any]) -> None: ...
    def call(self, tool: Any, args: Any = None) -> Any: ...
    def clear_memo(self) -> None: ...
    def __len__(self) -> int: ...

class Sandbox:
    workspace: str
    def __init__(
        self,
        workspace: str,
        init: str,
        bwrap: str | None = None,
        process_host: bool = False,
        no_landlock: bool = False,
        scratch_parent: str | None = None,
        host_env: list[str] | None = None,
        reuse: bool = False,
        readonly_workspace: bool = False,
        share_net: bool = False,
        memory_max_bytes: int = 0,
        max_processes: int = 0,
        tmpfs_max_bytes: int = 0,
        inotify_watch_budget: int = 0,
        idle_stop_ms: int = 0,
        init_sha256: str | None = None,
        host_code: list[str] | None = None,
    ) -> None: ...
    def exec(
        self,
        command: str | bytes,
        env: list[str],
        timeout_ms: int,
        grace_ms: int,
        max_output_bytes: int,
        cancel_fd: int,
        grant_fd: int = -1,
        policy_digest: str | None = None,
        on_output: Callable[[int, bytes], object] | None = None,
        cwd: str | None = None,
        exec_deny: list[str] | None = None,
        exec_ask: list[str] | None = None,
        exec_approved: list[str] | None = None,
        stdin: bytes | None = None,
    ) -> dict[str, Any]:
        """exit_code, term_signal, timed_out, oom_killed, hard_linked, outlived (something
        of the command may have run after the result: A3S_RESULT_OUTLIVED), the truncation
        and setup flags, exec_stopped (what the exec check stopped, or None), cancelled,
        policy_changed, stdout, stderr, their totals, duration_us, setup_error, neutralized."""
    def policy(self) -> tuple[str, str]: ...
    def probe(self, timeout_ms: int) -> None: ...
    def stop(self) -> None: ...
    def info(self) -> dict[str, Any]: ...
    def spawn(
        self,
        path: str,
        args: list[str],
        env: list[str],
        cwd: str | None = None,
        grace_ms: int = 0,
    ) -> tuple[Child, int, int, int]: ...

class Child:
    """An owned process; its status dicts hold exited, exit_code, pid, killed, sandboxed,
    pid_namespace, cgroup."""

    def wait(self, timeout_ms: int) -> dict[str, Any]: ...
    def stop(self, sig: int = ..., /) -> dict[str, Any]: ...
    def signal(self, sig: int, /) -> None: ...
    def info(self) -> dict[str, Any]: ...

def spawn_child(
    path: str,
    args: list[str],
    env: list[str],
    cwd: str | None = None,
    init: str | None = None,
    host_env: list[str] | None = None,
    grace_ms: int = 0,
    init_sha256: str | None = None,
    bwrap: str | None = None,
    allow_unowned: bool = False,
) -> tuple[Child, int, int, int]: ...
def version() -> dict[str, int | str]: ...
def abi_version() -> int: ...
def features() -> dict[str, bool | int]: ...
def status_name(code: int) -> str: ...
def path_normalize(path: str | bytes) -> str: ...

# bash_read: (complete, bounded, sources, commands, words, redirs); see guardrail/_reading.py
def bash_read(
    line: str | bytes,
) -> tuple[
    bool,
    bool,
    list[tuple[str, int, int, int, str | None, tuple[tuple[int, str | None], ...]]],
    list[
        tuple[
            int, int, int, int, int, tuple[tuple[int, str | None], ...], int, str | None, bool, bool
        ]
    ],
    list[tuple[str, tuple[str, ...], int, int, bool, bool]],
    list[tuple[str, int, str | None]],
]: ...
def relay(
    a: int, b: int, cancel_fd: int = -1, pipe_bytes: int = 0
) -> tuple[int, int, bool, bool]: ...
def protected_names() -> tuple[tuple[str, ...], tuple[str, ...]]: ...
def canonical_json(value: object) -> str: ...  # TypeError/ValueError: use _subject._encode

# Linux only (verification/_inotify.py): thin wrappers over the system calls.
IN_MODIFY: int
IN_ATTRIB: int
IN_CLOSE_WRITE: int
IN_MOVED_FROM: int
IN_MOVED_TO: int
IN_CREATE: int
IN_DELETE: int
IN_DELETE_SELF: int
IN_MOVE_SELF: int
IN_UNMOUNT: int
IN_Q_OVERFLOW: int
IN_IGNORED: int
IN_ONLYDIR: int
IN_EXCL_UNLINK: int
IN_ISDIR: int

def inotify_init() -> int: ...
def inotify_add_watch(fd: int, path: str | bytes, mask: int) -> int: ...
def inotify_rm_watch(fd: int, wd: int) -> None: ...
def fstatfs_type(fd: int) -> int: ...
