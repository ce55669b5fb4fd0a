"""What a grant does not open: direct connections, UDP, DNS, other commands, what is left behind.

Every canary is a socket on the host's loopback checked host-side after the
run: it must have heard nothing. The grant's origin server is also checked:
nothing reached it but what was admitted through the proxy.
"""

from __future__ import annotations

import shlex
import textwrap

import pytest
from grantkit import PUBLIC_IP, Canary

PY = "/usr/bin/python3"
CURL = "curl -sS --max-time 10 --cacert ca.pem"


def _py(script: str) -> str:
    return f"{PY} -c {shlex.quote(textwrap.dedent(script))}"


@pytest.fixture
def canary():
    c = Canary()
    yield c
    c.close()


def test_a_granted_command_still_has_no_direct_network(sandbox, run_granted, canary, servers):
    """Raw TCP that ignores the proxy, UDP, DNS, an inherited socket: none of it goes anywhere."""
    script = _py(
        f"""
        import errno, os, socket
        # no socket is inherited: not the grant socket, not the proxy's listener
        kinds = set()
        for fd in os.listdir("/proc/self/fd"):
            try:
                kinds.add(os.readlink(f"/proc/self/fd/{{fd}}").split(":")[0])
            except FileNotFoundError:  # listdir's own
                pass
        print("inherited", sorted(k for k in kinds if k in ("socket", "pipe")))
        proxies = (f"{{k}}={{v}}" for k, v in os.environ.items() if "proxy" in k.lower())
        print("env", ",".join(sorted(proxies)))
        def tcp(addr):
            s = socket.socket(socket.AF_INET6 if ":" in addr[0] else socket.AF_INET)
            s.settimeout(3)
            try:
                s.connect(addr)
                return "connected"
            except OSError as e:
                return errno.errorcode.get(e.errno, str(e.errno))
        print("tcp-canary", tcp(("127.0.0.1", {canary.tcp_port})))
        print("tcp-origin", tcp(("127.0.0.1", {servers.plain.port})))
        print("tcp-public", tcp(("{PUBLIC_IP}", 443)))
        print("tcp-proxy", tcp(("127.0.0.1", 3128)))  # the one thing it may reach
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.sendto(b"leak", ("127.0.0.1", {canary.udp_port}))
        try:
            u.sendto(b"leak", ("{PUBLIC_IP}", 53))
            print("udp-public sent")
        except OSError as e:
            print("udp-public", errno.errorcode.get(e.errno))
        try:
            socket.getaddrinfo("dl.example.com", 443)
            print("dns resolved")
        except OSError as e:
            print("dns", type(e).__name__)
        """
    )
    r = run_granted(sandbox, "dl.example.com", None, script)
    lines = dict(line.split(" ", 1) for line in r.out.stdout.splitlines())
    assert lines["inherited"] == "['pipe']", r.out
    http, socks = "http://127.0.0.1:3128", "socks5h://127.0.0.1:3128"
    variables = [f"ALL_PROXY={socks}", f"HTTPS_PROXY={http}", f"HTTP_PROXY={http}", "NO_PROXY="]
    variables += [f"all_proxy={socks}", f"http_proxy={http}", f"https_proxy={http}", "no_proxy="]
    assert lines["env"] == ",".join(variables), r.out  # every usual tool finds the proxy
    assert lines["tcp-proxy"] == "connected", r.out
    assert lines["tcp-canary"] in ("EACCES", "ECONNREFUSED"), r.out  # Landlock, or nothing there
    assert lines["tcp-origin"] in ("EACCES", "ECONNREFUSED"), r.out
    assert lines["tcp-public"] in ("EACCES", "ENETUNREACH"), r.out
    assert lines["udp-public"] == "ENETUNREACH", r.out
    assert lines["dns"] == "gaierror", r.out
    assert canary.heard() == []
    # the bare connection to the proxy sent nothing: refused as no complete request
    assert r.summary["connections"] == 0


def test_nothing_left_behind_keeps_the_grant(sandbox, run_granted, servers, workspace):
    """A background process of the granted command dies with it, and its proxy with it."""
    before = len(servers.plain.seen)
    started = (
        "setsid sh -c 'sleep 2; curl -sS --max-time 5 http://dl.example.com/late > late.txt' "
        "</dev/null >/dev/null 2>&1 & "
        "nohup sh -c 'while :; do curl -s -o /dev/null http://dl.example.com/loop; done' "
        ">/dev/null 2>&1 & "
        f"{CURL} http://dl.example.com/hello"
    )
    r = run_granted(sandbox, "dl.example.com", 80, started)
    assert "hello through the grant" in r.out.stdout
    seen = servers.plain.seen[before:]
    assert "GET /late" not in seen
    assert not (workspace / "late.txt").exists()
    # the loop ran while the command did, and stopped with it: nothing after the exec
    count = len(servers.plain.seen)
    after = sandbox.exec(f"{CURL} -x http://127.0.0.1:3128 http://dl.example.com/hello")
    assert len(servers.plain.seen) == count
    assert after.exit_code != 0 and "hello" not in after.stdout


def test_the_next_command_has_no_grant(long_lived, run_granted, servers):
    """The grant is the command's: the next one in the same sandbox finds no proxy and no env."""
    r = run_granted(long_lived, "dl.example.com", 80, f"{CURL} http://dl.example.com/hello")
    assert "hello through the grant" in r.out.stdout
    before = len(servers.plain.seen)
    probe = _py(
        """
        import errno, os, socket
        print("env", sorted(k for k in os.environ if "proxy" in k.lower()))
        s = socket.socket()
        print("proxy", errno.errorcode.get(s.connect_ex(("127.0.0.1", 3128))))
        """
    )
    out = long_lived.exec(probe + f"; {CURL} -x http://127.0.0.1:3128 http://dl.example.com/x")
    assert "env []" in out.stdout, out
    assert "proxy EACCES" in out.stdout or "proxy ECONNREFUSED" in out.stdout, out
    assert len(servers.plain.seen) == before
    assert long_lived._handle.info()["starts"] == 1  # the same sandbox: only the grant is gone


def test_no_grant_no_network(sandbox, servers):
    """Without a grant nothing changes: no proxy variables, nothing on the proxy's port."""
    out = sandbox.exec(
        f"env | grep -ci proxy; {CURL} -x http://127.0.0.1:3128 http://dl.example.com/hello"
    )
    assert out.stdout.startswith("0\n"), out
    assert out.exit_code != 0 and "hello" not in out.stdout


def test_a_stale_digest_is_refused_and_grants_nothing(sandbox, mediator, workspace, servers):
    from codeward.netgrant import NetworkGrant

    grant = NetworkGrant.make("dl.example.com", 80, sandbox.policy().digest)
    (workspace / ".env").write_text("SECRET=1\n")  # a new mask: the policy changed
    assert sandbox.policy().digest != grant.policy_digest
    before = len(servers.plain.seen)
    with mediator.admit(grant) as admission:
        out = sandbox.exec(
            f"touch ran; {CURL} http://dl.example.com/hello",
            grant_fd=admission.fd,
            policy_digest=grant.policy_digest,
        )
    assert out.policy_changed and out.exit_code == 125
    assert "re-approve against the current policy" in (out.setup_error or "")
    assert not (workspace / "ran").exists()
    assert not admission.listening and admission.summary()["connections"] == 0
    assert len(servers.plain.seen) == before


def test_the_command_cannot_take_the_proxys_place(sandbox, run_granted):
    """Binding the proxy's port (even with SO_REUSEPORT) or listening anywhere is refused."""
    script = _py(
        """
        import errno, socket
        for opt in (None, socket.SO_REUSEADDR, socket.SO_REUSEPORT):
            s = socket.socket()
            if opt is not None:
                s.setsockopt(socket.SOL_SOCKET, opt, 1)
            try:
                s.bind(("127.0.0.1", 3128))
                s.listen(1)
                print("took it")
            except OSError as e:
                print("refused", errno.errorcode.get(e.errno))
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", 0))
            s.listen(1)
            print("listens")
        except OSError as e:
            print("refused", errno.errorcode.get(e.errno))
        """
    )
    r = run_granted(sandbox, "dl.example.com", 80, script)
    lines = r.out.stdout.splitlines()
    assert len(lines) == 4 and all(line.startswith("refused") for line in lines), r.out


def test_without_landlock_the_namespace_and_seccomp_still_hold(
    workspace, mediator, canary, servers, boundary_ready
):
    from codeward import _native
    from codeward.netgrant import NetworkGrant
    from codeward.sandbox._locate import find_bwrap, init_path

    handle = _native.Sandbox(
        str(workspace), init_path(), bwrap=find_bwrap(str(workspace)), no_landlock=True
    )
    grant = NetworkGrant.make("dl.example.com", 80, handle.policy()[1])
    script = _py(
        f"""
        import errno, socket
        s = socket.socket()
        print("canary", errno.errorcode.get(s.connect_ex(("127.0.0.1", {canary.tcp_port}))))
        """
    )
    with mediator.admit(grant) as admission:
        raw = handle.exec(
            f"{script}; {CURL} http://dl.example.com/hello".encode(),
            [],
            30_000,
            2000,
            100_000,
            -1,
            admission.fd,
            grant.policy_digest,
        )
    handle.stop()
    out = raw["stdout"].decode()
    assert "canary ECONNREFUSED" in out and "hello through the grant" in out, raw
    assert canary.heard() == []


def test_too_many_or_idle_connections_are_turned_away(sandbox, net, workspace):
    from codeward.netgrant import NetworkGrant, NetworkMediator

    script = _py(
        """
        import socket
        socks = [socket.create_connection(("127.0.0.1", 3128)) for _ in range(3)]
        for s in socks:
            s.settimeout(10)
            print(repr(s.recv(12)))
        """
    )
    with NetworkMediator(
        resolver=net.resolver, dialer=net.dialer, max_connections=2, handshake_timeout_s=0.5
    ) as mediator:
        grant = NetworkGrant.make("dl.example.com", 80, sandbox.policy().digest)
        with mediator.admit(grant) as admission:
            out = sandbox.exec(script, grant_fd=admission.fd, policy_digest=grant.policy_digest)
    lines = out.stdout.splitlines()
    # two served until their request was overdue, the third closed at once
    assert lines[:2] == ["b'HTTP/1.1 408'"] * 2, out
    assert lines[2] == "b''", out
    summary = admission.summary()
    assert summary["refused"] == 3 and "too many connections at once" in summary["refusals"]


def test_two_grants_at_once_stay_apart(long_lived, run_granted, workspace):
    """Two granted commands of one sandbox handle running together (the second finds the
    long-lived sandbox busy and runs one-shot): each reaches its own origin only. Both are
    approved against the policy as it is, whatever the other's placeholders do meanwhile."""
    import threading

    def command(me: str, other: str) -> str:
        # each waits until the other has started, so they overlap for certain
        return (
            f"touch {me}.ready; for i in $(seq 200); do [ -e {other}.ready ] && break; "
            "sleep 0.05; done; "
            f"for h in dl other; do {CURL} http://$h.example.com/hello; echo; done"
        )

    results: dict = {}

    def run(host: str, me: str, other: str) -> None:
        results[host] = run_granted(long_lived, host, 80, command(me, other))

    threads = [
        threading.Thread(target=run, args=("dl.example.com", "a", "b")),
        threading.Thread(target=run, args=("other.example.com", "b", "a")),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for host, other in (("dl.example.com", "other"), ("other.example.com", "dl")):
        out, summary = results[host].out, results[host].summary
        assert not out.policy_changed and out.exit_code == 0, out
        assert out.stdout.count("hello through the grant") == 1, out
        assert f"{other}.example.com:80 is not the granted origin" in out.stdout, out
        assert summary["connections"] == 1 and summary["refused"] == 1, summary
    assert (workspace / "a.ready").exists() and (workspace / "b.ready").exists()
