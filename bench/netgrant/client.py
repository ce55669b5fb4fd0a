"""The client of the network grant benchmark: run on the host (direct) or in the sandbox (granted).

    python client.py setup PORT COUNT [--proxy HOST:PORT]
    python client.py bulk PORT SIZE [--proxy HOST:PORT]

``setup`` opens COUNT connections one after the other and times each from
``connect()`` to the first byte of a 1-byte response (through the proxy:
connect, ``CONNECT``, its answer, then the same request), and prints the
times in seconds, one per line. ``bulk`` reads SIZE bytes of one response
and prints the seconds it took and the bytes read. The same script on both
sides, so the only difference measured is the path.
"""

from __future__ import annotations

import socket
import sys
import time


def open_conn(port: int, proxy: tuple[str, int] | None) -> socket.socket:
    if proxy is None:
        return socket.create_connection(("127.0.0.1", port))
    sock = socket.create_connection(proxy)
    sock.sendall(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % (port, port))
    answer = b""
    while b"\r\n\r\n" not in answer:
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError("the proxy closed the connection")
        answer += chunk
    if not answer.startswith(b"HTTP/1.1 200"):
        raise ConnectionError(answer.split(b"\r\n", 1)[0].decode(errors="replace"))
    return sock


def request(sock: socket.socket, size: int) -> int:
    """Sends GET /bytes/size and reads the whole response; returns the body bytes read."""
    sock.sendall(b"GET /bytes/%d HTTP/1.1\r\nHost: bench\r\n\r\n" % size)
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    head = b""
    while b"\r\n\r\n" not in head:
        n = sock.recv_into(buf)
        if n == 0:
            raise ConnectionError("closed before the response head")
        head += bytes(view[:n])
    body = len(head.split(b"\r\n\r\n", 1)[1])
    while body < size:
        n = sock.recv_into(buf)
        if n == 0:
            break
        body += n
    return body


def main(argv: list[str]) -> None:
    mode, port = argv[0], int(argv[1])
    proxy = None
    if "--proxy" in argv:
        host, _, proxy_port = argv[argv.index("--proxy") + 1].rpartition(":")
        proxy = (host, int(proxy_port))
    if mode == "setup":
        for _ in range(int(argv[2])):
            t0 = time.perf_counter()
            with open_conn(port, proxy) as sock:
                request(sock, 1)
            print(f"{time.perf_counter() - t0:.9f}")
    else:
        size = int(argv[2])
        with open_conn(port, proxy) as sock:
            t0 = time.perf_counter()
            got = request(sock, size)
            print(f"{time.perf_counter() - t0:.9f} {got}")


if __name__ == "__main__":
    main(sys.argv[1:])
