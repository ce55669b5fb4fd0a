"""``codeward mcp serve``: the session's tools to any MCP client, over stdio.

One server is one Session (one workspace, one long-lived sandbox, one
kernel). Each ``tools/call`` is a model call: ``session.invoke`` decides and
runs it, exactly as for a host that calls the API, on a worker thread of its
own, so a long command never stalls the connection. The server adds only
what MCP needs around it:

- confirmations go to the client as ``elicitation/create`` requests
  (:class:`codeward.hitl.ElicitationProvider`) when the client declared the
  capability; otherwise the kernel denies the Ask and the result names the
  rule that asked and how to allow it;
- a call whose request carries a progress token gets a
  ``notifications/progress`` every second while it runs;
- ``notifications/cancelled`` sets the call's cancel event: the kernel kills
  the command's whole tree, and a pending confirmation of the call is
  rejected; a cancelled request gets no response, as MCP says;
- end of input (the client closed stdin or died), SIGTERM or SIGINT cancel
  every call, reject every pending confirmation, and close the session,
  which ends the sandbox and removes its placeholders before the process
  exits.

Why not the MCP Python SDK: codeward depends on three small libraries and the
SDK would add its whole tree (pydantic, anyio, starlette, httpx ...) to a
security kernel; the kernel is synchronous and thread-safe, while the SDK's
server is async, so every call and every confirmation (asked from the
kernel's own provider thread) would have to cross an anyio bridge; and the
part of MCP a tool server speaks is small (initialize, ping, tools/list,
tools/call, cancellation, progress, elicitation). The tests drive this server
with the SDK's own client, the TypeScript SDK's client and the Inspector.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import signal
import threading
import time
from collections.abc import Callable, Mapping
from types import FrameType
from typing import IO, Any

from .._version import __version__
from ._catalog import call_result, tool_definitions
from ._rpc import (
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    Connection,
    PeerError,
    PeerGone,
    protocol_streams,
)

__all__ = ["PROTOCOL_VERSIONS", "McpToolServer", "serve"]

log = logging.getLogger("codeward.mcpserver")

# Newest first: a client asking for one of these gets it; any other gets the first.
PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
PROGRESS_INTERVAL_S = 1.0
MAX_CONCURRENT_CALLS = 16
SHUTDOWN_GRACE_S = 1.0  # for cancelled calls to end before the session closes under them
# the signals that end the server with a cleanup (Windows has no SIGHUP)
_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGINT", "SIGHUP") if hasattr(signal, name)
)
_GATE = ("verify", "complete_turn")

INSTRUCTIONS = (
    "Tools of a codeward session over one workspace. Every call is decided by codeward's "
    "kernel (guardrails, mode, permission policy, confirmation) before it runs; bash runs "
    "inside a sandbox where only the workspace is writable and there is no network. Paths are "
    "relative to the workspace. A refused call says why. When the turn changed files, call "
    "verify, then complete_turn."
)


class _Call:
    """One tools/call in flight: its cancel event and its kernel call id."""

    __slots__ = ("call_id", "cancel", "cancelled")

    def __init__(self, call_id: str) -> None:
        self.call_id = call_id
        self.cancel = threading.Event()
        self.cancelled = False


class McpToolServer:
    """Serves one session's tools to one client on ``conn``."""

    def __init__(self, session: Any, conn: Connection) -> None:
        self.session = session
        self.conn = conn
        self._elicitation = False
        self._version = PROTOCOL_VERSIONS[0]
        self._calls: dict[str, _Call] = {}  # by the JSON-encoded request id
        self._lock = threading.Lock()
        self._workers: set[threading.Thread] = set()
        self._slots = threading.BoundedSemaphore(MAX_CONCURRENT_CALLS)
        self._ids = itertools.count(1)

    # -- the confirmation provider's side -------------------------------------------------

    def elicitation_supported(self) -> bool:
        return self._elicitation and not self.conn.closed.is_set()

    def elicit(
        self,
        message: str,
        schema: Mapping[str, Any],
        timeout_s: float,
        settled: Callable[[], bool],
    ) -> Any:
        params: dict[str, Any] = {"message": message, "requestedSchema": dict(schema)}
        if self._version == "2025-11-25":
            params["mode"] = "form"  # the field exists from this version on
        try:
            return self.conn.request("elicitation/create", params, timeout_s, abandon=settled)
        except (PeerGone, PeerError, TimeoutError) as exc:
            log.info("elicitation failed closed: %s", exc)
            return None

    # -- the loop ---------------------------------------------------------------------------

    def run(self) -> None:
        """Reads and dispatches messages until the client goes away."""
        try:
            while True:
                message = self.conn.read()
                if message is not None:
                    self._dispatch(message)
        except PeerGone:
            pass
        finally:
            self.shutdown()

    def shutdown(self) -> None:
        """Cancels every call and confirmation, waits for the workers, closes the session."""
        if threading.current_thread() is threading.main_thread():
            for signum in _SIGNALS:  # a second signal must not interrupt the cleanup
                signal.signal(signum, signal.SIG_IGN)
        self.conn.close()
        with self._lock:
            calls = list(self._calls.values())
            workers = list(self._workers)
        for call in calls:
            call.cancelled = True
            call.cancel.set()
        try:
            self.session.cancel_confirmations()
            deadline = time.monotonic() + SHUTDOWN_GRACE_S
            for worker in workers:
                worker.join(max(0.0, deadline - time.monotonic()))
        finally:
            self.session.close()  # the sandbox ends, its placeholders leave the workspace

    def _dispatch(self, message: Mapping[str, Any]) -> None:
        method = message.get("method")
        params = message.get("params")
        params = params if isinstance(params, Mapping) else {}
        if "id" not in message:
            self._notification(str(method), params)
            return
        id = message["id"]
        try:
            if method == "tools/call":
                self._start_call(id, params)
            elif method == "initialize":
                self.conn.respond(id, self._initialize(params))
            elif method == "ping":
                self.conn.respond(id, {})
            elif method == "tools/list":
                self.conn.respond(id, {"tools": tool_definitions(self.session.tool_schemas())})
            else:
                self.conn.send_error(id, METHOD_NOT_FOUND, f"method not found: {method!r}")
        except PeerGone:
            raise
        except Exception as exc:  # a bug must answer the request, not end the server
            log.exception("request %r failed", method)
            self.conn.send_error(id, -32603, f"internal error: {type(exc).__name__}: {exc}")

    def _notification(self, method: str, params: Mapping[str, Any]) -> None:
        if method != "notifications/cancelled":
            return  # initialized, roots/list_changed ...: nothing to do
        key = _key(params.get("requestId"))
        with self._lock:
            call = self._calls.get(key)
        if call is None:
            return  # finished already, or never ours
        call.cancelled = True
        call.cancel.set()
        # a call waiting for its confirmation is rejected; the kernel then never runs it
        self.session.confirm_tool_use(call.call_id, False, "cancelled by the client")

    def _initialize(self, params: Mapping[str, Any]) -> dict[str, Any]:
        asked = params.get("protocolVersion")
        version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
        self._version = version
        capabilities = params.get("capabilities")
        elicitation = capabilities.get("elicitation") if isinstance(capabilities, Mapping) else None
        # form elicitation: an empty object (2025-06-18) or one naming "form" (2025-11-25)
        self._elicitation = isinstance(elicitation, Mapping) and (
            not elicitation or "form" in elicitation
        )
        return {
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "codeward", "title": "codeward", "version": __version__},
            "instructions": INSTRUCTIONS,
        }

    # -- tools/call ---------------------------------------------------------------------------

    def _start_call(self, id: object, params: Mapping[str, Any]) -> None:
        name = params.get("name")
        args = params.get("arguments", {})
        if not isinstance(name, str) or not name:
            self.conn.send_error(id, INVALID_PARAMS, "tools/call needs a tool name")
            return
        if args is None:
            args = {}
        if not isinstance(args, Mapping):
            self.conn.send_error(id, INVALID_PARAMS, "tools/call arguments must be an object")
            return
        meta = params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, Mapping) else None
        key = _key(id)
        call = _Call(f"mcp-{self.session.id[:8]}-{next(self._ids)}")
        with self._lock:
            if key in self._calls:
                self.conn.send_error(id, INVALID_PARAMS, f"request id {id!r} is already in use")
                return
            self._calls[key] = call
        if not self._slots.acquire(blocking=False):  # never block the reader: it must go on
            with self._lock:  # reading answers and cancellations for the calls in flight
                self._calls.pop(key, None)
            self.conn.send_error(
                id, -32603, f"too many calls in flight (at most {MAX_CONCURRENT_CALLS})"
            )
            return
        worker = threading.Thread(
            target=self._serve_call,
            args=(id, key, call, name, dict(args), token),
            name=f"mcp-call-{call.call_id}",
            daemon=True,
        )
        with self._lock:
            self._workers.add(worker)
        worker.start()

    def _serve_call(
        self,
        id: object,
        key: str,
        call: _Call,
        name: str,
        args: dict[str, Any],
        token: object,
    ) -> None:
        ticker = None
        try:
            if token is not None and isinstance(token, (str, int)):
                ticker = _Progress(self.conn, token, call.cancel)
                ticker.start()
            result = self._run(call, name, args)
            if ticker is not None:
                ticker.stop()
            if not call.cancelled:
                self.conn.respond(id, result)
        except PeerGone:
            pass
        except Exception as exc:
            log.exception("tools/call %s failed", name)
            with contextlib.suppress(PeerGone):
                self.conn.send_error(id, -32603, f"internal error: {type(exc).__name__}: {exc}")
        finally:
            if ticker is not None:
                ticker.stop()
            with self._lock:
                self._calls.pop(key, None)
                self._workers.discard(threading.current_thread())
            self._slots.release()

    def _run(self, call: _Call, name: str, args: dict[str, Any]) -> dict[str, Any]:
        if name in _GATE and name not in self.session.tool_names():
            return self._gate(name, args, call.cancel)
        from ..kernel import Origin, ToolCall

        tool_call = ToolCall(call.call_id, name, args)
        outcome = self.session.invoke(tool_call, Origin.MODEL, cancel=call.cancel)
        return call_result(outcome, args, cancelled=call.cancelled)

    def _gate(self, name: str, args: Mapping[str, Any], cancel: threading.Event) -> dict[str, Any]:
        """verify and complete_turn: the session's own gate, not a tool of the kernel."""
        unknown = sorted(set(args) - ({"timeout_ms"} if name == "verify" else {"text"}))
        if unknown:
            return _failure(f"{name}: unknown argument(s) {', '.join(unknown)}")
        if name == "verify":
            timeout = args.get("timeout_ms", 600_000)
            if not isinstance(timeout, int) or isinstance(timeout, bool) or timeout < 1000:
                return _failure("verify: timeout_ms must be an integer of at least 1000")
            report = self.session.verify(timeout_ms=timeout, cancel=cancel)
            data = report.to_dict()
            lines = [f"verification {'passed' if report.passed else 'did not pass'}"]
            lines += [f"  {c.id}: {'ok' if c.passed else 'FAILED'}" for c in report.checks]
            return {
                "content": [{"type": "text", "text": "\n".join(lines)}],
                "structuredContent": {"passed": report.passed, "report": data},
                "isError": not report.passed,
            }
        text = args.get("text", "")
        if not isinstance(text, str):
            return _failure("complete_turn: text must be a string")
        outcome = self.session.complete_turn(text)
        if outcome.completed:
            self.session.new_turn()
        words = f"turn {'completed' if outcome.completed else 'not completed'}: {outcome.reason}"
        if outcome.missing:
            words += "\nmissing: " + "; ".join(outcome.missing)
        return {
            "content": [{"type": "text", "text": words}],
            "structuredContent": outcome.to_dict(),
            "isError": not outcome.completed,
        }


class _Progress:
    """notifications/progress for one call: elapsed seconds, once a second, until it ends."""

    def __init__(self, conn: Connection, token: str | int, done: threading.Event) -> None:
        self._conn = conn
        self._token = token
        self._stop = threading.Event()
        self._done = done
        self._thread = threading.Thread(target=self._tick, name="mcp-progress", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _tick(self) -> None:
        start = time.monotonic()
        while not self._stop.wait(PROGRESS_INTERVAL_S):
            if self._done.is_set():
                return
            elapsed = time.monotonic() - start
            try:
                self._conn.notify(
                    "notifications/progress",
                    {
                        "progressToken": self._token,
                        "progress": round(elapsed, 1),
                        "message": f"running for {elapsed:.0f} s",
                    },
                )
            except PeerGone:
                return


def _failure(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}


def _key(id: object) -> str:
    import json

    return json.dumps(id)


def serve(
    workspace: str,
    *,
    policy: Any = None,
    mode: str = "default",
    confirm_timeout_ms: int | None = None,
    streams: tuple[IO[bytes], IO[bytes]] | None = None,
) -> int:
    """Runs the server on this process's stdin and stdout until the client goes away."""
    from ..hitl import ConfirmationPolicy, ElicitationProvider
    from ..session import Agent, SessionOptions

    reader, writer = streams if streams is not None else protocol_streams()
    conn = Connection(reader, writer)
    holder: list[McpToolServer] = []
    provider = ElicitationProvider(
        lambda message, schema, timeout, settled: holder[0].elicit(
            message, schema, timeout, settled
        ),
        lambda: bool(holder) and holder[0].elicitation_supported(),
    )
    confirmation = (
        ConfirmationPolicy()
        if confirm_timeout_ms is None
        else ConfirmationPolicy(default_timeout_ms=confirm_timeout_ms)
    )
    session = Agent().session(
        workspace,
        SessionOptions(
            mode=mode,
            permission_policy=policy,
            confirmation_policy=confirmation,
            confirmation_provider=provider,
        ),
    )
    server = McpToolServer(session, conn)
    holder.append(server)

    def stop(signum: int, frame: FrameType | None) -> None:
        raise PeerGone(f"signal {signum}")

    if threading.current_thread() is threading.main_thread():
        for signum in _SIGNALS:
            signal.signal(signum, stop)
    server.run()
    return 0
