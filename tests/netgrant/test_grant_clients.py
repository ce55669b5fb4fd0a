"""Real clients in the real sandbox under a grant: what they reach, and what they are refused.

curl and Python's urllib, over HTTP and HTTPS (the test CA), through the
proxy variables the sandbox sets; each case runs in the long-lived and the
one-shot sandbox; pip and git refused another port and a private answer
(in the long-lived one; test_grant_session.py runs them to success). A
refusal must be the mediator's (the names it refuses would reach a server
if they were admitted: see ``net`` in conftest.py) and must be printed by
the client.
"""

from __future__ import annotations

import shlex
import textwrap

from grantkit import PUBLIC_IP

PY = "/usr/bin/python3"
CURL = "curl -sS --max-time 20 --cacert ca.pem"


def _py(script: str) -> str:
    return f"{PY} -c {shlex.quote(textwrap.dedent(script))}"


def _urllib(url: str) -> str:
    """Fetches url with urllib (proxies from the environment); prints the body or the error."""
    return _py(
        f"""
        import ssl, urllib.request
        ctx = ssl.create_default_context(cafile="ca.pem")
        try:
            print(urllib.request.urlopen({url!r}, context=ctx, timeout=20).read().decode(), end="")
        except Exception as exc:
            print("URLLIB-ERROR", exc)
        """
    )


HELLO = "hello through the grant"


def test_curl_and_urllib_reach_the_granted_origin(sandbox, run_granted, servers, net):
    before = len(servers.secure.seen), len(servers.plain.seen)
    cmd = " ; ".join(
        [
            f"{CURL} https://dl.example.com/hello",
            f"{CURL} http://dl.example.com/hello",
            _urllib("https://dl.example.com/hello"),
            _urllib("http://dl.example.com/hello"),
            # curl's socks5h:// (ALL_PROXY): the name is resolved by the mediator
            f'{CURL} -x "$ALL_PROXY" https://dl.example.com/hello',
        ]
    )
    r = run_granted(sandbox, "dl.example.com", None, cmd)
    assert r.out.exit_code == 0, r.out
    assert r.out.stdout.count(HELLO) == 5, r.out
    assert r.summary["connections"] == 5 and r.summary["refused"] == 0, r.summary
    assert len(servers.secure.seen) - before[0] == 3
    assert len(servers.plain.seen) - before[1] == 2
    # one resolution per connection, every answer checked, and the dialer only ever
    # given the checked address
    assert net.resolved == ["dl.example.com"] * 5
    assert {ip for ip, _port in net.dialed} == {PUBLIC_IP}


def test_another_host_is_refused_and_the_client_says_why(sandbox, run_granted, servers, net):
    before = len(servers.secure.seen), len(servers.plain.seen)
    cmd = " ; ".join(
        [
            f"{CURL} https://other.example.com/hello; echo curl-exit=$?",
            f"{CURL} http://other.example.com/hello; echo curl-exit=$?",
            _urllib("https://other.example.com/hello"),
            _urllib("http://other.example.com/hello"),
        ]
    )
    r = run_granted(sandbox, "dl.example.com", 443, cmd)
    out = r.out.stdout + r.out.stderr
    assert HELLO not in out
    assert "curl-exit=56" in out and "CONNECT tunnel failed, response 403" in out
    # urllib prints the reason phrase; a plain request gets the reason as the body
    assert out.count("other.example.com:443 is not the granted origin") >= 1, out
    assert out.count("other.example.com:80 is not the granted origin") == 2, out
    assert "this command may reach dl.example.com:443" in out
    assert r.summary["connections"] == 0 and r.summary["refused"] == 4, r.summary
    assert (len(servers.secure.seen), len(servers.plain.seen)) == before
    assert "other.example.com" not in net.resolved  # refused before any resolution


def test_another_port_is_refused(sandbox, run_granted, servers):
    before = len(servers.plain.seen)
    cmd = " ; ".join(
        [
            f"{CURL} http://dl.example.com/hello",  # port 80: the grant is 443 only
            f"{CURL} https://dl.example.com:8443/hello",
            _urllib("http://dl.example.com/hello"),
        ]
    )
    r = run_granted(sandbox, "dl.example.com", 443, cmd)
    out = r.out.stdout + r.out.stderr
    assert HELLO not in out
    assert "dl.example.com:80 is not the granted origin" in out
    assert "response 403" in out  # curl, for dl.example.com:8443
    assert r.summary["refused"] == 3 and r.summary["connections"] == 0
    assert len(servers.plain.seen) == before


def test_a_name_that_resolves_to_a_private_address_is_refused(sandbox, run_granted, net):
    cmd = " ; ".join(
        [
            f"{CURL} http://rebind.example.com/hello",
            _urllib("http://rebind.example.com/hello"),
        ]
    )
    r = run_granted(sandbox, "rebind.example.com", None, cmd)
    out = r.out.stdout + r.out.stderr
    assert out.count("rebind.example.com resolves to 127.0.0.1 (loopback") == 2, out
    assert "public addresses only" in out
    mixed = run_granted(sandbox, "mixed.example.com", 80, f"{CURL} http://mixed.example.com/x")
    assert "resolves to 10.1.2.3 (private network" in mixed.out.stdout  # one bad answer of two
    assert not net.dialed  # nothing was connected to


def test_a_rebinding_name_is_checked_on_every_connection(sandbox, run_granted, net):
    answers = iter([[PUBLIC_IP], ["169.254.169.254"]])
    net.dns["flip.example.com"] = lambda: next(answers)
    net.routes[(PUBLIC_IP, 80)] = net.routes[(PUBLIC_IP, 80)]
    cmd = f"{CURL} http://flip.example.com/hello; echo; {CURL} http://flip.example.com/hello"
    r = run_granted(sandbox, "flip.example.com", 80, cmd)
    assert HELLO in r.out.stdout  # the first answer was public: pinned and connected
    assert "resolves to 169.254.169.254 (link-local" in r.out.stdout  # the metadata service
    assert net.dialed == [(PUBLIC_IP, 80)]


def test_a_literal_address_and_localhost_are_different_hosts(sandbox, run_granted, servers):
    port = servers.plain.port
    by_address = run_granted(
        sandbox,
        "127.0.0.1",
        port,
        f"{CURL} http://127.0.0.1:{port}/hello; {CURL} http://localhost:{port}/hello",
    )
    assert by_address.out.stdout.count(HELLO) == 1, by_address.out
    assert f"localhost:{port} is not the granted origin" in by_address.out.stdout
    by_name = run_granted(
        sandbox,
        "localhost",
        port,
        f"{CURL} http://localhost:{port}/hello; {CURL} http://127.0.0.1:{port}/hello",
    )
    assert by_name.out.stdout.count(HELLO) == 1, by_name.out
    assert f"127.0.0.1:{port} is not the granted origin" in by_name.out.stdout


def test_socks5_by_name_and_by_address(sandbox, run_granted):
    script = _py(
        f"""
        import socket, struct
        def ask(atyp_addr, cmd=1, port=80):
            s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
            s.sendall(b"\\x05\\x01\\x00")
            assert s.recv(2) == b"\\x05\\x00"
            s.sendall(bytes([5, cmd, 0]) + atyp_addr + struct.pack("!H", port))
            reply = s.recv(10)
            body = ""
            if reply[1] == 0:
                s.sendall(b"GET /hello HTTP/1.0\\r\\nHost: dl.example.com\\r\\n\\r\\n")
                data = b""
                while chunk := s.recv(4096):  # HTTP/1.0: the server closes after the body
                    data += chunk
                body = data.decode().split("\\r\\n\\r\\n")[-1].strip()
            print("reply", reply[1], body)
        name = b"dl.example.com"
        ask(b"\\x03" + bytes([len(name)]) + name)           # by name: granted
        ask(b"\\x01" + socket.inet_aton("{PUBLIC_IP}"))     # by address: the grant names a name
        ask(b"\\x03" + bytes([len(name)]) + name, cmd=2)    # BIND
        ask(b"\\x03" + bytes([len(name)]) + name, cmd=3)    # UDP ASSOCIATE
        ask(b"\\x03" + bytes([len(name)]) + name, port=81)  # another port
        """
    )
    r = run_granted(sandbox, "dl.example.com", 80, script)
    lines = [line.strip() for line in r.out.stdout.splitlines()]
    assert lines == [f"reply 0 {HELLO}", "reply 2", "reply 7", "reply 7", "reply 2"], r.out


PIP = (
    "python3 -m pip download --no-deps --no-cache-dir --disable-pip-version-check --retries 1 "
    "--timeout 20 --cert ca.pem -d dl --index-url"
)
GIT = "GIT_SSL_CAINFO=ca.pem git clone -q"


def test_pip_and_git_are_refused_another_port_and_a_private_answer(
    long_lived, run_granted, servers, net, workspace
):
    """pip and git, not only curl and urllib, fail with the mediator's reason (the session
    suite shows them working, and refused another host)."""
    before = len(servers.secure.seen), len(servers.plain.seen)
    port = run_granted(
        long_lived,
        "dl.example.com",
        443,
        f"{PIP} https://dl.example.com:8443/simple/ demo-pkg; echo pip-exit=$?; "
        f"{GIT} https://dl.example.com:8443/repo.git c1; echo git-exit=$?",
    )
    out = port.out.stdout + port.out.stderr
    assert "pip-exit=0" not in out and "git-exit=0" not in out, out
    # each prints the refusal: pip the mediator's reason, git the status
    assert "dl.example.com:8443 is not the granted origin" in out, out
    assert "CONNECT tunnel failed, response 403" in out, out
    assert port.summary["refused"] >= 2 and port.summary["connections"] == 0, port.summary
    private = run_granted(
        long_lived,
        "rebind.example.com",
        None,
        f"{PIP} https://rebind.example.com/simple/ demo-pkg; echo pip-exit=$?; "
        f"{GIT} https://rebind.example.com/repo.git c2; echo git-exit=$?",
    )
    out = private.out.stdout + private.out.stderr
    assert "pip-exit=0" not in out and "git-exit=0" not in out, out
    assert private.summary["refused"] >= 2 and private.summary["connections"] == 0, private.summary
    assert "rebind.example.com resolves to 127.0.0.1 (loopback" in out, out
    assert "CONNECT tunnel failed, response 403" in out, out
    assert all("resolves to 127.0.0.1" in why for why in private.summary["refusals"])
    assert (len(servers.secure.seen), len(servers.plain.seen)) == before
    assert not net.dialed and not list(workspace.glob("dl/*")) and not (workspace / "c1").exists()
