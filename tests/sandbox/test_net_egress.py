"""Hostile network cases: nothing a sandboxed command sends may reach the host.

Every canary lives on the host's loopback (bound by the test to 127.0.0.1:0 or
[::1]:0) and is checked host-side after the run: it must have seen no
connection and no datagram. Probes that would otherwise leave the machine
(DNS) first check inside the sandbox that there is no route at all, so no test
ever sends a packet to anything but loopback.
"""

from __future__ import annotations

import errno
import select
import shlex
import socket
import textwrap

import pytest

from codeward import _native
from codeward.sandbox import NativeBashSandbox, select_sandbox
from codeward.sandbox._locate import find_bwrap, init_path
from codeward.sandbox._native_runner import _CoreSandbox

PY = "/usr/bin/python3"


def _py(script: str) -> str:
    return f"{PY} -c {shlex.quote(textwrap.dedent(script))}"


@pytest.fixture
def sandbox(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    sb = select_sandbox(ws)
    assert isinstance(sb, NativeBashSandbox), f"the native boundary is unavailable here: {sb!r}"
    return sb


@pytest.fixture(params=["full", "no-landlock"])
def layered_sandbox(request, tmp_path):
    """The full boundary, and the boundary without Landlock: the network
    namespace and the seccomp filter must hold on their own."""
    ws = tmp_path / "ws"
    ws.mkdir()
    if request.param == "full":
        sb = select_sandbox(ws)
        assert isinstance(sb, NativeBashSandbox), f"the native boundary is unavailable: {sb!r}"
        return sb
    handle = _native.Sandbox(str(ws), init_path(), bwrap=find_bwrap(str(ws)), no_landlock=True)
    return _CoreSandbox(ws, _handle=handle)


def _has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


FAMILIES = [
    pytest.param(socket.AF_INET, "127.0.0.1", id="ipv4"),
    pytest.param(
        socket.AF_INET6,
        "::1",
        id="ipv6",
        marks=pytest.mark.skipif(not _has_ipv6_loopback(), reason="no ::1 on this host"),
    ),
]


def _pending_connections(listener: socket.socket, wait_s: float = 0.3) -> list:
    """Every connection waiting in the canary's accept queue (host side)."""
    got = []
    listener.setblocking(False)
    deadline_wait = wait_s
    while True:
        ready, _, _ = select.select([listener], [], [], deadline_wait)
        if not ready:
            return got
        try:
            conn, addr = listener.accept()
        except BlockingIOError:
            return got
        got.append(addr)
        conn.close()
        deadline_wait = 0.05


def _pending_datagrams(sock: socket.socket, wait_s: float = 0.3) -> list:
    got = []
    sock.setblocking(False)
    deadline_wait = wait_s
    while True:
        ready, _, _ = select.select([sock], [], [], deadline_wait)
        if not ready:
            return got
        try:
            got.append(sock.recvfrom(65536))
        except BlockingIOError:
            return got
        deadline_wait = 0.05


@pytest.mark.parametrize("family,addr", FAMILIES)
def test_tcp_canary_on_host_loopback_sees_no_connection(layered_sandbox, family, addr) -> None:
    sandbox = layered_sandbox
    with socket.socket(family, socket.SOCK_STREAM) as canary:
        canary.bind((addr, 0))
        canary.listen(64)
        port = canary.getsockname()[1]
        # control: the canary does notice a connection from the host itself
        with socket.create_connection((addr, port), timeout=2):
            pass
        assert len(_pending_connections(canary)) == 1, "the canary cannot see connections"

        fam = "AF_INET6" if family == socket.AF_INET6 else "AF_INET"
        out = sandbox.exec(
            _py(f"""
                import socket
                for i in range(5):
                    s = socket.socket(socket.{fam}, socket.SOCK_STREAM)
                    s.settimeout(2)
                    try:
                        s.connect(({addr!r}, {port}))
                        s.sendall(b"escaped")
                        print("CONNECTED")
                    except OSError as e:
                        print("refused", e.errno)
                    finally:
                        s.close()
            """)
            + f"; (exec 3<>/dev/tcp/{addr}/{port} && echo BASH-CONNECTED) 2>&1"
            + f"; curl -s -m 2 http://{'[' + addr + ']' if ':' in addr else addr}:{port}/"
            + " >/dev/null 2>&1 && echo CURL-CONNECTED; true",
            timeout_ms=30_000,
        )
        assert not out.timed_out, out
        assert "CONNECTED" not in out.stdout, out
        inner = [ln for ln in out.stdout.splitlines() if ln.startswith("refused ")]
        assert len(inner) == 5, out
        leaked = _pending_connections(canary)
        assert leaked == [], f"the host canary received connections from the sandbox: {leaked}"


@pytest.mark.parametrize("family,addr", FAMILIES)
def test_udp_canary_on_host_loopback_sees_no_datagram(layered_sandbox, family, addr) -> None:
    sandbox = layered_sandbox
    with socket.socket(family, socket.SOCK_DGRAM) as canary:
        canary.bind((addr, 0))
        port = canary.getsockname()[1]
        # control: a datagram from the host reaches the canary
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.sendto(b"control", (addr, port))
        assert [d for d, _ in _pending_datagrams(canary)] == [b"control"]

        fam = "AF_INET6" if family == socket.AF_INET6 else "AF_INET"
        out = sandbox.exec(
            _py(f"""
                import socket
                s = socket.socket(socket.{fam}, socket.SOCK_DGRAM)
                sent = 0
                for i in range(20):
                    try:
                        s.sendto(b"escaped-%d" % i, ({addr!r}, {port}))
                        sent += 1
                    except OSError as e:
                        print("error", e.errno)
                print("sent", sent)
            """)
            + f"; echo bash-escaped > /dev/udp/{addr}/{port}; true",
            timeout_ms=30_000,
        )
        assert not out.timed_out, out
        leaked = _pending_datagrams(canary)
        assert leaked == [], f"the host canary received datagrams from the sandbox: {leaked}"


def test_dns_resolution_of_a_real_name_fails_fast(sandbox) -> None:
    # Only resolve when there is no route at all: then nothing can leave the
    # sandbox whatever the resolver configuration says.
    out = sandbox.exec(
        'if [ "$(wc -l < /proc/net/route)" -gt 1 ] || '
        '[ -n "$(grep -v " lo$" /proc/net/ipv6_route)" ]; then echo ROUTE-PRESENT; exit 99; fi; '
        "getent hosts example.com && echo GETENT-RESOLVED; "
        + _py("""
            import socket
            try:
                print("PY-RESOLVED", socket.getaddrinfo("example.com", 443))
            except OSError as e:
                print("py-failed", type(e).__name__)
        """),
        timeout_ms=20_000,
    )
    assert out.exit_code != 99, f"the sandbox has a network route: {out}"
    assert not out.timed_out, f"name resolution hung: {out}"
    assert "RESOLVED" not in out.stdout, out
    assert "py-failed" in out.stdout, out
    assert out.duration_ms < 10_000, f"name resolution took {out.duration_ms} ms"


AF_VSOCK = getattr(socket, "AF_VSOCK", 40)
AF_PACKET = getattr(socket, "AF_PACKET", 17)
AF_NETLINK = getattr(socket, "AF_NETLINK", 16)
AF_ALG = getattr(socket, "AF_ALG", 38)

RAW_SOCKETS = [
    # (id, family, type, proto, expected errno)
    ("packet-raw", AF_PACKET, socket.SOCK_RAW, 0x0300, errno.EAFNOSUPPORT),
    ("packet-dgram", AF_PACKET, socket.SOCK_DGRAM, 0x0300, errno.EAFNOSUPPORT),
    ("netlink-route", AF_NETLINK, socket.SOCK_RAW, 0, errno.EAFNOSUPPORT),
    ("netlink-audit", AF_NETLINK, socket.SOCK_RAW, 9, errno.EAFNOSUPPORT),
    ("netlink-uevent", AF_NETLINK, socket.SOCK_DGRAM, 15, errno.EAFNOSUPPORT),
    ("vsock-stream", AF_VSOCK, socket.SOCK_STREAM, 0, errno.EAFNOSUPPORT),
    ("vsock-dgram", AF_VSOCK, socket.SOCK_DGRAM, 0, errno.EAFNOSUPPORT),
    ("alg", AF_ALG, socket.SOCK_SEQPACKET, 0, errno.EAFNOSUPPORT),
    ("key", 15, socket.SOCK_RAW, 2, errno.EAFNOSUPPORT),
    ("bluetooth", 31, socket.SOCK_RAW, 0, errno.EAFNOSUPPORT),
    # AF_INET raw sockets pass the filter but need CAP_NET_RAW, which is dropped
    ("inet-raw-icmp", socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP, errno.EPERM),
    ("inet-raw-tcp", socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP, errno.EPERM),
    ("inet6-raw", socket.AF_INET6, socket.SOCK_RAW, 58, errno.EPERM),
]


@pytest.mark.parametrize(
    "family,type_,proto,expected", [pytest.param(*r[1:], id=r[0]) for r in RAW_SOCKETS]
)
def test_raw_and_foreign_sockets_are_refused(
    layered_sandbox, family, type_, proto, expected
) -> None:
    sandbox = layered_sandbox
    out = sandbox.exec(
        _py(f"""
            import socket
            try:
                s = socket.socket({family}, {type_}, {proto})
                print("CREATED", s.fileno())
            except OSError as e:
                print("errno", e.errno)
        """),
        timeout_ms=20_000,
    )
    assert "CREATED" not in out.stdout, f"socket({family}, {type_}, {proto}) was created: {out}"
    assert out.stdout.strip() == f"errno {expected}", (
        f"expected {errno.errorcode[expected]}, got {out.stdout!r} {out.stderr!r}"
    )


def test_only_the_loopback_interface_exists(sandbox) -> None:
    out = sandbox.exec(
        "echo '== dev'; cat /proc/net/dev; echo '== route'; cat /proc/net/route; "
        "echo '== if6'; cat /proc/net/if_inet6; echo '== ip'; ip -o link 2>&1; echo ip=$?",
        timeout_ms=20_000,
    )
    assert out.exit_code == 0, out
    sections: dict[str, list[str]] = {}
    current = ""
    for line in out.stdout.splitlines():
        if line.startswith("== "):
            current = line[3:]
            sections[current] = []
        else:
            sections.setdefault(current, []).append(line)
    devices = [ln.split(":")[0].strip() for ln in sections["dev"][2:] if ln.strip()]
    assert devices == ["lo"], f"interfaces inside the sandbox: {devices}"
    assert [ln for ln in sections["route"][1:] if ln.strip()] == [], sections["route"]
    for ln in sections["if6"]:
        if ln.strip():
            assert ln.split()[-1] == "lo", f"an IPv6 address on a non-loopback device: {ln}"
    # `ip` needs netlink, which is refused; if it ever works it must show lo only
    ip_lines = [ln for ln in sections["ip"] if ln.strip() and not ln.startswith("ip=")]
    if sections["ip"][-1] == "ip=0":
        names = [ln.split(":")[1].strip() for ln in ip_lines]
        assert names == ["lo"], ip_lines


def test_ipv4_mapped_ipv6_does_not_reach_the_host_canary(layered_sandbox) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as canary:
        canary.bind(("127.0.0.1", 0))
        canary.listen(16)
        port = canary.getsockname()[1]
        out = layered_sandbox.exec(
            _py(f"""
                import socket
                s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
                s.settimeout(2)
                try:
                    s.connect(("::ffff:127.0.0.1", {port})); print("CONNECTED")
                except OSError as e:
                    print("refused", e.errno)
            """),
            timeout_ms=20_000,
        )
        assert out.stdout.startswith("refused "), out
        assert _pending_connections(canary) == [], "the host canary was reached"
