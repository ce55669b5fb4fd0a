"""A loopback file server for the download benchmark (run.py starts it in its own process).

    python bench/download/server.py FILE

Prints its port on the first line, then serves the first N bytes of ``FILE``
at ``/bytes/N`` with ``sendfile``: a strong ETag, single byte ranges (206 with
the exact ``Content-Range``), ``If-Range``, one request per connection. It is
as cheap as a server can be in Python, so the client's cost is what the
benchmark sees.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import sys
import threading

_RANGE = re.compile(rb"\r\nrange: *bytes=(\d+)-(\d*)", re.IGNORECASE)
_IF_RANGE = re.compile(rb"\r\nif-range: *([^\r\n]*)", re.IGNORECASE)


def serve(conn: socket.socket, path: str, size: int, etag: bytes) -> None:
    with conn:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = conn.recv(65536)
            if not chunk:
                return
            head += chunk
        target = head.split(b" ", 2)[1]
        total = min(size, int(target.rsplit(b"/", 1)[1])) if target.startswith(b"/bytes/") else 0
        if total <= 0:
            conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
            return
        tag = b'"%s-%d"' % (etag, total)
        m = _RANGE.search(head)
        cond = _IF_RANGE.search(head)
        if m and (cond is None or cond.group(1).strip() == tag):
            start = int(m.group(1))
            end = min(int(m.group(2)) if m.group(2) else total - 1, total - 1)
            status = b"206 Partial Content"
            extra = b"Content-Range: bytes %d-%d/%d\r\n" % (start, end, total)
        else:
            start, end, status, extra = 0, total - 1, b"200 OK", b""
        count = end - start + 1
        conn.sendall(
            b"HTTP/1.1 %s\r\nContent-Length: %d\r\nETag: %s\r\nAccept-Ranges: bytes\r\n"
            b"Content-Type: application/octet-stream\r\n%sConnection: close\r\n\r\n"
            % (status, count, tag, extra)
        )
        with open(path, "rb") as f, contextlib.suppress(OSError):  # a probe read in part
            conn.sendfile(f, start, count)


def main() -> int:
    path = sys.argv[1]
    st = os.stat(path)
    etag = b"%x-%x" % (st.st_ino, st.st_mtime_ns)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    print(sock.getsockname()[1], flush=True)
    while True:
        conn, _ = sock.accept()
        threading.Thread(target=serve, args=(conn, path, st.st_size, etag), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
