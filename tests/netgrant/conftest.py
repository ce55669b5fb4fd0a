"""Fixtures of the network grant suites: the site, its servers, the fake network, sandboxes.

Every suite here runs against the real boundary (bubblewrap, the init,
seccomp, Landlock) and fails, rather than skips, without it. ``sandbox`` is
parametrized over the long-lived and the one-shot sandbox where both must
behave the same.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from grantkit import PUBLIC_IP, PUBLIC_IP2, Certs, FakeNet, StaticOrigin, build_site, make_certs
from grantkit import origins as _origins

from codeward.netgrant import NetworkGrant, NetworkMediator
from codeward.sandbox import CommandOutput, NativeBashSandbox


@pytest.fixture(scope="session")
def boundary_ready() -> None:
    """The native boundary must work here: a security suite fails, it does not skip."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the native sandbox is Linux-only")
    reason = NativeBashSandbox.probe()
    if reason is not None:
        pytest.fail(f"the native sandbox cannot run on this machine: {reason}")


@pytest.fixture(scope="session")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    made = make_certs(tmp_path_factory.mktemp("certs"))
    if made is None:
        pytest.fail("neither the cryptography package nor the openssl CLI is available")
    return made


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_site(tmp_path_factory.mktemp("site") / "www")


@dataclass
class Servers:
    plain: StaticOrigin  # HTTP
    secure: StaticOrigin  # HTTPS, the test CA's certificate for dl.example.com


@pytest.fixture(scope="session")
def servers(site: Path, certs: Certs) -> Iterator[Servers]:
    with _origins(site, certs) as (plain, secure):
        yield Servers(plain, secure)


@pytest.fixture
def net(servers: Servers) -> FakeNet:
    """dl.example.com and other.example.com both reach the servers: a refusal is the mediator's."""
    fake = FakeNet()
    fake.dns["dl.example.com"] = [PUBLIC_IP]
    fake.dns["other.example.com"] = [PUBLIC_IP2]
    fake.dns["rebind.example.com"] = ["127.0.0.1"]
    fake.dns["mixed.example.com"] = [PUBLIC_IP, "10.1.2.3"]
    for ip in (PUBLIC_IP, PUBLIC_IP2):
        fake.routes[(ip, 80)] = servers.plain.addr
        fake.routes[(ip, 443)] = servers.secure.addr
    return fake


@pytest.fixture
def workspace(tmp_path: Path, certs: Certs) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "ca.pem").write_text(certs.ca_pem)
    return root


@pytest.fixture(params=[True, False], ids=["long-lived", "one-shot"])
def sandbox(
    request: pytest.FixtureRequest, workspace: Path, boundary_ready: None
) -> Iterator[NativeBashSandbox]:
    sb = NativeBashSandbox(workspace, reuse=request.param)
    yield sb
    sb.close()


@pytest.fixture
def long_lived(workspace: Path, boundary_ready: None) -> Iterator[NativeBashSandbox]:
    sb = NativeBashSandbox(workspace, reuse=True)
    yield sb
    sb.close()


@pytest.fixture
def mediator(net: FakeNet) -> Iterator[NetworkMediator]:
    med = NetworkMediator(resolver=net.resolver, dialer=net.dialer, connect_timeout_s=10)
    yield med
    med.close()


@dataclass
class Granted:
    out: CommandOutput
    summary: dict


Run = Callable[..., Granted]


@pytest.fixture
def run_granted(mediator: NetworkMediator) -> Run:
    """Runs one command in ``sb`` with a grant of ``host`` (``port`` None: 443 and 80)."""

    def run(sb: NativeBashSandbox, host: str, port: int | None, command: str) -> Granted:
        grant = NetworkGrant.make(host, port, sb.policy().digest)
        with mediator.admit(grant) as admission:
            out = sb.exec(
                command,
                timeout_ms=60_000,
                grant_fd=admission.fd,
                policy_digest=grant.policy_digest,
            )
        return Granted(out, admission.summary())

    return run
