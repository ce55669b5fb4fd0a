"""Sandboxes over the C core: the native bubblewrap boundary and the opted-in process host."""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time
import weakref

from .. import _native
from .._errors import NativeCoreError, SandboxArgumentError, SandboxError, SandboxUnavailable
from ._args import check_exec_args
from ._base import SandboxBase
from ._locate import MIN_BWRAP, bwrap_version, find_bwrap, init_path
from ._probe_cache import forget_pass, probe_key, recall_pass, remember_pass

# This module is on `codeward exec`'s path, where every import is start-up time: what is
# needed only for annotations, the output type or the probe is imported where it is used.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from types import TracebackType
    from typing import Any, ClassVar

    from ._limits import SandboxLimits
    from ._output import CommandOutput, ExecRules, SandboxPolicy

DEFAULT_TIMEOUT_MS = 120_000
DEFAULT_MAX_OUTPUT = 102_400
PROBE_TIMEOUT_MS = 10_000


def _env_entries(env: Mapping[str, str] | None) -> list[str]:
    if not env:
        return []
    entries = []
    for key, value in env.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise SandboxArgumentError("environment names and values must be strings")
        if not key or "=" in key or "\0" in key:
            raise SandboxArgumentError(
                f"invalid environment variable name {key!r}: it must be non-empty, "
                "without '=' or NUL"
            )
        if "\0" in value:
            raise SandboxArgumentError(f"environment variable {key} contains a NUL byte")
        entries.append(f"{key}={value}")
    return entries


def _check_cwd(cwd: str | None) -> str | None:
    """``cwd`` as the C core takes it: None, or a non-empty str without NUL."""
    if cwd is None:
        return None
    if not isinstance(cwd, str) or not cwd or "\0" in cwd:
        raise SandboxArgumentError(f"cwd must be a non-empty path without NUL, not {cwd!r}")
    return cwd


def _stdin_bytes(stdin: bytes | bytearray | memoryview | str | None) -> bytes | None:
    """``stdin`` as the C core takes it: None (/dev/null), or bytes (a str as UTF-8)."""
    if stdin is None or isinstance(stdin, bytes):
        return stdin
    if isinstance(stdin, str):
        return stdin.encode("utf-8", "surrogateescape")
    if isinstance(stdin, (bytearray, memoryview)):
        return bytes(stdin)
    raise SandboxArgumentError(f"stdin must be bytes, str or None, not {type(stdin).__name__}")


def _raise_native(exc: Any, workspace: str) -> None:
    status, message = exc.args[0], exc.args[1]
    if status == "invalid":
        raise SandboxArgumentError(message) from None
    if status in ("unsupported", "refused"):
        raise SandboxUnavailable(message, workspace=workspace, cause=message) from None
    raise NativeCoreError(message, status=status, errno=exc.args[3]) from None


class _CancelBridge:
    """Turns a threading.Event-like `cancel` into a pipe the C runner polls.

    The watcher polls the event every 50 ms; ``close()`` does not wait for
    it (a command must not pay up to a poll interval when it ends): under
    the lock it marks the bridge closed and closes the pipe, and the
    watcher, which writes only under the same lock while the bridge is
    open, then exits at its next poll.
    """

    def __init__(self, cancel: Any) -> None:
        self._read, self._write = os.pipe()
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._watch, args=(cancel,), daemon=True)
        self._thread.start()

    @property
    def fd(self) -> int:
        return self._read

    def _watch(self, cancel: Any) -> None:
        waiter = getattr(cancel, "wait", None)
        while True:
            if waiter is not None:
                waiter(0.05)
            else:
                time.sleep(0.05)
            with self._lock:
                if self._closed:
                    return
                if cancel.is_set():
                    os.write(self._write, b"x")
                    return

    def close(self) -> None:
        with self._lock:
            self._closed = True
            os.close(self._read)
            os.close(self._write)


# Handles whose long-lived sandbox must be stopped when the interpreter exits, so its
# placeholders leave the workspace (after a SIGKILL the next run's journal sweep does it).
_LIVE: weakref.WeakSet[_CoreSandbox] = weakref.WeakSet()
_LIVE_LOCK = threading.Lock()


@atexit.register
def _stop_all() -> None:
    with _LIVE_LOCK:
        live = list(_LIVE)
    for sb in live:
        sb.close()


class _CoreSandbox(SandboxBase):
    """Shared plumbing of the two sandboxes the C core runs.

    ``close()`` (also on leaving a ``with`` block, on garbage collection and
    at interpreter exit) stops a long-lived sandbox; a later exec starts a
    new one.
    """

    _backend = "bwrap"
    _sandboxed = True
    supports_network_grants: ClassVar[bool] = False  # a boundary of its own to mediate through
    # the init checks every exec against ExecRules (docs/policy.md, "The exec check")
    supports_exec_check: ClassVar[bool] = True

    def __init__(self, workspace: str | os.PathLike[str], *, _handle: Any) -> None:
        self._handle = _handle
        self._workspace = str(_handle.workspace)
        with _LIVE_LOCK:
            _LIVE.add(self)

    def close(self) -> None:
        """Stops the long-lived sandbox, if one runs, and removes its placeholders.

        A command running in it is cancelled first, and the handle lets go of
        its credential scan's inotify watches and its idle-stop thread (issue
        26). The object stays usable: the next command sets them up again
        (with the init pinned when the object was made); what is left until
        the object is freed is its init's copy and a wake-up pipe.
        """
        self._handle.stop()

    def __enter__(self) -> _CoreSandbox:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def policy(self) -> SandboxPolicy:
        """The canonical text of the policy a command would run under now, and its digest.

        Read off the plan the C core would run a command with (docs/security.md,
        "Network grants"); the same for one-shot and long-lived runs. Raises
        SandboxUnavailable when a command would be refused right now (a
        symlinked protected name ...).
        """
        try:
            text, digest = self._handle.policy()
        except _native.NativeError as exc:
            _raise_native(exc, self._workspace)
            raise  # unreachable: _raise_native always raises
        from ._output import SandboxPolicy

        return SandboxPolicy(text, digest)

    def exec(
        self,
        command: str,
        *,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
        env: Mapping[str, str] | None = None,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT,
        kill_grace_ms: int = 500,
        cancel: Any = None,
        grant_fd: int | None = None,
        policy_digest: str | None = None,
        on_output: Callable[[int, bytes], object] | None = None,
        cwd: str | None = None,
        exec_rules: ExecRules | None = None,
        stdin: bytes | bytearray | memoryview | str | None = None,
    ) -> CommandOutput:
        """Runs ``bash -c command`` and returns its output (never raises for the command's fate).

        ``on_output(stream, data)`` is called with each piece of output as it
        arrives (stream 1: stdout, 2: stderr; ``data`` the raw bytes, every
        byte, also past ``max_output_bytes``), on the thread that runs the
        command; an exception it raises is raised once the command is over.

        ``grant_fd`` (with ``policy_digest``) is a network grant's socket from
        ``codeward.netgrant.Admission.fd``: this command alone reaches the
        network through the session's mediator. ``policy_digest`` alone pins
        the command to :meth:`policy`'s digest: if the policy changed, nothing
        runs and the output says ``policy_changed``. ``exec_rules`` turns on the
        exec check (:class:`ExecRules`): every program the command runs is
        checked against them at its exec, and ``exec_stopped`` says what was
        stopped.

        ``stdin`` (bytes, or a str sent as UTF-8) is what the command reads on
        its standard input, then end of file (None: /dev/null). It is written
        while the output is drained; a command that does not read it all just
        does not get the rest.
        """
        from ._output import CommandOutput, ExecStop

        fields = self._run(
            command,
            timeout_ms=timeout_ms,
            env=env,
            max_output_bytes=max_output_bytes,
            kill_grace_ms=kill_grace_ms,
            cancel=cancel,
            grant_fd=grant_fd,
            policy_digest=policy_digest,
            exec_rules=exec_rules,
            on_output=on_output,
            cwd=cwd,
            stdin=stdin,
        )
        stopped = fields.pop("exec_stopped")
        return CommandOutput(**fields, exec_stopped=ExecStop(**stopped) if stopped else None)

    def _run(
        self,
        command: str,
        *,
        timeout_ms: int,
        env: Mapping[str, str] | None,
        max_output_bytes: int,
        kill_grace_ms: int,
        cancel: Any,
        grant_fd: int | None = None,
        policy_digest: str | None = None,
        on_output: Callable[[int, bytes], object] | None = None,
        cwd: str | None = None,
        exec_rules: ExecRules | None = None,
        stdin: bytes | bytearray | memoryview | str | None = None,
    ) -> dict[str, Any]:
        """``exec``, with the fields of its CommandOutput as a dict (the command line's path;
        ``exec_stopped`` a dict or None)."""
        check_exec_args(command, timeout_ms, max_output_bytes, kill_grace_ms)
        entries = _env_entries(env)
        if grant_fd is not None and not self.supports_network_grants:
            raise SandboxArgumentError(f"the {self._backend} backend cannot mediate network grants")
        bridge = _CancelBridge(cancel) if cancel is not None else None
        try:
            raw = self._handle.exec(
                command.encode("utf-8", "surrogateescape"),
                entries,
                timeout_ms,
                kill_grace_ms,
                max_output_bytes,
                bridge.fd if bridge else -1,
                -1 if grant_fd is None else grant_fd,
                policy_digest,
                on_output,
                _check_cwd(cwd),
                list(exec_rules.deny) if exec_rules else None,
                list(exec_rules.ask) if exec_rules else None,
                list(exec_rules.approved) if exec_rules else None,
                _stdin_bytes(stdin),
            )
        except _native.NativeError as exc:
            _raise_native(exc, self._workspace)
            raise  # unreachable: _raise_native always raises
        finally:
            if bridge:
                bridge.close()
        return {
            "stdout": raw["stdout"].decode("utf-8", "replace"),
            "stderr": raw["stderr"].decode("utf-8", "replace"),
            "exit_code": raw["exit_code"],
            "timed_out": raw["timed_out"],
            "truncated": raw["stdout_truncated"] or raw["stderr_truncated"],
            "total_bytes": raw["stdout_total"] + raw["stderr_total"],
            "sandboxed": self._sandboxed,
            "backend": self._backend,
            "setup_error": raw["setup_error"],
            "cancelled": raw["cancelled"],
            "duration_ms": raw["duration_us"] / 1000.0,
            # lines end at "\n" only, as in Node and Go (a name may hold U+2028)
            "neutralized": tuple(raw["neutralized"].split("\n")) if raw["neutralized"] else (),
            "oom_killed": raw["oom_killed"],
            "hard_linked": raw["hard_linked"],
            "outlived": raw["outlived"],
            "policy_changed": raw["policy_changed"],
            "exec_stopped": raw["exec_stopped"],
        }


def _host_code() -> list[str]:
    """Where this interpreter loads code from: its prefixes and every module path entry.

    The core binds each one that lies inside the workspace read-only in the sandbox
    (docs/security.md, "The host's own code"), so that a command cannot rewrite a module
    this process imports later. Read at each handle's creation: a path added later to
    ``sys.path`` counts for the handles made after it.
    """
    entries = [sys.prefix, sys.exec_prefix, sys.base_prefix, *sys.path]
    return [p for p in dict.fromkeys(entries) if isinstance(p, str) and os.path.isabs(p)]


def _new_handle(workspace: str | os.PathLike[str], **kwargs: Any) -> Any:
    init = init_path()
    if init is None:
        raise SandboxUnavailable(
            "the a3s-init executable is missing from the installed package; reinstall codeward",
            workspace=str(workspace),
            cause="a3s-init missing",
        )
    try:
        # the digest of the init this package was built with: the core runs a copy checked
        # against it, never the file a command may have rewritten (docs/security.md)
        return _native.Sandbox(
            os.fspath(workspace),
            init,
            init_sha256=_native.INIT_SHA256,
            host_code=_host_code(),
            **kwargs,
        )
    except _native.NativeError as exc:
        _raise_native(exc, str(workspace))


class NativeBashSandbox(_CoreSandbox):
    """The enforced boundary: bubblewrap namespaces, seccomp and Landlock around every command.

    ``limits`` bounds memory, processes, tmpfs sizes and the credential
    scan's inotify watches (:class:`SandboxLimits`; safe defaults when
    omitted). By default (``reuse=True``) the object keeps one long-lived sandbox and
    runs each command in it as a fresh, fully confined process; the sandbox
    is rebuilt whenever the workspace changed under it in a way that matters
    (docs/security.md), and a second concurrent ``exec`` runs in a sandbox
    of its own rather than waiting. ``reuse=False`` starts one bubblewrap
    per command. Use it as a context manager, or call :meth:`close`, to stop
    the long-lived sandbox (it is also stopped when the object is collected
    and at interpreter exit): until then the read-only placeholders of
    missing protected names (``.bashrc``, ``.mcp.json`` ...) stay in the
    workspace, where host tools such as ``git status`` see them.

    Construct it through :func:`select_sandbox`, which probes first; building
    one directly skips the readiness probe (call :meth:`probe` yourself).
    """

    _backend = "bwrap"
    _sandboxed = True
    supports_network_grants: ClassVar[bool] = True
    _probe_cache: ClassVar[dict[tuple[str, str], str | None]] = {}
    # (bwrap, init) whose verdict in _probe_cache is a pass read from the store, not a self-test
    _recalled: ClassVar[set[tuple[str, str]]] = set()
    _probe_lock = threading.Lock()
    _default_reuse: ClassVar[bool] = True  # tests flip it to run the suites one-shot

    def __init__(
        self,
        workspace: str | os.PathLike[str],
        *,
        bwrap: str | None = None,
        reuse: bool | None = None,
        limits: SandboxLimits | None = None,
    ) -> None:
        bwrap = bwrap or find_bwrap(os.fspath(workspace))
        if bwrap is None:
            raise SandboxUnavailable(
                "bubblewrap (bwrap) is not installed",
                workspace=str(workspace),
                cause="bwrap missing",
            )
        if reuse is None:
            reuse = self._default_reuse
        if not isinstance(reuse, bool):
            raise SandboxArgumentError("reuse must be True or False")
        bounds: dict[str, int] = {}
        if limits is not None:  # (None: the C core's defaults, without importing the class)
            from ._limits import SandboxLimits

            if not isinstance(limits, SandboxLimits):
                raise SandboxArgumentError("limits must be a SandboxLimits")
            bounds = limits.native_kwargs()
        super().__init__(
            workspace, _handle=_new_handle(workspace, bwrap=bwrap, reuse=reuse, **bounds)
        )
        self._bwrap = bwrap
        self._reuse = reuse
        self._limits = limits
        self._probe_key = (bwrap, init_path() or "")
        # set when a start failed after a kept pass and the self-test then failed too
        self.withdrawn_cause: str | None = None

    @property
    def reuse(self) -> bool:
        """Whether commands run in one long-lived sandbox (else one bubblewrap each)."""
        return self._reuse

    @property
    def limits(self) -> SandboxLimits:
        """The resource bounds asked for (``None`` fields: the defaults)."""
        from ._limits import SandboxLimits

        return self._limits or SandboxLimits()

    @classmethod
    def probe(
        cls, bwrap: str | None = None, workspace: str | None = None, *, fresh: bool = False
    ) -> str | None:
        """None if the boundary works on this machine, else the reason it does not.

        It runs a self-test through the real boundary once per process (per
        bubblewrap binary) and caches the verdict. A pass is also kept for
        other processes of the same user, keyed on everything it depends on
        (the bubblewrap, a3s-init and C core files, the kernel, the caller's
        ids and namespaces, the user namespace settings: sandbox/_probe_cache.py),
        so a new process skips the self-test until one of those changes.
        ``fresh=True`` runs the self-test whatever was kept (``codeward doctor``).
        """
        bwrap = bwrap or find_bwrap(workspace)
        if bwrap is None:
            return (
                "bubblewrap (bwrap) is not installed as a root-owned system program: "
                "apt-get install bubblewrap"
            )
        init = init_path()
        key = (bwrap, init or "")
        with cls._probe_lock:
            if fresh or key not in cls._probe_cache:
                cls._probe_cache[key] = cls._probe_or_recall(bwrap, init, fresh)
            return cls._probe_cache[key]

    @classmethod
    def _probe_or_recall(cls, bwrap: str, init: str | None, fresh: bool) -> str | None:
        stored = probe_key(bwrap, init, getattr(_native, "__file__", None))
        key = (bwrap, init or "")
        cls._recalled.discard(key)
        if not fresh and recall_pass(stored):
            cls._recalled.add(key)
            return None
        verdict = cls._run_probe(bwrap)
        if verdict is None:
            remember_pass(stored)
        return verdict

    def _recheck_after_failed_start(self) -> str | None:
        """After a start failure: if this process's pass came from the store, drop it and
        run the self-test again; its verdict (None: the boundary works after all).

        A kept pass is keyed on every fact it depends on, but a fact can be missed (a
        confinement no file shows): a start that fails is the ground truth, and selection
        must then go as if nothing had been kept.
        """
        bwrap, init = self._probe_key
        with self._probe_lock:
            if self._probe_key not in self._recalled:
                return None
            self._recalled.discard(self._probe_key)
            forget_pass(probe_key(bwrap, init or None, getattr(_native, "__file__", None)))
            verdict = self._probe_or_recall(bwrap, init or None, True)
            self._probe_cache[self._probe_key] = verdict
            return verdict

    def _run(self, command: str, **kwargs: Any) -> dict[str, Any]:
        out = super()._run(command, **kwargs)
        if out["setup_error"] and not out["policy_changed"]:
            cause = self._recheck_after_failed_start()
            if cause is not None:
                self.withdrawn_cause = cause
                raise SandboxUnavailable(
                    f"the sandbox failed to start ({out['setup_error']}) and the readiness "
                    f"probe, run again, fails: {cause}",
                    workspace=self._workspace,
                    cause=cause,
                )
        return out

    @staticmethod
    def _run_probe(bwrap: str) -> str | None:
        version = bwrap_version(bwrap)
        if version is None or version < MIN_BWRAP:
            shown = ".".join(map(str, version)) if version else "unknown"
            return f"{bwrap} is version {shown}; bubblewrap 0.8 or newer is required"
        features = _native.features()
        if not features["user_namespaces"]:
            return (
                "user namespaces are not available: enable them "
                "(sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0) "
                "or allow them in the container runtime"
            )
        if not features["seccomp_filter"]:
            return "the kernel has no seccomp filter support"
        import shutil
        import tempfile

        probe_dir = tempfile.mkdtemp(prefix="a3s-probe-")
        try:
            # through a long-lived sandbox: the path commands take by default
            handle = _new_handle(probe_dir, bwrap=bwrap, reuse=True)
            try:
                handle.probe(PROBE_TIMEOUT_MS)
            finally:
                handle.stop()
        except SandboxError as exc:
            return str(exc)
        except _native.NativeError as exc:
            return str(exc.args[1])
        finally:
            shutil.rmtree(probe_dir, ignore_errors=True)
        return None


class ProcessHostBashSandbox(_CoreSandbox):
    """No boundary: ``bash -c`` on the host, for hosts whose outer container or VM is the boundary.

    Commands still get their own process group under a3s-init (a child
    subreaper, so background and double-forked children die with the
    command), the same timeout and bounded output, and a scrubbed
    environment; every result says ``sandboxed=False``.
    """

    _backend = "process-host"
    _sandboxed = False

    def __init__(self, workspace: str | os.PathLike[str]) -> None:
        super().__init__(workspace, _handle=_new_handle(workspace, process_host=True))
