"""A loopback byte source for the network grant benchmark (run.py starts it in its own process).

    python bench/netgrant/source.py

Prints its port on the first line, then answers ``GET /bytes/N`` with N
bytes (a 1 MiB block sent again and again: no disk, no per-byte work), one
request per connection, so the clients' and the relay's cost is what the
benchmark sees.
"""

from __future__ import annotations

import contextlib
import socket
import threading

BLOCK = memoryview(bytes(range(256)) * 4096)  # 1 MiB


def serve(conn: socket.socket) -> None:
    with conn:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = conn.recv(65536)
            if not chunk:
                return
            head += chunk
        target = head.split(b" ", 2)[1]
        total = int(target.rsplit(b"/", 1)[1]) if target.startswith(b"/bytes/") else 0
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % total)
        with contextlib.suppress(OSError):
            while total > 0:
                n = min(total, len(BLOCK))
                conn.sendall(BLOCK[:n])
                total -= n


def main() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(sock.getsockname()[1], flush=True)
    while True:
        conn, _ = sock.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
