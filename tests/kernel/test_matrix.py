"""Every cell of the mode matrix, through a real session, plus the policy combination rule."""

from __future__ import annotations

import pytest
from kernelkit import CountingProvider, HostBoundary

from codeward.kernel import MODE_MATRIX, MatrixRow, Mode, Origin, ToolCall
from codeward.policy import Decision, PermissionPolicy
from codeward.sandbox import NativeBashSandbox, UnavailableBashSandbox
from codeward.tools import ErrorKind

ALLOW, DENY, ASK = Decision.ALLOW, Decision.DENY, Decision.ASK


def _register_externals(session):
    session.register_tool("launcher", lambda a: "launched", {"type": "object"}, launch=True)
    session.register_tool("lookup", lambda a: "found", {"type": "object"}, {"readOnlyHint": True})
    session.register_tool("mutate", lambda a: "done", {"type": "object"})


# One call per row; the boundary flag picks the sandboxed or the unsandboxed bash row.
ROW_CALLS = {
    MatrixRow.READ: ("read", {"file_path": "a.txt"}, True),
    MatrixRow.WRITE: ("write", {"file_path": "b.txt", "content": "x"}, True),
    MatrixRow.WRITE_PROTECTED: ("write", {"file_path": ".mcp.json", "content": "{}"}, True),
    MatrixRow.BASH_SANDBOXED: ("bash", {"command": "echo hi"}, True),
    MatrixRow.BASH_UNSANDBOXED: ("bash", {"command": "echo hi"}, False),
    # (the row's request_network_grant needs the native sandbox to mediate it; a host boundary
    # cannot, and is refused before any prompt: tests/netgrant/test_grant_session.py)
    MatrixRow.BASH_ESCALATION: (
        "bash",
        {
            "command": "echo hi",
            "sandbox_permissions": "require_escalated",
            "justification": "needs the host",
        },
        True,
    ),
    MatrixRow.GIT_READ: ("git", {"command": "status"}, True),
    MatrixRow.DOWNLOAD: ("download", {"url": "https://example.com/x.tar.gz"}, True),
    MatrixRow.LAUNCH: ("launcher", {}, True),
    MatrixRow.MCP_READ_ONLY: ("lookup", {}, True),
    MatrixRow.MCP_SIDE_EFFECT: ("mutate", {}, True),
    MatrixRow.UNKNOWN: ("no_such_tool", {}, True),
}


def test_every_row_has_a_call():
    assert set(ROW_CALLS) == set(MatrixRow)


@pytest.mark.parametrize("mode", list(Mode))
@pytest.mark.parametrize("row", list(MatrixRow))
def test_matrix_cell(make_session, row, mode):
    name, args, sandboxed = ROW_CALLS[row]
    provider = CountingProvider(False)  # reject, so nothing that asks runs
    session = make_session(
        mode=mode, boundary=HostBoundary(sandboxed), confirmation_provider=provider
    )
    _register_externals(session)
    outcome = session.invoke(ToolCall("c1", name, args), Origin.MODEL)
    expected = MODE_MATRIX[row][list(Mode).index(mode)]
    assert outcome.decision is expected, outcome.trace
    assert bool(provider.requests) == (expected is ASK)
    if expected is DENY:
        assert not outcome.executed
    if expected is ASK:
        assert outcome.approved is False and not outcome.executed
    assert any(t.stage == "mode_policy" for t in outcome.trace)


def test_auto_never_asks_and_plan_never_mutates():
    for row, (_default, plan, auto) in MODE_MATRIX.items():
        assert auto is not ASK, row
        mutating = row not in (MatrixRow.READ, MatrixRow.GIT_READ, MatrixRow.MCP_READ_ONLY)
        assert (plan is DENY) == mutating, row


def test_protected_names_in_any_case_and_below_git(make_session):
    session = make_session(confirmation_provider=CountingProvider(False))
    for path in (
        ".git/config",
        ".GIT/hooks/pre-commit",
        ".Mcp.json",
        ".vscode/settings.json",
        ".bashrc",
    ):
        outcome = session.invoke(ToolCall(path, "write", {"file_path": path, "content": "x"}))
        assert outcome.decision is ASK, path


@pytest.mark.parametrize(
    "rule",
    ["write(*)", "write", "write(**/*.json)", "write(.*)", "write(.m*.json)", "write(**)"],
)
def test_a_wildcard_allow_rule_never_lowers_the_protected_ask(make_session, rule):
    """A rule written for ordinary files must not let the model write its own configuration."""
    provider = CountingProvider(False)
    policy = PermissionPolicy(allow=[rule], default_decision="ask")
    session = make_session(permission_policy=policy, confirmation_provider=provider)
    for path in (".mcp.json", ".cursor/mcp.json", ".git/hooks/pre-commit", ".clinerules"):
        out = session.invoke(ToolCall(path, "write", {"file_path": path, "content": "{}"}))
        assert out.decision is ASK and not out.executed, (rule, path, out.trace)
        if policy.allowed_by_rule("write", {"file_path": path}):
            assert "without a wildcard" in str(out.trace), out.trace
    # an ordinary file under the same rule is still allowed without a prompt
    if rule not in ("write(.*)", "write(.m*.json)"):
        out = session.invoke(ToolCall("o", "write", {"file_path": "a.json", "content": "{}"}))
        assert out.decision is ALLOW and out.executed, (rule, out.trace)


@pytest.mark.parametrize(
    ("rule", "path"),
    [
        ("write(.mcp.json)", ".mcp.json"),
        ("write(.git/**)", ".git/hooks/pre-commit"),
        ("write(.cursor/*.json)", ".cursor/mcp.json"),
    ],
)
def test_an_allow_rule_that_names_the_protected_path_lowers_its_ask(make_session, rule, path):
    provider = CountingProvider(False)
    session = make_session(
        permission_policy=PermissionPolicy(allow=[rule], default_decision="ask"),
        confirmation_provider=provider,
    )
    out = session.invoke(ToolCall("c", "write", {"file_path": path, "content": "{}"}))
    assert out.decision is ALLOW and out.executed and provider.requests == [], out.trace


def test_a_protected_path_reached_through_a_symlink_always_asks(make_session, workspace):
    (workspace / ".git").mkdir()
    (workspace / "cfg").symlink_to(".git")
    provider = CountingProvider(False)
    session = make_session(
        permission_policy=PermissionPolicy(
            allow=["write(cfg/**)", "write(.git/**)"], default_decision="ask"
        ),
        confirmation_provider=provider,
    )
    out = session.invoke(ToolCall("c", "write", {"file_path": "cfg/config", "content": "x"}))
    assert out.decision is ASK and not out.executed, out.trace
    assert not (workspace / ".git" / "config").exists()


def test_policy_deny_beats_an_allow_cell(make_session):
    policy = PermissionPolicy(deny=["bash(rm:*)"], default_decision="allow")
    session = make_session(permission_policy=policy)
    out = session.invoke(ToolCall("c", "bash", {"command": "rm -f a.txt"}))
    assert out.decision is DENY and "bash(rm:*)" in str(out.trace)


def test_policy_ask_raises_an_allow_cell(make_session):
    provider = CountingProvider(True)
    policy = PermissionPolicy(ask=["write(*.txt)"], default_decision="allow")
    session = make_session(permission_policy=policy, confirmation_provider=provider)
    out = session.invoke(ToolCall("c", "write", {"file_path": "b.txt", "content": "x"}))
    assert out.decision is ASK and out.approved is True and out.executed
    assert "write(*.txt)" in provider.requests[0].reason


def test_policy_default_applies_when_no_rule_matches(make_session):
    session = make_session(permission_policy=PermissionPolicy(default_decision="ask"))
    out = session.invoke(ToolCall("c", "read", {"file_path": "a.txt"}))
    assert out.decision is DENY and out.error_kind is ErrorKind.CONFIRMATION_UNAVAILABLE


@pytest.mark.parametrize(
    ("mode", "expected"), [(Mode.DEFAULT, ALLOW), (Mode.PLAN, DENY), (Mode.AUTO, DENY)]
)
def test_an_allow_rule_lowers_a_mode_ask_only_in_default(make_session, mode, expected):
    policy = PermissionPolicy(allow=["download(artifacts/**)"], default_decision="allow")
    session = make_session(mode=mode, permission_policy=policy)
    args = {"url": "https://localhost/x", "file_path": "artifacts/x"}  # refused before any DNS
    out = session.invoke(ToolCall("c", "download", args))
    assert out.decision is expected, out.trace


def test_an_allow_rule_never_waives_an_escalation(make_session):
    provider = CountingProvider(False)
    policy = PermissionPolicy(allow=["bash"], default_decision="allow")
    session = make_session(permission_policy=policy, confirmation_provider=provider)
    args = {
        "command": "ls",
        "sandbox_permissions": "require_escalated",
        "justification": "needs host",
    }
    out = session.invoke(ToolCall("c", "bash", args))
    assert out.decision is ASK and out.approved is False
    assert any(t.stage == "escalation" for t in out.trace)


@pytest.mark.parametrize("mode", list(Mode))
@pytest.mark.parametrize("permissions", ["use_default", "request_network_grant"])
def test_bash_the_error_only_handle_cannot_run_is_refused_before_asking(
    make_session, workspace, mode, permissions
):
    """The error-only handle can only fail: nobody is asked to approve a call that cannot run."""
    provider = CountingProvider(True)
    session = make_session(
        mode=mode,
        boundary=UnavailableBashSandbox(workspace, "bubblewrap is missing"),
        confirmation_provider=provider,
    )
    args = {"command": "echo hi", "sandbox_permissions": permissions}
    if permissions == "request_network_grant":
        args["network_grant"] = {"host": "example.com", "port": 443}
    outcome = session.invoke(ToolCall("c1", "bash", args), Origin.MODEL)
    assert outcome.decision is DENY and not outcome.executed
    assert outcome.error_kind is ErrorKind.SANDBOX_UNAVAILABLE
    assert "bubblewrap is missing" in outcome.reason
    assert provider.requests == []


def test_an_escalated_bash_call_with_the_error_only_handle_still_asks(make_session, workspace):
    """require_escalated runs on the process host once approved, so it is still a question."""
    provider = CountingProvider(False)
    session = make_session(
        boundary=UnavailableBashSandbox(workspace, "bubblewrap is missing"),
        confirmation_provider=provider,
    )
    args = {
        "command": "echo hi",
        "sandbox_permissions": "require_escalated",
        "justification": "needs the host",
    }
    outcome = session.invoke(ToolCall("c1", "bash", args), Origin.MODEL)
    assert outcome.decision is ASK and len(provider.requests) == 1


def test_a_network_grant_without_a_port_says_which_ports_it_covers(make_session, workspace):
    # a grant is asked for only where it can be served: the native sandbox (nothing runs here,
    # the answer is no)
    provider = CountingProvider(False)
    sandbox = NativeBashSandbox(workspace)
    session = make_session(boundary=sandbox, confirmation_provider=provider)
    args = {
        "command": "pip download x",
        "sandbox_permissions": "request_network_grant",
        "network_grant": {"host": "pypi.org"},
    }
    outcome = session.invoke(ToolCall("c1", "bash", args), Origin.MODEL)
    assert outcome.decision is ASK and len(provider.requests) == 1, outcome.trace
    request = provider.requests[0]
    for shown in (request.scope["host_port"], request.operation, request.reason):
        assert "pypi.org:443 and pypi.org:80" in shown, shown
    assert any("pypi.org:443 and pypi.org:80" in r for r in request.risk.reasons)
    sandbox.close()
