"""The codeward command line, in-process and once through the installed console script."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from codeward.cli import main


@pytest.fixture
def policy_file(tmp_path):
    f = tmp_path / "policy.yaml"
    f.write_text(
        "deny: ['bash(rm -rf**)']\n"
        "ask: ['bash(git push**)']\n"
        "allow: ['read(*)', 'bash(cargo test**)']\n"
    )
    return f


def test_version(capsys) -> None:
    assert main(["version"]) == 0
    assert "codeward 0.1.0" in capsys.readouterr().out
    assert main(["version", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["abi"] == 1


def test_policy_check_prints_decision_and_rules(policy_file, capsys) -> None:
    assert (
        main(
            [
                "policy",
                "check",
                "--policy",
                str(policy_file),
                "bash",
                '{"command": "cargo test -q"}',
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "decision: allow" in out
    assert "matched allow: bash(cargo test**)" in out


def test_policy_check_json(policy_file, capsys) -> None:
    assert (
        main(
            [
                "policy",
                "check",
                "--policy",
                str(policy_file),
                "--json",
                "bash",
                '{"command": "git push"}',
            ]
        )
        == 0
    )
    got = json.loads(capsys.readouterr().out)
    assert got["decision"] == "ask"
    assert got["matched"] == {"deny": [], "allow": [], "ask": ["bash(git push**)"]}
    assert got["argument_string"] == "git push"


def test_policy_check_default_decision_reason(policy_file, capsys) -> None:
    assert (
        main(["policy", "check", "--policy", str(policy_file), "write", '{"file_path": "x"}']) == 0
    )
    out = capsys.readouterr().out
    assert "decision: ask" in out and "no rule matched" in out


@pytest.mark.parametrize(
    ("argv_tail", "fragment"),
    [
        (["bash", "{not json"], "ARGS_JSON is not valid JSON"),
        (["bash", "[1]"], "must be a JSON object"),
    ],
)
def test_policy_check_input_errors(policy_file, capsys, argv_tail, fragment) -> None:
    assert main(["policy", "check", "--policy", str(policy_file), *argv_tail]) == 2
    err = capsys.readouterr().err
    assert err.startswith("codeward: error:") and fragment in err and err.count("\n") == 1


def test_missing_policy_file(tmp_path, capsys) -> None:
    assert main(["policy", "check", "--policy", str(tmp_path / "x.yaml"), "bash"]) == 2
    assert "cannot read policy file" in capsys.readouterr().err


def test_lint_exit_codes(tmp_path, capsys) -> None:
    good = tmp_path / "good.yaml"
    good.write_text("allow: ['read(*)']\n")
    assert main(["policy", "lint", str(good)]) == 0
    assert "no findings" in capsys.readouterr().out
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps({"allow": ["bash(git **)", "bash(cargo:*)"], "ask": ["bash(git push**)"]})
    )
    assert main(["policy", "lint", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "allow-shadows-ask" in out and "prefix-not-at-word-boundary" in out
    assert main(["policy", "lint", "--json", str(bad)]) == 1
    codes = {f["code"] for f in json.loads(capsys.readouterr().out)["findings"]}
    assert {"allow-shadows-ask", "prefix-not-at-word-boundary"} <= codes


def test_usage_errors_are_one_line(capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main(["policy"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "codeward: error:" in err


def test_doctor_reports_a_verdict(capsys) -> None:
    code = main(["doctor", "--json"])
    got = json.loads(capsys.readouterr().out)
    assert code == (0 if got["ready"] else 1)
    names = {c["name"] for c in got["checks"]}
    assert {"bubblewrap", "user namespaces", "seccomp filter", "landlock"} <= names


def test_console_script_and_module_entry_points(policy_file) -> None:
    script = shutil.which("codeward")
    commands = [[sys.executable, "-m", "codeward"]]
    if script:
        commands.append([script])
    for cmd in commands:
        done = subprocess.run(
            [
                *cmd,
                "policy",
                "check",
                "--policy",
                str(policy_file),
                "bash",
                '{"command":"rm -rf /"}',
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert "decision: deny" in done.stdout


def _exec_json(capsys, argv) -> tuple[int, dict]:
    code = main(["exec", "--json", *argv])
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert len(lines) == 1, (captured.out, captured.err)
    return code, json.loads(lines[0])


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        ([], "SandboxArgumentError"),
        (["--env", "NOEQUALS", "--", "true"], "SandboxArgumentError"),
        (["--workspace", "/nonexistent/ws", "--", "true"], "SandboxArgumentError"),
    ],
)
def test_exec_json_reports_a_refusal_before_start(capsys, argv, error) -> None:
    code, got = _exec_json(capsys, argv)
    assert code == got["exit_code"] == 2
    assert got["error"] == error and got["setup_error"]
    assert got["stdout"] == "" and got["sandboxed"] is False


def test_exec_json_reports_an_unavailable_sandbox(capsys, tmp_path, monkeypatch) -> None:
    from codeward.cli import _exec
    from codeward.sandbox import UnavailableBashSandbox

    monkeypatch.setattr(
        _exec, "select_sandbox", lambda ws, **kw: UnavailableBashSandbox(ws, "no bubblewrap")
    )
    code, got = _exec_json(capsys, ["--workspace", str(tmp_path), "--", "true"])
    assert code == got["exit_code"] == 125
    assert got["error"] == "SandboxUnavailable" and "no bubblewrap" in got["setup_error"]


def test_exec_json_of_a_command_that_ran(capsys, tmp_path) -> None:
    code, got = _exec_json(
        capsys, ["--workspace", str(tmp_path), "--allow-process-host-sandbox", "--", "echo hi"]
    )
    assert code == got["exit_code"] == 0 and got["stdout"] == "hi\n" and got["error"] is None


def test_policy_check_names_the_simple_command_that_decided(tmp_path, capsys) -> None:
    policy = tmp_path / "p.json"
    policy.write_text(json.dumps({"deny": ["bash(git push**)"], "allow": ["bash(cd *)"]}))
    args = ["policy", "check", "--policy", str(policy)]
    assert main([*args, "bash", '{"command": "cd . && git -c x=y push"}']) == 0
    out = capsys.readouterr().out
    assert "decision: deny" in out
    assert "deny on the simple command 'git -c x=y push'" in out and "as 'git push'" in out
    assert "  cd .  ->  allow: allow rule 'bash(cd *)' matched" in out
    assert main([*args, "--json", "bash", '{"command": "\\\\git push"}']) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["decision"] == "deny"
    assert got["commands"] == [
        {
            "command": "\\git push",
            "decision": "deny",
            "rule": "bash(git push**)",
            "matched_as": "git push",
            "why": "rule",
        }
    ]


def test_policy_check_with_a_workspace_decides_on_what_the_tool_opens(tmp_path, capsys) -> None:
    ws = tmp_path / "ws"
    (ws / "secrets").mkdir(parents=True)
    (ws / "secrets" / "key.txt").write_text("k")
    (ws / "docs").mkdir()
    (ws / "docs" / "keys").symlink_to("../secrets")
    policy = tmp_path / "p.yaml"
    policy.write_text("deny: ['read(secrets/**)']\ndefault_decision: allow\n")
    base = ["policy", "check", "--policy", str(policy), "--workspace", str(ws)]
    assert main([*base, "read", json.dumps({"file_path": f"{ws}/docs/keys/key.txt"})]) == 0
    out = capsys.readouterr().out
    assert "decision: deny" in out
    assert "argument string: read(docs/keys/key.txt)" in out
    assert "argument string: read(secrets/key.txt)" in out
    assert "target: read docs/keys/key.txt -> secrets/key.txt" in out
    # the backslash spelling that the lexical argument string reads as a/secrets/key.txt
    assert main([*base, "--json", "read", '{"file_path": "a\\\\b/../secrets/key.txt"}']) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["decision"] == "deny" and got["guardrail"] == "path.backslash"
    # defaults are filled in: a search without a path is decided on the root
    assert main([*base, "--json", "search", '{"mode": "grep", "query": "x"}']) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["argument_strings"] == ["grep x ."] and got["args"]["path"] == "."
    # invalid arguments are an error, as the session refuses them
    assert main([*base, "read", '{"file_path": 3}']) == 2
    assert "invalid arguments for read" in capsys.readouterr().err


def test_exec_as_a_program_writes_everything_and_leaves_nothing(tmp_path) -> None:
    """`codeward exec` ends without the interpreter's teardown (cli/_main._end_process): its
    output is still whole when piped, its exit code the command's, and nothing of its
    sandbox (placeholders, processes) outlives it."""
    from codeward.sandbox import NativeBashSandbox

    if NativeBashSandbox.probe() is not None:
        pytest.skip("the sandbox cannot run here")
    script = shutil.which("codeward")
    commands = [[sys.executable, "-m", "codeward"], *([[script]] if script else [])]
    buffered = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    for cmd in commands:
        done = subprocess.run(
            [*cmd, "exec", "--workspace", str(tmp_path), "--max-output-bytes", "400000", "--",
             "seq 1 50000; echo err >&2; "
             "(sleep 30 &) ; exit 7"],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
            env=buffered,
        )  # fmt: skip
        assert done.returncode == 7, done.stderr
        assert done.stdout == "".join(f"{i}\n" for i in range(1, 50001))
        assert done.stderr == "err\n"
        assert list(tmp_path.iterdir()) == []  # the placeholders are gone
        left = subprocess.run(
            ["pgrep", "-f", "sleep 30"], capture_output=True, text=True, check=False
        ).stdout.split()
        assert not [p for p in left if _in_workspace(p, tmp_path)]
        done = subprocess.run(
            [*cmd, "exec", "--json", "--workspace", str(tmp_path), "--", "echo hi"],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
            env=buffered,
        )
        assert json.loads(done.stdout)["stdout"] == "hi\n", done


def _in_workspace(pid: str, workspace) -> bool:
    try:
        return os.readlink(f"/proc/{pid}/cwd") == str(workspace)
    except OSError:
        return False


def test_doctor_checks_are_the_shared_ones() -> None:
    """tests/vectors/doctor.json pins the checks Node's doctor() and Go's Doctor() report too."""
    import json as _json
    from pathlib import Path as _Path

    from codeward.cli._doctor import collect

    want = _json.loads(
        (_Path(__file__).parent / "vectors" / "doctor.json").read_text(encoding="utf-8")
    )["checks"]
    got = collect()
    names = [(c.name, c.required) for c in got]
    expected = [(c["name"], c["required"]) for c in want]
    if all(c.ok for c in got if c.required):
        assert names == expected
    else:  # the self-test is left out when a required check failed
        assert names == expected[: len(names)] and want[-1]["last"]
