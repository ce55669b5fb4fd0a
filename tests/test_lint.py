"""Policy lint: each footgun is found, with an example, and clean policies stay clean."""

from __future__ import annotations

from codeward import PermissionPolicy


def codes(**kwargs) -> list[tuple[str, str]]:
    return [(f.code, f.rule) for f in PermissionPolicy(**kwargs).lint()]


def test_clean_policy_has_no_findings() -> None:
    assert (
        codes(
            deny=["bash(rm -rf**)", "write(**/.env*)"],
            ask=["bash(git push**)", "bash(npm publish**)"],
            allow=["read(*)", "search(*)", "bash(cargo test**)", "bash(cargo :*)"],
        )
        == []
    )


def test_allow_shadowing_ask_is_reported_with_an_example() -> None:
    findings = PermissionPolicy(allow=["bash(git **)"], ask=["bash(git push**)"]).lint()
    shadow = [f for f in findings if f.code == "allow-shadows-ask"]
    assert len(shadow) == 1
    assert shadow[0].related_rule == "bash(git **)"
    assert "bash(git push)" in shadow[0].message
    # and since every git push call is allowed, the ask can never take effect
    assert ("never-matches", "bash(git push**)") in [(f.code, f.rule) for f in findings]


def test_partial_overlap_is_shadowing_but_not_unreachable() -> None:
    got = codes(allow=["bash(git push origin*)"], ask=["bash(git push**)"])
    assert ("allow-shadows-ask", "bash(git push**)") in got
    assert ("never-matches", "bash(git push**)") not in got


def test_disjoint_allow_and_ask_are_fine() -> None:
    assert codes(allow=["bash(cargo **)", "read(**)"], ask=["bash(git push**)"]) == []


def test_tool_globs_and_mcp_servers_overlap() -> None:
    got = codes(allow=["mcp__github"], ask=["mcp__*__create_issue"])
    assert ("allow-shadows-ask", "mcp__*__create_issue") in got


def test_single_star_in_deny_is_reported() -> None:
    findings = PermissionPolicy(deny=["bash(rm -rf *)"]).lint()
    assert [f.code for f in findings] == ["star-stops-at-slash"]
    assert "rm -rf /" in findings[0].message
    assert "bash(rm -rf **)" in findings[0].message


def test_single_star_in_path_rules_is_intended() -> None:
    assert codes(deny=["write(*.env)", "read(secrets/*)"]) == []


def test_prefix_not_at_word_boundary() -> None:
    findings = PermissionPolicy(allow=["bash(cargo:*)"]).lint()
    assert [f.code for f in findings] == ["prefix-not-at-word-boundary"]
    assert "cargoevil" in findings[0].message
    assert codes(allow=["bash(cargo :*)"]) == []


def test_rules_that_can_never_match() -> None:
    got = codes(deny=["read(./secrets/**)", "write(a\\b)", "grep(password)", "ls(src/)"])
    assert sorted(got) == sorted(
        [
            ("never-matches", "read(./secrets/**)"),
            ("never-matches", "write(a\\b)"),
            ("never-matches", "grep(password)"),
            ("never-matches", "ls(src/)"),
        ]
    )


def test_allow_covered_by_deny_never_takes_effect() -> None:
    got = codes(deny=["bash"], allow=["bash(ls**)"])
    assert got == [("never-matches", "bash(ls**)")]


def test_duplicates() -> None:
    got = codes(deny=["bash(rm**)", "Bash(rm**)"])
    assert got == [("duplicate", "Bash(rm**)")]


def test_a_search_rule_whose_path_part_the_query_can_satisfy_is_reported() -> None:
    findings = PermissionPolicy(allow=["search(grep **src/**)", "grep(**/secret**)"]).lint()
    assert [(f.code, f.rule) for f in findings] == [
        ("search-path-in-query", "search(grep **src/**)"),
        ("search-path-in-query", "grep(**/secret**)"),
    ]
    assert "search(grep src/ .) is allowed" in findings[0].message
    assert "search(grep ** src/**)" in findings[0].message
    # the design's "<mode> <query> <path>" form, bare modes and path-free patterns are fine
    assert (
        codes(allow=["search(grep * src/**)", "grep", "grep(TODO*)", "search(glob ** docs)"]) == []
    )
    # a deny or ask rule the query matches only denies or asks more
    assert codes(deny=["search(grep **secrets/**)"], ask=["search(grep **.git/**)"]) == []


def test_an_allow_search_rule_with_a_literal_space_in_its_query_never_matches() -> None:
    findings = PermissionPolicy(allow=["search(grep foo bar src/**)"]).lint()
    assert [f.code for f in findings] == ["never-matches"]
    assert "two separators" in findings[0].message
    assert codes(deny=["search(grep foo bar **)"]) == []  # a deny matches the plain form too
