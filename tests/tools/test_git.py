"""git: read-only, paged, option injection refused, credentials withheld, remotes redacted."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from toolkit import call, git, put

from codeward.tools import ErrorKind, GitTool
from codeward.tools._git import check_target, redact_url

GIT = GitTool()
SECRETS = ("first-secret", "second-secret", "third-secret", "local-secret")


def leaks(text: str) -> bool:
    return any(s in text for s in SECRETS)


@pytest.fixture
def repo(root):
    git(root, "init", "-q", "-b", "main")
    put(root, "app.py", "print('v1')\n")
    put(root, ".env", "API_KEY=first-secret\n")
    put(root, "docs/readme.md", "hello\n")
    put(root, ".aws/credentials", "aws_secret_access_key = local-secret\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "initial commit")
    put(root, "app.py", "print('v2')\n")
    put(root, ".env", "API_KEY=second-secret\n")
    put(root, "config/.env.local", "DB=local-secret\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "second commit")
    return root


def test_status_shows_changes_and_redacted_remotes(repo, ctx):
    put(repo, "app.py", "print('v3')\n")
    put(repo, "new.txt", "n\n")
    git(
        repo,
        "remote",
        "add",
        "origin",
        "https://alice:s3cret@github.com/org/repo.git?token=abc#frag",
    )
    git(repo, "remote", "set-url", "--push", "origin", "ssh://bob:pw@example.com:2222/repo.git")
    r = call(GIT, ctx, command="status")
    assert r.success, r.output
    assert "## main" in r.output and " M app.py" in r.output and "?? new.txt" in r.output
    assert "origin  https://github.com/org/repo.git" in r.output
    assert "origin  ssh://example.com:2222/repo.git  (push)" in r.output
    for leak in ("alice", "s3cret", "token", "abc", "frag", "bob", "pw@"):
        assert leak not in r.output


def test_diff_withholds_credential_content(repo, ctx):
    put(repo, "app.py", "print('v3')\n")
    put(repo, ".env", "API_KEY=third-secret\n")
    r = call(GIT, ctx, command="diff")
    assert r.success, r.output
    assert "-print('v2')\n+print('v3')" in r.output
    assert "diff --git a/.env b/.env\n[.env modified; its content is withheld" in r.output
    assert not leaks(r.output)
    r = call(GIT, ctx, command="diff", target="HEAD~1..HEAD")
    assert "+print('v2')" in r.output and "[config/.env.local added;" in r.output
    assert "first-secret" not in r.output and "second-secret" not in r.output
    assert "local-secret" not in r.output
    r = call(GIT, ctx, command="diff", target="HEAD~1...main")
    assert "+print('v2')" in r.output and "second-secret" not in r.output


def test_diff_of_a_hard_linked_worktree_file_is_withheld(repo, ctx, tmp_path):
    outside_secret = tmp_path / "id_rsa"
    outside_secret.write_text("PRIVATE KEY\n")
    os.unlink(repo / "docs/readme.md")
    os.link(outside_secret, repo / "docs/readme.md")
    r = call(GIT, ctx, command="diff")
    assert "PRIVATE KEY" not in r.output and "docs/readme.md modified" in r.output


def test_show_commit_and_file_content(repo, ctx):
    r = call(GIT, ctx, command="show")
    assert r.success and "second commit" in r.output and "+print('v2')" in r.output
    assert "second-secret" not in r.output and "[.env modified;" in r.output
    r = call(GIT, ctx, command="show", target="HEAD~1")
    assert "initial commit" in r.output and "[.env added;" in r.output
    assert "first-secret" not in r.output
    assert call(GIT, ctx, command="show", target="HEAD:app.py").output == "print('v2')\n"
    assert call(GIT, ctx, command="show", target="HEAD:docs").output.endswith("readme.md\n")


@pytest.mark.parametrize(
    "target",
    [
        "HEAD:.env",
        "HEAD~1:.env",
        ":.env",
        ":0:.env",
        "HEAD:./.env",
        "HEAD:docs/../.env",
        "HEAD:.ENV",
        "HEAD:config/.env.local",
        "main@{0}:.env",
        "HEAD:.aws",
        "HEAD:.aws/credentials",
    ],
)
def test_show_of_credential_content_is_refused(repo, ctx, target):
    r = call(GIT, ctx, command="show", target=target)
    assert not r.success and not leaks(r.output)
    assert r.error_kind in (ErrorKind.CREDENTIAL_BOUNDARY, ErrorKind.INVALID_ARGUMENT)


def test_show_of_a_bare_blob_id_is_refused(repo, ctx):
    blob = git(repo, "rev-parse", "HEAD:.env").strip()
    r = call(GIT, ctx, command="show", target=blob)
    assert r.error_kind is ErrorKind.PERMISSION_DENIED and "second-secret" not in r.output
    git(repo, "tag", "-a", "-m", "t", "blobtag", blob)
    r = call(GIT, ctx, command="show", target="blobtag")
    assert r.error_kind is ErrorKind.PERMISSION_DENIED and "second-secret" not in r.output


def test_diff_between_blobs_is_refused(repo, ctx):
    r = call(GIT, ctx, command="diff", target="HEAD~1:.env..HEAD:.env")
    assert r.error_kind is ErrorKind.INVALID_ARGUMENT and not leaks(r.output)


@pytest.mark.parametrize(
    "target",
    [
        "--output=/tmp/pwned",
        "-c",
        "-cdiff.external=touch",
        "--ext-diff",
        "HEAD..--output=x",
        "HEAD...-p",
        "HEAD --ext-diff",
        "HEAD:-x",
        "x--textconv",
        "HEAD\n--output=x",
        "HEAD\x00",
    ],
)
def test_option_injection_is_refused_before_git_runs(repo, ctx, target, tmp_path):
    for command in ("diff", "log", "show"):
        r = call(GIT, ctx, command=command, target=target)
        assert r.error_kind is ErrorKind.INVALID_ARGUMENT, (command, target)
    assert not (tmp_path / "pwned").exists()
    with pytest.raises(Exception, match=r"option|control"):
        check_target(target)


def test_repository_config_cannot_make_git_run_programs(repo, ctx, tmp_path):
    marker = tmp_path / "ran"
    for key in ("core.fsmonitor", "diff.external", "core.pager"):
        git(repo, "config", key, f"touch {marker}.{key}")
    git(repo, "config", "filter.evil.clean", f"touch {marker}.filter; cat")
    git(repo, "config", "filter.evil.required", "true")
    git(repo, "config", "diff.evil.textconv", f"touch {marker}.textconv; cat")
    put(repo, ".gitattributes", "*.py filter=evil diff=evil\n")
    put(repo, ".git/hooks/post-index-change", f"#!/bin/sh\ntouch {marker}.hook\n")
    os.chmod(repo / ".git/hooks/post-index-change", 0o755)
    put(repo, "app.py", "print('v9')\n")
    os.utime(repo / "app.py", (1, 1))
    for command, target in (("status", None), ("diff", None), ("log", None), ("show", None)):
        args = {"command": command} | ({"target": target} if target else {})
        r = call(GIT, ctx, **args)
        assert r.success, r.output
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("ran")) == []


def test_log_and_paging_by_bytes(repo, ctx):
    for i in range(30):
        put(repo, "app.py", f"print({i})\n")
        git(repo, "commit", "-qam", f"change number {i} ü")
    whole = call(GIT, ctx, command="log", max_bytes=1_000_000)
    assert whole.success and "change number 29 ü" in whole.output
    total = whole.metadata["total_bytes"]
    pages, offset = [], 0
    while True:
        r = call(GIT, ctx, command="log", max_bytes=777, byte_offset=offset)
        assert r.success and r.metadata["bytes"] <= 777
        text = r.output.split("\n[output continues")[0]
        pages.append(text)
        if "next_byte_offset" not in r.metadata:
            break
        offset = r.metadata["next_byte_offset"]
    assert "".join(pages) == whole.output and offset < total
    r = call(GIT, ctx, command="log", byte_offset=total + 10)
    assert r.error_kind is ErrorKind.INVALID_ARGUMENT


def test_errors(root, ctx, repo):
    assert call(GIT, ctx, command="log", target="nope").error_kind is ErrorKind.INVALID_ARGUMENT
    assert call(GIT, ctx, command="diff", target="nope").error_kind is ErrorKind.INVALID_ARGUMENT
    assert call(GIT, ctx, command="status", target="HEAD").error_kind is ErrorKind.INVALID_ARGUMENT
    assert call(GIT, ctx, command="push").error_kind is ErrorKind.INVALID_ARGUMENT
    assert call(GIT, ctx, command="log", max_bytes=0).error_kind is ErrorKind.INVALID_ARGUMENT


def test_no_repository_and_no_repository_above(tmp_path, ctx):
    """A workspace below a repository is not that repository: git never looks above the root."""
    from codeward.tools import ToolContext
    from codeward.workspace import Workspace

    git(tmp_path, "init", "-q")
    sub = tmp_path / "sub"
    sub.mkdir()
    sub_ctx = ToolContext(Workspace(sub), sandbox=ctx.sandbox)
    r = call(GIT, sub_ctx, command="status")
    assert r.error_kind is ErrorKind.TOOL_FAILED and "not a git repository" in r.output


def test_unborn_repository_diff(root, ctx):
    git(root, "init", "-q")
    put(root, "a.txt", "new\n")
    git(root, "add", "a.txt")
    r = call(GIT, ctx, command="diff")
    assert r.success and "+new" in r.output


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://user:pass@host.example/r.git", "https://host.example/r.git"),
        ("https://tok@host.example/r.git?access_token=x&a=b#f", "https://host.example/r.git"),
        ("http://[::1]:8080/r", "http://[::1]:8080/r"),
        ("git@github.com:org/repo.git", "github.com:org/repo.git"),
        ("/srv/git/repo.git", "/srv/git/repo.git"),
        ("file:///srv/repo?x=1", "file:///srv/repo"),
    ],
)
def test_redact_url(url, shown):
    assert redact_url(url) == shown


def test_paths_names_the_file_of_a_show():
    assert GIT.paths({"command": "show", "target": "HEAD:src/a.py"}) == ["src/a.py"]
    assert GIT.paths({"command": "diff", "target": "HEAD"}) == []


# -- plan never mutates; the permission policy reaches git's output ---------------------------


def _git_dir_state(root: Path) -> dict[str, tuple[int, int, bytes]]:
    state = {}
    for path in sorted((root / ".git").rglob("*")):
        if path.is_file():
            st = path.stat()
            state[str(path.relative_to(root))] = (st.st_mtime_ns, st.st_size, path.read_bytes())
    return state


def test_no_command_writes_the_index_even_when_a_tracked_file_is_stat_dirty(repo, ctx):
    git(repo, "status", "--short")  # settle the index the way a user's own git leaves it
    before = _git_dir_state(repo)
    os.utime(repo / "app.py", ns=(1, 1))  # the content is unchanged, its stat information is not
    put(repo, "docs/readme.md", "changed\n")
    for command, target in (
        ("diff", None),
        ("diff", "HEAD~1"),
        ("status", None),
        ("show", "HEAD"),
        ("show", "HEAD:app.py"),
        ("log", None),
    ):
        args = {"command": command} if target is None else {"command": command, "target": target}
        r = call(GIT, ctx, **args)
        assert r.success, (command, r.output)
        assert _git_dir_state(repo) == before, command
    r = call(GIT, ctx, command="diff")
    assert "+changed" in r.output and "app.py" not in r.output  # stat-only: no diff shown


def denying(*rules: str):
    from codeward.policy import Decision, PermissionPolicy

    policy = PermissionPolicy(deny=list(rules), default_decision="allow")

    def denied(relpath: str) -> str | None:
        if policy.check("read", {"file_path": relpath}) is Decision.DENY:
            return "the permission policy denies reading it"
        return None

    return denied


def test_a_read_deny_withholds_content_from_git(repo, ctx):
    put(repo, "docs/secret.md", "first\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "add a document")
    put(repo, "docs/secret.md", "TOPSECRET\n")
    ctx.read_denied = denying("read(docs/secret.md)")
    r = call(GIT, ctx, command="diff")
    assert r.success and "TOPSECRET" not in r.output
    assert "[docs/secret.md modified; its content is withheld: the permission policy" in r.output
    assert r.metadata["withheld_by_policy"] == 1
    r = call(GIT, ctx, command="show", target="HEAD")
    assert "+first" not in r.output and "docs/secret.md added; its content is withheld" in r.output
    for target in ("HEAD:docs/secret.md", "HEAD:./docs/secret.md", ":docs/secret.md"):
        r = call(GIT, ctx, command="show", target=target)
        assert r.error_kind is ErrorKind.PERMISSION_DENIED, target
        assert "first" not in r.output and "denies reading" in r.output
    # without a policy (a host-direct call) git shows it
    ctx.read_denied = None
    assert "TOPSECRET" in call(GIT, ctx, command="diff").output


def test_an_index_that_is_not_a_regular_file_is_not_copied(repo, ctx, tmp_path):
    outside = tmp_path / "host-file"
    outside.write_bytes(b"DIRC not really an index")
    os.unlink(repo / ".git" / "index")
    os.symlink(outside, repo / ".git" / "index")
    r = call(GIT, ctx, command="diff")
    assert r.error_kind is ErrorKind.TOOL_FAILED and "symbolic" in r.output
    os.unlink(repo / ".git" / "index")
    os.mkfifo(repo / ".git" / "index")
    r = call(GIT, ctx, command="status")  # never blocks on a FIFO
    assert r.error_kind is ErrorKind.TOOL_FAILED and "not a regular file" in r.output
