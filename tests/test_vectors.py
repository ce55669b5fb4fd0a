"""Runs the shared test vectors (tests/vectors/*.json) against the Python package.

The vector files are the cross-language contract of the permission policy: the
Node and Go bindings run the very same files. Each case is one pytest item
whose id is the case name.

policy.json cases are exactly one of:
  decision  {name, policy, tool, args, decision, [subject], [matching]}
  error     {name, policy, error: "policy", [message_contains]}
  subject   {name, tool, args, subject}
glob.json cases: {name, pattern, subject, match, [tool_name]}
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from codeward import PermissionPolicy, PolicyError
from codeward._native import Glob
from codeward.policy import argument_string

VECTORS = Path(__file__).parent / "vectors"
POLICY_FILE = VECTORS / "policy.json"
GLOB_FILE = VECTORS / "glob.json"

MIN_POLICY_CASES = 200
MIN_GLOB_CASES = 120

DECISIONS = ("allow", "deny", "ask")
LISTS = ("deny", "allow", "ask")
POLICY_KEYS = {"deny", "allow", "ask", "default_decision", "enabled"}
DECISION_KEYS = {"name", "policy", "tool", "args", "decision", "subject", "matching"}
ERROR_KEYS = {"name", "policy", "error", "message_contains"}
SUBJECT_KEYS = {"name", "tool", "args", "subject"}
GLOB_KEYS = {"name", "pattern", "subject", "match", "tool_name"}


def _load(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as f:
        data: dict[str, Any] = json.load(f)
    return data


POLICY_DATA = _load(POLICY_FILE)
GLOB_DATA = _load(GLOB_FILE)
POLICY_CASES: list[dict[str, Any]] = POLICY_DATA["cases"]
GLOB_CASES: list[dict[str, Any]] = GLOB_DATA["cases"]


def _kind(case: dict[str, Any]) -> str:
    if "error" in case:
        return "error"
    if "decision" in case:
        return "decision"
    return "subject"


def _ids(cases: list[dict[str, Any]]) -> list[str]:
    return [str(c.get("name", f"#{i}")) for i, c in enumerate(cases)]


def _select(kind: str) -> list[dict[str, Any]]:
    return [c for c in POLICY_CASES if _kind(c) == kind]


def _policy_object(case: dict[str, Any]) -> dict[str, Any]:
    ref = case["policy"]
    if isinstance(ref, str):
        policy: dict[str, Any] = POLICY_DATA["policies"][ref]
        return policy
    assert isinstance(ref, dict)
    return ref


# ---- the files themselves ---------------------------------------------------


def test_policy_file_shape() -> None:
    assert POLICY_DATA["schema"] == 1
    assert isinstance(POLICY_DATA["description"], str) and POLICY_DATA["description"]
    assert set(POLICY_DATA) == {"schema", "description", "policies", "cases"}
    for name, policy in POLICY_DATA["policies"].items():
        assert set(policy) <= POLICY_KEYS, name
    assert len(POLICY_CASES) >= MIN_POLICY_CASES


def test_glob_file_shape() -> None:
    assert GLOB_DATA["schema"] == 1
    assert set(GLOB_DATA) == {"schema", "cases"}
    assert len(GLOB_CASES) >= MIN_GLOB_CASES


@pytest.mark.parametrize("cases", [POLICY_CASES, GLOB_CASES], ids=["policy", "glob"])
def test_case_names_are_unique(cases: list[dict[str, Any]]) -> None:
    names = [c["name"] for c in cases]
    assert all(isinstance(n, str) and n for n in names)
    duplicates = sorted({n for n in names if names.count(n) > 1})
    assert not duplicates


@pytest.mark.parametrize("case", POLICY_CASES, ids=_ids(POLICY_CASES))
def test_policy_case_is_well_formed(case: dict[str, Any]) -> None:
    kind = _kind(case)
    allowed = {"decision": DECISION_KEYS, "error": ERROR_KEYS, "subject": SUBJECT_KEYS}[kind]
    assert set(case) <= allowed, f"{kind} case with foreign keys {sorted(set(case) - allowed)}"
    if kind == "decision":
        assert {"name", "policy", "tool", "args", "decision"} <= set(case)
        assert case["decision"] in DECISIONS
        if isinstance(case["policy"], str):
            assert case["policy"] in POLICY_DATA["policies"]
        if "matching" in case:
            assert set(case["matching"]) <= set(LISTS)
    elif kind == "error":
        assert case["error"] == "policy"
        assert isinstance(case["policy"], dict)
    else:
        assert {"name", "tool", "args", "subject"} <= set(case)
    if "policy" in case and isinstance(case["policy"], dict):
        assert set(case["policy"]) <= POLICY_KEYS
    if "args" in case:
        assert isinstance(case["args"], dict)


@pytest.mark.parametrize("case", GLOB_CASES, ids=_ids(GLOB_CASES))
def test_glob_case_is_well_formed(case: dict[str, Any]) -> None:
    assert set(case) <= GLOB_KEYS
    assert {"name", "pattern", "subject", "match"} <= set(case)
    assert isinstance(case["match"], bool)
    assert case.get("tool_name", False) in (True, False)


# ---- policy.json -------------------------------------------------------------

DECISION_CASES = _select("decision")
ERROR_CASES = _select("error")
SUBJECT_CASES = _select("subject")


@pytest.mark.parametrize("case", DECISION_CASES, ids=_ids(DECISION_CASES))
def test_decision(case: dict[str, Any]) -> None:
    policy = PermissionPolicy.from_dict(_policy_object(case))
    tool, args = case["tool"], case["args"]
    if "subject" in case:
        assert argument_string(tool, args)[1] == case["subject"]
    assert policy.check(tool, args) == case["decision"]
    if "matching" in case:
        expected = {name: case["matching"].get(name, []) for name in LISTS}
        found = policy.matching_rules(tool, args)
        assert {name: list(found[name]) for name in LISTS} == expected


@pytest.mark.parametrize("case", ERROR_CASES, ids=_ids(ERROR_CASES))
def test_policy_error(case: dict[str, Any]) -> None:
    with pytest.raises(PolicyError) as info:
        PermissionPolicy.from_dict(case["policy"])
    if "message_contains" in case:
        assert case["message_contains"] in str(info.value)


@pytest.mark.parametrize("case", SUBJECT_CASES, ids=_ids(SUBJECT_CASES))
def test_subject(case: dict[str, Any]) -> None:
    assert argument_string(case["tool"], case["args"])[1] == case["subject"]


# ---- glob.json ---------------------------------------------------------------


@pytest.mark.parametrize("case", GLOB_CASES, ids=_ids(GLOB_CASES))
def test_glob(case: dict[str, Any]) -> None:
    glob = Glob(case["pattern"], tool_name=case.get("tool_name", False))
    assert glob.match(case["subject"]) is case["match"]
