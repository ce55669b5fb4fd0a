"""Pins the public API: adding or removing a name is a deliberate, reviewed change."""

import codeward
import codeward.policy

EXPECTED = {
    "CodewardError",
    "Agent",
    "CheckSpec",
    "ConfirmationPolicy",
    "ConfirmationRequest",
    "CredentialBoundaryError",
    "Decision",
    "DestinationExists",
    "ErrorKind",
    "HardLinkRefused",
    "HookConfig",
    "HookContext",
    "HookEvent",
    "HookMatcher",
    "HookResult",
    "InvocationOutcome",
    "LintFinding",
    "Mode",
    "NativeCoreError",
    "Origin",
    "PathOutsideWorkspace",
    "PermissionPolicy",
    "PolicyError",
    "PolicyFileError",
    "Risk",
    "SandboxArgumentError",
    "SandboxError",
    "SandboxLimits",
    "SandboxUnavailable",
    "Session",
    "SessionClosed",
    "SessionOptions",
    "SessionOptionsError",
    "TerminalConfirmationProvider",
    "ToolCall",
    "ToolResult",
    "TraceEntry",
    "TurnOutcome",
    "VerificationReport",
    "WorkspaceError",
    "__version__",
    "features",
    "native_version",
}

EXPECTED_POLICY = {
    "BashVerdict",
    "CommandVerdict",
    "Decision",
    "Evaluation",
    "LintFinding",
    "PermissionPolicy",
    "RuleView",
    "argument_string",
    "canonical_json",
    "lint_policy",
    "normalize_path",
}


EXPECTED_MCP = {
    "MAX_LINE",
    "MAX_RESULT_BYTES",
    "PROTOCOL_VERSIONS",
    "STDERR_RING",
    "McpCallResult",
    "McpClient",
    "McpConfig",
    "McpConfigError",
    "McpConnectionError",
    "McpError",
    "McpProtocolError",
    "McpSandbox",
    "McpServerConfig",
    "McpServerError",
    "McpServers",
    "McpStartError",
    "McpTimeout",
    "McpTool",
    "McpToolInfo",
    "McpUnownedError",
    "load_mcp_config",
    "render_result",
}


def test_mcp_exports_and_errors() -> None:
    import codeward.mcp as mcp

    assert set(mcp.__all__) == EXPECTED_MCP
    assert issubclass(mcp.McpError, codeward.CodewardError)
    for cls in (
        mcp.McpConfigError,
        mcp.McpStartError,
        mcp.McpConnectionError,
        mcp.McpTimeout,
        mcp.McpServerError,
    ):
        assert issubclass(cls, mcp.McpError), cls
    assert issubclass(mcp.McpProtocolError, mcp.McpConnectionError)
    assert issubclass(mcp.McpConfigError, ValueError)
    assert issubclass(mcp.McpTimeout, TimeoutError)
    assert issubclass(mcp.McpTool, codeward.kernel.ExternalTool)


EXPECTED_NETGRANT = {
    "DEFAULT_PORTS",
    "PROXY_PORT",
    "Admission",
    "NetworkGrant",
    "NetworkGrantError",
    "NetworkMediator",
    "canonical_host",
}


def test_netgrant_exports_and_error() -> None:
    import codeward.netgrant as netgrant

    assert set(netgrant.__all__) == EXPECTED_NETGRANT
    assert issubclass(netgrant.NetworkGrantError, codeward.CodewardError)
    assert issubclass(netgrant.NetworkGrantError, ValueError)
    assert netgrant.PROXY_PORT == 3128  # A3S_GRANT_PROXY_PORT


def test_top_level_exports() -> None:
    assert set(codeward.__all__) == EXPECTED
    for name in EXPECTED:
        assert hasattr(codeward, name), name


def test_policy_exports() -> None:
    assert set(codeward.policy.__all__) == EXPECTED_POLICY


def test_exception_tree() -> None:
    from codeward.download import DownloadError
    from codeward.hitl import ConfirmationPolicyError
    from codeward.hooks import HookError
    from codeward.kernel import RegistrationError
    from codeward.verification import VerificationError

    for cls in (
        codeward.WorkspaceError,
        codeward.SandboxError,
        codeward.SessionOptionsError,
        codeward.SessionClosed,
        DownloadError,
        ConfirmationPolicyError,
        HookError,
        RegistrationError,
        VerificationError,
    ):
        assert issubclass(cls, codeward.CodewardError), cls
    for cls in (
        codeward.PathOutsideWorkspace,
        codeward.CredentialBoundaryError,
        codeward.HardLinkRefused,
        codeward.DestinationExists,
    ):
        assert issubclass(cls, codeward.WorkspaceError), cls
    assert issubclass(codeward.SandboxUnavailable, codeward.SandboxError)
    assert issubclass(codeward.PolicyError, codeward.CodewardError)
    assert issubclass(codeward.PolicyError, ValueError)
    assert issubclass(codeward.PolicyFileError, codeward.PolicyError)
    assert issubclass(codeward.NativeCoreError, codeward.CodewardError)


def test_versions_agree() -> None:
    assert codeward.native_version() == codeward.__version__
    assert codeward._native.abi_version() == codeward._native.ABI_VERSION == 1


def test_features_reports_every_key() -> None:
    feats = codeward.features()
    assert set(feats) == {
        "user_namespaces",
        "pid_namespaces",
        "seccomp_filter",
        "landlock",
        "pidfd",
        "cgroup_kill",
        "landlock_abi",
        "names_emulated",
    }
    assert feats["landlock"] == (feats["landlock_abi"] > 0)
