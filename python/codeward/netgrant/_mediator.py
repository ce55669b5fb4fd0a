"""The host-side mediator: one per session, one admission per granted command.

How a command's connection travels (docs/security.md, "Network grants"):

1. :meth:`NetworkMediator.admit` opens an :class:`Admission` for one grant:
   an ``AF_UNIX`` ``SOCK_SEQPACKET`` pair, whose far end (:attr:`Admission.fd`)
   goes with the exec to the sandbox (``grant_fd``).
2. Before the command starts, the sandbox's init sends on it the proxy's
   socket, bound to 127.0.0.1:3128 inside the sandbox. The mediator checks
   it (a TCP socket bound to that loopback address, nothing else), listens
   on it and answers ``L``; only then does the command start.
3. Each connection the command makes to the proxy is accepted here, outside
   the sandbox, and served by a thread of its own: the request is read
   (``_protocol``), admitted only for the grant's host and ports, the
   origin is resolved and connected under the download tool's address
   rules (``_upstream``), and the bytes are relayed both ways by the C core
   (``a3s_relay``, splice through bounded pipes), without the GIL.
4. When the command ends, the init shuts the proxy's socket down (it stops
   listening in every process), and :meth:`Admission.close` ends what is
   left: the listener, every connection (its relay is cancelled), the
   threads.

One thread per mediator watches every admission (a selector: the grant
handshakes and the listeners); connections get their own threads, at most
``max_connections`` at once per admission (more are closed at once).
Closing the mediator closes every admission.
"""

from __future__ import annotations

import array
import contextlib
import logging
import os
import selectors
import socket
import struct
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

from .. import _native
from ..download._net import Dialer, Resolver, plain_dialer, system_resolver
from ._errors import NetworkGrantError
from ._grant import NetworkGrant
from ._protocol import ProxyRequest, Refused, read_request, send_granted, send_refusal
from ._upstream import admit, open_upstream

__all__ = ["Admission", "NetworkMediator"]

log = logging.getLogger("codeward.netgrant")

PROXY_PORT = 3128  # A3S_GRANT_PROXY_PORT: where the init binds the proxy's socket
_GRANT_MESSAGE = struct.Struct("<4sHHIH")  # "A3SM", type 18, version 1, length 14, port
_GRANT_TYPE = 18
MAX_REFUSALS_KEPT = 10
# How long closing an admission waits for its connection threads (one still resolving a name
# cannot be interrupted: it finds the admission closed when its resolver returns, and ends).
CLOSE_WAIT_S = 2.0


class NetworkMediator:
    """Serves the proxies of granted commands; ``resolver`` and ``dialer`` are the host's seams.

    ``resolver(host, port)`` returns IP address strings (default: the system
    resolver) and ``dialer(ip, port, timeout_s)`` a connected socket (default:
    a plain TCP connection), as for :func:`codeward.download.download`. The
    address checks stay here, outside them.
    """

    def __init__(
        self,
        *,
        resolver: Resolver | None = None,
        dialer: Dialer | None = None,
        connect_timeout_s: float = 30.0,
        handshake_timeout_s: float = 15.0,
        max_connections: int = 128,
    ) -> None:
        self.resolver = resolver or system_resolver
        self.dialer = dialer or plain_dialer
        self.connect_timeout_s = connect_timeout_s
        self.handshake_timeout_s = handshake_timeout_s
        self.max_connections = max_connections
        self._lock = threading.Lock()
        self._closed = False
        self._admissions: set[Admission] = set()
        self._thread: threading.Thread | None = None
        self._selector: selectors.BaseSelector | None = None
        self._wake: tuple[int, int] | None = None
        self._calls: list[tuple[Callable[[], None], threading.Event]] = []

    def admit(self, grant: NetworkGrant) -> Admission:
        """An admission for one command; pass :attr:`Admission.fd` with its exec, then close it."""
        if not isinstance(grant, NetworkGrant):
            raise NetworkGrantError(f"admit() takes a NetworkGrant, not {type(grant).__name__}")
        with self._lock:
            if self._closed:
                raise NetworkGrantError("the network mediator is closed (its session ended)")
            self._start_locked()
            admission = Admission(self, grant)
            self._admissions.add(admission)
        self._in_loop(lambda: self._watch(admission._control, ("control", admission)))
        return admission

    def close(self) -> None:
        """Closes every admission (their connections end) and stops the mediator's thread."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            admissions = list(self._admissions)
        for admission in admissions:
            admission.close()
        if self._thread is not None:
            self._in_loop(None)  # the loop returns
            self._thread.join(5)
        with self._lock:
            if self._selector is not None:
                self._selector.close()
            if self._wake is not None:
                os.close(self._wake[0])
                os.close(self._wake[1])
            self._selector = self._wake = None

    def __enter__(self) -> NetworkMediator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the loop thread -----------------------------------------------------------------------

    def _start_locked(self) -> None:
        if self._thread is not None:
            return
        self._selector = selectors.DefaultSelector()
        self._wake = os.pipe()
        os.set_blocking(self._wake[0], False)
        self._selector.register(self._wake[0], selectors.EVENT_READ, ("wake", None))
        self._thread = threading.Thread(target=self._loop, name="codeward-netgrant", daemon=True)
        self._thread.start()

    def _in_loop(self, fn: Callable[[], None] | None) -> None:
        """Runs ``fn`` on the loop thread and waits for it (None: stop the loop)."""
        if threading.current_thread() is self._thread:
            if fn is not None:
                fn()
            return
        done = threading.Event()
        with self._lock:
            if self._wake is None:
                return
            self._calls.append((fn or _stop_loop, done))
            wake = self._wake[1]
        with contextlib.suppress(OSError):
            os.write(wake, b"x")
        done.wait(10)

    def _watch(self, sock: socket.socket, data: tuple[str, Admission]) -> None:
        assert self._selector is not None
        self._selector.register(sock, selectors.EVENT_READ, data)

    def _unwatch(self, sock: socket.socket | None) -> None:
        if sock is not None and self._selector is not None:
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(sock)

    def _loop(self) -> None:
        selector = self._selector
        assert selector is not None and self._wake is not None
        while True:
            for key, _events in selector.select():
                tag, admission = key.data
                try:
                    if tag == "wake":
                        if not self._run_calls():
                            return
                    elif tag == "control":
                        admission._on_control()
                    elif tag == "listen":
                        admission._on_accept()
                except Exception:  # the loop serves every admission: one failure must not stop it
                    log.exception("network mediator: %s of %s failed", tag, admission)

    def _run_calls(self) -> bool:
        assert self._wake is not None
        with contextlib.suppress(BlockingIOError):
            os.read(self._wake[0], 4096)
        with self._lock:
            calls, self._calls = self._calls, []
        keep_going = True
        for fn, done in calls:
            try:
                if fn is _stop_loop:
                    keep_going = False
                else:
                    fn()
            finally:
                done.set()
        return keep_going

    def _forget(self, admission: Admission) -> None:
        with self._lock:
            self._admissions.discard(admission)


def _recv(sock: socket.socket) -> bytes | None:
    """What a non-blocking socket has (b"" at its end), or None if nothing yet."""
    try:
        return sock.recv(65536)
    except (BlockingIOError, InterruptedError):
        return None


def _finish(client: socket.socket, linger_s: float = 2.0) -> None:
    """Ends the client's connection after the answer without losing its tail: a close with
    unread input would reset it, so the write side is shut first and what the client still
    sends is read and dropped, for at most ``linger_s``."""
    with contextlib.suppress(OSError):
        client.shutdown(socket.SHUT_WR)
        client.settimeout(linger_s)
        deadline = time.monotonic() + linger_s
        while time.monotonic() < deadline and client.recv(65536):
            client.settimeout(max(0.01, deadline - time.monotonic()))


def _stop_loop() -> None:
    """A marker for _in_loop: the loop returns."""


class Admission:
    """One granted command's part of the mediator: its grant socket, proxy listener, connections.

    Use it around the exec (``with mediator.admit(grant) as admission: ...``);
    closing it ends everything that is left. :attr:`connections` and
    :attr:`refusals` say what the command did with its grant.
    """

    def __init__(self, mediator: NetworkMediator, grant: NetworkGrant) -> None:
        self.grant = grant
        self._mediator = mediator
        self._control, self._peer = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._listener: socket.socket | None = None
        self._cancel = os.pipe()  # one write ends every relay of this admission
        self._lock = threading.Lock()
        self._live: set[socket.socket] = set()
        self._threads: set[threading.Thread] = set()
        self._closed = False
        self.listening = False  # the sandbox handed over its proxy socket
        self.connections = 0  # admitted and connected to the origin
        self.refusals: list[str] = []  # why others were refused (the first few)
        self.refused = 0

    @property
    def fd(self) -> int:
        """The grant socket to pass with the exec (``grant_fd``); owned by the admission."""
        return self._peer.fileno()

    def summary(self) -> dict[str, Any]:
        """For the call's metadata: the grant, and what the command did with it."""
        with self._lock:
            return {
                **self.grant.to_dict(),
                "connections": self.connections,
                "refused": self.refused,
                "refusals": list(self.refusals),
            }

    def close(self) -> None:
        """Stops listening, ends every connection (relays cancelled), waits for the threads."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        mediator = self._mediator

        def unwatch() -> None:
            mediator._unwatch(self._control)
            mediator._unwatch(self._listener)

        mediator._in_loop(unwatch)
        for sock in (self._listener, self._control, self._peer):
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.close()
        with contextlib.suppress(OSError):
            os.write(self._cancel[1], b"x")
        with self._lock:
            live, threads = list(self._live), list(self._threads)
        for sock in live:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        deadline = time.monotonic() + CLOSE_WAIT_S  # for all of them, not each
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        if any(t.is_alive() for t in threads):
            # a relay still polls the cancel pipe: its fds must not be reused for another file
            log.warning("network mediator: a connection thread did not end; its pipe is kept")
        else:
            os.close(self._cancel[0])
            os.close(self._cancel[1])
        mediator._forget(self)

    def __enter__(self) -> Admission:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Admission {self.grant.origin}>"

    # -- on the mediator's loop thread ---------------------------------------------------------

    def _on_control(self) -> None:
        """The sandbox's proxy socket arrives: check it, listen, say so; else refuse the grant."""
        mediator = self._mediator
        mediator._unwatch(self._control)  # one message per command
        fds = array.array("i")
        try:
            msg, ancdata, _flags, _addr = self._control.recvmsg(
                64, socket.CMSG_SPACE(4 * fds.itemsize)
            )
        except OSError:
            msg, ancdata = b"", []
        for level, kind, data in ancdata:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
        listener = self._proxy_socket(msg, list(fds))
        if listener is None or self._closed:
            if listener is not None:
                listener.close()
            with contextlib.suppress(OSError):
                self._control.shutdown(socket.SHUT_RDWR)  # the init sees the refusal
            return
        listener.listen(min(socket.SOMAXCONN, 256))
        listener.setblocking(False)
        self._listener = listener
        mediator._watch(listener, ("listen", self))
        self.listening = True
        self._control.send(b"L")

    def _proxy_socket(self, msg: bytes, fds: list[int]) -> socket.socket | None:
        """The socket the init sent, if it is exactly what the grant protocol says; else None."""
        socks = [socket.socket(fileno=fd) for fd in fds]
        if len(msg) != _GRANT_MESSAGE.size or len(socks) != 1:
            for s in socks:
                s.close()
            log.warning("network mediator: a malformed grant message was refused")
            return None
        magic, kind, version, length, port = _GRANT_MESSAGE.unpack(msg)
        sock = socks[0]
        try:
            ok = (
                (magic, kind, version, length, port)
                == (b"A3SM", _GRANT_TYPE, 1, _GRANT_MESSAGE.size, PROXY_PORT)
                and sock.family == socket.AF_INET
                and sock.type == socket.SOCK_STREAM
                and sock.getsockname() == ("127.0.0.1", PROXY_PORT)
            )
        except OSError:
            ok = False
        if not ok:
            sock.close()
            log.warning("network mediator: the sandbox's proxy socket was not as expected")
            return None
        return sock

    def _on_accept(self) -> None:
        listener = self._listener
        assert listener is not None
        while True:
            try:
                conn, _peer = listener.accept()
            except BlockingIOError:
                return
            except OSError:  # shut down by the init: the command ended
                self._mediator._unwatch(listener)
                return
            with self._lock:
                full = self._closed or len(self._threads) >= self._mediator.max_connections
                if not full:
                    thread = threading.Thread(
                        target=self._serve, args=(conn,), name="codeward-netgrant-conn", daemon=True
                    )
                    self._threads.add(thread)
                    self._live.add(conn)
            if full:
                conn.close()
                self._note_refusal("too many connections at once")
                continue
            thread.start()

    # -- on a connection's own thread ----------------------------------------------------------

    def _serve(self, client: socket.socket) -> None:
        mediator = self._mediator
        request: ProxyRequest | None = None
        upstream: socket.socket | None = None
        try:
            client.settimeout(mediator.handshake_timeout_s)
            request = read_request(client)
            host = admit(self.grant, request)
            upstream = open_upstream(
                self.grant,
                host,
                request.port,
                resolver=mediator.resolver,
                dialer=mediator.dialer,
                timeout_s=mediator.connect_timeout_s,
            )
            with self._lock:
                if self._closed:
                    raise Refused("the command's grant has ended", 403)
                self._live.add(upstream)
                self.connections += 1
            send_granted(client, request)
            if request.kind == "http":
                self._forward_one(client, upstream, request)
            else:  # a tunnel (CONNECT, SOCKS5): the grant is the origin, whatever flows inside
                if request.forward:
                    upstream.sendall(request.forward)
                _native.relay(client.fileno(), upstream.fileno(), cancel_fd=self._cancel[0])
        except Refused as refused:
            self._note_refusal(refused.reason)
            send_refusal(client, request.kind if request else refused.kind, refused)
        except OSError:
            pass  # the client or the origin went away
        except Exception:  # no input may end a connection's thread without an answer
            log.exception("network mediator: a connection failed unexpectedly")
            send_refusal(
                client,
                request.kind if request else None,
                Refused("the proxy could not handle this request", 500),
            )
        finally:
            with self._lock:
                self._live.discard(client)
                if upstream is not None:
                    self._live.discard(upstream)
                self._threads.discard(threading.current_thread())
            for sock in (client, upstream):
                if sock is not None:
                    with contextlib.suppress(OSError):
                        sock.close()

    def _forward_one(
        self, client: socket.socket, upstream: socket.socket, request: ProxyRequest
    ) -> None:
        """One plain HTTP request: its head and exactly its body go to the origin, and only
        the origin's answer comes back. Whatever the client sends past the body (a pipelined
        request, perhaps for another origin) is read and dropped, never forwarded: the
        connection closes after the answer, so the client's next request comes on a new
        connection and is decided again."""
        if request.pipelined:
            self._note_refusal("a request pipelined behind the first was dropped, not forwarded")
        upstream.sendall(request.forward)
        body_left = request.body_left
        cancel = self._cancel[0]
        client.setblocking(False)
        upstream.setblocking(False)
        with selectors.DefaultSelector() as sel:
            sel.register(upstream, selectors.EVENT_READ)
            sel.register(client, selectors.EVENT_READ)
            sel.register(cancel, selectors.EVENT_READ)
            while True:
                for key, _ in sel.select():
                    if key.fileobj == cancel:
                        return
                    if key.fileobj is upstream:
                        data = _recv(upstream)
                        if data is None:
                            continue
                        if not data:  # the answer is complete
                            _finish(client)
                            return
                        client.setblocking(True)  # the client's pace is the origin's
                        client.sendall(data)
                        client.setblocking(False)
                        continue
                    data = _recv(client)
                    if data is None:
                        continue
                    if not data:
                        sel.unregister(client)  # the client half-closed: the answer still comes
                        continue
                    if body_left:
                        part, extra = data[:body_left], data[body_left:]
                        upstream.setblocking(True)
                        upstream.sendall(part)
                        upstream.setblocking(False)
                        body_left -= len(part)
                    else:
                        extra = data
                    if extra and not request.pipelined:
                        request.pipelined = True
                        self._note_refusal(
                            "a request pipelined behind the first was dropped, not forwarded"
                        )

    def _note_refusal(self, reason: str) -> None:
        with self._lock:
            self.refused += 1
            if len(self.refusals) < MAX_REFUSALS_KEPT:
                self.refusals.append(reason)
