"""Loopback servers for the download tests: an origin (HTTP or HTTPS), a forward proxy,
a fake resolver and dialer, and a throwaway certificate authority.

The address policy refuses loopback, so the tests never name 127.0.0.1: URLs
name hosts that :class:`FakeNet` resolves to real public unicast addresses
(never contacted), and its dialer maps those addresses to the loopback
servers. The validation in between is the real one.
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import re
import select
import shutil
import socket
import ssl
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from codeward.workspace import Workspace

PUBLIC_IP = "93.184.215.14"  # public unicast (not TEST-NET, which is refused)
PUBLIC_IP2 = "93.184.215.15"
PUBLIC_IP6 = "2606:2800:21f:cb07:6820:80da:af6b:8b2c"
CERT_NAMES = ("dl.example.com", "other.example.com", "cdn.example.net", "*.example.com")


@dataclass
class Request:
    """What the server received: request line, headers, the TLS SNI if any."""

    method: str
    target: str
    headers: list[tuple[str, str]]
    sni: str | None = None
    peer: tuple[str, int] | None = None

    def header(self, name: str) -> str | None:
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    @property
    def path(self) -> str:
        target = re.sub(r"^https?://[^/]+", "", self.target)
        return target.split("?", 1)[0] or "/"

    @property
    def query(self) -> str:
        return self.target.partition("?")[2]


Handler = Callable[[Request, socket.socket], None]


def read_head(conn: socket.socket) -> tuple[bytes, bytes]:
    """The request head (up to the blank line) and whatever came after it."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            raise ConnectionError("closed before a request head")
        data += chunk
        if len(data) > 1 << 20:
            raise ConnectionError("request head too large")
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def parse_request(head: bytes) -> Request:
    lines = head.decode("latin-1").split("\r\n")
    method, target, _version = lines[0].split(" ", 2)
    headers = []
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers.append((k, v.strip()))
    return Request(method, target, headers)


def send_head(conn: socket.socket, status: int, headers: list[tuple[str, str]], reason: str = "X"):
    lines = [f"HTTP/1.1 {status} {reason}", *(f"{k}: {v}" for k, v in headers), "", ""]
    conn.sendall("\r\n".join(lines).encode("utf-8"))


def respond(
    conn: socket.socket,
    status: int = 200,
    headers: list[tuple[str, str]] | None = None,
    body: bytes = b"",
    *,
    length: bool = True,
) -> None:
    hdrs = list(headers or [])
    if length:
        hdrs.append(("Content-Length", str(len(body))))
    send_head(conn, status, hdrs)
    if body:
        conn.sendall(body)


def redirect(location: str, status: int = 302) -> Handler:
    def handler(req: Request, conn: socket.socket) -> None:
        respond(conn, status, [("Location", location)])

    return handler


_RANGE = re.compile(r"bytes=(\d+)-(\d*)")


def serve_file(
    data: bytes,
    *,
    etag: str | None = '"v1"',
    ranges: bool = True,
    content_type: str = "application/octet-stream",
    chunk: int = 1 << 16,
) -> Handler:
    """A correct file server: single byte ranges, If-Range with the ETag, 416 for empty."""

    def handler(req: Request, conn: socket.socket) -> None:
        base = [("Content-Type", content_type)]
        if etag:
            base.append(("ETag", etag))
        rng = req.header("Range")
        if_range = req.header("If-Range")
        m = _RANGE.fullmatch(rng or "")
        if ranges and m and (if_range is None or if_range == etag):
            if not data:
                respond(conn, 416, [*base, ("Content-Range", "bytes */0")])
                return
            start = int(m.group(1))
            end = min(int(m.group(2)) if m.group(2) else len(data) - 1, len(data) - 1)
            body = data[start : end + 1]
            send_head(
                conn,
                206,
                [
                    *base,
                    ("Accept-Ranges", "bytes"),
                    ("Content-Range", f"bytes {start}-{end}/{len(data)}"),
                    ("Content-Length", str(len(body))),
                ],
            )
        else:
            body = data
            send_head(conn, 200, [*base, ("Content-Length", str(len(body)))])
        view = memoryview(body)
        with contextlib.suppress(OSError):  # the client may close after what it needed
            for i in range(0, len(view), chunk):
                conn.sendall(view[i : i + chunk])

    return handler


class Origin:
    """A threaded loopback HTTP(S) server; ``routes`` maps a path to a handler."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.tls = tls
        self.routes: dict[str, Handler] = {}
        self.requests: list[Request] = []
        self.snis: list[str | None] = []
        self.clean_tls_close = True
        self._lock = threading.Lock()
        self._local = threading.local()
        if tls is not None:
            tls.sni_callback = self._sni
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.addr: tuple[str, int] = self.sock.getsockname()
        self._closed = False
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _sni(self, sslsock: object, name: str | None, ctx: object) -> None:
        self._local.sni = name  # the handshake runs in the connection's own thread
        with self._lock:
            self.snis.append(name)

    def __setitem__(self, path: str, handler: Handler) -> None:
        self.routes[path] = handler

    def paths(self) -> list[str]:
        return [r.path for r in self.requests]

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, peer = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn, peer), daemon=True).start()

    def _serve(self, conn: socket.socket, peer: tuple[str, int]) -> None:
        conn.settimeout(20)
        try:
            if self.tls is not None:
                conn = self.tls.wrap_socket(conn, server_side=True)
            head, _ = read_head(conn)
            req = parse_request(head)
            req.peer = peer
            req.sni = getattr(self._local, "sni", None)
            with self._lock:
                self.requests.append(req)
            handler = self.routes.get(req.path)
            if handler is None:
                respond(conn, 404, body=b"not found")
            else:
                handler(req, conn)
            if isinstance(conn, ssl.SSLSocket) and self.clean_tls_close:
                with contextlib.suppress(OSError, ValueError):
                    conn.unwrap()
        except (OSError, ConnectionError, ValueError):
            pass
        finally:
            with contextlib.suppress(OSError):
                conn.close()

    def close(self) -> None:
        self._closed = True
        _stop_listening(self.sock, self._thread)


def _stop_listening(sock: socket.socket, acceptor: threading.Thread) -> None:
    """Wakes the thread blocked in accept() and waits for it, then closes the socket.

    Closing alone leaves that thread to call accept() again on the same descriptor
    number, which the next socket opened in this process may have taken: a later
    test's server then loses its connections to this one (a 404 from nowhere).
    """
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)  # accept() returns EINVAL
    acceptor.join(5)
    with contextlib.suppress(OSError):
        sock.close()


class ForwardProxy:
    """A minimal HTTP forward proxy: CONNECT tunnels and absolute-form GETs.

    ``upstream`` maps ``host:port`` as the client names it to a loopback
    address; what the proxy received is kept in ``requests``.
    """

    def __init__(self, upstream: dict[str, tuple[str, int]]) -> None:
        self.upstream = upstream
        self.requests: list[Request] = []
        self.connect_status = 200
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(32)
        self.addr: tuple[str, int] = self.sock.getsockname()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.addr[1]}"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(20)
        try:
            head, rest = read_head(conn)
            req = parse_request(head)
            self.requests.append(req)
            if req.method == "CONNECT":
                target = self.upstream.get(req.target)
                if target is None or self.connect_status != 200:
                    respond(conn, self.connect_status if target else 502)
                    return
                up = socket.create_connection(target, timeout=20)
                conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                if rest:
                    up.sendall(rest)
                _relay(conn, up)
                return
            m = re.match(r"http://([^/]+)", req.target)
            hostport = m.group(1) if m else ""
            if ":" not in hostport:
                hostport += ":80"
            target = self.upstream.get(hostport)
            if target is None:
                respond(conn, 502)
                return
            up = socket.create_connection(target, timeout=20)
            lines = head.split(b"\r\n")
            kept = [ln for ln in lines if not ln.lower().startswith(b"proxy-authorization:")]
            up.sendall(b"\r\n".join(kept) + b"\r\n\r\n" + rest)
            _relay(conn, up)
        except (OSError, ConnectionError, ValueError):
            pass
        finally:
            with contextlib.suppress(OSError):
                conn.close()

    def close(self) -> None:
        _stop_listening(self.sock, self._thread)


def _relay(a: socket.socket, b: socket.socket) -> None:
    try:
        socks = [a, b]
        while True:
            readable, _, _ = select.select(socks, [], [], 20)
            if not readable:
                return
            for s in readable:
                data = s.recv(65536)
                if not data:
                    return
                (b if s is a else a).sendall(data)
    finally:
        b.close()


@dataclass
class FakeNet:
    """The resolver and dialer seams: names to public addresses, addresses to loopback."""

    dns: dict[str, list[str] | Callable[[], list[str]]] = field(default_factory=dict)
    # an address, or (address, port), to the loopback server that answers for it
    routes: dict[str | tuple[str, int], tuple[str, int]] = field(default_factory=dict)
    resolved: list[str] = field(default_factory=list)
    dialed: list[tuple[str, int]] = field(default_factory=list)

    def resolver(self, host: str, port: int) -> list[str]:
        self.resolved.append(host)
        answer = self.dns.get(host)
        if answer is None:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return list(answer() if callable(answer) else answer)

    def dialer(self, ip: str, port: int, timeout: float) -> socket.socket:
        self.dialed.append((ip, port))
        target = self.routes.get((ip, port)) or self.routes.get(ip)
        if ip == "127.0.0.1":  # only ever a proxy the test named: the host's own setting
            target = (ip, port)
        if target is None:
            raise ConnectionRefusedError(111, "Connection refused (no route in the test)")
        return socket.create_connection(target, timeout=timeout)


# -- certificates -----------------------------------------------------------------------------


@dataclass
class Certs:
    ca_pem: str
    cert_file: Path
    key_file: Path

    def server_context(self) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.cert_file, self.key_file)
        return ctx

    def client_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cadata=self.ca_pem)


def make_certs(directory: Path, names: tuple[str, ...] = CERT_NAMES) -> Certs | None:
    """A throwaway CA and a leaf for ``names`` and PUBLIC_IP; None when nothing can make them."""
    try:
        return _certs_cryptography(directory, names)
    except ImportError:
        pass
    if shutil.which("openssl"):
        return _certs_openssl(directory, names)
    return None


def _certs_cryptography(directory: Path, names: tuple[str, ...]) -> Certs:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "a3s-test-ca")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), True
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in names]
    sans.append(x509.IPAddress(ipaddress.ip_address(PUBLIC_IP)))
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    cert_file, key_file = directory / "leaf.pem", directory / "leaf.key"
    cert_file.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return Certs(ca.public_bytes(serialization.Encoding.PEM).decode(), cert_file, key_file)


def _certs_openssl(directory: Path, names: tuple[str, ...]) -> Certs:
    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    ca_ext = ["-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=keyCertSign"]
    run("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=a3s-test-ca", *ca_ext)  # fmt: skip
    run("req", *ec, "-keyout", "leaf.key", "-out", "leaf.csr", "-subj", f"/CN={names[0]}")
    san = ",".join([*(f"DNS:{n}" for n in names), f"IP:{PUBLIC_IP}"])
    (directory / "ext.cnf").write_text(
        f"subjectAltName={san}\nbasicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\n"
    )
    run("x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "leaf.pem", "-days", "2", "-extfile", "ext.cnf")  # fmt: skip
    return Certs((directory / "ca.pem").read_text(), directory / "leaf.pem", directory / "leaf.key")


@contextlib.contextmanager
def serving(*servers: Origin | ForwardProxy) -> Iterator[None]:
    try:
        yield
    finally:
        for s in servers:
            s.close()


def leftovers(ws: Workspace) -> list[str]:
    """Temporary files left anywhere in the workspace (there must never be any)."""
    return [str(p) for p in Path(ws.root).rglob("*.a3s-tmp")]
