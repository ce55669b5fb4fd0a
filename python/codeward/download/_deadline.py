"""The one clock of a download: a total deadline, the caller's cancel token, an internal stop.

Every blocking step (resolution, connect, TLS handshake, each receive, a
retry's back-off) takes its timeout from :meth:`Deadline.slice`, so no step
can outlive the deadline and a slow-drip server cannot stretch the download:
the budget is for the whole transfer, not per read. Waits are cut in short
slices so that a cancel or a failure on another connection is noticed soon.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol, TypeVar

from ._errors import Cancelled, DownloadTimeout

__all__ = ["CancelToken", "Deadline", "Stopped"]

POLL_S = 0.25  # longest a blocking call runs before the cancel token is looked at again
T = TypeVar("T")


class CancelToken(Protocol):
    def is_set(self) -> bool: ...


class Stopped(Exception):
    """Another connection of the same download failed: this one winds down quietly."""


class Deadline:
    """The time left for one download, and whether it should stop."""

    def __init__(self, timeout_s: float, cancel: CancelToken | None = None) -> None:
        self.timeout_s = timeout_s
        self._end = time.monotonic() + timeout_s
        self._cancel = cancel
        self._stop = threading.Event()

    def remaining(self) -> float:
        return self._end - time.monotonic()

    def check(self) -> None:
        """Raises Cancelled, Stopped or DownloadTimeout when the download must end now."""
        if self._cancel is not None and self._cancel.is_set():
            raise Cancelled("the download was cancelled; nothing was written")
        if self._stop.is_set():
            raise Stopped()
        if self.remaining() <= 0:
            raise DownloadTimeout(
                f"the download did not finish within its {self.timeout_s:g} s deadline "
                "(total, across every connection and redirect); nothing was written",
                timeout_s=self.timeout_s,
            )

    def slice(self) -> float:
        """The timeout for the next blocking call (after :meth:`check`)."""
        self.check()
        return max(0.001, min(self.remaining(), POLL_S))

    def budget(self) -> float:
        """The whole time left, for a call that cannot be resumed after a timeout (connect, TLS)."""
        self.check()
        return max(0.001, self.remaining())

    def child(self) -> Deadline:
        """The same deadline and cancel token with a stop of its own (for one parallel phase)."""
        twin = Deadline(self.timeout_s, self._cancel)
        twin._end = self._end
        return twin

    def stop(self) -> None:
        """Tells every connection of this download to wind down (one of them failed)."""
        self._stop.set()

    def sleep(self, seconds: float) -> None:
        """Waits ``seconds`` (a retry back-off), waking early to raise on cancel or deadline."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            self._stop.wait(min(left, self.slice()))
        self.check()

    def call(self, fn: Callable[[], T]) -> T:
        """Runs a call that cannot time out by itself (a resolver) within the deadline.

        The call runs in a daemon thread; when the deadline passes or the
        download is cancelled first, its result is abandoned.
        """
        box: list[T] = []
        err: list[BaseException] = []

        def run() -> None:
            try:
                box.append(fn())
            except BaseException as exc:  # handed to the waiting thread
                err.append(exc)

        worker = threading.Thread(target=run, name="a3s-download-resolve", daemon=True)
        worker.start()
        while worker.is_alive():
            worker.join(self.slice())
        if err:
            raise err[0]
        return box[0]
