"""HookMatcher: tool names and globs like policy rules, MCP server names, path globs."""

from __future__ import annotations

import pytest

from codeward.hooks import HookContext, HookError, HookEvent, HookMatcher


def ctx(tool: str | None, paths=(), args=None, event=HookEvent.PRE_TOOL_USE) -> HookContext:
    return HookContext(event, tool=tool, paths=tuple(paths), args=args or {})


@pytest.mark.parametrize(
    ("pattern", "tool", "expected"),
    [
        (None, "bash", True),
        ("*", "anything", True),
        ("bash", "bash", True),
        ("Bash", "bash", True),
        ("bash", "BASH", True),
        ("bash", "bashx", False),
        ("write", "read", False),
        ("*_file", "read_file", True),
        ("mcp__github__*", "mcp__github__create_issue", True),
        ("mcp__github__*", "mcp__gitlab__create_issue", False),
        ("mcp__*__delete*", "mcp__fs__delete_file", True),
        ("mcp__*__delete*", "mcp__fs__read_file", False),
        ("mcp__github", "mcp__github__create_issue", True),
        ("mcp__github", "mcp__github", True),
        ("MCP__GitHub", "mcp__github__x", True),
        ("mcp__github", "mcp__githubx__x", False),
        ("mcp__github", "mcp__githubx", False),
        ("grep", "grep", True),
        ("grep", "search", False),
        ("search", "grep", True),
        ("glob", "bm25", False),
    ],
)
def test_tool_patterns(pattern, tool, expected):
    assert HookMatcher(tool=pattern).matches(ctx(tool)) is expected


def test_search_modes_follow_the_policy():
    grep_call = ctx("search", args={"mode": "grep", "query": "TODO"})
    assert HookMatcher(tool="grep").matches(grep_call)
    assert HookMatcher(tool="search").matches(grep_call)
    assert not HookMatcher(tool="glob").matches(grep_call)


def test_events_without_a_tool_match_only_tool_free_matchers():
    start = ctx(None, event=HookEvent.SESSION_START)
    assert HookMatcher().matches(start)
    assert HookMatcher(tool="*").matches(start)
    assert not HookMatcher(tool="bash").matches(start)
    assert not HookMatcher(path_pattern="**").matches(start)


@pytest.mark.parametrize(
    ("pattern", "paths", "expected"),
    [
        ("src/**", ["src/a/b.py"], True),
        ("src/**", ["docs/x.md", "src/y.rs"], True),  # any one path is enough
        ("src/**", ["docs/x.md"], False),
        ("src/**", [], False),  # no paths: never matches a path matcher
        ("*.py", ["a.py"], True),
        ("*.py", ["src/a.py"], False),  # a single star stops at a slash
        ("**/*.py", ["src/a.py"], True),
        ("**/.env", [".env"], True),
        ("src/**", ["./src/x"], True),  # paths are normalized before matching
        ("src/**", ["src/../etc/passwd"], False),
        (".git/**", [".git/config"], True),
        ("*", [""], False),
    ],
)
def test_path_patterns(pattern, paths, expected):
    assert HookMatcher(path_pattern=pattern).matches(ctx("write", paths)) is expected


def test_tool_and_path_must_both_match():
    matcher = HookMatcher(tool="write", path_pattern="src/**")
    assert matcher.matches(ctx("write", ["src/a"]))
    assert not matcher.matches(ctx("read", ["src/a"]))
    assert not matcher.matches(ctx("write", ["docs/a"]))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"tool": ""},
        {"tool": "ba sh"},
        {"tool": "bash(ls)"},
        {"tool": "bash\n"},
        {"tool": "bäsh"},
        {"tool": 3},
        {"tool": "a" * 5000},
        {"path_pattern": ""},
        {"path_pattern": "   "},
        {"path_pattern": "a\0b"},
        {"path_pattern": "/etc/**"},
        {"path_pattern": "./src/**"},
        {"path_pattern": "x" * 5000},
        {"path_pattern": ["src/**"]},
    ],
)
def test_invalid_matchers_raise_hook_error(kwargs):
    with pytest.raises(HookError):
        HookMatcher(**kwargs)
    assert issubclass(HookError, ValueError)
