"""Sessions over the real boundary, and ``codeward replay`` on a real transcript."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from kernelkit import CountingProvider

from codeward import _native
from codeward.kernel import Mode, ToolCall
from codeward.policy import Decision
from codeward.session import Agent, SessionOptions


@pytest.fixture
def session(workspace):
    s = Agent().session(workspace, SessionOptions(confirmation_provider=CountingProvider(True)))
    yield s
    s.close()


def test_the_session_binds_the_native_sandbox(session):
    assert session.sandbox.backend == "bwrap" and session.sandbox.sandboxed


def test_model_bash_runs_in_the_sandbox(session, workspace):
    out = session.invoke(ToolCall("c1", "bash", {"command": "echo hi > out.txt && cat out.txt"}))
    assert out.decision is Decision.ALLOW and out.executed and out.result.success
    assert "hi" in out.result.output and out.result.metadata["sandboxed"] is True
    assert (workspace / "out.txt").read_text() == "hi\n"
    # the boundary, not the kernel, stops this one: the workspace is the only writable place
    escape = session.invoke(
        ToolCall("c2", "bash", {"command": "echo x > /tmp/../etc/a3s-test-escape"})
    )
    assert escape.executed and not escape.result.success


def test_write_edit_read_through_the_kernel(session, workspace):
    assert session.invoke(
        ToolCall("w", "write", {"file_path": "src/m.py", "content": "x = 1\n"})
    ).executed
    assert session.invoke(
        ToolCall("e", "edit", {"file_path": "src/m.py", "old_string": "1", "new_string": "2"})
    ).executed
    out = session.invoke(ToolCall("r", "read", {"file_path": "src/m.py"}))
    assert "x = 2" in out.result.output


def test_credential_files_stay_out_of_reach_even_for_the_host(session, workspace):
    (workspace / ".env").write_text("TOKEN=hunter2\n")
    out = session.invoke(ToolCall("r", "read", {"file_path": ".env"}))
    assert out.executed and not out.result.success and "hunter2" not in out.result.output
    direct = session.tool("read", {"file_path": ".env"})
    assert not direct.success and direct.error_kind.value == "CredentialBoundary"
    bash = session.bash("cat .env")
    assert "hunter2" not in bash.output


def test_missing_protected_names_stay_out_of_git_and_out_of_the_way_of_protected_writes(
    session, workspace
):
    subprocess.run(["git", "init", "-q", str(workspace / "repo")], check=True)
    assert session.invoke(ToolCall("b", "bash", {"command": "true"})).executed
    # missing names: nothing in the workspace (Linux 5.14: kept missing inside the sandbox), or,
    # on the fallback, placeholders for as long as the long-lived sandbox lives: empty directories
    if (
        _native.features().get("names_emulated")
        and os.environ.get("A3S_CODE_PROTECT_NAMES") != "placeholders"
    ):
        assert not os.path.lexists(workspace / ".gitmodules")
    else:
        assert (workspace / ".gitmodules").is_dir()
        assert not any((workspace / ".gitmodules").iterdir())
    status = subprocess.run(
        ["git", "-C", str(workspace), "status", "--porcelain"],
        capture_output=True,
        text=True,
        env={"GIT_DIR": str(workspace / "repo/.git"), "GIT_WORK_TREE": str(workspace)},
    )
    assert ".gitmodules" not in status.stdout and ".bashrc" not in status.stdout, status.stdout
    out = session.invoke(ToolCall("w", "write", {"file_path": ".gitmodules", "content": "[x]\n"}))
    assert out.approved and out.executed and out.result.success, out.result
    assert (workspace / ".gitmodules").read_text() == "[x]\n"
    again = session.invoke(
        ToolCall("b2", "bash", {"command": "echo y >> .gitmodules; cat .gitmodules"})
    )
    assert (
        again.result.output.count("[x]") == 1 and (workspace / ".gitmodules").read_text() == "[x]\n"
    )


def test_plan_mode_session_reads_but_never_mutates(workspace):
    with Agent().session(workspace, SessionOptions(mode=Mode.PLAN)) as s:
        assert s.invoke(ToolCall("r", "read", {"file_path": "a.txt"})).executed
        for name, args in [
            ("bash", {"command": "touch x"}),
            ("write", {"file_path": "x", "content": ""}),
        ]:
            assert s.invoke(ToolCall(name, name, args)).decision is Decision.DENY
    assert not (workspace / "x").exists()


def _replay(tmp_path, workspace, lines, *extra, stdin=""):
    transcript = tmp_path / "calls.jsonl"
    transcript.write_text("\n".join(lines) + "\n")
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "codeward",
            "replay",
            str(transcript),
            "--workspace",
            str(workspace),
            *extra,
        ],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


CALLS = [
    json.dumps({"id": "r1", "name": "read", "args": {"file_path": "a.txt"}}),
    json.dumps({"id": "b1", "name": "bash", "args": {"command": "echo from-bash > made.txt"}}),
    json.dumps({"id": "p1", "name": "write", "args": {"file_path": ".mcp.json", "content": "{}"}}),
    "# comments and blank lines are skipped",
    "",
    json.dumps({"id": "x1", "name": "bash", "args": {"command": "sudo reboot"}}),
]


def test_replay_plan_mode_json(tmp_path, workspace):
    proc = _replay(tmp_path, workspace, CALLS, "--mode", "plan", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [(r["call_id"], r["decision"]) for r in rows] == [
        ("r1", "allow"),
        ("b1", "deny"),
        ("p1", "deny"),
        ("x1", "deny"),
    ]
    assert rows[0]["result"]["success"] and "alpha" in rows[0]["result"]["output"]
    assert all(r["trace"] for r in rows)
    assert not (workspace / "made.txt").exists()


def test_replay_default_mode_asks_and_yes_to_approves(tmp_path, workspace):
    proc = _replay(tmp_path, workspace, CALLS, "--mode", "default", "--yes-to", "p1")
    assert proc.returncode == 0, proc.stderr
    assert (workspace / "made.txt").read_text() == "from-bash\n"
    assert (workspace / ".mcp.json").read_text() == "{}"
    assert "approved by --yes-to" in proc.stderr
    assert "guardrail" in proc.stdout and "x1" in proc.stdout


def test_replay_rejects_an_unanswered_confirmation(tmp_path, workspace):
    proc = _replay(tmp_path, workspace, CALLS[2:3], "--mode", "default", "--json", stdin="")
    row = json.loads(proc.stdout.splitlines()[0])
    assert row["decision"] == "ask" and row["approved"] is False and not row["executed"]
    assert not (workspace / ".mcp.json").exists()


def test_replay_reports_bad_lines_and_goes_on(tmp_path, workspace):
    lines = [
        "{not json",
        json.dumps([1, 2]),
        json.dumps({"id": "r", "name": "read", "args": {"file_path": "a.txt"}}),
    ]
    proc = _replay(tmp_path, workspace, lines, "--mode", "auto", "--json")
    assert proc.returncode == 1
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert "error" in rows[0] and "error" in rows[1] and rows[2]["decision"] == "allow"


def test_the_ledger_books_bash_and_tool_changes_to_the_right_tool(session, workspace):
    assert session.invoke(ToolCall("b1", "bash", {"command": "echo 1 > by-bash.txt"})).executed
    assert session.invoke(
        ToolCall("w1", "write", {"file_path": "by-tool.txt", "content": "2"})
    ).executed
    assert session.invoke(ToolCall("b2", "bash", {"command": "echo 3 > by-bash-2.txt"})).executed
    (workspace / "by-host.txt").write_text("outside the session\n")
    assert session.invoke(ToolCall("b3", "bash", {"command": "true"})).executed
    booked = {e.path: e.tool for e in session._ledger.entries()}
    assert booked == {
        "by-bash.txt": "bash",
        "by-tool.txt": "write",
        "by-bash-2.txt": "bash",
        "by-host.txt": "external",  # changed between calls: no call of the session did it
    }
    outcome = session.complete_turn("done")
    assert not outcome.completed and outcome.missing
    session.waive(session.effect_digest, "reviewed by hand")
    assert session.complete_turn("done").completed


def test_verify_binds_a_report_to_the_effect_and_a_later_change_makes_it_stale(workspace):
    from codeward import CheckSpec

    check = CheckSpec("content", "custom", "grep -q 'answer = 42' src/app.py")
    options = SessionOptions(verification_checks=(check,), detect_checks=False)
    with Agent().session(workspace, options) as s:
        assert s.complete_turn("nothing changed").completed
        s.invoke(ToolCall("w", "write", {"file_path": "src/app.py", "content": "answer = 41\n"}))
        failed = s.verify()
        assert not failed.passed and not s.complete_turn("done").completed
        s.invoke(
            ToolCall(
                "e", "edit", {"file_path": "src/app.py", "old_string": "41", "new_string": "42"}
            )
        )
        report = s.verify()
        assert report.passed and report.effect_digest == s.effect_digest
        s.invoke(ToolCall("b", "bash", {"command": "echo '# later' >> src/app.py"}))
        stale = s.complete_turn("done")
        assert not stale.completed and "stale" in (stale.reason + " ".join(stale.missing)).lower()
        args = {"file_path": "src/app.py", "old_string": "# later\n", "new_string": ""}
        s.invoke(ToolCall("u", "edit", args))
        done = s.complete_turn("done")  # the verified state again: the report counts again
        assert done.completed and done.turn == 2
        # a completed turn starts the next one: the old report does not stand for new work
        assert s.turn == 3 and s.verification_reports() == []
        s.invoke(ToolCall("c", "bash", {"command": "echo '# next' >> src/app.py"}))
        fresh = s.complete_turn("done")
        assert not fresh.completed and fresh.missing[0].startswith("no verification report")
