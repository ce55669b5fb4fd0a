"""The delegation routing table: who is asked, how often, and what happens without a provider."""

from __future__ import annotations

import pytest
from kernelkit import CountingProvider, HostBoundary

from codeward.kernel import Mode, Origin, ToolCall
from codeward.policy import Decision, PermissionPolicy
from codeward.tools import ErrorKind

ALLOW, DENY, ASK = Decision.ALLOW, Decision.DENY, Decision.ASK
READ = ("read", {"file_path": "a.txt"})
PROTECTED = ("write", {"file_path": ".mcp.json", "content": "{}"})  # the matrix asks in default
ESCALATION = (
    "bash",
    {"command": "ls", "sandbox_permissions": "require_escalated", "justification": "j"},
)


def call(spec, cid="c"):
    return ToolCall(cid, spec[0], spec[1])


def test_child_shares_the_workspace_and_the_sandbox_handle(make_session):
    parent = make_session()
    child = parent.delegate("worker")
    assert child.sandbox is parent.sandbox and child.workspace == parent.workspace
    out = child.invoke(call(READ))
    assert out.origin is Origin.DELEGATED and out.executed


def test_a_parent_deny_wins(make_session):
    parent = make_session(
        permission_policy=PermissionPolicy(deny=["read"], default_decision="allow")
    )
    child = parent.delegate("w", permission_policy=PermissionPolicy(allow=["read"]))
    assert child.invoke(call(READ)).decision is DENY


def test_a_child_deny_wins(make_session):
    child = make_session().delegate("w", permission_policy=PermissionPolicy(deny=["read"]))
    assert child.invoke(call(READ)).decision is DENY


def test_a_child_can_narrow_the_mode_but_not_widen_it(make_session):
    parent = make_session(mode=Mode.PLAN)
    child = parent.delegate("w", mode=Mode.AUTO)
    assert child.invoke(call(("write", {"file_path": "b.txt", "content": "x"}))).decision is DENY
    narrow = make_session().delegate("w", mode=Mode.PLAN)
    assert narrow.invoke(call(("write", {"file_path": "b.txt", "content": "x"}))).decision is DENY


@pytest.mark.parametrize("inheritance", ["auto_approve", "deny_on_ask", "inherit_parent"])
def test_a_parent_ask_is_answered_by_the_parent_provider_only(make_session, inheritance):
    provider = CountingProvider(True)
    parent = make_session(confirmation_provider=provider)
    child = parent.delegate(
        "w",
        confirmation_inheritance=inheritance,
        permission_policy=PermissionPolicy(default_decision="allow"),
    )
    out = child.invoke(call(PROTECTED))
    assert out.decision is ASK and out.approved and len(provider.requests) == 1


def test_a_parent_ask_without_a_parent_provider_fails_closed(make_session):
    child = make_session().delegate("w", confirmation_inheritance="auto_approve")
    out = child.invoke(call(PROTECTED))
    assert out.decision is DENY and out.error_kind is ErrorKind.CONFIRMATION_UNAVAILABLE


CHILD_ASKS = PermissionPolicy(ask=["read"], default_decision="allow")


def test_child_ask_auto_approve_asks_nobody(make_session):
    provider = CountingProvider(False)
    child = make_session(confirmation_provider=provider).delegate(
        "w", permission_policy=CHILD_ASKS, confirmation_inheritance="auto_approve"
    )
    out = child.invoke(call(READ))
    assert out.decision is ALLOW and out.executed and provider.requests == []


def test_child_ask_deny_on_ask_denies_without_asking(make_session):
    provider = CountingProvider(True)
    child = make_session(confirmation_provider=provider).delegate(
        "w", permission_policy=CHILD_ASKS, confirmation_inheritance="deny_on_ask"
    )
    out = child.invoke(call(READ))
    assert out.decision is DENY and provider.requests == []


def test_child_ask_inherit_parent_asks_the_parent(make_session):
    provider = CountingProvider(True)
    child = make_session(confirmation_provider=provider).delegate(
        "w", permission_policy=CHILD_ASKS, confirmation_inheritance="inherit_parent"
    )
    out = child.invoke(call(READ))
    assert out.decision is ASK and out.approved and len(provider.requests) == 1


def test_child_ask_inherit_parent_without_provider_fails_closed(make_session):
    child = make_session().delegate(
        "w", permission_policy=CHILD_ASKS, confirmation_inheritance="inherit_parent"
    )
    assert child.invoke(call(READ)).error_kind is ErrorKind.CONFIRMATION_UNAVAILABLE


def test_parent_and_child_asks_share_one_provider_and_it_is_asked_once(make_session):
    provider = CountingProvider(True)
    parent = make_session(
        confirmation_provider=provider,
        permission_policy=PermissionPolicy(ask=["read"], default_decision="allow"),
    )
    child = parent.delegate(
        "w", permission_policy=CHILD_ASKS, confirmation_inheritance="inherit_parent"
    )
    out = child.invoke(call(READ))
    assert out.approved and len(provider.requests) == 1


@pytest.mark.parametrize("inheritance", ["auto_approve", "deny_on_ask", "inherit_parent"])
def test_an_escalation_after_both_allowed_goes_to_the_parent(make_session, inheritance):
    provider = CountingProvider(False)
    allow_bash = PermissionPolicy(allow=["bash"], default_decision="allow")
    parent = make_session(confirmation_provider=provider, permission_policy=allow_bash)
    child = parent.delegate("w", permission_policy=allow_bash, confirmation_inheritance=inheritance)
    out = child.invoke(call(ESCALATION))
    assert out.decision is ASK and out.approved is False and len(provider.requests) == 1


def test_grandchildren_are_checked_against_every_ancestor(make_session):
    parent = make_session(
        permission_policy=PermissionPolicy(deny=["write(secret/**)"], default_decision="allow")
    )
    grandchild = parent.delegate("a").delegate("b")
    out = grandchild.invoke(call(("write", {"file_path": "secret/x", "content": "x"})))
    assert out.decision is DENY and "session" in out.reason


def test_child_mode_switch_leaves_the_parent_alone(make_session):
    boundary = HostBoundary()
    parent = make_session(boundary=boundary)
    child = parent.delegate("w")
    child.set_mode("plan")
    assert parent.mode is Mode.DEFAULT
    assert child.invoke(call(("bash", {"command": "ls"}))).decision is DENY
    assert parent.invoke(call(("bash", {"command": "ls"}))).executed
