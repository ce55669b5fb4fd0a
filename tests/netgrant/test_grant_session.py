"""Network grants through a session: confirmed, pinned to the digest shown, served, recorded.

The done criterion of the feature is here: a session runs ``pip download``
from a loopback package index and ``git clone`` of a loopback repository
inside the sandbox under an approved grant, and nothing else reaches the
network.
"""

from __future__ import annotations

import threading

import pytest

from codeward.kernel import Mode, ToolCall
from codeward.policy import Decision
from codeward.sandbox import NativeBashSandbox
from codeward.session import Agent, SessionOptions
from codeward.tools import ErrorKind

CURL = "curl -sS --max-time 20 --cacert ca.pem"


class Provider:
    """Answers every confirmation with ``answer`` (or a callable), keeping the requests."""

    def __init__(self, answer=True):
        self.answer = answer
        self.requests = []

    def request(self, confirmation):
        self.requests.append(confirmation)
        return self.answer(confirmation) if callable(self.answer) else self.answer


@pytest.fixture
def make_session(workspace, net, boundary_ready):
    sessions = []

    def make(**options):
        options.setdefault("network_resolver", net.resolver)
        options.setdefault("network_dialer", net.dialer)
        s = Agent().session(workspace, SessionOptions(**options))
        sessions.append(s)
        return s

    yield make
    for s in sessions:
        s.close()


def _grant_call(command, host="dl.example.com", port=None, call_id="g1"):
    grant = {"host": host, "reason": "fetch dependencies"}
    if port is not None:
        grant["port"] = port
    return ToolCall(
        call_id,
        "bash",
        {
            "command": command,
            "sandbox_permissions": "request_network_grant",
            "network_grant": grant,
        },
    )


def test_pip_download_and_git_clone_under_an_approved_grant(make_session, workspace, servers):
    provider = Provider(True)
    session = make_session(confirmation_provider=provider)
    pip = (
        "python3 -m pip download --no-deps --no-cache-dir --disable-pip-version-check "
        "--retries 1 --cert ca.pem --index-url https://dl.example.com/simple/ -d dl demo-pkg"
    )
    out = session.invoke(_grant_call(pip, port=443))
    assert out.decision is Decision.ASK and out.approved and out.executed, out.reason
    assert out.result.success, out.result.output
    assert (workspace / "dl" / "demo_pkg-1.0-py3-none-any.whl").is_file()
    clone = "GIT_SSL_CAINFO=ca.pem git clone -q https://dl.example.com/repo.git clone"
    out = session.invoke(_grant_call(clone, port=443, call_id="g2"))
    assert out.result.success, out.result.output
    assert (workspace / "clone" / "README.md").read_text() == "cloned through the grant\n"
    # and nothing else: the same clients, another host, refused and saying so
    elsewhere = pip.replace("dl.example", "other.example").replace("-d dl", "-d dl2")
    out = session.invoke(_grant_call(elsewhere, port=443, call_id="g3"))
    assert not out.result.success and "403" in out.result.output, out.result.output
    elsewhere = "GIT_SSL_CAINFO=ca.pem git clone -q https://other.example.com/repo.git clone2"
    out = session.invoke(_grant_call(elsewhere, port=443, call_id="g4"))
    assert not out.result.success and "403" in out.result.output, out.result.output
    assert not list(workspace.glob("dl2/*.whl")) and not (workspace / "clone2").exists()


def test_the_prompt_shows_the_origin_the_command_and_the_digest(make_session, servers):
    provider = Provider(True)
    session = make_session(confirmation_provider=provider)
    digest = session.sandbox.policy().digest
    out = session.invoke(_grant_call(f"{CURL} https://dl.example.com/hello"))
    (request,) = provider.requests
    origin = "dl.example.com:443 and dl.example.com:80 (no port given: HTTPS and HTTP)"
    assert request.scope["host_port"] == origin
    assert request.scope["policy_digest"] == digest
    assert request.operation == f"bash (network {origin}): {CURL} https://dl.example.com/hello"
    shown = request.render(color=False)
    assert digest in shown and origin in shown
    assert "network grant" in request.reason
    # what the grant did, in the result and in the trace
    assert "hello through the grant" in out.result.output
    meta = out.result.metadata["network_grant"]
    assert meta["host"] == "dl.example.com" and meta["port"] is None
    assert meta["policy_digest"] == digest and meta["connections"] == 1
    stages = [(t.stage, t.verdict) for t in out.trace]
    assert ("network_grant", "pin") in stages and ("network_grant", "allow") in stages
    assert digest in " ".join(t.reason for t in out.trace if t.stage == "network_grant")


@pytest.mark.parametrize("mode", [Mode.PLAN, Mode.AUTO])
def test_plan_and_auto_deny_without_asking(make_session, mode, servers):
    provider = Provider(True)
    session = make_session(mode=mode, confirmation_provider=provider)
    before = len(servers.secure.seen)
    out = session.invoke(_grant_call(f"{CURL} https://dl.example.com/hello"))
    assert out.decision is Decision.DENY and not out.executed
    assert provider.requests == [] and len(servers.secure.seen) == before
    assert session._mediator is None  # no mediator was ever made


def test_a_rejected_grant_runs_nothing(make_session, workspace):
    session = make_session(confirmation_provider=Provider(False))
    out = session.invoke(_grant_call("touch ran"))
    assert out.approved is False and not out.executed
    assert not (workspace / "ran").exists() and session._mediator is None


def test_a_sandbox_that_cannot_mediate_is_refused_before_asking(make_session, workspace):
    from codeward.sandbox import ProcessHostBashSandbox

    provider = Provider(True)
    host = ProcessHostBashSandbox(workspace)
    session = make_session(confirmation_provider=provider, sandbox_handle=host)
    out = session.invoke(_grant_call("touch ran"))
    assert out.decision is Decision.DENY and out.error_kind is ErrorKind.SANDBOX_UNAVAILABLE
    assert "cannot, so nothing was granted" in out.reason
    assert provider.requests == [] and not (workspace / "ran").exists()
    host.close()


def test_a_policy_change_while_the_human_decides_refuses_the_grant(
    make_session, workspace, servers
):
    """Approved against one policy, run under another: refused, re-approve, nothing granted."""

    def approve_after_a_change(request):
        (workspace / ".env").write_text("API=1\n")  # a new credential file: a new mask
        return True

    session = make_session(confirmation_provider=Provider(approve_after_a_change))
    before = len(servers.secure.seen)
    out = session.invoke(_grant_call(f"touch ran; {CURL} https://dl.example.com/hello"))
    assert out.approved and out.executed and not out.result.success
    assert out.result.error_kind is ErrorKind.PERMISSION_DENIED
    assert "re-approve against the current policy" in out.result.output
    assert out.result.metadata["policy_changed"] is True
    assert not (workspace / "ran").exists() and len(servers.secure.seen) == before
    assert ("network_grant", "deny") in [(t.stage, t.verdict) for t in out.trace]
    # approving again, against the policy as it now is, works
    again = session.invoke(_grant_call(f"{CURL} https://dl.example.com/hello", call_id="g2"))
    assert again.result.success and "hello through the grant" in again.result.output


class ChangingSandbox(NativeBashSandbox):
    """The real sandbox; its exec first makes a host-side change, as a concurrent editor might,
    after the kernel's own check and before the C core plans the run."""

    def __init__(self, workspace, change):
        super().__init__(workspace)
        self.change = change

    def exec(self, command, **kwargs):
        self.change()
        return super().exec(command, **kwargs)


def test_the_core_checks_the_digest_on_the_plan_it_runs(make_session, workspace, servers):
    sandbox = ChangingSandbox(workspace, lambda: (workspace / ".npmrc").write_text("x\n"))
    session = make_session(confirmation_provider=Provider(True), sandbox_handle=sandbox)
    before = len(servers.secure.seen)
    out = session.invoke(_grant_call(f"touch ran; {CURL} https://dl.example.com/hello"))
    assert not out.result.success and out.result.metadata["policy_changed"] is True
    assert "re-approve" in out.result.output and out.result.exit_code == 125
    assert not (workspace / "ran").exists() and len(servers.secure.seen) == before
    assert out.result.metadata["network_grant"]["connections"] == 0
    sandbox.close()


def test_a_host_direct_grant_needs_no_prompt(make_session, servers):
    provider = Provider(True)
    session = make_session(confirmation_provider=provider)
    result = session.tool(
        "bash",
        {
            "command": f"{CURL} http://dl.example.com/hello",
            "sandbox_permissions": "request_network_grant",
            "network_grant": {"host": "dl.example.com", "port": 80},
        },
    )
    assert result.success and "hello through the grant" in result.output
    assert provider.requests == [] and result.metadata["network_grant"]["connections"] == 1


def test_a_delegated_grant_asks_the_root_and_closing_the_session_ends_the_mediator(
    make_session, servers
):
    provider = Provider(True)
    session = make_session(confirmation_provider=provider)
    child = session.delegate("worker", confirmation_inheritance="auto_approve")
    out = child.invoke(_grant_call(f"{CURL} http://dl.example.com/hello", port=80))
    assert out.result.success and len(provider.requests) == 1  # never auto-approved
    mediator = session._mediator
    assert mediator is not None
    session.close()
    assert session._mediator is None
    assert not any(t.name == "codeward-netgrant" and t.is_alive() for t in threading.enumerate())


def test_the_prompt_names_a_look_alike_host_in_its_canonical_form_and_warns(make_session):
    """A grant for example.com with a Cyrillic e (U+0435) reads xn--xample-2of.com in every
    line the approver reads: the operation, the risk, the reason and the scope, with a warning
    that it mixes scripts; a name written wholly in look-alike letters is named for what it
    looks like."""
    provider = Provider(False)
    session = make_session(confirmation_provider=provider)
    session.invoke(_grant_call("true", host="\u0435xample.com", port=443))
    session.invoke(_grant_call("true", host="\u0430\u0440\u0440\u04cf\u0435.com", port=443))
    mixed, whole = provider.requests
    origin = "xn--xample-2of.com:443"
    assert mixed.scope["host_port"] == origin
    assert mixed.operation == f"bash (network {origin}): true"
    assert f"asks for network access to {origin}" in mixed.risk.reasons
    assert any("mixes scripts (Cyrillic, Latin)" in r for r in mixed.risk.reasons)
    assert mixed.risk.level in ("high", "critical")
    assert origin in mixed.reason
    shown = mixed.render(color=False)
    assert "\u0435" not in shown, shown  # the look-alike itself is never on the screen
    assert any("look like the Latin 'apple'" in r for r in whole.risk.reasons)
    assert "\u0430" not in whole.render(color=False)


@pytest.mark.parametrize("host", ["fe80::1%lo", "[fe80::1%25lo]", "fe80::1%25lo"])
def test_a_zone_id_is_refused_before_anyone_is_asked(make_session, host):
    provider = Provider(True)
    session = make_session(confirmation_provider=provider)
    out = session.invoke(_grant_call("true", host=host, port=80))
    assert out.decision is Decision.DENY and not out.executed
    assert provider.requests == []  # never put to the human
    assert out.error_kind is ErrorKind.INVALID_ARGUMENT and "zone id" in out.reason
