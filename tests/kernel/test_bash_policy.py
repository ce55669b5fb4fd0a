"""Through the kernel: a bash call is decided per simple command, exactly as policy.check does."""

from __future__ import annotations

import pytest
from kernelkit import CountingProvider, HostBoundary

from codeward.kernel import Origin, ToolCall
from codeward.policy import Decision, PermissionPolicy

NO_PUSH = PermissionPolicy(deny=["bash(git push**)"], default_decision="allow")


@pytest.mark.parametrize("command", ["git -c x=y push", "cd . && git push", "\\git push"])
def test_the_reproduced_bypasses_are_denied(make_session, command):
    boundary = HostBoundary()
    session = make_session(boundary=boundary, permission_policy=NO_PUSH)
    outcome = session.invoke(ToolCall("c1", "bash", {"command": command}), Origin.MODEL)
    assert outcome.decision is Decision.DENY and not outcome.executed
    assert boundary.commands == []
    (entry,) = [t for t in outcome.trace if t.stage == "mode_policy"]
    assert "rule bash(git push**)" in entry.reason
    if command != "git push":
        assert "simple command" in entry.reason, entry.reason
    assert NO_PUSH.check("bash", {"command": command}) is Decision.DENY


def test_an_allow_rule_lowers_an_ask_only_if_it_covers_every_command(make_session):
    """Unsandboxed bash asks in Default mode unless an allow rule covers the call: a rule that
    covers one command of the line does not cover the others."""
    policy = PermissionPolicy(allow=["bash(ls*)"], default_decision="allow")
    provider = CountingProvider(False)
    session = make_session(
        boundary=HostBoundary(sandboxed=False),
        permission_policy=policy,
        confirmation_provider=provider,
    )
    ok = session.invoke(ToolCall("c1", "bash", {"command": "ls -la"}), Origin.MODEL)
    assert ok.decision is Decision.ALLOW and ok.executed
    outcome = session.invoke(ToolCall("c2", "bash", {"command": "ls; rm -rf build"}), Origin.MODEL)
    assert outcome.decision is Decision.ASK and not outcome.executed
    assert len(provider.requests) == 1
