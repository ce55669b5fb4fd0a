"""Newline-delimited JSON-RPC 2.0 over the server's own stdin and stdout, with threads.

The main thread reads one message per line and dispatches it; requests that
take time (tools/call) run on worker threads, and the requests the server
sends the client (elicitation) wait on a pending entry that the reader
completes. Every write goes through one lock, one whole line at a time, so
messages from several threads never interleave.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import IO, Any

__all__ = [
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "Connection",
    "PeerError",
    "PeerGone",
]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
MAX_LINE = 64 * 1024 * 1024  # bytes in one message from the client
_POLL_S = 0.1  # how often a waiting request checks whether it is still needed


class PeerGone(Exception):
    """The client closed its end (stdin at end of file, or stdout broken)."""


class PeerError(Exception):
    """The client answered our request with a JSON-RPC error."""

    def __init__(self, code: object, message: object) -> None:
        super().__init__(f"the client answered with error {code}: {message}")
        self.code = code


class _Pending:
    __slots__ = ("done", "error", "result")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None


class Connection:
    """One client on a pair of byte streams."""

    def __init__(self, reader: IO[bytes], writer: IO[bytes]) -> None:
        self._reader = reader
        self._writer = writer
        self._write_lock = threading.Lock()
        self._ids = itertools.count(1)
        self._pending: dict[str, _Pending] = {}
        self._pending_lock = threading.Lock()
        self.closed = threading.Event()

    # -- reading ------------------------------------------------------------------------

    def read(self) -> Mapping[str, Any] | None:
        """The next message; None for a line that was answered with an error already.

        Raises PeerGone at end of input. Responses to our own requests are
        consumed here and never returned.
        """
        line = self._reader.readline(MAX_LINE + 1)
        if not line:
            raise PeerGone("the client closed stdin")
        if len(line) > MAX_LINE:
            self.send_error(None, INVALID_REQUEST, f"message longer than {MAX_LINE} bytes")
            raise PeerGone("the client sent a message over the size limit")
        if not line.strip():
            return None
        try:
            message = json.loads(line)
        except ValueError as exc:
            self.send_error(None, PARSE_ERROR, f"not JSON: {exc}")
            return None
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            self.send_error(None, INVALID_REQUEST, "a message must be one JSON-RPC 2.0 object")
            return None
        if "method" not in message:
            self._complete(message)
            return None
        return message

    def _complete(self, message: Mapping[str, Any]) -> None:
        key = json.dumps(message.get("id"))
        with self._pending_lock:
            pending = self._pending.pop(key, None)
        if pending is None:
            return  # an answer to a request we gave up on: ignored
        if "error" in message:
            error = message.get("error")
            code = error.get("code") if isinstance(error, Mapping) else None
            text = error.get("message") if isinstance(error, Mapping) else error
            pending.error = PeerError(code, text)
        else:
            pending.result = message.get("result")
        pending.done.set()

    # -- writing ------------------------------------------------------------------------

    def send(self, message: Mapping[str, Any]) -> None:
        text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
        try:
            data = text.encode() + b"\n"
        except UnicodeEncodeError:  # a lone surrogate: escaped, the line stays valid UTF-8
            data = json.dumps(message, separators=(",", ":")).encode() + b"\n"
        with self._write_lock:
            if self.closed.is_set():
                raise PeerGone("the connection is closed")
            try:
                self._writer.write(data)
                self._writer.flush()
            except (BrokenPipeError, OSError, ValueError) as exc:
                self.close()
                raise PeerGone(f"cannot write to the client: {exc}") from None

    def respond(self, id: object, result: Mapping[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "id": id, "result": result})

    def send_error(self, id: object, code: int, message: str, data: object = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self.send({"jsonrpc": "2.0", "id": id, "error": error})

    def notify(self, method: str, params: Mapping[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(
        self,
        method: str,
        params: Mapping[str, Any],
        timeout_s: float,
        abandon: Callable[[], bool] | None = None,
    ) -> Any:
        """Sends a request to the client and waits for its result.

        Raises TimeoutError (after telling the client the request is
        cancelled) when ``timeout_s`` passes or ``abandon()`` turns true,
        PeerError, or PeerGone when the connection ends first.
        """
        id = f"codeward-{next(self._ids)}"
        key = json.dumps(id)
        pending = _Pending()
        with self._pending_lock:
            self._pending[key] = pending
        try:
            self.send({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
            deadline = time.monotonic() + timeout_s
            while not pending.done.wait(min(_POLL_S, max(0.0, deadline - time.monotonic()))):
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"no answer to {method} within {timeout_s:g} s")
                if abandon is not None and abandon():
                    raise TimeoutError(f"{method} is no longer needed")
        except TimeoutError:
            self._forget(key)
            with contextlib.suppress(PeerGone):
                self.notify("notifications/cancelled", {"requestId": id, "reason": "not needed"})
            raise
        except BaseException:
            self._forget(key)
            raise
        if pending.error is not None:
            raise pending.error
        return pending.result

    def _forget(self, key: str) -> None:
        with self._pending_lock:
            self._pending.pop(key, None)

    def close(self) -> None:
        """Fails every request still waiting for the client; later sends raise PeerGone."""
        self.closed.set()
        with self._pending_lock:
            pending, self._pending = list(self._pending.values()), {}
        for entry in pending:
            entry.error = PeerGone("the client went away")
            entry.done.set()


def protocol_streams() -> tuple[IO[bytes], IO[bytes]]:
    """The protocol's stdin and stdout, moved off fds 0 and 1.

    Only the protocol may use the client's pipes: fd 1 becomes a copy of
    stderr (a stray print, from Python or from C, cannot corrupt a message)
    and fd 0 reads /dev/null (no child process can steal the client's bytes).
    """
    proto_in = os.fdopen(os.dup(0), "rb", buffering=1 << 16)
    proto_out = os.fdopen(os.dup(1), "wb", buffering=1 << 16)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return proto_in, proto_out
