"""What the file tools share: reading a whole text file under caps, and recording a change."""

from __future__ import annotations

import hashlib
import os

from ..workspace import Resolved, Workspace
from ._base import ErrorKind, ToolContext
from ._failure import ToolError

__all__ = [
    "BINARY_PROBE_BYTES",
    "MAX_TEXT_FILE_BYTES",
    "decode_text",
    "looks_binary",
    "read_text_file",
    "record_change",
    "sha256_hex",
]

MAX_TEXT_FILE_BYTES = 10 * 1024 * 1024  # edit, patch and whole-file reads stop here
BINARY_PROBE_BYTES = 8192  # the first block decides whether a file is text


def looks_binary(block: bytes) -> bool:
    """True when the first block of a file has a NUL byte or is not UTF-8 text.

    A multi-byte character cut by the end of the block does not count: only
    a byte sequence that is invalid where it stands does.
    """
    if b"\x00" in block:
        return True
    try:
        block.decode("utf-8")
    except UnicodeDecodeError as exc:
        return not (exc.start >= len(block) - 3 and exc.reason == "unexpected end of data")
    return False


def binary_error(path: str) -> ToolError:
    return ToolError(
        ErrorKind.BINARY_FILE,
        f"{path!r} looks like a binary file (NUL bytes or invalid UTF-8 in its first "
        f"{BINARY_PROBE_BYTES} bytes); this tool handles text only. Inspect it with bash "
        f"(for example `file {path}` or `xxd {path} | head`).",
        path=path,
    )


def decode_text(data: bytes, path: str) -> str:
    """``data`` as UTF-8 text; a file that is not UTF-8 is refused as binary."""
    if looks_binary(data[:BINARY_PROBE_BYTES]):
        raise binary_error(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise binary_error(path) from None


def read_text_file(
    workspace: Workspace, path: str, *, max_bytes: int = MAX_TEXT_FILE_BYTES
) -> tuple[bytes, os.stat_result, Resolved]:
    """The whole content of a regular file in the workspace, its ``stat`` and where it is.

    Opened through the credential boundary; a file larger than ``max_bytes``
    is refused with TooLarge before it is read.
    """
    fd, resolved = workspace.open_file(path)
    try:
        st = os.fstat(fd)
        if st.st_size > max_bytes:
            raise ToolError(
                ErrorKind.TOO_LARGE,
                f"{path!r} is {st.st_size} bytes, over the {max_bytes}-byte limit of this tool",
                path=resolved.relpath,
                size=st.st_size,
            )
        chunks = []
        total = 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            total += len(chunk)
            if total > max_bytes:  # it grew while being read
                raise ToolError(
                    ErrorKind.TOO_LARGE,
                    f"{path!r} grew past the {max_bytes}-byte limit while it was read",
                    path=resolved.relpath,
                )
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks), st, resolved


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def record_change(ctx: ToolContext, tool: str, relpath: str, digest: str) -> None:
    """Tells the session's mutation ledger about a change that happened (when it has one)."""
    if ctx.recorder is not None:
        ctx.recorder.record(tool, relpath, digest)
