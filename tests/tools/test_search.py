"""search: grep and glob, .gitignore, bounded output, credential omission (counted, never named)."""

from __future__ import annotations

import os

import pytest
from toolkit import call, put

from codeward.tools import ErrorKind, SearchTool
from codeward.tools import _search as search_mod
from codeward.tools._gitignore import IgnoreRules, parse_rules
from codeward.tools._pattern import TIME_LIMITED

SEARCH = SearchTool()


def grep(ctx, query, **kw):
    return call(SEARCH, ctx, mode="grep", query=query, **kw)


def glob(ctx, query, **kw):
    return call(SEARCH, ctx, mode="glob", query=query, **kw)


@pytest.fixture
def tree(root):
    put(root, "src/app.py", "import os\nTOKEN = os.environ['TOKEN']\n")
    put(root, "src/util/helpers.py", "def token():\n    return 'TOKEN'\n")
    put(root, "README.md", "Set TOKEN in .env\n")
    put(root, ".env", "TOKEN=hunter2\n")
    put(root, "config/.env.production", "TOKEN=prod-secret\n")
    put(root, ".ssh/id_rsa", "TOKEN private key\n")
    put(root, ".npmrc", "//registry/:_authToken=TOKEN-npm\n")
    put(root, ".git/config", "TOKEN in git\n")
    put(root, "node_modules/pkg/.env", "TOKEN=allowed-in-node-modules\n")
    put(root, ".gitignore", "node_modules/\n*.log\n")
    put(root, "debug.log", "TOKEN in a log\n")
    put(root, "img.png", b"\x89PNG\x00\x00TOKEN")
    return root


def test_grep_finds_lines_and_omits_credentials(ctx, tree):
    r = grep(ctx, "TOKEN")
    lines = r.output.splitlines()
    assert lines[:4] == [
        "README.md:1:Set TOKEN in .env",
        "src/app.py:2:TOKEN = os.environ['TOKEN']",
        "src/util/helpers.py:2:    return 'TOKEN'",
        "[4 protected entries (credential files or directories, or hard links to them) "
        "omitted by the credential boundary]",
    ]
    for secret in ("hunter2", "prod-secret", "private key", "TOKEN-npm", ".npmrc", "id_rsa"):
        assert secret not in r.output
    assert "in git" not in r.output and "in a log" not in r.output  # .git and .gitignore
    assert "allowed-in-node-modules" not in r.output  # ignored, not a credential
    m = r.metadata
    assert (m["matches"], m["files_with_matches"], m["omitted"], m["skipped_binary"]) == (
        3,
        3,
        4,
        1,
    )


def test_grep_regex_features_and_single_file(ctx, tree):
    r = grep(ctx, r"^def \w+\(\):$")
    assert r.output.splitlines()[0] == "src/util/helpers.py:1:def token():"
    r = grep(ctx, "(?i)import OS", path="src/app.py")
    assert r.output == "src/app.py:1:import os"
    assert grep(ctx, "nothing-matches-this").output.startswith("No matches.")


def test_grep_explicit_credential_path_is_a_refusal(ctx, tree):
    assert grep(ctx, "x", path=".env").error_kind is ErrorKind.CREDENTIAL_BOUNDARY
    assert grep(ctx, "x", path=".ssh").error_kind is ErrorKind.CREDENTIAL_BOUNDARY
    assert grep(ctx, "x", path="../").error_kind is ErrorKind.PERMISSION_DENIED
    assert grep(ctx, "x", path="nope").error_kind is ErrorKind.NOT_FOUND


def test_explicit_path_into_an_ignored_tree_is_searched(ctx, tree):
    r = grep(ctx, "TOKEN", path="node_modules")
    assert "node_modules/pkg/.env:1:TOKEN=allowed-in-node-modules" in r.output


def test_grep_output_is_bounded(root, ctx, monkeypatch):
    monkeypatch.setattr(search_mod, "MAX_MATCHES", 5)
    put(root, "many.txt", "hit\n" * 50)
    r = grep(ctx, "hit")
    assert r.metadata["matches"] == 5 and r.metadata["truncated"]
    assert "output stopped at 5 matching lines" in r.output
    monkeypatch.setattr(search_mod, "MAX_LINE_CHARS", 10)
    put(root, "many.txt", "hit" + "x" * 1000 + "\n")
    assert grep(ctx, "hit").output.startswith("many.txt:1:hitxxxxxxx [… line cut]")


def test_grep_skips_large_files(root, ctx, monkeypatch):
    monkeypatch.setattr(search_mod, "MAX_FILE_BYTES", 100)
    put(root, "big.txt", "needle\n" * 100)
    r = grep(ctx, "needle")
    assert r.metadata["skipped_large"] == 1 and "over" in r.output


def test_grep_invalid_regex(ctx):
    r = grep(ctx, "(unclosed")
    assert r.error_kind is ErrorKind.INVALID_ARGUMENT and "invalid regular expression" in r.output


@pytest.mark.skipif(not TIME_LIMITED, reason="needs the regex module's timeout")
def test_catastrophic_backtracking_ends_in_a_timeout(root, ctx, monkeypatch):
    monkeypatch.setattr(search_mod, "TIME_LIMIT_S", 0.3)
    put(root, "evil.txt", "a" * 40 + "!\n")
    r = grep(ctx, r"^(a|aa)+$")
    assert r.error_kind is ErrorKind.TIMEOUT and "backtrack" in r.output


def test_glob_matches_relative_to_path_and_omits_credentials(ctx, tree):
    r = glob(ctx, "**/*.py")
    assert r.output.splitlines()[:2] == ["src/app.py", "src/util/helpers.py"]
    r = glob(ctx, "*.py", path="src")
    assert r.output.splitlines()[0] == "src/app.py"
    r = glob(ctx, "**/.env*")
    assert r.output.startswith("No matches.") and r.metadata["omitted"] == 4
    assert "production" not in r.output and ".ssh" not in r.output
    r = glob(ctx, "src/**")
    assert r.output.splitlines()[:3] == ["src/app.py", "src/util/", "src/util/helpers.py"]


def test_glob_literal_prefix_reaches_into_ignored_trees(ctx, tree):
    r = glob(ctx, "node_modules/**")
    assert r.output.splitlines()[0] == "node_modules/pkg/"
    assert "node_modules/pkg/.env" in r.output  # not a credential there (a package's file)


def test_glob_bounded_and_errors(root, ctx, monkeypatch):
    monkeypatch.setattr(search_mod, "MAX_RESULTS", 3)
    for i in range(10):
        put(root, f"f{i}.txt", "")
    r = glob(ctx, "*.txt")
    assert r.metadata["matches"] == 3 and "output stopped at 3 paths" in r.output
    assert glob(ctx, "/etc/*").error_kind is ErrorKind.INVALID_ARGUMENT
    assert glob(ctx, "*", path="f1.txt").error_kind is ErrorKind.INVALID_ARGUMENT
    assert glob(ctx, "nothing/here/*").output.startswith("No matches.")


def test_symlinks_are_not_followed_and_outside_ones_not_listed(root, ctx, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("needle outside\n")
    os.symlink(outside, root / "out")
    put(root, "in.txt", "needle inside\n")
    os.symlink("in.txt", root / "alias.txt")
    os.symlink(".env", root / "env-link")
    put(root, ".env", "needle secret\n")
    r = grep(ctx, "needle")
    assert r.output.splitlines()[0] == "in.txt:1:needle inside"
    assert "outside" not in r.output and "secret" not in r.output
    names = glob(ctx, "*").output.splitlines()
    assert "alias.txt" in names and "in.txt" in names
    assert "out" not in names and "out/" not in names and "env-link" not in names


def test_gitignore_rules():
    rules = IgnoreRules()
    rules.add((), parse_rules("*.log\n!keep.log\nbuild/\n/top\ndoc/*.txt\n**/gen\na/**/z\n\\#x\n"))
    rules.add(("sub",), parse_rules("!*.log\nlocal\n"))
    cases = {
        (("x.log",), False): True,
        (("keep.log",), False): False,
        (("d", "x.log"), False): True,
        (("sub", "x.log"), False): False,  # deeper file re-includes
        (("build",), True): True,
        (("build",), False): False,  # directory-only
        (("top",), False): True,
        (("d", "top"), False): False,  # anchored
        (("doc", "a.txt"), False): True,
        (("doc", "x", "a.txt"), False): False,
        (("p", "q", "gen"), True): True,
        (("a", "z"), False): True,
        (("a", "b", "c", "z"), False): True,
        (("#x",), False): True,
        (("sub", "local"), False): True,
        (("local",), False): False,
    }
    for (parts, is_dir), expected in cases.items():
        assert rules.ignored(parts, is_dir) is expected, parts


def test_nested_gitignore_and_info_exclude(root, ctx):
    put(root, "pkg/.gitignore", "generated.py\n")
    put(root, "pkg/generated.py", "needle\n")
    put(root, "pkg/real.py", "needle\n")
    put(root, "generated.py", "needle\n")  # the nested rule does not reach up
    put(root, ".git/info/exclude", "excluded.txt\n")
    put(root, "excluded.txt", "needle\n")
    r = grep(ctx, "needle")
    assert r.output.splitlines()[:2] == ["generated.py:1:needle", "pkg/real.py:1:needle"]
    assert r.metadata["ignored"] == 2


def test_paths():
    assert SEARCH.paths({"mode": "grep", "query": "x"}) == ["."]
    assert SEARCH.paths({"mode": "glob", "query": "x", "path": "src"}) == ["src"]
