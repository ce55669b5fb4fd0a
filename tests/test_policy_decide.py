"""PermissionPolicy.check's C path (Ruleset.decide) against its Python specification.

check() is the C glue's Ruleset.call (python/codeward/_native.c): ruleset_decide, and the
Python path (_check_slow) only for the call shapes the C side leaves to it. Both must give
the same decision for every call; bash lines of plain commands joined by `&&`, `||`, `|`
and `;` are decided without the splitter (native/src/ruleset.c: plain_commands), and must
be decided as the splitter decides them (bash_verdict never takes that path).
"""

from __future__ import annotations

import gc
import sys
from collections import UserDict
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeward import Decision, PermissionPolicy, PolicyError, _native

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench" / "policy"))
import workload

RULES = workload.policy_rules()


@pytest.fixture(scope="module")
def policy() -> PermissionPolicy:
    return PermissionPolicy(
        deny=RULES["deny"], allow=RULES["allow"], ask=RULES["ask"], default_decision="ask"
    )


def both(policy: PermissionPolicy, tool: Any, args: Any) -> tuple[Any, Any]:
    fast = policy._decide(tool, args)
    try:
        slow: Any = policy._check_slow(tool, args)
    except Exception as exc:  # the fast path must then have declined the call
        slow = type(exc)
    return fast, slow


def test_workloads_agree(policy: PermissionPolicy) -> None:
    declined = 0
    for calls in (workload.tool_calls(4000), workload.mixed_calls(4000)):
        for tool, args in calls:
            fast, slow = both(policy, tool, args)
            declined += fast is None
            assert fast is None or fast is slow, (tool, args)
    assert declined < 400  # the common shapes stay on the C path


class Text(str):
    pass


HOSTILE: list[tuple[Any, Any]] = [
    ("bash", None),
    ("bash", {}),
    ("bash", {"command": 5}),
    ("bash", {"command": ["git", "push"]}),
    ("bash", {"command": Text("git push")}),
    ("bash", {"command": "git push\udc80"}),
    ("BASH", {"command": "rm -rf /"}),
    ("bash", UserDict({"command": "rm -rf /"})),
    ("read", {"file_path": "./src/../.env"}),
    ("read", {"file_path": "src//a.py/"}),
    ("read", {"file_path": "a\\b\\.env"}),
    ("read", {"file_path": "src/a\n.env"}),
    ("read", {"file_path": None}),
    ("read", {"file_path": 7}),
    ("read", {"files": ["src/a.py", ".env"]}),
    ("read", {"files": [{"path": "src/a.py"}], "file_path": "x"}),
    ("read", None),
    ("read", {"files": []}),
    ("read", {"files": ()}),
    ("read", {"files": None}),
    ("read", {"files": "src/a.py"}),
    ("read", {"files": ["src/a.py", "src/b.py"]}),
    ("read", {"files": ("src/a.py", {"path": "./src/../.env"}, None)}),
    ("read", {"files": [{"path": None}, {}]}),
    ("read", {"files": [{"path": 5}]}),
    ("read", {"files": [{"path": Text(".env")}]}),
    ("read", {"files": [Text(".env")]}),
    ("read", {"files": ["a\udc80", ".env"]}),
    ("read", {"files": [["x"], 7]}),
    ("read", {"files": [UserDict({"path": ".env"})]}),
    ("read", {"files": ["src/a\n.env"]}),
    ("write", {"file_path": ".env.local", "content": "x"}),
    ("ls", {"path": "../x/"}),
    ("ls", {"path": ["a"]}),
    ("grep", {"query": "a b", "path": "src dir"}),
    ("grep", {"query": {"x": 1}, "path": "src"}),
    ("search", {"mode": "grep", "query": "api_key", "path": "./src/"}),
    ("search", {"mode": None}),
    ("glob", None),
    ("git", {"command": "show", "target": "HEAD:./secrets/key.txt"}),
    ("git", {"command": "show", "target": "HEAD~1:a/../secrets/k"}),
    ("git", {"command": "status"}),
    ("git", {"command": "log", "target": 5}),
    ("mcp__github__create_issue", {"title": "x", "n": 1.0, "t": (1, 2)}),
    ("mcp__github__x", {"v": float("nan")}),
    ("WebFetch", {"url": "https://docs.rs/x", "prompt": "p"}),
    ("tööl", {"a": 1}),
    ("Tool", {1: 2}),
    ("tool", {"a": object()}),
    (5, {"a": 1}),
    ("x" * 300, {"a": 1}),
]


@pytest.mark.parametrize("tool,args", HOSTILE)
def test_hostile_shapes_agree(policy: PermissionPolicy, tool: Any, args: Any) -> None:
    fast, slow = both(policy, tool, args)
    assert fast is None or fast is slow


PLAIN = st.sampled_from(
    [
        "git status",
        "ls -la src",
        "cargo test -p server",
        "npm test",
        "rm -rf build",
        "make",
        "echo done",
        "cat a.txt",
        "python3 x.py",
        "bash",
        "sh",
        "xargs rm",
        "eval x",
        "alias g=git",
        "trap x",
        "sudo rm -rf /",
        "npm run build",
        "git push",
        "cd src",
        "time make",
        "GIT=1 make",
    ]
)
SEP = st.sampled_from([" && ", " || ", " | ", "; ", "&&", " ; ", " & ", " |& ", "\n", ";"])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(SEP, PLAIN), min_size=1, max_size=5), PLAIN)
def test_plain_sequences_read_as_the_splitter_reads_them(
    parts: list[tuple[str, str]], first: str
) -> None:
    line = first + "".join(sep + cmd for sep, cmd in parts)
    for default in ("ask", "allow", "deny"):
        policy = PermissionPolicy(
            deny=["bash(git push**)", "bash(rm -rf**)"],
            allow=["bash(git status)", "bash(ls**)", "bash(npm run:*)", "bash(echo *)"],
            ask=["bash(cargo **)", "bash(cat **)"],
            default_decision=default,
        )
        assert policy.check("bash", {"command": line}) is policy.bash_verdict(line).decision, line


def test_memo_follows_the_line_not_its_slot() -> None:
    policy = PermissionPolicy(deny=["bash(git push**)"], allow=["bash(*)"])
    lines = [f"echo {i}" for i in range(5000)] + ["git push"]
    for line in lines * 2:
        expected = Decision.DENY if line == "git push" else Decision.ALLOW
        assert policy.check("bash", {"command": line}) is expected


@pytest.mark.parametrize("default", ["ask", "allow", "deny"])
def test_searches_and_multi_file_reads_stay_on_the_c_path(default: str) -> None:
    """A search is decided deny, then ask, then allow (the strict form) and a multi-file read
    per file; both in C, as the Python path decides them."""
    policy = PermissionPolicy(
        deny=["grep(*secret*)", "read(**/.env)", "search(glob ** /etc/**)"],
        allow=["grep(*)", "search(*)", "read(src/**)", "glob(* src/**)"],
        ask=["grep(* api_key *)", "bm25(**)", "read(docs/**)", "glob(* *)"],
        default_decision=default,
    )
    calls: list[tuple[str, Any]] = [
        ("grep", {"query": "api_key", "path": "src"}),
        ("grep", {"query": "a secret b", "path": "src"}),
        ("grep", {"query": "x", "path": "src dir"}),
        ("glob", {"query": "*.py", "path": "src/a"}),
        ("glob", {"query": "*.py", "path": "src/a b"}),
        ("search", {"mode": "glob", "query": "**", "path": "/etc/x"}),
        ("bm25", {"query": "q"}),
        ("read", {"files": ["src/a.py", "src/b.py"]}),
        ("read", {"files": ["src/a.py", "docs/x.md"]}),
        ("read", {"files": ["docs/x.md", "a/.env", "src/a.py"]}),
        ("read", {"files": ["other.txt", "src/a.py"]}),
        ("read", {"files": []}),
    ]
    for tool, args in calls:
        fast, slow = both(policy, tool, args)
        assert fast is slow, (tool, args, fast, slow)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=":/.aH", max_size=12))
def test_git_targets_read_as_their_spellings_read(target: str) -> None:
    """A git target already in its normal form is decided in C, any other on its spellings."""
    policy = PermissionPolicy(
        deny=["git(*:a/a*)", "git(*HEAD:a*)"], allow=["git(*)"], ask=["git(*:.*)"]
    )
    for args in ({"command": "show", "target": target}, {"target": target, "n": 1}):
        fast, slow = both(policy, "git", args)
        assert fast is None or fast is slow, (args, fast, slow)
        normal = all(
            p == "" or p.startswith("/") or all(x not in ("", ".", "..") for x in p.split("/"))
            for p in (target[i + 1 :] for i, c in enumerate(target) if c == ":")
        )
        assert (fast is not None) == normal, target


def test_check_is_one_c_call_with_check_s_signature() -> None:
    """check() is the rule set's call(): decide(), else _check_slow; same arguments as ever."""
    policy = PermissionPolicy(deny=["read(**/.env)"], allow=["read(src/**)"])
    assert policy.check("read", {"file_path": ".env"}) is Decision.DENY
    assert policy.check("read") is Decision.ASK
    assert policy.check(tool="read", args={"files": ["src/a", "src/b"]}) is Decision.ALLOW
    assert policy.check("read", args={"file_path": "src/a\n"}) is Decision.ALLOW  # Python path
    assert PermissionPolicy(enabled=False).check("bash", {"command": "rm -rf /"}) is Decision.ALLOW
    for bad in ((), ("read", {}, 3)):
        with pytest.raises(TypeError):
            policy.check(*bad)
    with pytest.raises(TypeError):
        policy.check("read", tool="read")
    with pytest.raises(TypeError):
        policy.check("read", path="x")
    with pytest.raises(PolicyError):
        policy.check("read", ["not", "a", "mapping"])  # type: ignore[arg-type]


def test_a_policy_and_its_rule_set_are_collected() -> None:
    """The rule set calls back into its policy (a cycle): the collector frees both."""
    gc.collect()
    before = sum(type(o) is _native.Ruleset for o in gc.get_objects())
    for _ in range(20):
        PermissionPolicy(deny=["bash(rm **)"]).check("bash", {"command": "rm -rf x"})
    gc.collect()
    assert sum(type(o) is _native.Ruleset for o in gc.get_objects()) == before
