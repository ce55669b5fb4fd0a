"""Runs tests/vectors/bash_policy.json, the bash cases every binding shares (Node and Go run
the same file): a bash line decided per simple command by the C core (docs/policy.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from codeward import PermissionPolicy

FILE = Path(__file__).parent / "vectors" / "bash_policy.json"
# the reader's corpus (tests/bash_reader_corpus.py), in the same format: thousands of lines,
# checked in one test so that collection stays fast
READER_FILE = Path(__file__).parent / "vectors" / "bash_reader.json"
DATA: dict[str, Any] = json.loads(FILE.read_text(encoding="utf-8"))
CASES: list[dict[str, Any]] = DATA["cases"]
POLICIES = {name: PermissionPolicy.from_dict(p) for name, p in DATA["policies"].items()}
MIN_CASES = 60


def test_the_file_holds_enough_decision_cases() -> None:
    assert DATA["schema"] == 1 and set(DATA) == {"schema", "description", "policies", "cases"}
    assert len(CASES) >= MIN_CASES
    assert len({c["name"] for c in CASES}) == len(CASES)
    for case in CASES:
        assert set(case) <= {"name", "policy", "tool", "args", "decision", "matching"}
        assert case["tool"] == "bash" and case["policy"] in POLICIES


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_bash_case(case: dict[str, Any]) -> None:
    policy = POLICIES[case["policy"]]
    command = case["args"]["command"]
    verdict = policy.bash_verdict(command)
    assert policy.check("bash", case["args"]) == case["decision"], verdict
    assert verdict.decision == case["decision"]
    if "matching" in case:
        assert policy.matching_rules("bash", case["args"]) == case["matching"]


def test_the_reader_corpus_decides_as_pinned() -> None:
    data: dict[str, Any] = json.loads(READER_FILE.read_text(encoding="utf-8"))
    assert data["schema"] == 1 and set(data) == {"schema", "description", "policies", "cases"}
    policies = {name: PermissionPolicy.from_dict(p) for name, p in data["policies"].items()}
    assert len(data["cases"]) >= 4 * 1500
    wrong = []
    for case in data["cases"]:
        decision = policies[case["policy"]].check(case["tool"], case["args"]).value
        if decision != case["decision"]:
            wrong.append(
                f"{case['name']} {case['args']['command']!r}: {decision}, pinned {case['decision']}"
            )
    assert not wrong, f"{len(wrong)} cases:\n" + "\n".join(wrong[:40])


def test_the_reader_corpus_is_the_generated_one() -> None:
    """The vector file holds exactly the corpus's lines (regenerate with --write)."""
    import bash_reader_corpus

    data: dict[str, Any] = json.loads(READER_FILE.read_text(encoding="utf-8"))
    assert data["policies"] == bash_reader_corpus.POLICIES
    lines = {case["args"]["command"] for case in data["cases"]}
    assert lines == set(bash_reader_corpus.lines())
