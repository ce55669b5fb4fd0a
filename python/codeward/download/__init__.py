"""The secure download: an HTTP(S) URL into one workspace file, and nothing else.

It is the one place where the host process reaches the network, so it is
built to make server-side request forgery and data loss impossible by
construction: one strict URL parser, public addresses only (an explicit
table), resolution once and connections pinned to the validated answers,
redirects re-validated hop by hop, host credentials dropped across origins,
a total deadline and a byte limit, and an atomic, no-clobber write through
the workspace boundary. See docs/download.md.

    from codeward.download import download
    result = download("https://example.com/tool.tar.gz", "artifacts/tool.tar.gz",
                      workspace="/repo", expected_sha256="...")
"""

from ._addresses import IPV4_TABLE, IPV6_TABLE
from ._download import DEFAULT_MAX_BYTES, DEFAULT_TIMEOUT_S, MAX_REDIRECTS, DownloadResult, download
from ._errors import (
    AddressRejected,
    Cancelled,
    DestinationRejected,
    DownloadError,
    DownloadTimeout,
    HttpStatusError,
    IntegrityError,
    NetworkError,
    ProtocolError,
    RangeError,
    RedirectRejected,
    TooLarge,
    UrlRejected,
    WriteError,
)

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_TIMEOUT_S",
    "IPV4_TABLE",
    "IPV6_TABLE",
    "MAX_REDIRECTS",
    "AddressRejected",
    "Cancelled",
    "DestinationRejected",
    "DownloadError",
    "DownloadResult",
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
    "download",
]
