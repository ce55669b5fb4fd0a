"""The server's process, owned through the C core: on the host, or in a sandbox of its own.

On the host the program runs under a3s-init in host mode as PID 1 of a pid
namespace of its own (bubblewrap makes it, with a /proc of its own): it
cannot kill its init to escape, and it sees no process of the host, so
neither their environment nor their memory. Where no user namespace can be
made, it runs in a cgroup of its own under a warden that empties the
cgroup when the server's init or the host ends (it still sees the host's
processes). Where neither can be had, the spawn is refused
(McpUnownedError) unless the host allowed an unowned server, which then
runs under the init as a subreaper. In a sandbox,
bubblewrap's PID 1 is the same init. Either way stopping it, garbage
collection and the host's death (even SIGKILL) take every process of the
server down (docs/mcp.md). A stop sends SIGTERM first, through the init
(which, in a namespace of its own, takes no signal from outside), so the
server's handler can run before SIGKILL ends what is left after the grace.
"""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import _native
from ..sandbox._locate import find_bwrap, init_path
from ._errors import McpError, McpStartError, McpUnownedError

__all__ = ["OwnedProcess", "SandboxSpec", "spawn"]

_UNOWNABLE = 1  # a3s_error.detail: A3S_CHILD_UNOWNABLE (a3s.h)
MAX_SIGNAL = 64  # a3s_child_signal takes 1..64 (SIGRTMAX)


@dataclass(frozen=True)
class SandboxSpec:
    """Where a sandboxed server runs: the workspace (read-only unless writable), the network."""

    workspace: str
    writable_workspace: bool = False
    network: bool = False


class OwnedProcess:
    """One running server: its three pipe ends and the handle that stops and reaps it.

    The transport owns the fds; this object owns the process. Both ``wait``
    and ``stop`` release the GIL while they block.
    """

    def __init__(self, child: Any, stdin: int, stdout: int, stderr: int, sandbox: Any) -> None:
        self._child = child
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        self._sandbox = sandbox  # kept alive: a sandboxed server's plan lives in it
        info = child.info()
        self.pid: int = info["pid"]
        self.sandboxed: bool = info["sandboxed"]
        self.pid_namespace: bool = info["pid_namespace"]
        self.cgroup: bool = info["cgroup"]  # owned by a cgroup of its own, under a warden
        # neither: unowned, under the subreaper

    def wait(self, timeout_ms: int) -> int | None:
        """The exit status once the server has ended (waiting up to ``timeout_ms``), else None."""
        status = self._child.wait(max(0, int(timeout_ms)))
        return int(status["exit_code"]) if status["exited"] else None

    def stop(self, sig: int = signal.SIGTERM) -> int:
        """``sig`` (SIGTERM) to every process of the server, SIGKILL after the grace (sooner if
        they end sooner); its exit status, the server's own when its handler exits."""
        return int(self._child.stop(_signal_number(sig))["exit_code"])

    def send_signal(self, sig: int) -> None:
        """Sends ``sig`` to every process of the server without stopping it (nothing once it
        has ended).

        The init is asked to send it, over the pipe only this process writes: in
        a sandbox, or a pid namespace of its own, it takes no signal from outside.
        """
        try:
            self._child.signal(_signal_number(sig))
        except _native.NativeError as exc:
            raise McpError(f"signal {sig} could not be sent: {exc.args[1]}") from None

    def terminate(self) -> None:
        """SIGTERM to every process of the server (``stop`` also waits, then kills)."""
        self.send_signal(signal.SIGTERM)

    def running(self) -> bool:
        return not self._child.info()["exited"]


def _signal_number(sig: int) -> int:
    """``sig`` as the C core takes it: a signal number from 1 to 64 (a ``signal.Signals``)."""
    if isinstance(sig, bool) or not isinstance(sig, int) or not 1 <= sig <= MAX_SIGNAL:
        raise ValueError(f"{sig!r} is not a signal number (1 to {MAX_SIGNAL})")
    return int(sig)


def _resolve(command: str, env: Mapping[str, str], cwd: str | None) -> str:
    """The absolute program path: a path as given (relative to cwd), else a PATH search."""
    if os.sep in command:
        path = command if os.path.isabs(command) else os.path.join(cwd or os.getcwd(), command)
        return os.path.abspath(path)
    search = env.get("PATH") or os.environ.get("PATH") or os.defpath
    found = shutil.which(command, path=search)
    if found is None:
        raise McpStartError(f"command {command!r} was not found on PATH ({search})")
    return os.path.abspath(found)


def spawn(
    name: str,
    command: str,
    args: Sequence[str],
    env: Mapping[str, str],
    cwd: str | None,
    sandbox: SandboxSpec | None,
    grace_ms: int,
    *,
    allow_unowned: bool = False,
) -> OwnedProcess:
    """Starts the server's program; raises McpStartError with the reason when it cannot."""
    init = init_path()
    if init is None:
        raise McpStartError(
            "the a3s-init executable is missing from the installed package; reinstall codeward",
            server=name,
        )
    try:
        path = _resolve(command, env, cwd)
    except McpStartError as exc:
        raise McpStartError(f"server {name!r}: {exc}", server=name) from None
    entries = [f"{k}={v}" for k, v in env.items()]
    handle: Any = None
    try:
        if sandbox is None:
            child, stdin, stdout, stderr = _native.spawn_child(
                path,
                list(args),
                entries,
                cwd=cwd,
                init=init,
                grace_ms=grace_ms,
                init_sha256=_native.INIT_SHA256,
                bwrap=find_bwrap(),
                allow_unowned=allow_unowned,
            )
        else:
            bwrap = find_bwrap(sandbox.workspace)
            if bwrap is None:
                raise McpStartError(
                    f"server {name!r} asks for a sandbox, but bubblewrap (bwrap) is not installed",
                    server=name,
                )
            handle = _native.Sandbox(
                sandbox.workspace,
                init,
                bwrap=bwrap,
                readonly_workspace=not sandbox.writable_workspace,
                share_net=sandbox.network,
                init_sha256=_native.INIT_SHA256,
            )
            child, stdin, stdout, stderr = handle.spawn(
                path, list(args), entries, cwd=cwd, grace_ms=grace_ms
            )
    except _native.NativeError as exc:
        status, message, detail = exc.args[0], exc.args[1], exc.args[2]
        if status == "unsupported" and detail == _UNOWNABLE:
            raise McpUnownedError(
                f"server {name!r} was refused: {message}; pass allow_unowned=True to run it "
                "anyway (docs/mcp.md)",
                server=name,
            ) from None
        raise McpStartError(
            f"server {name!r} could not be started ({status}): {message}", server=name
        ) from None
    return OwnedProcess(child, stdin, stdout, stderr, handle)
