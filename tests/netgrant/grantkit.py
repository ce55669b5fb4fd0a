"""Loopback servers and helpers for the network grant suites.

The origins are real servers on the host's loopback; the sandboxed command
reaches them only through the grant's proxy and the session's mediator. As
in the download suites (tests/download/dlserver.py, reused here), names such
as dl.example.com resolve through ``FakeNet`` to public addresses that the
fake dialer maps to these servers: the address checks in between are the
real ones. A grant of 127.0.0.1 reaches a server directly (the grant names
the address, so the address table does not apply).
"""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import io
import os
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "download"))

from dlserver import PUBLIC_IP, PUBLIC_IP2, Certs, FakeNet, make_certs

__all__ = [
    "PUBLIC_IP",
    "PUBLIC_IP2",
    "Canary",
    "Certs",
    "FakeNet",
    "StaticOrigin",
    "build_site",
    "make_certs",
]


class _Quiet(http.server.SimpleHTTPRequestHandler):
    """A static file handler that records each request instead of logging it."""

    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        with self.server.lock:
            self.server.seen.append(f"{self.command} {self.path}")


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    tls: ssl.SSLContext | None = None
    lock: threading.Lock
    seen: list[str]

    def finish_request(self, request: socket.socket, client_address: object) -> None:
        # the TLS handshake in the connection's own thread, never in the accept loop
        if self.tls is not None:
            try:
                request = self.tls.wrap_socket(request, server_side=True)
            except (OSError, ssl.SSLError):
                return
        super().finish_request(request, client_address)


class StaticOrigin:
    """Serves a directory over HTTP or HTTPS on 127.0.0.1; ``seen`` lists each request."""

    def __init__(self, root: Path, tls: ssl.SSLContext | None = None) -> None:
        handler = _handler_for(root)
        self.server = _Server(("127.0.0.1", 0), handler)
        self.server.tls = tls
        self.server.lock = threading.Lock()
        self.server.seen = []
        self.port: int = self.server.server_address[1]
        self.addr = ("127.0.0.1", self.port)
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def seen(self) -> list[str]:
        with self.server.lock:
            return list(self.server.seen)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _handler_for(root: Path) -> type[_Quiet]:
    class Handler(_Quiet):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, directory=str(root), **kwargs)  # type: ignore[misc]

    return Handler


class Canary:
    """A TCP and a UDP socket on the host's loopback that must never hear from the sandbox."""

    def __init__(self) -> None:
        self.tcp = socket.socket()
        self.tcp.bind(("127.0.0.1", 0))
        self.tcp.listen(8)
        self.tcp.setblocking(False)
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.udp.setblocking(False)
        self.tcp_port = self.tcp.getsockname()[1]
        self.udp_port = self.udp.getsockname()[1]

    def heard(self) -> list[str]:
        what = []
        with contextlib.suppress(BlockingIOError):
            conn, peer = self.tcp.accept()
            conn.close()
            what.append(f"tcp from {peer}")
        with contextlib.suppress(BlockingIOError):
            data, peer = self.udp.recvfrom(2048)
            what.append(f"udp {data!r} from {peer}")
        return what

    def close(self) -> None:
        self.tcp.close()
        self.udp.close()


def _wheel() -> tuple[str, bytes]:
    """A minimal, valid pure-Python wheel: demo_pkg 1.0."""
    name = "demo_pkg-1.0-py3-none-any.whl"
    files = {
        "demo_pkg/__init__.py": b"VALUE = 42\n",
        "demo_pkg-1.0.dist-info/METADATA": (
            b"Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.0\nSummary: a test package\n"
        ),
        "demo_pkg-1.0.dist-info/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: codeward-tests\nRoot-Is-Purelib: true\n"
            b"Tag: py3-none-any\n"
        ),
    }
    record = "".join(f"{path},,\n" for path in files) + "demo_pkg-1.0.dist-info/RECORD,,\n"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files.items():
            z.writestr(path, data)
        z.writestr("demo_pkg-1.0.dist-info/RECORD", record)
    return name, buf.getvalue()


def build_site(root: Path) -> Path:
    """A site to serve: /hello, a PEP 503 index of demo-pkg, a dumb-HTTP git repository."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "hello").write_text("hello through the grant\n")
    name, wheel = _wheel()
    (root / "files").mkdir()
    (root / "files" / name).write_bytes(wheel)
    digest = hashlib.sha256(wheel).hexdigest()
    index = root / "simple" / "demo-pkg"
    index.mkdir(parents=True)
    (root / "simple" / "index.html").write_text('<a href="demo-pkg/">demo-pkg</a>\n')
    (index / "index.html").write_text(
        f'<!DOCTYPE html><html><body><a href="../../files/{name}#sha256={digest}">{name}</a>'
        "</body></html>\n"
    )
    _git_repo(root / "repo.git")
    return root


def _git_repo(bare: Path) -> None:
    """A bare repository with one commit, prepared for the dumb HTTP protocol."""
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    work = bare.parent / "repo-work"
    git = shutil.which("git") or "git"
    subprocess.run([git, "init", "-q", "-b", "main", str(work)], check=True, env=env)
    (work / "README.md").write_text("cloned through the grant\n")
    subprocess.run([git, "-C", str(work), "add", "README.md"], check=True, env=env)
    subprocess.run([git, "-C", str(work), "commit", "-qm", "one"], check=True, env=env)
    subprocess.run([git, "clone", "-q", "--bare", str(work), str(bare)], check=True, env=env)
    subprocess.run([git, "-C", str(bare), "update-server-info"], check=True, env=env)
    shutil.rmtree(work)


@contextlib.contextmanager
def origins(site: Path, certs: Certs) -> Iterator[tuple[StaticOrigin, StaticOrigin]]:
    """The site over HTTP and over HTTPS (the test CA's certificate)."""
    plain = StaticOrigin(site)
    secure = StaticOrigin(site, tls=certs.server_context())
    try:
        yield plain, secure
    finally:
        plain.close()
        secure.close()
