"""Through the kernel, in the real sandbox: what a line's reading cannot see, the exec check stops.

A script in the workspace (`./release.sh`, which runs `git push`) is a line
the policy allows under ``allow=["bash(*)"]``: the reader cannot know what
the script runs. The kernel hands the sandbox the policy's bash deny and ask
patterns, so the push inside is stopped at its exec; the result and the
trace say so. An ask approved for the line approves its own commands only.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from kernelkit import CountingProvider

from codeward.kernel import Origin, ToolCall
from codeward.policy import Decision, PermissionPolicy
from codeward.sandbox import NativeBashSandbox

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the exec check runs in the Linux init"
)

FAKE_GIT = '#!/bin/sh\necho "$*" >> "$PWD/marker"\n'


@pytest.fixture
def scripted(workspace: Path) -> Path:
    (workspace / "bin").mkdir()
    git = workspace / "bin" / "git"
    git.write_text(FAKE_GIT)
    git.chmod(0o755)
    script = workspace / "release.sh"
    script.write_text('#!/bin/sh\nPATH="$PWD/bin:$PATH" git push origin main\n')
    script.chmod(0o755)
    return workspace / "marker"


def _session(make_session, workspace: Path, policy: PermissionPolicy, provider=None):
    sandbox = NativeBashSandbox(workspace, reuse=False)  # nothing left running after the test
    return make_session(boundary=sandbox, permission_policy=policy, confirmation_provider=provider)


def test_a_script_the_line_allows_cannot_push(make_session, workspace: Path, scripted: Path):
    policy = PermissionPolicy(deny=["bash(git push**)"], allow=["bash(*)"])
    session = _session(make_session, workspace, policy)
    outcome = session.invoke(ToolCall("c1", "bash", {"command": "./release.sh"}), Origin.MODEL)
    assert outcome.decision is Decision.ALLOW and outcome.executed
    assert not scripted.exists(), "git push ran"
    result = outcome.result
    assert result is not None and result.metadata["exit_code"] == 126
    assert result.metadata["exec_stopped"] == {
        "decision": "deny",
        "rule": "bash(git push**)",
        "command": "git push origin main",
    }
    assert "the exec check stopped `git push origin main`" in result.output
    (entry,) = [t for t in outcome.trace if t.stage == "exec_check"]
    assert entry.verdict == "deny" and "bash(git push**)" in entry.reason


def test_an_allowed_script_runs_and_the_trace_says_it_was_checked(
    make_session, workspace: Path, scripted: Path
):
    policy = PermissionPolicy(deny=["bash(rm -rf /**)"], allow=["bash(*)"])
    session = _session(make_session, workspace, policy)
    outcome = session.invoke(ToolCall("c1", "bash", {"command": "./release.sh"}), Origin.MODEL)
    assert outcome.executed and outcome.result is not None
    assert outcome.result.metadata["exit_code"] == 0
    assert scripted.read_text() == "push origin main\n"
    (entry,) = [t for t in outcome.trace if t.stage == "exec_check"]
    assert entry.verdict == "allow"


def test_an_approved_line_approves_its_own_commands_only(
    make_session, workspace: Path, scripted: Path
):
    policy = PermissionPolicy(ask=["bash(git push**)"], allow=["bash(*)"])
    provider = CountingProvider(True)
    session = _session(make_session, workspace, policy, provider)
    line = 'PATH="$PWD/bin:$PATH" git push origin main'
    outcome = session.invoke(ToolCall("c1", "bash", {"command": line}), Origin.MODEL)
    assert outcome.decision is Decision.ASK and outcome.executed
    assert scripted.read_text() == "push origin main\n"
    scripted.unlink()
    # the same push hidden in a script: the line asks nothing, so nothing was approved
    outcome = session.invoke(ToolCall("c2", "bash", {"command": "./release.sh"}), Origin.MODEL)
    assert outcome.executed and not scripted.exists()
    assert outcome.result is not None
    assert outcome.result.metadata["exec_stopped"]["decision"] == "ask"


def test_an_ask_nobody_can_answer_stops_the_hidden_program(
    make_session, workspace: Path, scripted: Path
):
    """No confirmation provider: every ask fails closed, the one a script hides too."""
    policy = PermissionPolicy(ask=["bash(git push**)"], allow=["bash(*)"])
    session = _session(make_session, workspace, policy)
    outcome = session.invoke(ToolCall("c1", "bash", {"command": "./release.sh"}), Origin.MODEL)
    assert outcome.executed and not scripted.exists()
    assert outcome.result is not None
    assert outcome.result.metadata["exec_stopped"] == {
        "decision": "ask",
        "rule": "bash(git push**)",
        "command": "git push origin main",
    }
