"""Pins the public API: adding or removing a name is a deliberate, reviewed change."""

import a3s_code
import a3s_code.policy

EXPECTED = {
    "A3SError",
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
    "Decision",
    "LintFinding",
    "PermissionPolicy",
    "RuleView",
    "argument_string",
    "canonical_json",
    "lint_policy",
    "normalize_path",
}


def test_top_level_exports() -> None:
    assert set(a3s_code.__all__) == EXPECTED
    for name in EXPECTED:
        assert hasattr(a3s_code, name), name


def test_policy_exports() -> None:
    assert set(a3s_code.policy.__all__) == EXPECTED_POLICY


def test_exception_tree() -> None:
    from a3s_code.download import DownloadError
    from a3s_code.hitl import ConfirmationPolicyError
    from a3s_code.hooks import HookError
    from a3s_code.kernel import RegistrationError
    from a3s_code.verification import VerificationError

    for cls in (
        a3s_code.WorkspaceError,
        a3s_code.SandboxError,
        a3s_code.SessionOptionsError,
        a3s_code.SessionClosed,
        DownloadError,
        ConfirmationPolicyError,
        HookError,
        RegistrationError,
        VerificationError,
    ):
        assert issubclass(cls, a3s_code.A3SError), cls
    for cls in (
        a3s_code.PathOutsideWorkspace,
        a3s_code.CredentialBoundaryError,
        a3s_code.HardLinkRefused,
        a3s_code.DestinationExists,
    ):
        assert issubclass(cls, a3s_code.WorkspaceError), cls
    assert issubclass(a3s_code.SandboxUnavailable, a3s_code.SandboxError)
    assert issubclass(a3s_code.PolicyError, a3s_code.A3SError)
    assert issubclass(a3s_code.PolicyError, ValueError)
    assert issubclass(a3s_code.PolicyFileError, a3s_code.PolicyError)
    assert issubclass(a3s_code.NativeCoreError, a3s_code.A3SError)


def test_versions_agree() -> None:
    assert a3s_code.native_version() == a3s_code.__version__
    assert a3s_code._native.abi_version() == a3s_code._native.ABI_VERSION == 1


def test_features_reports_every_key() -> None:
    feats = a3s_code.features()
    assert set(feats) == {
        "user_namespaces",
        "pid_namespaces",
        "seccomp_filter",
        "landlock",
        "pidfd",
        "cgroup_kill",
        "landlock_abi",
    }
    assert feats["landlock"] == (feats["landlock_abi"] > 0)
