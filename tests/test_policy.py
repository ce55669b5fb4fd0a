"""PermissionPolicy behaviour beyond the shared vectors: construction, files, introspection."""

from __future__ import annotations

import json
import threading

import pytest

from codeward import Decision, PermissionPolicy, PolicyError, PolicyFileError
from codeward.policy import argument_string


def test_decision_is_a_str_enum() -> None:
    assert Decision.ALLOW == "allow"
    assert str(Decision.ASK) == "ask"
    assert json.dumps(Decision.DENY) == '"deny"'


def test_evaluation_order_and_default() -> None:
    p = PermissionPolicy(
        deny=["bash(rm -rf**)"],
        allow=["bash(git **)"],
        ask=["bash(git push**)"],
        default_decision="deny",
    )
    assert p.check("bash", {"command": "rm -rf /"}) is Decision.DENY
    assert p.check("bash", {"command": "git push"}) is Decision.ALLOW  # allow wins over ask
    assert p.check("bash", {"command": "ls"}) is Decision.DENY  # the default


def test_disabled_policy_allows_everything_even_denied_calls() -> None:
    p = PermissionPolicy(deny=["bash"], enabled=False)
    assert p.check("bash", {"command": "rm -rf /"}) is Decision.ALLOW
    assert p.exposes_to_model("bash")


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"deny": "bash"}, "must be a list of rules"),
        ({"deny": [3]}, "a rule is a string"),
        ({"allow": [{"rule": 1}]}, "'rule' must be a string"),
        ({"allow": [{"rules": "bash"}]}, "unknown key"),
        ({"ask": [{}]}, "needs a 'rule' key"),
        ({"default_decision": "maybe"}, "default_decision must be"),
        ({"enabled": "yes"}, "enabled must be True or False"),
        ({"deny": ["bash("]}, "missing ')'"),
    ],
)
def test_bad_construction_raises_policy_error(kwargs: dict, fragment: str) -> None:
    with pytest.raises(PolicyError, match=None) as info:
        PermissionPolicy(**kwargs)
    assert fragment in str(info.value)


def test_policy_error_names_the_rule() -> None:
    with pytest.raises(PolicyError) as info:
        PermissionPolicy(allow=["read(*)", "bash (ls)"])
    assert info.value.rule == "bash (ls)"
    assert "allow rule 'bash (ls)'" in str(info.value)
    assert "space before '('" in str(info.value)


def test_rule_objects_are_accepted() -> None:
    p = PermissionPolicy(allow=[{"rule": "read(src/**)"}])
    assert p.check("read", {"file_path": "src/a/b.py"}) is Decision.ALLOW
    assert p.allow == ["read(src/**)"]


def test_matching_rules_reports_raw_rules_per_list() -> None:
    p = PermissionPolicy(
        deny=["grep(secret**)"], allow=["search(*)", "bash"], ask=["Search(grep **)"]
    )
    got = p.matching_rules("grep", {"query": "secret", "path": "src"})
    assert got == {"deny": ["grep(secret**)"], "allow": ["search(*)"], "ask": ["Search(grep **)"]}


def test_exposes_to_model() -> None:
    p = PermissionPolicy(
        deny=["bash", "write(*)", "mcp__jira", "edit(src/**)"],
        allow=["read(src/**)"],
        default_decision="deny",
    )
    assert not p.exposes_to_model("bash")
    assert not p.exposes_to_model("WRITE")
    assert not p.exposes_to_model("mcp__jira__create")
    assert not p.exposes_to_model("edit")  # default deny, no allow/ask for edit
    assert p.exposes_to_model("read")
    q = PermissionPolicy(deny=["edit(src/**)", "mcp__*__delete"])
    assert q.exposes_to_model("edit")  # a pattern deny does not hide the tool
    assert not q.exposes_to_model("mcp__x__delete")  # a bare tool-glob deny hides it


def test_rules_view_shows_canonical_forms() -> None:
    p = PermissionPolicy(allow=["GREP(foo **)", "mcp__github", "mcp__*", "bash(npm run:*)"])
    views = p.rules()
    assert [(v.tool, v.pattern) for v in views] == [
        ("search", "grep foo **"),
        ("mcp__github", "*"),
        ("mcp__*", "*"),
        ("bash", "npm run:*"),
    ]
    assert views[0].rewritten and views[1].mcp_server and views[2].tool_glob and views[3].prefix


def test_digest_is_stable_and_content_bound() -> None:
    a = PermissionPolicy(allow=["read(*)"])
    b = PermissionPolicy.from_dict({"allow": ["read(*)"], "default_decision": "ask"})
    assert a.digest == b.digest and a == b and len(a.digest) == 64
    assert PermissionPolicy(allow=["read(**)"]).digest != a.digest


def test_from_file_yaml_and_json(tmp_path) -> None:
    y = tmp_path / "p.yaml"
    y.write_text("deny: ['bash(rm -rf**)']\nallow:\n  - rule: read(*)\ndefault_decision: deny\n")
    j = tmp_path / "p.json"
    j.write_text(json.dumps({"ask": ["bash"], "enabled": True}))
    assert PermissionPolicy.from_file(y).check("read", {"file_path": "x"}) is Decision.ALLOW
    assert PermissionPolicy.from_file(j).check("bash", {"command": "x"}) is Decision.ASK
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert PermissionPolicy.from_file(empty).check("x") is Decision.ASK


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("deny: [", "does not parse"),
        ("- a\n- b\n", "a policy is a mapping"),
        ("defaultDecision: allow\n", "did you mean 'default_decision'"),
        ("deny: ['bash(']\n", "missing ')'"),
    ],
)
def test_from_file_errors(tmp_path, text: str, fragment: str) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    with pytest.raises(PolicyFileError) as info:
        PermissionPolicy.from_file(f)
    assert fragment in str(info.value)
    assert info.value.path == str(f)


def test_missing_file(tmp_path) -> None:
    with pytest.raises(PolicyFileError, match="cannot read policy file"):
        PermissionPolicy.from_file(tmp_path / "nope.yaml")


@pytest.mark.parametrize("bad", [["a"], "text", 3])
def test_non_mapping_args_are_rejected(bad) -> None:
    with pytest.raises(PolicyError, match="must be a mapping"):
        PermissionPolicy().check("mcp__x", bad)


def test_unserializable_args_are_rejected_not_crashing() -> None:
    with pytest.raises(PolicyError, match="not representable as JSON"):
        PermissionPolicy().check("custom", {"x": object()})
    with pytest.raises(PolicyError, match="non-string key"):
        PermissionPolicy().check("custom", {"x": {1: 2}})


def test_non_string_fields_cannot_dodge_a_deny() -> None:
    p = PermissionPolicy(deny=['bash(["rm"**)'], allow=["bash"])
    assert argument_string("bash", {"command": ["rm", "-rf"]}) == ("bash", '["rm","-rf"]')
    assert p.check("bash", {"command": ["rm", "-rf"]}) is Decision.DENY


def test_lone_surrogates_do_not_crash() -> None:
    p = PermissionPolicy(deny=["bash(\ud800**)"], allow=["bash"])
    assert p.check("bash", {"command": "\ud800x"}) is Decision.DENY
    assert p.check("bash", {"command": "ok"}) is Decision.ALLOW


def test_embedded_nul_is_an_ordinary_character() -> None:
    p = PermissionPolicy(deny=["bash(rm\x00**)"], allow=["bash"])
    assert p.check("bash", {"command": "rm\x00 -rf"}) is Decision.DENY
    assert p.check("bash", {"command": "rm"}) is Decision.ALLOW


def test_concurrent_checks_share_one_policy() -> None:
    p = PermissionPolicy(deny=["bash(rm**)"], allow=["bash(ls**)"])
    errors: list[str] = []

    def worker(n: int) -> None:
        for i in range(2000):
            cmd = "rm x" if (i + n) % 2 else "ls y"
            want = Decision.DENY if (i + n) % 2 else Decision.ALLOW
            if p.check("bash", {"command": cmd}) is not want:
                errors.append(cmd)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_huge_rule_is_rejected_cleanly() -> None:
    with pytest.raises(PolicyError, match="exceeds the limit"):
        PermissionPolicy(deny=["bash(" + "a" * 70_000 + ")"])


def test_exec_patterns_are_the_bash_deny_and_ask_patterns() -> None:
    """What the exec check holds bash commands to (docs/policy.md, "The exec check")."""
    policy = PermissionPolicy(
        deny=["bash(git push**)", "Read(**/.env)", "Bash"],
        ask=["bash(npm publish:*)", "bash"],
        allow=["bash(*)"],
    )
    assert policy.exec_patterns() == (("git push**", "*"), ("npm publish:*",))
    assert PermissionPolicy(deny=["bash(x)"], enabled=False).exec_patterns() == ((), ())


def test_a_search_check_decides_as_its_evaluation() -> None:
    """check() decides a search with two rule-set lookups; evaluate() builds the whole
    evaluation: both read deny and ask rules on either form, allow rules on the strict one."""
    policy = PermissionPolicy(
        deny=["search(grep secret **)"],
        allow=["search(grep ** src/**)", "search(glob **)"],
        ask=["search(grep **src**)", "search(** tests/**)"],
        default_decision="ask",
    )
    queries = ["todo", "secret", "a src/x", "x y", "src"]
    paths = ["src/a.py", "tests/t.py", "docs", "", "src dir/x"]
    for tool in ("search", "grep", "glob"):
        for query in queries:
            for path in paths:
                args = {"mode": "grep", "query": query, "path": path}
                assert policy.check(tool, args) is policy.evaluate(tool, args).decision, args


@pytest.mark.parametrize(
    "target",
    [
        "HEAD:secrets/key.txt",
        "HEAD:./secrets/key.txt",
        "HEAD:a/../secrets/key.txt",
        "HEAD:secrets//key.txt",
        "HEAD:./a/./../secrets/key.txt",
        "HEAD:../secrets/key.txt",
        "HEAD:a/../../secrets/key.txt",
    ],
)
def test_a_git_target_is_decided_on_its_normal_path(target: str) -> None:
    """deny git(**HEAD:secrets/**) holds for every spelling of the path after the revision."""
    policy = PermissionPolicy(deny=["git(**HEAD:secrets/**)"], default_decision="allow")
    args = {"command": "show", "target": target}
    assert policy.check("git", args) is Decision.DENY
    assert policy.evaluate("git", args).decision is Decision.DENY
    assert policy.check("git", {"command": "show", "target": "HEAD:src/a.py"}) is Decision.ALLOW
    assert policy.check("git", {"command": "show", "target": "HEAD:../src/x"}) is Decision.ALLOW
