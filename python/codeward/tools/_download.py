"""The ``download`` tool: the model-facing face of :func:`codeward.download.download`.

The model chooses the URL, the destination and the limits; everything that
reaches further (request headers such as credentials, a CA, a proxy, the
resolver and dialer) is the host's, given to the constructor, and never
appears in the schema. The kernel has already admitted the call; this only
runs it and maps every refusal to a :class:`ToolResult` failure.
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar
from urllib.parse import unquote

from .._redact import redact_url
from ..download import DownloadError, UrlRejected, download
from ..download import _errors as errors
from ..download._headers import HostHeaders
from ..download._net import Dialer, Resolver, check_ssl_context
from ..download._proxy import parse_proxy
from ..download._url import parse_url
from ._base import ErrorKind, PathMap, Tool, ToolContext, ToolKind, ToolResult

__all__ = ["DownloadTool", "default_file_name"]

_GIB = 1 << 30
_MIB = 1 << 20
_NAME_CHARS = re.compile(r"[^A-Za-z0-9._+-]+")
_MAX_NAME = 120


class DownloadTool(Tool):
    """Fetches an http(s) URL into a workspace file (see docs/download.md)."""

    name: ClassVar[str] = "download"
    kind: ClassVar[ToolKind] = ToolKind.DOWNLOAD
    description: ClassVar[str] = (
        "Download an http:// or https:// URL into a file in the workspace. Only public internet "
        "addresses are reachable (no localhost, private networks or cloud metadata). The file is "
        "written atomically; an existing file is kept unless overwrite is true. Give "
        "expected_sha256 when you know the digest: a mismatch writes nothing."
    )
    schema: ClassVar[Mapping[str, Any]] = {
        "type": "object",
        "properties": {
            "url": {
                "type": "string",
                "minLength": 1,
                "maxLength": 8192,
                "description": "The http:// or https:// URL to fetch.",
            },
            "file_path": {
                "type": "string",
                "minLength": 1,
                "description": "Destination relative to the workspace; default: the URL's "
                "file name.",
            },
            "overwrite": {
                "type": "boolean",
                "default": False,
                "description": "Replace an existing file (default false).",
            },
            "max_bytes": {
                "type": "integer",
                "minimum": 1,
                "maximum": 8 * _GIB,
                "default": 512 * _MIB,
                "description": "Refuse content larger than this many bytes (default 512 MiB).",
            },
            "timeout": {
                "type": "integer",
                "minimum": 1,
                "maximum": 3600,
                "default": 300,
                "description": "Total time limit in seconds (default 300).",
            },
            "expected_sha256": {
                "type": "string",
                "pattern": "^[0-9a-fA-F]{64}$",
                "description": "The expected SHA-256 of the content, 64 hex digits.",
            },
            "connections": {
                "type": "integer",
                "minimum": 1,
                "maximum": 4,
                "default": 4,
                "description": "Parallel ranged connections for large files (default 4).",
            },
        },
        "required": ["url"],
        "additionalProperties": False,
    }

    def __init__(
        self,
        *,
        headers: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
        ssl_context: ssl.SSLContext | None = None,
        proxy: str | None = None,
        resolver: Resolver | None = None,
        dialer: Dialer | None = None,
        allow_env_proxy: bool = False,
    ) -> None:
        self._headers = HostHeaders(headers).items  # a bad header fails at construction
        if ssl_context is not None:
            check_ssl_context(ssl_context)
        if proxy is not None:
            parse_proxy(proxy)  # a bad setting fails here, at construction, not at the first call
        self._ssl_context = ssl_context
        self._proxy = proxy
        self._resolver = resolver
        self._dialer = dialer
        self._allow_env_proxy = allow_env_proxy

    def paths(self, args: Mapping[str, Any]) -> list[str]:
        path = args.get("file_path")
        if isinstance(path, str):
            return [path]
        url = args.get("url")
        return [default_file_name(url)] if isinstance(url, str) else []

    def resolve(
        self, args: Mapping[str, Any], relpath: PathMap
    ) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        """The destination is decided on: ``file_path``, or the name inferred from the URL."""
        out = dict(args)
        paths = self.paths(args)
        if not paths:
            return out, []
        out["file_path"] = relpath(paths[0])
        return out, [("write", out["file_path"])]

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        url, paths = args.get("url"), self.paths(args)
        if not isinstance(url, str) or not paths:
            return ToolResult.failure(self.name, ErrorKind.INVALID_ARGUMENT, "url must be a string")
        path = paths[0]
        try:
            result = download(
                url,
                path,
                workspace=ctx.workspace,
                overwrite=bool(args.get("overwrite", False)),
                max_bytes=int(args.get("max_bytes", 512 * _MIB)),
                timeout_s=float(args.get("timeout", 300)),
                expected_sha256=args.get("expected_sha256"),
                connections=int(args.get("connections", 4)),
                proxy=self._proxy,
                allow_env_proxy=self._allow_env_proxy,
                headers=self._headers,
                ssl_context=self._ssl_context,
                resolver=self._resolver,
                dialer=self._dialer,
                cancel=ctx.cancel,
            )
        except DownloadError as exc:
            return ToolResult.failure(
                self.name,
                error_kind(exc),
                str(exc),
                url=redact_url(url),
                file_path=path,
                error=type(exc).__name__,
            )
        except ValueError as exc:  # an argument the schema let through but the library refuses
            return ToolResult.failure(
                self.name, ErrorKind.INVALID_ARGUMENT, str(exc), url=redact_url(url)
            )
        if ctx.recorder is not None:
            ctx.recorder.record(self.name, result.file_path, result.sha256)
        via = f" after {len(result.redirects)} redirect(s)" if result.redirects else ""
        return ToolResult(
            self.name,
            f"Downloaded {result.bytes} bytes from {result.url}{via} to {result.file_path} "
            f"(sha256 {result.sha256}{', replaced the old file' if result.overwritten else ''}).",
            metadata=result.to_dict(),
        )


def error_kind(exc: DownloadError) -> ErrorKind:
    """The ErrorKind a model and a host branch on, for each download failure."""
    if isinstance(exc, errors.UrlRejected):
        return ErrorKind.INVALID_ARGUMENT
    if isinstance(exc, errors.AddressRejected):
        return ErrorKind.PERMISSION_DENIED
    if isinstance(exc, errors.RedirectRejected):
        return ErrorKind.PERMISSION_DENIED if exc.reason in ("scheme", "url") else ErrorKind.NETWORK
    if isinstance(exc, errors.TooLarge):
        return ErrorKind.TOO_LARGE
    if isinstance(exc, errors.DownloadTimeout):
        return ErrorKind.TIMEOUT
    if isinstance(exc, errors.Cancelled):
        return ErrorKind.CANCELLED
    if isinstance(exc, errors.IntegrityError):
        return ErrorKind.CONFLICT if exc.reason == "sha256" else ErrorKind.NETWORK
    if isinstance(exc, errors.DestinationRejected):
        return {
            "credential": ErrorKind.CREDENTIAL_BOUNDARY,
            "exists": ErrorKind.CONFLICT,
            "invalid": ErrorKind.INVALID_ARGUMENT,
        }.get(exc.reason, ErrorKind.PERMISSION_DENIED)
    if isinstance(exc, errors.HttpStatusError):
        if exc.status in (404, 410):
            return ErrorKind.NOT_FOUND
        return ErrorKind.PERMISSION_DENIED if exc.status in (401, 403) else ErrorKind.NETWORK
    if isinstance(exc, errors.WriteError):
        return ErrorKind.IO_ERROR
    if isinstance(exc, (errors.NetworkError, errors.ProtocolError, errors.RangeError)):
        return ErrorKind.NETWORK
    return ErrorKind.TOOL_FAILED


def default_file_name(url: str) -> str:
    """A safe file name from the URL's last path segment, ``"download"`` when there is none.

    Only letters, digits and ``._+-`` are kept, leading dots and dashes are
    dropped (no hidden files such as ``.env``, nothing that looks like an
    option), and the name is shortened keeping its extension.
    """
    try:
        path = parse_url(url).path
    except UrlRejected:
        return "download"
    segment = unquote(path.rsplit("/", 1)[-1], errors="replace")
    name = _NAME_CHARS.sub("_", segment).lstrip(".-_")
    if len(name) > _MAX_NAME:
        stem, dot, ext = name.rpartition(".")
        ext = ext[:16] if dot and stem else ""
        name = name[: _MAX_NAME - len(ext) - 1] + "." + ext if ext else name[:_MAX_NAME]
    return name if name.strip(".") else "download"
