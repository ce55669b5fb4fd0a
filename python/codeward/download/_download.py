"""``download()``: one URL into one workspace file, or nothing at all.

The order of a download, and why:

1. Arguments and the URL are checked, then the destination is opened (walked
   with ``O_NOFOLLOW``, credential boundary, no symlink crossed, no-clobber
   unless ``overwrite``) and its temporary file created: a refused path
   costs no network traffic.
2. Each hop is parsed, checked and resolved once (``_client.Client.route``);
   redirects are followed by hand, at most :data:`MAX_REDIRECTS`, each one
   validated like the first URL; a cross-origin hop drops the host's
   credentials for good.
3. The body streams into the temporary file under the byte limit and the
   deadline, hashed on the way; parallel ranges only when ``_ranges`` proves
   them safe.
4. The digest is compared, then the file is fsynced and put in place
   atomically. Any failure before that, a cancel or a timeout included,
   removes the temporary file and leaves the destination as it was.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import ssl
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal

from .._errors import (
    CredentialBoundaryError,
    DestinationExists,
    HardLinkRefused,
    PathOutsideWorkspace,
    WorkspaceError,
)
from ..workspace import AtomicWriter, Workspace
from ._client import Client, Route
from ._deadline import CancelToken, Deadline
from ._errors import (
    AddressRejected,
    DestinationReason,
    DestinationRejected,
    HttpStatusError,
    IntegrityError,
    RangeError,
    RedirectRejected,
    TooLarge,
    UrlRejected,
    WriteError,
)
from ._headers import HostHeaders
from ._http import Connection, ResponseHead
from ._net import (
    Dialer,
    Resolver,
    check_ssl_context,
    default_ssl_context,
    plain_dialer,
    system_proxy_resolver,
    system_resolver,
)
from ._proxy import parse_proxy
from ._ranges import RangedDownload, plan_parts, probe_total, strong_etag
from ._sink import StreamSink, TrailingHash
from ._url import Url, join, parse_url

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_TIMEOUT_S",
    "MAX_REDIRECTS",
    "DownloadResult",
    "download",
]

DEFAULT_MAX_BYTES = 512 << 20
MAX_BYTES_LIMIT = 8 << 30
DEFAULT_TIMEOUT_S = 300.0
MAX_REDIRECTS = 10
MAX_CONNECTIONS = 4
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


@dataclass(frozen=True)
class DownloadResult:
    """What a finished download wrote.

    ``file_path`` is workspace-relative; ``url`` and ``redirects`` (every hop
    after the first, in order) are sanitized: signed query values redacted.
    ``strategy`` is ``"single"`` (one stream) or ``"ranges"`` (``connections``
    parallel ranged connections).
    """

    file_path: str
    bytes: int
    sha256: str
    content_type: str | None
    strategy: Literal["single", "ranges"]
    connections: int
    redirects: tuple[str, ...] = field(default=())
    overwritten: bool = False
    url: str = ""

    def to_dict(self) -> dict[str, object]:
        return {
            "file_path": self.file_path,
            "bytes": self.bytes,
            "sha256": self.sha256,
            "content_type": self.content_type,
            "strategy": self.strategy,
            "connections": self.connections,
            "redirects": list(self.redirects),
            "overwritten": self.overwritten,
            "url": self.url,
        }


def download(
    url: str,
    file_path: str,
    *,
    workspace: Workspace | str | os.PathLike[str],
    overwrite: bool = False,
    max_bytes: int = DEFAULT_MAX_BYTES,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    expected_sha256: str | None = None,
    connections: int = MAX_CONNECTIONS,
    proxy: str | None = None,
    allow_env_proxy: bool = False,
    headers: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
    ssl_context: ssl.SSLContext | None = None,
    resolver: Resolver | None = None,
    dialer: Dialer | None = None,
    cancel: CancelToken | None = None,
) -> DownloadResult:
    """Fetches ``url`` into ``file_path`` (relative to ``workspace``) safely; see the module doc.

    Raises a :class:`DownloadError` subclass for every failure the network,
    the server or the destination can cause, and ValueError/TypeError for
    host settings that are wrong in themselves (a bad header, a context that
    does not verify certificates, a limit out of range).
    """
    _check_limits(max_bytes, timeout_s, connections)
    expected = _check_sha256(expected_sha256)
    host_headers = HostHeaders(headers)
    ctx = default_ssl_context() if ssl_context is None else ssl_context
    check_ssl_context(ctx)
    explicit_proxy = None if proxy is None else parse_proxy(proxy)
    start = parse_url(url)
    ws = _workspace(workspace, file_path)
    deadline = Deadline(float(timeout_s), cancel)
    deadline.check()
    client = Client(
        deadline=deadline,
        ssl_context=ctx,
        resolver=system_resolver if resolver is None else resolver,
        dialer=plain_dialer if dialer is None else dialer,
        proxy_resolver=system_proxy_resolver if resolver is None else resolver,
        proxy=explicit_proxy,
        env_proxy=allow_env_proxy and explicit_proxy is None,
    )
    with _destination(ws, file_path, overwrite) as temp:
        job = _Job(client, host_headers, temp, max_bytes, connections)
        job.fetch(start)
        if expected is not None and job.sha256 != expected:
            raise IntegrityError(
                f"the SHA-256 of {job.url.redacted()} is {job.sha256}, not the expected "
                f"{expected}; the file was not written",
                reason="sha256",
                expected=expected,
                actual=job.sha256,
            )
        deadline.check()  # a cancel that came during the transfer still wins over the commit
        written = temp.commit()
    return DownloadResult(
        file_path=written.relpath,
        bytes=job.bytes,
        sha256=job.sha256,
        content_type=job.content_type,
        strategy=job.strategy,
        connections=job.connections,
        redirects=tuple(u.redacted() for u in job.hops[1:]),
        overwritten=written.overwritten,
        url=job.url.redacted(),
    )


class _Job:
    """The network half of one download: hops, then the transfer into ``temp``."""

    def __init__(
        self,
        client: Client,
        headers: HostHeaders,
        temp: AtomicWriter,
        max_bytes: int,
        connections: int,
    ) -> None:
        self.client = client
        self.headers = headers
        self.temp = temp
        self.max_bytes = max_bytes
        self.want_connections = connections
        self.hops: list[Url] = []
        self.bytes = 0
        self.sha256 = ""
        self.content_type: str | None = None
        self.strategy: Literal["single", "ranges"] = "single"
        self.connections = 1

    @property
    def url(self) -> Url:
        return self.hops[-1]

    def fetch(self, url: Url) -> None:
        probe = [("Range", "bytes=0-")] if self.want_connections > 1 else []
        seen = set()
        while True:
            self.hops.append(url)
            seen.add(url.geturl())
            route = self._route(url)
            with self.client.get(route, self.headers, probe) as (conn, head):
                if head.status not in REDIRECT_STATUSES:
                    self._transfer(route, conn, head)
                    return
                location = head.get("location")
            url = self._next_hop(url, location, seen)

    def _route(self, url: Url) -> Route:
        try:
            return self.client.route(url)
        except AddressRejected as exc:
            if len(self.hops) == 1:
                raise
            raise AddressRejected(
                f"the redirect to {url.redacted()} was refused: {exc}",
                host=exc.host,
                address=exc.address,
                reason=exc.reason,
            ) from None

    def _next_hop(self, current: Url, location: str | None, seen: set[str]) -> Url:
        where = current.redacted()
        if location is None:
            raise RedirectRejected(f"{where} redirects without a Location", reason="location")
        if len(self.hops) > MAX_REDIRECTS:
            raise RedirectRejected(
                f"more than {MAX_REDIRECTS} redirects, the last from {where}", reason="too_many"
            )
        try:
            text = location.encode("latin-1").decode("utf-8")
            nxt = parse_url(join(current, text))
        except UnicodeError:
            raise RedirectRejected(
                f"{where} redirects to a Location that is not UTF-8", reason="url"
            ) from None
        except UrlRejected as exc:
            scheme = join(current, text).split(":", 1)[0].lower()
            reason: Literal["scheme", "url"] = "url" if scheme in ("http", "https") else "scheme"
            raise RedirectRejected(
                f"{where} redirects to a refused URL: {exc}", reason=reason
            ) from None
        if nxt.geturl() in seen:
            raise RedirectRejected(
                f"redirect loop: {where} leads back to {nxt.redacted()}", reason="loop"
            )
        if nxt.origin != current.origin:
            self.headers = self.headers.cross_origin()
        return nxt

    def _transfer(self, route: Route, conn: Connection, head: ResponseHead) -> None:
        self.content_type = head.get("content-type")
        if head.status == 206 and self.want_connections > 1:
            self._from_probe(route, conn, head)
            return
        if head.status == 416 and self.want_connections > 1 and _empty(head):
            self.sha256 = hashlib.sha256().hexdigest()
            return
        if head.status != 200:
            raise HttpStatusError(
                f"{self.url.redacted()} answered {head.status} {head.reason}".rstrip(),
                status=head.status,
            )
        length = head.framing()[1]
        if length is not None and length > self.max_bytes:
            raise TooLarge(
                f"{self.url.redacted()} is {length} bytes, more than the limit of {self.max_bytes}",
                limit=self.max_bytes,
                size=length,
            )
        self.bytes, self.sha256 = self._stream(conn, head, limit=self.max_bytes)

    def _stream(self, conn: Connection, head: ResponseHead, *, limit: int) -> tuple[int, str]:
        """The body into the temporary file as one stream, hashed just behind it."""
        hasher = TrailingHash(self.temp.open_reader())
        try:
            sink = StreamSink(self.temp.fileno(), self.temp.path, hasher.poke)
            hasher.start(lambda: sink.count)
            got = conn.read_body(head, sink, limit=limit)
            return got, hasher.digest(got, self.client.deadline)
        finally:
            hasher.close()

    def _from_probe(self, route: Route, conn: Connection, head: ResponseHead) -> None:
        total = probe_total(head)
        if total > self.max_bytes:
            raise TooLarge(
                f"{self.url.redacted()} is {total} bytes, more than the limit of {self.max_bytes}",
                limit=self.max_bytes,
                size=total,
            )
        etag = strong_etag(head)
        parts = plan_parts(total, self.want_connections) if etag is not None else None
        if parts is None or etag is None:  # the probe's stream is the whole file
            try:
                got, digest = self._stream(conn, head, limit=total)
            except TooLarge:
                raise RangeError(f"the 206 response carried more than its {total} bytes") from None
            if got != total:
                raise IntegrityError(
                    f"the connection ended after {got} of {total} bytes", reason="truncated"
                )
            self.bytes, self.sha256 = total, digest
            return
        ranged = RangedDownload(self.client, route, self.headers, self.temp, parts, total, etag)
        self.sha256 = ranged.run((conn, head))
        self.bytes, self.strategy, self.connections = total, "ranges", len(parts)


def _empty(head: ResponseHead) -> bool:
    """A 416 to ``bytes=0-`` that says the resource is empty (``bytes */0``)."""
    return head.get("content-range") == "bytes */0"


# -- arguments and destination ------------------------------------------------------------------


def _check_limits(max_bytes: int, timeout_s: float, connections: int) -> None:
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int):
        raise TypeError("max_bytes must be an integer")
    if not 1 <= max_bytes <= MAX_BYTES_LIMIT:
        raise ValueError(f"max_bytes must be from 1 to {MAX_BYTES_LIMIT}, not {max_bytes}")
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)):
        raise TypeError("timeout_s must be a number")
    if not 0 < timeout_s <= 3600:
        raise ValueError(f"timeout_s must be more than 0 and at most 3600, not {timeout_s}")
    if isinstance(connections, bool) or not isinstance(connections, int):
        raise TypeError("connections must be an integer")
    if not 1 <= connections <= MAX_CONNECTIONS:
        raise ValueError(f"connections must be from 1 to {MAX_CONNECTIONS}, not {connections}")


def _check_sha256(value: str | None) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value) != 64 or not _is_hex(value):
        raise ValueError("expected_sha256 must be 64 hexadecimal characters")
    return value.lower()


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdefABCDEF" for c in text)


@contextlib.contextmanager
def _destination(ws: Workspace, path: str, overwrite: bool) -> Iterator[AtomicWriter]:
    """The destination's temporary file; every refusal becomes DestinationRejected.

    Leaving the block without a commit (any exception) removes the temporary file.
    """
    _check_destination_text(path)
    temp = AtomicWriter(ws, path, overwrite=overwrite, create_parents=True)
    try:
        lexical = ws.parts(path)
        temp.__enter__()
    except (WorkspaceError, OSError) as exc:
        raise _refused(exc, path) from None
    try:
        if temp.parts != lexical:
            raise DestinationRejected(
                f"the destination {path!r} crosses a symbolic link (it leads to "
                f"{'/'.join(temp.parts)!r}); downloads write only to real paths",
                path=path,
                reason="symlink",
            )
        yield temp
    except WorkspaceError as exc:  # the no-clobber commit found a file that appeared meanwhile
        raise _refused(exc, path) from None
    except OSError as exc:  # fsync or rename at the commit
        raise WriteError(
            f"writing {path!r} failed: {exc.strerror or exc}", errno=exc.errno or 0
        ) from None
    finally:
        temp.__exit__(None, None, None)


def _workspace(workspace: Workspace | str | os.PathLike[str], path: str) -> Workspace:
    if isinstance(workspace, Workspace):
        return workspace
    try:
        return Workspace(workspace)
    except WorkspaceError as exc:
        raise DestinationRejected(str(exc), path=str(path), reason="invalid") from None


def _check_destination_text(path: object) -> None:
    if not isinstance(path, str):
        raise DestinationRejected(
            f"the destination must be a string, not {type(path).__name__}",
            path=repr(path),
            reason="invalid",
        )
    if path.startswith(("/", "\\")) or os.path.isabs(path):
        raise DestinationRejected(
            f"the destination {path!r} must be a path relative to the workspace",
            path=path,
            reason="invalid",
        )
    if path.endswith(("/", "/.", "/..")) or path in (".", ".."):
        raise DestinationRejected(
            f"the destination {path!r} names a directory, not a file", path=path, reason="invalid"
        )


def _refused(exc: BaseException, path: str) -> DestinationRejected:
    reason: DestinationReason = "invalid"
    if isinstance(exc, CredentialBoundaryError):
        reason = "credential"
    elif isinstance(exc, DestinationExists):
        reason = "exists"
    elif isinstance(exc, HardLinkRefused):
        reason = "links"
    elif isinstance(exc, PathOutsideWorkspace):
        reason = "outside"
    if isinstance(exc, WorkspaceError):
        message = str(exc)
    else:
        message = (
            f"the destination {path!r} cannot be written: {getattr(exc, 'strerror', None) or exc}"
        )
    return DestinationRejected(message, path=path, reason=reason)
