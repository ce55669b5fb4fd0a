"""Pins the public API: adding or removing a name is a deliberate, reviewed change."""

import a3s_code
import a3s_code.policy

EXPECTED = {
    "A3SError",
    "Decision",
    "LintFinding",
    "NativeCoreError",
    "PermissionPolicy",
    "PolicyError",
    "PolicyFileError",
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
