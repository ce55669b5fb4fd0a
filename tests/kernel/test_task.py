"""The `task` tool: a host task runner makes a model's task call a governed delegation."""

from __future__ import annotations

import pytest
from kernelkit import CountingProvider

from codeward.kernel import Mode, Origin, ToolCall
from codeward.policy import Decision, PermissionPolicy
from codeward.session import SessionOptionsError
from codeward.tools import ErrorKind

TASK = {"description": "write notes", "prompt": "put 'hi' into notes.txt"}


class Runner:
    """A sub-agent stand-in: makes one write through the child session it is given."""

    def __init__(self) -> None:
        self.children = []
        self.outcomes = []

    def __call__(self, child, prompt):
        self.children.append(child)
        call = ToolCall(
            f"child-{len(self.children)}", "write", {"file_path": "notes.txt", "content": "hi\n"}
        )
        self.outcomes.append(child.invoke(call))
        return f"done: {prompt}"


def test_without_a_runner_there_is_no_task_tool(make_session):
    session = make_session(confirmation_provider=CountingProvider(True))
    assert "task" not in session.tool_names()
    assert all(s["name"] != "task" for s in session.tool_schemas())
    outcome = session.invoke(ToolCall("c1", "task", TASK), Origin.MODEL)
    assert not outcome.executed or outcome.error_kind is ErrorKind.NOT_FOUND


@pytest.mark.parametrize(
    ("mode", "expected"),
    [(Mode.DEFAULT, Decision.ALLOW), (Mode.PLAN, Decision.DENY), (Mode.AUTO, Decision.ALLOW)],
)
def test_a_task_call_is_a_governed_delegation(make_session, workspace, mode, expected):
    provider = CountingProvider(True)
    session = make_session(mode=mode, confirmation_provider=provider)
    runner = Runner()
    session.register_task_runner(runner)
    assert "task" in [s["name"] for s in session.tool_schemas()]
    outcome = session.invoke(ToolCall("c1", "task", TASK), Origin.MODEL)
    assert outcome.decision is expected, outcome.trace
    assert provider.requests == []
    if expected is Decision.DENY:
        assert not outcome.executed and runner.children == []
        assert not (workspace / "notes.txt").exists()
        return
    assert outcome.result.success and outcome.result.output == f"done: {TASK['prompt']}"
    (child,) = runner.children
    assert child.parent is session
    (inner,) = runner.outcomes
    assert inner.origin is Origin.DELEGATED and inner.executed, inner.trace
    assert (workspace / "notes.txt").read_text() == "hi\n"
    with pytest.raises(Exception, match="closed"):
        child.invoke(ToolCall("late", "read", {"file_path": "notes.txt"}))


def test_the_childs_calls_are_checked_against_every_scope(make_session, workspace):
    parent_policy = PermissionPolicy(deny=["write(notes.txt)"], default_decision="allow")
    session = make_session(permission_policy=parent_policy)
    runner = Runner()
    session.register_task_runner(
        runner, permission_policy=PermissionPolicy(default_decision="allow")
    )
    outcome = session.invoke(ToolCall("c1", "task", TASK), Origin.MODEL)
    assert outcome.executed and outcome.result.success
    (inner,) = runner.outcomes
    assert inner.decision is Decision.DENY and not (workspace / "notes.txt").exists()


def test_a_narrower_child_policy_applies(make_session, workspace):
    session = make_session()
    runner = Runner()
    session.register_task_runner(
        runner, permission_policy=PermissionPolicy(deny=["write"], default_decision="allow")
    )
    session.invoke(ToolCall("c1", "task", TASK), Origin.MODEL)
    assert runner.outcomes[0].decision is Decision.DENY


def test_a_policy_can_deny_the_task_tool(make_session):
    session = make_session(
        permission_policy=PermissionPolicy(deny=["task"], default_decision="allow")
    )
    runner = Runner()
    session.register_task_runner(runner)
    assert "task" not in [s["name"] for s in session.tool_schemas()]
    outcome = session.invoke(ToolCall("c1", "task", TASK), Origin.MODEL)
    assert outcome.decision is Decision.DENY and runner.children == []


def test_a_failing_runner_and_runaway_nesting(make_session):
    session = make_session()

    def broken(child, prompt):
        raise RuntimeError("model offline")

    session.register_task_runner(broken)
    outcome = session.invoke(ToolCall("c1", "task", TASK), Origin.MODEL)
    assert (
        outcome.result.error_kind is ErrorKind.TOOL_FAILED
        and "model offline" in outcome.result.output
    )

    depths = []

    def recursive(child, prompt):
        depths.append(child)
        inner = child.invoke(ToolCall(f"t{len(depths)}", "task", TASK))
        return inner.result.output if inner.result is not None else inner.reason

    session.register_task_runner(recursive, replace=True)
    outcome = session.invoke(ToolCall("c2", "task", TASK), Origin.MODEL)
    assert outcome.result.success and "nested 8 deep" in outcome.result.output
    assert len(depths) == 8


def test_bad_registrations(make_session):
    session = make_session()
    with pytest.raises(SessionOptionsError):
        session.register_task_runner("not callable")  # type: ignore[arg-type]
    with pytest.raises(SessionOptionsError):
        session.register_task_runner(Runner(), confirmation_inheritance="yes")
    with pytest.raises(SessionOptionsError):
        session.register_task_runner(Runner(), mode="sometimes")
