"""Newline-delimited JSON-RPC 2.0 over a server's stdio, built so that the server cannot stall it.

Three threads, none of which waits for another:

- the **writer** owns stdin and writes what the pipe could not take at
  once (a caller writes directly only when the pipe has room and nothing
  waits, so it never blocks on a full pipe; a server that stops reading
  while more than ``MAX_QUEUED`` bytes wait is disconnected);
- the **reader** splits stdout into lines of at most ``MAX_LINE`` bytes (a
  longer line closes the transport: nothing is buffered past the cap),
  answers the server's own requests (``ping``; anything else is "method not
  found"), completes pending requests and hands ``tools/list_changed`` to
  the dispatcher;
- the **stderr drainer** keeps the last ``STDERR_RING`` bytes for
  diagnostics and logs lines (escaped, rate-limited).

A fourth, the **dispatcher**, runs the list-changed callback, which may
itself make requests. Each request has a timeout: when it passes, the
pending entry is freed and ``notifications/cancelled`` is sent. When any
worker ends (end of file, a broken pipe, a protocol violation), the
transport is disconnected and every pending request fails at once with the
cause; later requests fail at once too. ``close()`` and garbage collection
both end the server's whole process group: end of input, then SIGTERM
through its init after STDIN_CLOSE_WAIT_MS, then SIGKILL after the grace
(``OwnedProcess.stop``).

The threads hold only the transport's inner state, never the transport
object, so dropping the last reference to it runs its finalizer.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import os
import select
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

from ._errors import (
    McpCancelled,
    McpConnectionError,
    McpError,
    McpProtocolError,
    McpServerError,
    McpTimeout,
)
from ._process import OwnedProcess
from ._text import one_line, untrusted


class CancelToken(Protocol):
    """What a request may be cancelled with (a threading.Event, codeward.tools.CancelToken)."""

    def is_set(self) -> bool: ...


__all__ = ["MAX_LINE", "STDERR_RING", "StdioTransport"]

log = logging.getLogger("codeward.mcp")

MAX_LINE = 8 * 1024 * 1024  # bytes in one message line
STDERR_RING = 64 * 1024  # bytes of stderr kept for diagnostics
MAX_QUEUED = 16 * 1024 * 1024  # bytes waiting for a server that does not read
MAX_MALFORMED = 100  # non-JSON-RPC lines tolerated before the transport closes
STDIN_CLOSE_WAIT_MS = 500  # after stdin closes, before SIGTERM
_CHUNK = 65536
_LOG_PER_SECOND = 50
_ERROR_TEXT = 500  # characters of a server's error message kept

JSON_RPC_METHOD_NOT_FOUND = -32601


class _Budget:
    """A token bucket for log lines, so a flood of stderr or notifications cannot flood the log."""

    def __init__(self, per_second: int) -> None:
        self.per_second = per_second
        self.tokens = float(per_second)
        self.stamp = time.monotonic()
        self.dropped = 0

    def take(self) -> bool:
        now = time.monotonic()
        self.tokens = min(self.per_second, self.tokens + (now - self.stamp) * self.per_second)
        self.stamp = now
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        self.dropped += 1
        return False


class _Pending:
    """One request waiting for its answer. ``done`` is a lock held until the answer (or the
    failure) is in: the cheapest one-shot signal CPython has."""

    __slots__ = ("done", "error", "method", "result")

    def __init__(self, method: str) -> None:
        self.method = method
        self.done = threading.Lock()
        self.done.acquire()
        self.result: Any = None
        self.error: McpError | None = None

    def settle(self) -> None:
        self.done.release()

    def wait(self, timeout_s: float = -1) -> bool:
        return self.done.acquire(timeout=timeout_s)


class _State:
    """Everything the worker threads share; never a reference to the transport itself."""

    def __init__(self, name: str, process: OwnedProcess) -> None:
        self.name = name
        self.process = process
        self.lock = threading.Lock()
        self.pending: dict[int, _Pending] = {}
        self.cause: McpConnectionError | None = None
        self.closing = False
        self.queue: deque[bytes | None] = deque()
        self.queued_bytes = 0
        self.queue_ready = threading.Condition(self.lock)
        self.writing = False  # the writer holds a message it has not finished writing
        os.set_blocking(process.stdin, False)
        self.wake_r, self.wake_w = os.pipe()  # ends the readers' polls on close
        self.stderr_ring = bytearray()
        self.stderr_lock = threading.Lock()
        self.changed = threading.Event()  # tools/list_changed arrived (coalesced)
        self.on_tools_changed: Callable[[], None] | None = None
        self.malformed = 0
        self.notifications = 0
        self.threads: list[threading.Thread] = []
        self.closed_fds = False

    # -- disconnecting -----------------------------------------------------------------

    def stderr_tail(self) -> str:
        with self.stderr_lock:
            data = bytes(self.stderr_ring)
        return untrusted(data.decode("utf-8", "replace"))

    def disconnect(self, cause: McpConnectionError) -> None:
        """Marks the transport disconnected (the first cause wins); every pending request fails."""
        with self.lock:
            if self.cause is None:
                self.cause = cause
            failed = list(self.pending.values())
            self.pending.clear()
            self.queue.append(None)  # the writer closes stdin and ends
            self.queue_ready.notify()
        for pending in failed:
            pending.error = _copy(self.cause)
            pending.settle()
        self.changed.set()  # the dispatcher ends

    def ended(self, what: str) -> McpConnectionError:
        """The cause for a server that closed a pipe: its exit status if it has exited."""
        code = self.process.wait(1000)
        tail = self.stderr_tail()
        if code is not None:
            message = f"MCP server {self.name!r} exited with status {code}"
        else:
            message = f"MCP server {self.name!r} {what}"
        if tail:
            message += f"; its stderr ends: {one_line(tail[-300:], 300)}"
        return McpConnectionError(message, server=self.name, exit_code=code, stderr_tail=tail)

    # -- sending -----------------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        """Writes at once when the pipe has room and nothing waits (no thread hand-off);
        otherwise queues the rest for the writer. Never blocks on the server."""
        data = json.dumps(message, separators=(",", ":")).encode() + b"\n"
        with self.lock:
            if self.cause is not None:
                raise _copy(self.cause)
            if not self.queue and not self.writing:
                try:
                    written = os.write(self.process.stdin, data)  # non-blocking
                except OSError:  # full (EAGAIN), or broken: the writer meets it and reports
                    written = 0
                if written == len(data):
                    return
                data = data[written:]
            self.queued_bytes += len(data)
            over = self.queued_bytes > MAX_QUEUED
            if not over:
                self.queue.append(data)
                self.queue_ready.notify()
        if over:
            self.disconnect(
                McpConnectionError(
                    f"MCP server {self.name!r} stopped reading its input "
                    f"({MAX_QUEUED} bytes are waiting); the connection was closed",
                    server=self.name,
                )
            )
            raise _copy(self.cause)  # type: ignore[arg-type]


def _copy(cause: McpConnectionError) -> McpConnectionError:
    """A fresh exception per failed request, of the cause's own class."""
    return type(cause)(
        str(cause), server=cause.server, exit_code=cause.exit_code, stderr_tail=cause.stderr_tail
    )


# ---- the workers ----------------------------------------------------------------------------


def _writer(st: _State) -> None:
    fd = st.process.stdin
    writable = select.poll()
    writable.register(fd, select.POLLOUT)
    try:
        while True:
            with st.lock:
                st.writing = False
                while not st.queue:
                    st.queue_ready.wait()
                data = st.queue.popleft()
                if data is not None:
                    st.queued_bytes -= len(data)
                st.writing = True
            if data is None:
                return
            view = memoryview(data)
            while view:
                try:
                    view = view[os.write(fd, view) :]
                except BlockingIOError:
                    writable.poll()  # room, or an error once the server is gone
    except OSError:
        if not st.closing:
            st.disconnect(st.ended("closed its input"))
    finally:
        os.close(fd)  # the server sees end of file: a well-behaved one exits


def _poller(fd: int, wake: int) -> Callable[[], bool]:
    """A wait for fd to be readable (True) or for the transport to close (False)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    poller.register(wake, select.POLLIN)

    def ready() -> bool:
        events = poller.poll()
        return not any(ready_fd == wake for ready_fd, _ in events)

    return ready


def _reader(st: _State) -> None:
    fd = st.process.stdout
    partial = bytearray()
    ready = _poller(fd, st.wake_r)
    try:
        while ready():
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                if not st.closing:
                    st.disconnect(st.ended("closed its output"))
                return
            start = 0
            while (end := chunk.find(b"\n", start)) >= 0:
                if partial:
                    partial += chunk[start:end]
                    line = bytes(partial)
                    partial.clear()
                else:
                    line = chunk[start:end]
                start = end + 1
                if len(line) > MAX_LINE:
                    _too_long(st)
                    return
                _handle_line(st, line)
            partial += chunk[start:]
            if len(partial) > MAX_LINE:
                _too_long(st)
                return
            if st.cause is not None:
                return
    except OSError as exc:
        if not st.closing:
            st.disconnect(st.ended(f"failed: {exc}"))


def _too_long(st: _State) -> None:
    st.disconnect(
        McpProtocolError(
            f"MCP server {st.name!r} sent a message line longer than {MAX_LINE} bytes "
            "(8 MiB); the connection was closed",
            server=st.name,
        )
    )
    st.process.stop()  # nothing reads its output any more


def _stderr_drainer(st: _State) -> None:
    fd = st.process.stderr
    budget = _Budget(_LOG_PER_SECOND)
    partial = b""
    ready = _poller(fd, st.wake_r)
    try:
        while ready():
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                return
            with st.stderr_lock:
                st.stderr_ring += chunk
                if len(st.stderr_ring) > STDERR_RING:
                    del st.stderr_ring[: len(st.stderr_ring) - STDERR_RING]
            if not log.isEnabledFor(logging.INFO):
                continue
            lines = (partial + chunk).split(b"\n")
            partial = lines.pop()[-_ERROR_TEXT:]
            for raw in lines:
                if budget.take():
                    log.info("mcp %s stderr: %s", st.name, one_line(raw.decode("utf-8", "replace")))
    except OSError:
        return
    finally:
        if budget.dropped:
            log.info("mcp %s stderr: %d more lines not logged", st.name, budget.dropped)


def _dispatcher(st: _State) -> None:
    while True:
        st.changed.wait()
        st.changed.clear()
        if st.cause is not None:
            return
        callback = st.on_tools_changed
        if callback is None:
            continue
        try:
            callback()
        except Exception as exc:  # a failed refresh must not end the connection
            log.warning("mcp %s: refreshing the tools failed: %s", st.name, one_line(exc))


# ---- incoming messages ------------------------------------------------------------------


def _handle_line(st: _State, line: bytes) -> None:
    if line.endswith(b"\r"):
        line = line[:-1]
    if not line.strip():
        return
    try:
        message = json.loads(line)
    except ValueError:
        _malformed(st, "a line that is not JSON", line)
        return
    if isinstance(message, list):  # a JSON-RPC batch (protocol 2025-03-26)
        for item in message[:1000]:
            _handle_message(st, item, line)
        return
    _handle_message(st, message, line)


def _handle_message(st: _State, message: Any, line: bytes) -> None:
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        _malformed(st, "a message that is not JSON-RPC 2.0", line)
        return
    method = message.get("method")
    if isinstance(method, str):
        if "id" in message:
            _answer_request(st, message["id"], method)
        else:
            _notification(st, method, message.get("params"))
        return
    ident = message.get("id")
    if not isinstance(ident, int) or isinstance(ident, bool):
        _malformed(st, "a response without a request id of ours", line)
        return
    with st.lock:
        pending = st.pending.pop(ident, None)
    if pending is None:  # answered after its timeout, or never asked
        log.debug("mcp %s: a response to unknown request %d", st.name, ident)
        return
    if "error" in message:
        pending.error = _server_error(st.name, pending.method, message["error"])
    elif "result" in message:
        pending.result = message["result"]
    else:
        pending.error = McpProtocolError(
            f"MCP server {st.name!r} answered {pending.method} with neither result nor error",
            server=st.name,
        )
    pending.settle()


def _server_error(server: str, method: str, error: Any) -> McpServerError:
    if not isinstance(error, dict):
        return McpServerError(
            f"MCP server {server!r} answered {method} with a malformed error", server=server, code=0
        )
    code = error.get("code")
    code = code if isinstance(code, int) and not isinstance(code, bool) else 0
    text = one_line(error.get("message", ""), _ERROR_TEXT)
    return McpServerError(
        f"MCP server {server!r} refused {method} (error {code}): {text}",
        server=server,
        code=code,
        data=error.get("data"),
    )


def _answer_request(st: _State, ident: Any, method: str) -> None:
    """The server asked us something: ping is answered, everything else is not supported."""
    if not isinstance(ident, (int, str)) or isinstance(ident, bool):
        return
    if method == "ping":
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "result": {}}
    else:
        reply = {
            "jsonrpc": "2.0",
            "id": ident,
            "error": {"code": JSON_RPC_METHOD_NOT_FOUND, "message": "method not supported"},
        }
    with contextlib.suppress(McpError):
        st.send(reply)


def _notification(st: _State, method: str, params: Any) -> None:
    st.notifications += 1
    if method == "notifications/tools/list_changed":
        st.changed.set()
    elif method == "notifications/message" and log.isEnabledFor(logging.DEBUG):
        data = params.get("data") if isinstance(params, dict) else params
        log.debug("mcp %s says: %s", st.name, one_line(json.dumps(data, default=str)))


def _malformed(st: _State, what: str, line: bytes) -> None:
    st.malformed += 1
    if st.malformed <= 3:
        log.warning(
            "mcp %s sent %s: %s", st.name, what, one_line(line[:300].decode("utf-8", "replace"))
        )
    if st.malformed > MAX_MALFORMED:
        st.disconnect(
            McpProtocolError(
                f"MCP server {st.name!r} sent more than {MAX_MALFORMED} malformed messages "
                f"(the last one: {what}); the connection was closed",
                server=st.name,
            )
        )


# ---- the transport ----------------------------------------------------------------------


def _shutdown(st: _State) -> int | None:
    """Closes the connection and ends the server's process group; its exit status."""
    with st.lock:
        already = st.closing
        st.closing = True
    if not already:
        st.disconnect(
            McpConnectionError(
                f"the connection to MCP server {st.name!r} is closed", server=st.name
            )
        )
    # the writer closes stdin; a server that exits on end of file goes by itself
    code = st.process.wait(STDIN_CLOSE_WAIT_MS)
    if code is None:
        code = st.process.stop()
    os.write(st.wake_w, b"x")
    me = threading.current_thread()
    for thread in st.threads:
        if thread is not me:
            thread.join(5)
    with st.lock:
        if st.closed_fds or any(t.is_alive() for t in st.threads if t is not me):
            return code  # a thread still reads: leak its fd rather than race on it
        st.closed_fds = True
    for fd in (st.process.stdout, st.process.stderr, st.wake_r, st.wake_w):
        with contextlib.suppress(OSError):
            os.close(fd)
    return code


class StdioTransport:
    """JSON-RPC requests and notifications to one server process; see the module docstring."""

    def __init__(self, name: str, process: OwnedProcess) -> None:
        self.name = name
        self._state = st = _State(name, process)
        self._ids = itertools.count(1)
        for target, role in (
            (_writer, "writer"),
            (_reader, "reader"),
            (_stderr_drainer, "stderr"),
            (_dispatcher, "dispatch"),
        ):
            thread = threading.Thread(
                target=target, args=(st,), name=f"mcp-{name}-{role}", daemon=True
            )
            st.threads.append(thread)
        for thread in st.threads:
            thread.start()
        self._finalizer = weakref.finalize(self, _shutdown, st)

    @property
    def process(self) -> OwnedProcess:
        return self._state.process

    @property
    def closed(self) -> bool:
        """True once the transport is disconnected (closed, or broken by the server)."""
        return self._state.cause is not None

    @property
    def cause(self) -> McpConnectionError | None:
        """Why the transport is disconnected, or None while it is connected."""
        return self._state.cause

    def stderr_tail(self) -> str:
        """The end (at most 64 KiB) of what the server wrote to stderr, escaped."""
        return self._state.stderr_tail()

    @property
    def notifications_received(self) -> int:
        return self._state.notifications

    def set_tools_changed(self, callback: Callable[[], None] | None) -> None:
        """Runs ``callback`` on the dispatcher thread after ``notifications/tools/list_changed``."""
        self._state.on_tools_changed = callback

    def request(
        self,
        method: str,
        params: dict[str, Any] | None,
        timeout_ms: int,
        cancel: CancelToken | None = None,
    ) -> Any:
        """Sends a request and returns its result; raises an McpError when there is none.

        Once ``cancel`` (anything with ``is_set()``) is set, the server is
        told (``notifications/cancelled``) and McpCancelled is raised.
        """
        st = self._state
        ident = next(self._ids)
        pending = _Pending(method)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
        if params is not None:
            message["params"] = params
        with st.lock:
            if st.cause is not None:
                raise _copy(st.cause)
            st.pending[ident] = pending
        try:
            st.send(message)
        except McpError:
            with st.lock:
                st.pending.pop(ident, None)
            raise
        cancelled = False
        answered = _wait(pending, timeout_ms, cancel)
        if not answered:
            cancelled = cancel is not None and cancel.is_set()
            with st.lock:
                unanswered = st.pending.pop(ident, None) is not None
            if not unanswered:  # answered (or failed) just now: its outcome is being set
                pending.wait()
            elif cancelled:
                self._cancel(ident, "cancelled by the caller")
                raise McpCancelled(
                    f"the request {method} to MCP server {self.name!r} was cancelled",
                    server=self.name,
                    method=method,
                )
            else:
                self._cancel(ident, f"no answer within {timeout_ms} ms")
                raise McpTimeout(
                    f"MCP server {self.name!r} did not answer {method} within {timeout_ms} ms; "
                    "the request was cancelled",
                    server=self.name,
                    method=method,
                    timeout_ms=timeout_ms,
                )
        if pending.error is not None:
            raise pending.error
        return pending.result

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._state.send(message)

    def _cancel(self, ident: int, reason: str) -> None:
        with contextlib.suppress(McpError):
            self.notify("notifications/cancelled", {"requestId": ident, "reason": reason})

    def close(self) -> int | None:
        """Disconnects and ends every process of the server; returns its exit status."""
        return self._finalizer() if self._finalizer.alive else self.process.wait(0)


CANCEL_POLL_S = 0.05  # how often a request waiting for its answer looks at its cancel token


def _wait(pending: _Pending, timeout_ms: int, cancel: CancelToken | None) -> bool:
    """Whether the answer came within ``timeout_ms``, looking at ``cancel`` meanwhile."""
    total = min(timeout_ms / 1000, threading.TIMEOUT_MAX)
    if cancel is None:
        return pending.wait(total)
    deadline = time.monotonic() + total
    while not cancel.is_set():
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        if pending.wait(min(left, CANCEL_POLL_S)):
            return True
    return pending.wait(0)
