"""bash: the real sandbox for a few calls, a fake one for formatting and error mapping."""

from __future__ import annotations

import pytest
from toolkit import FakeSandbox, call

from codeward._errors import SandboxUnavailable
from codeward.sandbox import CommandOutput, select_sandbox
from codeward.tools import (
    ArgumentError,
    BashTool,
    ErrorKind,
    NetworkGrantRequest,
    ToolContext,
    parse_sandbox_permissions,
)

BASH = BashTool()


def out(**kw):
    base = dict(
        stdout="", stderr="", exit_code=0, timed_out=False, truncated=False, total_bytes=0,
        sandboxed=True, backend="fake",
    )  # fmt: skip
    return CommandOutput(**(base | kw))


@pytest.fixture
def real_ctx(ws, recorder):
    sandbox = select_sandbox(ws.root)
    if not sandbox.sandboxed:
        pytest.skip(f"no native sandbox here: {sandbox!r}")
    return ToolContext(workspace=ws, sandbox=sandbox, recorder=recorder)


def test_real_sandbox_runs_in_the_workspace(real_ctx, root):
    r = call(BASH, real_ctx, command="echo hi; echo oops >&2; pwd; echo data > made.txt")
    assert r.success and r.output.startswith("hi\n" + str(root) + "\n[stderr]\noops")
    assert r.output.endswith("[exit code 0]") and (root / "made.txt").read_text() == "data\n"
    assert r.metadata["sandboxed"] is True and r.metadata["backend"] == "bwrap"


def test_real_sandbox_failure_and_timeout(real_ctx):
    r = call(BASH, real_ctx, command="exit 3")
    assert r.error_kind is ErrorKind.TOOL_FAILED and r.exit_code == 3
    r = call(BASH, real_ctx, command="sleep 30", timeout=200)
    assert r.error_kind is ErrorKind.TIMEOUT and r.metadata["timed_out"]
    assert "timed out after 200 ms" in r.output


def test_real_sandbox_memory_bound_is_named_to_the_model(ws, recorder):
    from codeward.sandbox import SandboxLimits

    sandbox = select_sandbox(ws.root, limits=SandboxLimits(memory_max_bytes=128 << 20))
    if not sandbox.sandboxed:
        pytest.skip(f"no native sandbox here: {sandbox!r}")
    ctx = ToolContext(workspace=ws, sandbox=sandbox, recorder=recorder)
    r = call(BASH, ctx, command="/usr/bin/python3 -c 'b = b\"x\" * (1 << 30)'")
    assert r.error_kind is ErrorKind.TOOL_FAILED and r.metadata["oom_killed"], r
    assert "reached its memory bound" in r.output and r.exit_code == 137, r.output


def test_real_sandbox_masks_credentials(real_ctx, root):
    (root / ".env").write_text("SECRET=sandboxed-secret\n")
    r = call(BASH, real_ctx, command="cat .env")
    assert "sandboxed-secret" not in r.output


def test_formatting_and_metadata():
    sandbox = FakeSandbox(
        out(stdout="a\n", stderr="b\n", exit_code=0, truncated=True, total_bytes=999_999)
    )
    ctx = ToolContext(workspace=None, sandbox=sandbox)  # type: ignore[arg-type]
    r = call(BASH, ctx, command="x", timeout=5000)
    assert r.output == (
        "a\n[stderr]\nb\n[output truncated: 999999 bytes in total; the head and the tail of "
        "each stream are shown]\n[exit code 0]"
    )
    assert r.metadata["truncated"] and r.metadata["total_bytes"] == 999_999
    call_args = sandbox.calls[0]
    assert call_args["timeout_ms"] == 5000 and call_args["command"] == "x"


@pytest.mark.parametrize(
    ("fields", "kind"),
    [
        ({"exit_code": 1}, ErrorKind.TOOL_FAILED),
        ({"exit_code": 124, "timed_out": True}, ErrorKind.TIMEOUT),
        ({"exit_code": 130, "cancelled": True}, ErrorKind.CANCELLED),
        ({"exit_code": 125, "setup_error": "symlink at .git"}, ErrorKind.SANDBOX_UNAVAILABLE),
    ],
)
def test_outcomes_map_to_kinds(fields, kind):
    ctx = ToolContext(workspace=None, sandbox=FakeSandbox(out(**fields)))  # type: ignore[arg-type]
    r = call(BASH, ctx, command="x")
    assert r.error_kind is kind and r.exit_code == fields["exit_code"]


def test_unavailable_sandbox_fails_closed():
    error = SandboxUnavailable("bash is unavailable: bwrap missing", workspace="/w", cause="x")
    ctx = ToolContext(workspace=None, sandbox=FakeSandbox(error=error))  # type: ignore[arg-type]
    r = call(BASH, ctx, command="x")
    assert r.error_kind is ErrorKind.SANDBOX_UNAVAILABLE and "bwrap missing" in r.output


def test_escalated_runs_on_the_host_sandbox_only_when_the_context_says_so():
    inner = FakeSandbox(out(stdout="in\n"))
    host = FakeSandbox(out(stdout="host\n", sandboxed=False, backend="process-host"))
    args = {"command": "x", "sandbox_permissions": "require_escalated", "justification": "why"}
    ctx = ToolContext(workspace=None, sandbox=inner, host_sandbox_factory=lambda: host)  # type: ignore[arg-type]
    r = call(BASH, ctx, **args)
    assert r.output.startswith("in") and r.metadata["sandboxed"] is True  # not confirmed
    ctx.escalated = True
    r = call(BASH, ctx, **args)
    assert r.output.startswith("host") and r.metadata["sandboxed"] is False
    assert r.metadata["backend"] == "process-host"
    ctx.host_sandbox_factory = None
    assert call(BASH, ctx, **args).error_kind is ErrorKind.SANDBOX_UNAVAILABLE


@pytest.mark.parametrize(
    "args",
    [
        {"command": ""},
        {"command": "x", "timeout": 0},
        {"command": "x", "timeout": 600_001},
        {"command": "x", "sandbox_permissions": "yolo"},
        {"command": "x", "sandbox_permissions": "require_escalated"},
        {"command": "x", "sandbox_permissions": "require_escalated", "justification": "  "},
        {"command": "x", "sandbox_permissions": "request_network_grant"},
        {"command": "x", "network_grant": {"host": "a.example", "port": 443}},
        {
            "command": "x",
            "sandbox_permissions": "request_network_grant",
            "network_grant": {"host": "*.example.com", "port": 443},
        },
        {
            "command": "x",
            "sandbox_permissions": "request_network_grant",
            "network_grant": {"host": "a.example", "port": 0},
        },
    ],
)
def test_invalid_arguments(args):
    ctx = ToolContext(workspace=None, sandbox=FakeSandbox())  # type: ignore[arg-type]
    assert call(BASH, ctx, **args).error_kind is ErrorKind.INVALID_ARGUMENT


def test_parse_sandbox_permissions():
    assert parse_sandbox_permissions({"command": "x"}).mode == "use_default"
    req = parse_sandbox_permissions(
        {"sandbox_permissions": "require_escalated", "justification": " needs docker "}
    )
    assert req.escalation and req.justification == "needs docker"
    req = parse_sandbox_permissions(
        {
            "sandbox_permissions": "request_network_grant",
            "network_grant": {"host": "Registry.NPMJS.org.", "port": 443, "reason": "install"},
        }
    )
    assert req.network_grant == NetworkGrantRequest("registry.npmjs.org", 443, "install")
    req = parse_sandbox_permissions(
        {
            "sandbox_permissions": "request_network_grant",
            "network_grant": {"host": "[::1]", "port": 8080},
        }
    )
    assert req.network_grant is not None and req.network_grant.host == "::1"
    for bad_host in ("https://x.org", "x.org:443", "a..b", "-a.org", "", "1.2.3.999", "a/b"):
        with pytest.raises(ArgumentError):
            parse_sandbox_permissions(
                {"sandbox_permissions": "request_network_grant",
                 "network_grant": {"host": bad_host, "port": 1}}
            )  # fmt: skip


def test_a_network_grant_without_a_port_covers_https_and_http():
    req = parse_sandbox_permissions(
        {"sandbox_permissions": "request_network_grant", "network_grant": {"host": "pypi.org"}}
    )
    assert req.network_grant is not None
    assert req.network_grant.port is None and req.network_grant.ports == (443, 80)
    assert "pypi.org:443 and pypi.org:80" in req.network_grant.target
    with_port = NetworkGrantRequest("::1", 8080)
    assert with_port.ports == (8080,) and with_port.target == "[::1]:8080"
    ctx = ToolContext(workspace=None, sandbox=FakeSandbox())  # type: ignore[arg-type]
    args = {
        "command": "x",
        "sandbox_permissions": "request_network_grant",
        "network_grant": {"host": "pypi.org"},
    }
    assert call(BASH, ctx, **args).success
