"""Risk levels and the one-line summaries shown with a confirmation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from codeward.guardrail import Risk, assess_risk, summarize_call
from codeward.hitl import Risk as HitlRisk
from codeward.tools import ToolKind
from codeward.workspace import Workspace

ESCALATED = {"command": "make install", "sandbox_permissions": "require_escalated"}
GRANT = {
    "command": "npm ci",
    "sandbox_permissions": "request_network_grant",
    "network_grant": {"host": "registry.npmjs.org", "port": 443},
}

RISKS: list[tuple[str, dict[str, Any], str, bool, list[str], object, str, str]] = [
    # tool, args, kind, sandboxed, paths, annotations, level, a reason contains
    ("read", {"file_path": "a.py"}, "read", True, ["a.py"], None, "low", "reads"),
    ("search", {"query": "x"}, "read", True, [], None, "low", "reads"),
    ("ls", {}, "read", True, ["."], None, "low", "reads"),
    ("read", {"file_path": ".git/config"}, "read", True, [".git/config"], None, "low", "reads"),
    ("git", {"command": "status"}, "git", True, [], None, "low", "read-only git"),
    ("write", {"file_path": "a.py"}, "write", True, ["a.py"], None, "medium", "a.py"),
    ("edit", {"file_path": "a.py"}, "write", False, ["a.py"], None, "medium", "changes"),
    ("patch", {}, "write", True, ["a.py", "b.py"], None, "medium", "2 paths"),
    ("write", {}, "write", True, [".git/config"], None, "high", "protected"),
    ("edit", {}, "write", True, [".MCP.json"], None, "high", "protected"),
    ("write", {}, "write", True, ["./.bashrc"], None, "high", "protected"),
    ("bash", {"command": "cargo test"}, "bash", True, [], None, "medium", "in the sandbox"),
    ("bash", {"command": "cargo test"}, "bash", False, [], None, "high", "without a sandbox"),
    ("bash", ESCALATED, "bash", False, [], None, "critical", "outside the sandbox"),
    ("bash", GRANT, "bash", True, [], None, "high", "registry.npmjs.org:443"),
    ("bash", {"command": "rm -rf /"}, "bash", True, [], None, "critical", "rm_root"),
    ("bash", {"command": "sudo id"}, "bash", True, [], None, "critical", "privilege.sudo"),
    ("download", {"url": "https://h.example/x"}, "download", True, [], None, "high", "h.example"),
    ("task", {}, "launch", True, [], None, "medium", "nested"),
    ("mcp_q", {}, "external", True, [], {"read_only": True}, "low", "read-only"),
    ("mcp_q", {}, "external", True, [], {"readOnlyHint": True}, "low", "read-only"),
    ("mcp_w", {}, "external", True, [], {"read_only": False}, "high", "side effects"),
    ("mcp_d", {}, "external", True, [], {"destructive": True}, "high", "destructive"),
    ("mcp_n", {}, "external", True, [], None, "high", "without annotations"),
    ("mcp_o", {}, "external", True, [], {"open_world": True}, "high", "outside"),
    ("mystery", {}, "unknown", True, [], None, "high", "not a known tool"),
    ("mystery", {}, "something-else", True, [], None, "high", "not a known tool"),
]


@pytest.mark.parametrize(
    ("tool", "args", "kind", "sandboxed", "paths", "annotations", "level", "reason"), RISKS
)
def test_risk_levels(
    tool: str,
    args: dict[str, Any],
    kind: str,
    sandboxed: bool,
    paths: list[str],
    annotations: object,
    level: str,
    reason: str,
) -> None:
    risk = assess_risk(
        tool, args, kind=kind, sandboxed=sandboxed, paths=paths, annotations=annotations
    )
    assert isinstance(risk, HitlRisk) and Risk is HitlRisk
    assert risk.level == level, risk
    assert any(reason in r for r in risk.reasons), risk
    assert risk.reasons and all(r.strip() for r in risk.reasons)


def test_kind_may_be_the_enum() -> None:
    risk = assess_risk("read", {}, kind=ToolKind.READ, sandboxed=True, paths=["a"])  # type: ignore[arg-type]
    assert risk.level == "low"


def test_most_severe_reason_first() -> None:
    args = {"command": "rm -rf ~", "sandbox_permissions": "require_escalated"}
    risk = assess_risk("bash", args, kind="bash", sandboxed=False, paths=[])
    assert risk.level == "critical"
    assert len(risk.reasons) == 2


def test_annotation_object() -> None:
    class Annotations:
        read_only = True
        destructive = False

    risk = assess_risk(
        "m", {}, kind="external", sandboxed=True, paths=[], annotations=Annotations()
    )
    assert risk.level == "low"


def test_with_a_workspace(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    (root / "hooks").symlink_to(".git")
    (root / "out").symlink_to(tmp_path)
    ws = Workspace(root)

    def risk(paths: list[str], kind: str = "write") -> Risk:
        return assess_risk("write", {}, kind=kind, sandboxed=True, paths=paths, workspace=ws)

    assert risk(["src/a.py"]).level == "medium"
    assert risk(["hooks/pre-commit"]).level == "high"  # a symlink into .git
    escaped = risk(["out/x"])
    assert escaped.level == "critical" and "path.symlink_escape" in escaped.reasons[0]
    assert risk(["/etc/passwd"], kind="read").level == "critical"


# -- summaries ---------------------------------------------------------------------------------

SIGNED = (
    "https://bucket.s3.amazonaws.com/artifacts/app.tar.gz?X-Amz-Algorithm=AWS4-HMAC-SHA256"
    "&X-Amz-Credential=AKIDEXAMPLE%2F20260101&X-Amz-Date=20260101T000000Z&X-Amz-Expires=300"
    "&X-Amz-SignedHeaders=host&X-Amz-Signature=abcdef0123456789"
)

SUMMARIES: list[tuple[str, dict[str, Any], str]] = [
    ("bash", {"command": "cargo test"}, "bash: cargo test"),
    ("bash", {"command": "make\n  test"}, "bash: make ⏎ test"),
    ("bash", ESCALATED, "bash (outside the sandbox): make install"),
    ("bash", GRANT, "bash (network registry.npmjs.org:443): npm ci"),
    ("write", {"file_path": "src/main.rs", "content": "x" * 1229}, "write src/main.rs (1.2 KiB)"),
    ("write", {"file_path": "a.txt", "content": "hé"}, "write a.txt (3 B)"),
    ("write", {"file_path": "big", "content": "x" * (3 << 20)}, "write big (3.0 MiB)"),
    (
        "edit",
        {"file_path": "src/a.py", "old_string": "a", "new_string": "b"},
        "edit src/a.py (replace 1 occurrence)",
    ),
    (
        "edit",
        {"file_path": "a.py", "old_string": "a", "new_string": "b", "replace_all": True},
        "edit a.py (replace all occurrences)",
    ),
    ("read", {"file_path": "README.md"}, "read README.md"),
    ("read", {"file_path": "a.py", "offset": 10, "limit": 20}, "read a.py (lines 10-29)"),
    ("read", {"files": [{"path": "a"}, {"path": "b"}]}, "read 2 files: a, b"),
    (
        "patch",
        {"patch": "--- a/x.py\n+++ b/x.py\n@@ -1 +1,2 @@\n-a\n+b\n+c\n"},
        "patch x.py (+2 -1 lines)",
    ),
    ("search", {"mode": "grep", "query": "TODO", "path": "src"}, 'search grep "TODO" in src'),
    ("ls", {}, "ls ."),
    ("ls", {"path": "src"}, "ls src"),
    ("git", {"command": "diff", "target": "HEAD~1"}, "git diff HEAD~1"),
    (
        "download",
        {"url": "https://host/path", "file_path": "artifacts/x"},
        "download https://host/path -> artifacts/x",
    ),
    ("mcp_tool", {"q": "x", "api_token": "s3cr3t"}, "mcp_tool: q=x api_token=REDACTED"),
    ("mcp_tool", {}, "mcp_tool"),
]


@pytest.mark.parametrize(("tool", "args", "expected"), SUMMARIES)
def test_summaries(tool: str, args: dict[str, Any], expected: str) -> None:
    assert summarize_call(tool, args) == expected


@pytest.mark.parametrize(
    ("url", "secret"),
    [
        (SIGNED, "abcdef0123456789"),
        (SIGNED, "AKIDEXAMPLE"),
        ("https://h/x?sig=SIGVALUE&a=1", "SIGVALUE"),
        ("https://h/x?a=1&signature=SIGVALUE", "SIGVALUE"),
        ("https://h/x?token=TOKVALUE", "TOKVALUE"),
        ("https://h/x?access_token=TOKVALUE", "TOKVALUE"),
        ("https://h/x?key=KEYVALUE", "KEYVALUE"),
        ("https://h/x?api_key=KEYVALUE", "KEYVALUE"),
        ("https://h/x?Expires=1700000000&Signature=SIGVALUE&Key-Pair-Id=KPVALUE", "KPVALUE"),
        ("https://h/x?Expires=1700000000", "1700000000"),
        ("https://h/x?sv=2022&se=2026&sig=SASVALUE", "SASVALUE"),
        ("https://user:PASSVALUE@h/x", "PASSVALUE"),
    ],
)
def test_download_urls_are_redacted(url: str, secret: str) -> None:
    text = summarize_call("download", {"url": url, "file_path": "out"}, limit=1000)
    assert secret not in text
    assert "REDACTED" in text
    assert text.startswith("download https://") and text.endswith("-> out")


def test_plain_query_parameters_are_kept() -> None:
    text = summarize_call(
        "download", {"url": "https://h/x?version=2&arch=x86_64", "file_path": "o"}
    )
    assert text == "download https://h/x?version=2&arch=x86_64 -> o"


def test_secrets_in_commands_are_redacted() -> None:
    command = (
        "curl -H 'Authorization: Bearer abcdefghijklmnop' 'https://h/x?token=zzz' "
        "--password hunter2"
    )
    text = summarize_call("bash", {"command": command}, limit=400)
    assert "abcdefghijklmnop" not in text and "zzz" not in text and "hunter2" not in text


def test_controls_are_escaped_and_the_line_is_clipped() -> None:
    text = summarize_call("bash", {"command": "echo \x1b[2J\u202ehi\x07"})
    assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text
    assert "\\x1b" in text and "\\u202e" in text
    long = summarize_call("bash", {"command": "x" * 10_000}, limit=50)
    assert len(long) == 50 and long.endswith("…")
    huge = summarize_call("write", {"file_path": "p" * 100_000, "content": ""})
    assert len(huge) == 160


def test_malformed_arguments_never_raise() -> None:
    for tool, args in [
        ("write", {"file_path": 3, "content": None}),
        ("read", {"files": "nope"}),
        ("read", {"files": [1, 2]}),
        ("patch", {"patch": 7}),
        ("download", {}),
        (
            "bash",
            {"command": None, "network_grant": "x", "sandbox_permissions": "request_network_grant"},
        ),
        ("edit", None),
        ("x", {"nested": {"a": [1, 2, {"b": object()}]}}),
    ]:
        text = summarize_call(tool, args)  # type: ignore[arg-type]
        assert isinstance(text, str) and text and "\n" not in text
