"""TerminalConfirmationProvider: explain the call on a terminal and read y/N within the timeout.

One prompt at a time (parallel calls queue for the terminal, each within its
own timeout). The operation is shown whole (wrapped, runs of spaces counted,
invisible characters escaped): a person approves exactly what runs. One too
long to read on a terminal (over 64 KiB) is rejected without a prompt.
Anything but ``y``/``yes`` rejects, and so do end of input, a timeout, and
an output that cannot be written (an unseen prompt is never answered). On a
TTY, input typed before the prompt appeared is discarded, so a stray ``y``
cannot approve a request the user has not read yet.
"""

from __future__ import annotations

import contextlib
import os
import queue
import select
import sys
import threading
import time
from typing import IO, Any

from .._redact import escape
from ._request import ConfirmationRequest, _seconds

__all__ = ["TerminalConfirmationProvider"]

_POLL = 0.05  # how often a waiting prompt checks whether someone else settled its request
# The prompt outlives the request's timeout by this much, so that under a ConfirmationManager the
# manager's timeout settles the request (how="timeout") and the prompt then reports it.
_GRACE = 0.25
_MAX_LINE = 4096
MAX_OPERATION_CHARS = 64 * 1024  # longer operations are rejected, never shown in part
_YES = ("y", "yes")


class TerminalConfirmationProvider:
    """Asks on a terminal: ``input_stream`` (default stdin), ``output_stream`` (default stderr).

    ``color``: True or False forces colour on or off (an explicit choice,
    like ``--color=always``, wins over ``NO_COLOR``); None (the default)
    colours only when the output is a TTY, ``NO_COLOR`` is unset or empty and
    ``TERM`` is not ``dumb``.

    The input is read through its file descriptor with ``select`` when it
    has one (bytes past the answer line stay buffered for the next prompt,
    so a script can pipe several answers); otherwise a reader thread feeds
    lines. Do not read the same input elsewhere while prompts may run.
    """

    name = "terminal"

    def __init__(
        self,
        input_stream: IO[Any] | None = None,
        output_stream: IO[Any] | None = None,
        color: bool | None = None,
    ) -> None:
        if color is not None and type(color) is not bool:
            raise TypeError(f"color must be True, False or None, not {type(color).__name__}")
        self._input = sys.stdin if input_stream is None else input_stream
        self._output = sys.stderr if output_stream is None else output_stream
        self._color = color
        self._terminal = threading.Lock()  # held for a whole prompt
        self._buffer = bytearray()
        self._eof = False
        self._lines: queue.Queue[str | None] | None = None

    @property
    def color(self) -> bool:
        """Whether prompts are coloured now."""
        if self._color is not None:
            return self._color
        if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
            return False
        isatty = getattr(self._output, "isatty", None)
        try:
            return bool(isatty()) if callable(isatty) else False
        except (OSError, ValueError):
            return False

    # -- the protocol -----------------------------------------------------------------------

    def request(self, confirmation: ConfirmationRequest) -> bool:
        deadline = time.monotonic() + confirmation.timeout_ms / 1000 + _GRACE
        if not self._acquire(confirmation, deadline):
            return False
        try:
            if confirmation.settled:
                return False
            if len(confirmation.operation) > MAX_OPERATION_CHARS:
                return self._too_long(confirmation)
            color = self.color
            prompt = "Approve? [y/N]"
            prompt = f"\x1b[1m{prompt}\x1b[0m" if color else prompt
            limit = _seconds(confirmation.timeout_ms)
            fd = self._fd()
            if fd is not None:
                _discard_typeahead(fd, self._buffer)
            try:
                self._write(
                    f"\n{confirmation.render(color)}\n{prompt} (no answer within {limit} rejects) "
                )
            except (OSError, ValueError):
                return False  # the user cannot see the question, so there is no answer
            kind, text = self._read_line(confirmation, deadline)
            approved, note = _interpret(kind, text, confirmation, limit)
            try:
                echoed = kind == "line" and _is_tty(self._fd())
                self._write(("" if echoed else "\n") + f"→ {note}\n")
            except (OSError, ValueError):
                pass
            return approved
        finally:
            self._terminal.release()

    # -- helpers ----------------------------------------------------------------------------

    def _too_long(self, confirmation: ConfirmationRequest) -> bool:
        """Rejects an operation too long to be read whole, saying so (never shows a part)."""
        call = f"{escape(confirmation.id[:80])} ({escape(confirmation.tool[:80])})"
        with contextlib.suppress(OSError, ValueError):
            self._write(
                f"\nRejected call {call}: its operation is {len(confirmation.operation)} "
                f"characters, more than the {MAX_OPERATION_CHARS} a prompt shows whole.\n"
            )
        return False

    def _acquire(self, confirmation: ConfirmationRequest, deadline: float) -> bool:
        """Waits for the terminal, giving up when the request is settled or expires."""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or confirmation.settled:
                return False
            if self._terminal.acquire(timeout=min(remaining, _POLL)):
                return True

    def _write(self, text: str) -> None:
        self._output.write(text)
        self._output.flush()

    def _fd(self) -> int | None:
        if os.name == "nt":  # select() takes only sockets there
            return None
        try:
            fd = self._input.fileno()
        except (AttributeError, OSError, ValueError):
            return None
        return fd if isinstance(fd, int) and fd >= 0 else None

    def _read_line(self, confirmation: ConfirmationRequest, deadline: float) -> tuple[str, str]:
        """("line", text), ("eof", ""), ("timeout", "") or ("settled", "")."""
        fd = self._fd()
        if fd is None:
            return self._read_queued(confirmation, deadline)
        while True:
            newline = self._buffer.find(b"\n")
            if newline >= 0 or len(self._buffer) >= _MAX_LINE or (self._eof and self._buffer):
                end = newline if newline >= 0 else min(len(self._buffer), _MAX_LINE)
                line = bytes(self._buffer[:end])
                del self._buffer[: end + (1 if newline >= 0 else 0)]
                return "line", line.decode("utf-8", "replace")
            stop, remaining = self._stop(confirmation, deadline)
            if stop:
                return stop, ""
            try:
                ready, _, _ = select.select([fd], [], [], min(remaining, _POLL))
            except (OSError, ValueError):
                self._eof = True
                continue
            if not ready:
                continue
            try:
                chunk = os.read(fd, _MAX_LINE)
            except BlockingIOError:
                continue
            except OSError:
                chunk = b""
            if chunk:
                self._buffer.extend(chunk)
            else:
                self._eof = True

    def _stop(self, confirmation: ConfirmationRequest, deadline: float) -> tuple[str, float]:
        """Why to stop waiting for a line ("eof", "settled", "timeout"), or "" and the time left."""
        if self._eof:
            return "eof", 0.0
        if confirmation.settled:
            return "settled", 0.0
        remaining = deadline - time.monotonic()
        return ("timeout", 0.0) if remaining <= 0 else ("", remaining)

    def _read_queued(self, confirmation: ConfirmationRequest, deadline: float) -> tuple[str, str]:
        """The same for a stream without a descriptor: a reader thread feeds a queue."""
        if self._lines is None:
            self._lines = queue.Queue()
            threading.Thread(
                target=_feed_lines,
                args=(self._input, self._lines),
                name="a3s-confirm-stdin",
                daemon=True,
            ).start()
        while True:
            stop, remaining = self._stop(confirmation, deadline)
            if stop:
                return stop, ""
            try:
                item = self._lines.get(timeout=min(remaining, _POLL))
            except queue.Empty:
                continue
            if item is None:
                self._eof = True
                continue
            return "line", item.rstrip("\r\n")


def _feed_lines(stream: IO[Any], lines: queue.Queue[str | None]) -> None:
    try:
        while True:
            raw = stream.readline()
            if not raw:
                break
            lines.put(raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw))
    except (OSError, ValueError):
        pass
    lines.put(None)


def _is_tty(fd: int | None) -> bool:
    try:
        return fd is not None and os.isatty(fd)
    except OSError:
        return False


def _discard_typeahead(fd: int, buffer: bytearray) -> None:
    """On a TTY, drops what was typed before the question was shown."""
    try:
        if not os.isatty(fd):
            return
        import termios

        termios.tcflush(fd, termios.TCIFLUSH)
    except (ImportError, OSError):
        return
    buffer.clear()


def _interpret(
    kind: str, text: str, confirmation: ConfirmationRequest, limit: str
) -> tuple[bool, str]:
    if kind == "line":
        answer = text.strip().lower()
        if answer in _YES:
            return True, "approved"
        if answer in ("n", "no"):
            return False, "rejected"
        return False, "rejected (only 'y' or 'yes' approves)"
    if kind == "eof":
        return False, "no more input: rejected"
    if kind == "timeout":
        return False, f"no answer within {limit}: rejected"
    settled = confirmation.answer
    if settled is None:
        return False, "settled elsewhere"
    verdict = "approved" if settled.approved else "rejected"
    if settled.how == "timeout":
        return False, f"no answer within {limit}: {verdict}"
    return False, f"settled elsewhere ({settled.how}): {verdict}"
