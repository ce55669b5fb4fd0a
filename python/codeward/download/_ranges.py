"""Parallel ranged downloads, only where they are provably safe to splice.

The probe is the first request itself, sent with ``Range: bytes=0-``. Ranges
are used only when its answer is a 206 whose ``Content-Range`` is exactly
``bytes 0-(N-1)/N``, with a strong ``ETag``, and the file is large enough to
be worth splitting. The probe's own stream then delivers the first part, and
up to three more connections fetch the others with ``If-Range`` set to that
ETag: if the resource changes, the server answers 200 with the whole new
body, which is refused, never spliced.

Every 206 must carry exactly the requested ``Content-Range``, the same ETag,
the probe answer's exact ``Content-Encoding`` (bytes of differently coded
answers cannot be spliced into one file), and exactly the requested number
of bytes. Only transient failures are
retried (a connection reset or truncated, 408/429/5xx), with back-off and
from the byte where the part stopped; a wrong range never is.

The digest is computed by ``_sink.TrailingHash`` just behind the complete
prefix of the file, so it is ready soon after the last byte lands.
"""

from __future__ import annotations

import dataclasses
import os
import re
import threading
from dataclasses import dataclass

from ..workspace import AtomicWriter
from ._client import Client, Route
from ._deadline import Deadline, Stopped
from ._errors import (
    HttpStatusError,
    IntegrityError,
    NetworkError,
    RangeError,
    TooLarge,
    WriteError,
)
from ._headers import HostHeaders
from ._http import Connection, ResponseHead
from ._sink import TrailingHash, write_at

__all__ = [
    "PART_MIN",
    "Part",
    "RangedDownload",
    "check_partial",
    "content_coding",
    "plan_parts",
    "probe_total",
    "strong_etag",
]

PART_MIN = 16 << 20  # a part smaller than this is not worth a connection
MAX_RETRIES = 3
BACKOFF_S = (0.25, 0.5, 1.0)
TRANSIENT_STATUS = frozenset({408, 429, 500, 502, 503, 504})

_CONTENT_RANGE = re.compile(r"bytes (0|[1-9][0-9]{0,17})-(0|[1-9][0-9]{0,17})/([1-9][0-9]{0,17})")
_ETAG = re.compile(r'"[\x21\x23-\x7e\x80-\xff]*"')


@dataclass
class Part:
    """One contiguous slice of the file, and how much of it is on disk."""

    start: int
    end: int  # inclusive
    done: int = 0

    @property
    def length(self) -> int:
        return self.end - self.start + 1

    @property
    def complete(self) -> bool:
        return self.done >= self.length


def probe_total(head: ResponseHead) -> int:
    """The full size from a 206 answering ``bytes=0-``; RangeError unless exactly that range."""
    value = head.get("content-range")
    m = _CONTENT_RANGE.fullmatch(value or "")
    if value is None or m is None or m.group(1) != "0" or int(m.group(2)) + 1 != int(m.group(3)):
        raise RangeError(
            f"the server answered 'Range: bytes=0-' with Content-Range {value!r}, "
            "not 'bytes 0-(N-1)/N'"
        )
    total = int(m.group(3))
    framing, length = head.framing()
    if framing == "length" and length != total:
        raise RangeError(
            f"the 206 response's Content-Length {length} does not match its Content-Range {value!r}"
        )
    return total


def strong_etag(head: ResponseHead) -> str | None:
    """The response's ETag if it is a strong validator (not ``W/``, well-formed), else None."""
    etag = head.get("etag")
    return etag if etag is not None and _ETAG.fullmatch(etag) else None


def content_coding(head: ResponseHead) -> tuple[str, ...]:
    """The codings of a response's ``Content-Encoding``, in order (``identity`` is none)."""
    codings = (c.strip().lower() for v in head.get_all("content-encoding") for c in v.split(","))
    return tuple(c for c in codings if c and c != "identity")


def plan_parts(total: int, connections: int) -> list[Part] | None:
    """Contiguous parts for ``connections`` (at most), or None when one stream is better."""
    n = min(connections, total // PART_MIN)
    if n < 2:
        return None
    size = total // n
    return [Part(i * size, total - 1 if i == n - 1 else (i + 1) * size - 1) for i in range(n)]


def check_partial(
    head: ResponseHead,
    start: int,
    end: int,
    total: int,
    etag: str,
    coding: tuple[str, ...] = (),
) -> None:
    """Refuses any answer to a range request but the exact 206 asked for, coded as the probe
    answer (``coding``, from :func:`content_coding`) was."""
    asked = f"bytes {start}-{end}/{total}"
    if head.status != 206:
        if head.status in TRANSIENT_STATUS:
            raise HttpStatusError(
                f"a range request got {head.status} {head.reason}".rstrip(), status=head.status
            )
        if head.status == 200:
            raise RangeError(
                f"a request for {asked} got the whole resource (200): it changed since the "
                "probe or ranges are not honoured; not splicing it into the file"
            )
        raise RangeError(f"a request for {asked} got status {head.status}, not 206")
    got = head.get("content-range")
    if got != asked:
        raise RangeError(f"a request for {asked} got Content-Range {got!r}")
    framing, length = head.framing()
    if framing == "length" and length != end - start + 1:
        raise RangeError(f"a request for {asked} got Content-Length {length}")
    if head.get("etag") != etag:
        raise RangeError(
            f"the ETag changed from {etag} to {head.get('etag')!r} during the download"
        )
    got_coding = content_coding(head)
    if got_coding != coding:
        raise RangeError(
            f"a request for {asked} got Content-Encoding {', '.join(got_coding) or 'identity'!r}"
            f", the first part {', '.join(coding) or 'identity'!r}: differently coded bytes "
            "cannot be spliced into one file"
        )


def _transient(exc: BaseException) -> bool:
    if isinstance(exc, NetworkError):
        return exc.transient
    if isinstance(exc, IntegrityError):
        return exc.reason == "truncated"
    return isinstance(exc, HttpStatusError) and exc.status in TRANSIENT_STATUS


class RangedDownload:
    """Fetches ``parts`` of one file in parallel into ``temp`` and hashes them in order."""

    def __init__(
        self,
        client: Client,
        route: Route,
        headers: HostHeaders,
        temp: AtomicWriter,
        parts: list[Part],
        total: int,
        etag: str,
    ) -> None:
        self.deadline: Deadline = client.deadline.child()  # its stop ends this phase only
        self.client = dataclasses.replace(client, deadline=self.deadline)
        self.route = route
        self.headers = headers
        self.temp = temp
        self.parts = parts
        self.total = total
        self.etag = etag
        self.fd = temp.fileno()
        self._errors: list[BaseException] = []
        self._lock = threading.Lock()

    def run(self, probe: tuple[Connection, ResponseHead]) -> str:
        """Downloads every part; returns the SHA-256 hex digest of the whole file."""
        try:
            os.ftruncate(self.fd, self.total)
        except OSError as exc:
            raise WriteError(
                f"sizing the download of {self.temp.path!r} failed: {exc.strerror}",
                errno=exc.errno or 0,
            ) from None
        probe[0].deadline = self.deadline
        self.coding = content_coding(probe[1])
        self._hasher = TrailingHash(self.temp.open_reader())
        workers = [
            threading.Thread(
                target=self._worker, args=(part,), name=f"a3s-download-part-{i}", daemon=True
            )
            for i, part in enumerate(self.parts[1:], 1)
        ]
        digest = ""
        try:
            self._hasher.start(self._frontier)
            for w in workers:
                w.start()
            self._fetch(self.parts[0], probe)
            probe[0].close()
            for w in workers:
                while w.is_alive():
                    w.join(self.deadline.slice())
            digest = self._hasher.digest(self.total, self.deadline)
        except Stopped:
            pass
        except BaseException as exc:
            self._fail(exc)
        finally:
            self.deadline.stop()  # done or failed: no worker outlives this call
            for w in workers:
                if w.ident is not None:
                    w.join()
            self._hasher.close()
        if self._errors:
            raise self._errors[0]
        if not digest:  # cannot happen without an error above; fail closed if it ever does
            raise NetworkError("the ranged download stopped without completing")
        return digest

    def _frontier(self) -> int:
        """The end of the file's complete prefix: what the hasher may read."""
        for part in self.parts:
            if not part.complete:
                return part.start + part.done
        return self.total

    def _fail(self, exc: BaseException) -> None:
        with self._lock:
            self._errors.append(exc)
        self.deadline.stop()

    def _worker(self, part: Part) -> None:
        try:
            self._fetch(part, None)
        except Stopped:
            pass
        except BaseException as exc:  # reported to run(), which raises the first
            self._fail(exc)

    def _fetch(self, part: Part, probe: tuple[Connection, ResponseHead] | None) -> None:
        """Gets ``part`` completely, resuming after transient failures."""
        path = self.temp.path

        def sink(view: memoryview) -> None:
            write_at(self.fd, view, part.start + part.done, path)
            part.done += len(view)
            self._hasher.poke()

        attempt = 0
        while not part.complete:
            try:
                if probe is not None:
                    conn, head = probe
                    probe = None
                    conn.read_body(head, sink, limit=self.total, stop_after=part.length)
                    continue
                start = part.start + part.done
                extra = [("Range", f"bytes={start}-{part.end}"), ("If-Range", self.etag)]
                with self.client.get(self.route, self.headers, extra) as (conn, head):
                    check_partial(head, start, part.end, self.total, self.etag, self.coding)
                    want = part.end - start + 1
                    if conn.read_body(head, sink, limit=want) != want:
                        raise IntegrityError(
                            f"a range response ended after {part.done} of {part.length} bytes",
                            reason="truncated",
                        )
            except TooLarge:
                raise RangeError(
                    f"a response for bytes {part.start}-{part.end} carried more bytes than asked"
                ) from None
            except (NetworkError, IntegrityError, HttpStatusError) as exc:
                attempt += 1
                if not _transient(exc) or attempt > MAX_RETRIES:
                    raise
                self.deadline.sleep(BACKOFF_S[attempt - 1])
