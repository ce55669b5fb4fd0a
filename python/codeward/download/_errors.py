"""Every way a download can fail, as one subtree of the codeward exception tree.

    CodewardError
    └── DownloadError          a download failed; nothing was written at the destination
        ├── UrlRejected        the URL is malformed or names what is never fetched
        │                      (scheme, user information, localhost, odd numeric host ...)
        ├── AddressRejected    a host is, or resolves to, a non-public address (.host, .address)
        ├── RedirectRejected   a redirect is malformed, leaves http(s), loops or is one too many
        │                      (.reason: "url", "scheme", "loop", "too_many", "location")
        ├── TooLarge           the content exceeds max_bytes (.limit, .size when declared)
        ├── DownloadTimeout    the total deadline passed (.timeout_s)
        ├── IntegrityError     the content is not what was promised (.reason: "sha256" with
        │                      .expected/.actual, or "truncated")
        ├── DestinationRejected  the destination path is refused (.path, .reason: "invalid",
        │                      "outside", "symlink", "credential", "exists", "directory", "links")
        ├── RangeError         a ranged response is not exactly the range asked for
        ├── HttpStatusError    the final response is not a success (.status)
        ├── Cancelled          the caller's cancel token was set
        ├── NetworkError       resolution, connection, TLS or proxy failure (.transient)
        ├── ProtocolError      the response is not valid, unambiguous HTTP/1.1
        └── WriteError         the file could not be written (disk full, I/O error)

Messages never contain signed query parameters or credentials: every URL in
them passed through the redaction of ``codeward._redact``. Code branches on the class
or on the documented attributes, never on the message.
"""

from __future__ import annotations

from typing import Literal

from .._errors import CodewardError

__all__ = [
    "AddressRejected",
    "Cancelled",
    "DestinationRejected",
    "DownloadError",
    "DownloadTimeout",
    "HttpStatusError",
    "IntegrityError",
    "NetworkError",
    "ProtocolError",
    "RangeError",
    "RedirectRejected",
    "TooLarge",
    "UrlRejected",
    "WriteError",
]


class DownloadError(CodewardError):
    """A download failed; the destination is as it was and no temporary file is left."""


class UrlRejected(DownloadError, ValueError):
    """The URL does not parse strictly, or names something the tool never fetches."""


class AddressRejected(DownloadError):
    """A host is, or resolves to, an address outside the public unicast space.

    ``host`` is the canonical host name, ``address`` the refused address and
    ``reason`` the row of the address table that refused it.
    """

    def __init__(self, message: str, *, host: str, address: str, reason: str) -> None:
        super().__init__(message)
        self.host = host
        self.address = address
        self.reason = reason


RedirectReason = Literal["url", "scheme", "loop", "too_many", "location"]


class RedirectRejected(DownloadError):
    """A redirect was not followed; ``reason`` says why (see the tree above)."""

    def __init__(self, message: str, *, reason: RedirectReason) -> None:
        super().__init__(message)
        self.reason: RedirectReason = reason


class TooLarge(DownloadError):
    """The content is larger than ``limit`` bytes; ``size`` is the declared size, if any."""

    def __init__(self, message: str, *, limit: int, size: int | None = None) -> None:
        super().__init__(message)
        self.limit = limit
        self.size = size


class DownloadTimeout(DownloadError):
    """The whole download (every hop, connection and byte) took longer than ``timeout_s``."""

    def __init__(self, message: str, *, timeout_s: float) -> None:
        super().__init__(message)
        self.timeout_s = timeout_s


class IntegrityError(DownloadError):
    """The content is not what was promised.

    ``reason`` is ``"sha256"`` (then ``expected`` and ``actual`` are hex
    digests) or ``"truncated"`` (the connection ended before the promised end).
    """

    def __init__(
        self,
        message: str,
        *,
        reason: Literal["sha256", "truncated"],
        expected: str | None = None,
        actual: str | None = None,
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.expected = expected
        self.actual = actual


DestinationReason = Literal[
    "invalid", "outside", "symlink", "credential", "exists", "directory", "links"
]


class DestinationRejected(DownloadError):
    """The destination may not be written; ``path`` is as given, ``reason`` says why."""

    def __init__(self, message: str, *, path: str, reason: DestinationReason) -> None:
        super().__init__(message)
        self.path = path
        self.reason: DestinationReason = reason


class RangeError(DownloadError):
    """A ranged response does not carry exactly the requested range and length."""


class HttpStatusError(DownloadError):
    """The server answered with a status that is not a success; ``status`` is the code."""

    def __init__(self, message: str, *, status: int) -> None:
        super().__init__(message)
        self.status = status


class Cancelled(DownloadError):
    """The caller's cancel token was set; the download stopped and cleaned up."""


class NetworkError(DownloadError):
    """Name resolution, connection, TLS or proxy tunnel failed.

    ``transient`` is True for failures a retry may cure (reset, refused,
    truncated), False for those it cannot (certificate verification).
    """

    def __init__(self, message: str, *, transient: bool = True) -> None:
        super().__init__(message)
        self.transient = transient


class ProtocolError(DownloadError):
    """The response is not valid HTTP/1.1, or its framing is ambiguous."""


class WriteError(DownloadError):
    """Writing the temporary file failed (disk full, I/O error); ``errno`` is set."""

    def __init__(self, message: str, *, errno: int = 0) -> None:
        super().__init__(message)
        self.errno = errno
