"""git: the tool reads only the workspace's own .git directory, whatever the workspace wrote.

Every repository here is built the way a sandboxed command (or a file tool
write) could build it; the host files outside the workspace must never show
in the tool's output, and nothing the repository configures may make host
git read a host path or run a program.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from toolkit import call, git, put

from codeward.tools import ErrorKind, GitTool
from codeward.tools._gitrun import private_index

GIT = GitTool()
HOST_SECRET = "host-only-secret-7c1f"


@pytest.fixture
def host_dir(tmp_path: Path) -> Path:
    """A host directory outside the workspace that no tool output may reveal."""
    d = tmp_path / "host"
    d.mkdir()
    (d / "key.txt").write_text(f"{HOST_SECRET}\n")
    (d / "host-listing-name").write_text("x\n")
    return d


def host_repo(host_dir: Path, content: str = f"{HOST_SECRET}\n") -> Path:
    """A repository outside the workspace with one commit of notes.txt."""
    outside = host_dir / "repo"
    git(host_dir, "init", "-q", "-b", "main", str(outside))
    put(outside, "notes.txt", content)
    git(outside, "add", "-A")
    git(outside, "commit", "-qm", "host commit")
    return outside


def revealed(text: str) -> bool:
    return HOST_SECRET in text or "host-listing-name" in text or "key.txt" in text


@pytest.fixture
def repo(root: Path) -> Path:
    git(root, "init", "-q", "-b", "main")
    put(root, "app.py", "print('v1')\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "initial commit")
    return root


def test_a_bare_repository_written_at_the_workspace_root_is_not_read(root, ctx, host_dir):
    """The reproduced attack: the sandbox's placeholder .git is an empty directory, the command
    ran `git init --bare .` in the workspace and pointed core.worktree at a host directory, and
    staged a host file so that diff would print it."""
    (root / ".git").mkdir()
    git(root, "init", "-q", "--bare", ".")
    git(root, "config", "core.bare", "false")
    git(root, "config", "core.worktree", str(host_dir))
    git(root, "hash-object", "-w", "/dev/null", env={"GIT_DIR": str(root)})
    git(
        root,
        "update-index",
        "--add",
        "--cacheinfo",
        "100644,e69de29bb2d1d6434b8b29ae775ad8c2e48c5391,key.txt",
        env={"GIT_DIR": str(root)},
    )
    for command in ("status", "diff", "log", "show"):
        r = call(GIT, ctx, command=command)
        assert not r.success, (command, r.output)
        assert "not a git repository" in r.output
        assert not revealed(r.output), (command, r.output)


def test_core_worktree_in_the_repository_is_ignored(repo, ctx, host_dir):
    git(repo, "config", "core.worktree", str(host_dir))
    git(repo, "config", "core.bare", "true")
    put(repo, "app.py", "print('v2')\n")
    r = call(GIT, ctx, command="status")
    assert r.success, r.output
    assert " M app.py" in r.output and not revealed(r.output)
    r = call(GIT, ctx, command="diff")
    assert r.success and "+print('v2')" in r.output and not revealed(r.output)


@pytest.mark.parametrize("kind", ["symlink", "gitfile", "fifo", "file"])
def test_a_dot_git_that_is_not_a_directory_is_refused(root, ctx, host_dir, kind):
    outside = host_dir / "repo"
    git(host_dir, "init", "-q", str(outside))
    put(outside, "key.txt", f"{HOST_SECRET}\n")
    dot_git = root / ".git"
    if kind == "symlink":
        dot_git.symlink_to(outside / ".git")
    elif kind == "gitfile":
        dot_git.write_text(f"gitdir: {outside / '.git'}\n")
    elif kind == "fifo":
        os.mkfifo(dot_git)
    else:
        dot_git.write_text("not a pointer\n")
    for command in ("status", "diff"):
        r = call(GIT, ctx, command=command)
        assert r.error_kind is ErrorKind.PERMISSION_DENIED, (kind, r.output)
        assert r.metadata.get("refused") is True
        assert not revealed(r.output)


def test_symlinked_parts_of_dot_git_are_refused(repo, ctx, host_dir):
    outside = host_dir / "repo"
    git(host_dir, "init", "-q", str(outside))
    os.rename(repo / ".git/objects", repo / ".git/objects.real")
    (repo / ".git/objects").symlink_to(outside / ".git/objects")
    r = call(GIT, ctx, command="log")
    assert r.error_kind is ErrorKind.PERMISSION_DENIED and "objects" in r.output


def test_a_commondir_pointing_elsewhere_is_refused(repo, ctx, host_dir):
    outside = host_repo(host_dir)
    (repo / ".git/commondir").write_text(f"{outside / '.git'}\n")
    for command, target in (("log", None), ("show", "HEAD:notes.txt")):
        args = {"command": command} | ({"target": target} if target else {})
        r = call(GIT, ctx, **args)
        assert r.error_kind is ErrorKind.PERMISSION_DENIED, r.output
        assert HOST_SECRET not in r.output and "host commit" not in r.output


def test_alternates_outside_the_repository_are_refused(repo, ctx, host_dir):
    outside = host_repo(host_dir)
    host_head = git(outside, "rev-parse", "HEAD").strip()
    (repo / ".git/objects/info/alternates").write_text(f"{outside / '.git/objects'}\n")
    r = call(GIT, ctx, command="show", target=f"{host_head}:notes.txt")
    assert r.error_kind is ErrorKind.PERMISSION_DENIED, r.output
    assert HOST_SECRET not in r.output
    # relative, and through a symlink inside .git: the same
    (repo / ".git/objects/info/alternates").write_text("../../../host/repo/.git/objects\n")
    assert call(GIT, ctx, command="log").error_kind is ErrorKind.PERMISSION_DENIED
    (repo / ".git/borrowed").symlink_to(outside / ".git/objects")
    (repo / ".git/objects/info/alternates").write_text(f"{repo / '.git/borrowed'}\n")
    assert call(GIT, ctx, command="log").error_kind is ErrorKind.PERMISSION_DENIED


def test_alternates_inside_the_repository_work(repo, ctx):
    store = repo / ".git/extra-objects"
    git(repo, "init", "-q", "--bare", str(repo / ".git/extra.git"))
    os.rename(repo / ".git/extra.git/objects", store)
    (repo / ".git/objects/info/alternates").write_text(f"{store}\n")
    r = call(GIT, ctx, command="log")
    assert r.success and "initial commit" in r.output


@pytest.mark.parametrize("key", ["include.path", "includeIf.gitdir:/.path"])
def test_configuration_that_includes_another_file_is_refused(repo, ctx, host_dir, key):
    included = host_dir / "included.config"
    included.write_text(f'[remote "leak"]\n\turl = https://{HOST_SECRET}.example/\n')
    git(repo, "config", key, str(included))
    r = call(GIT, ctx, command="status")
    assert r.error_kind is ErrorKind.PERMISSION_DENIED and "include" in r.output
    assert HOST_SECRET not in r.output


def test_configured_host_files_are_not_read(repo, ctx, host_dir):
    """Attributes, excludes, mailmap: each would make host git read a host path."""
    (host_dir / "attributes").write_text("* -diff\n")
    (host_dir / "excludes").write_text("*\n")
    (host_dir / "mailmap").write_text(f"{HOST_SECRET} <dev@example.com>\n")
    git(repo, "config", "core.attributesFile", str(host_dir / "attributes"))
    git(repo, "config", "core.excludesFile", str(host_dir / "excludes"))
    git(repo, "config", "mailmap.file", str(host_dir / "mailmap"))
    git(repo, "config", "log.mailmap", "true")
    put(repo, "app.py", "print('v2')\n")
    put(repo, "untracked.txt", "u\n")
    r = call(GIT, ctx, command="diff")
    assert r.success and "+print('v2')" in r.output and "Binary files" not in r.output
    r = call(GIT, ctx, command="status")
    assert r.success and "?? untracked.txt" in r.output
    r = call(GIT, ctx, command="log")
    assert r.success and "Author: Dev <dev@example.com>" in r.output
    assert HOST_SECRET not in r.output


def test_a_configured_fifo_never_blocks_the_tool(repo, ctx, host_dir):
    """core.excludesFile naming a FIFO would block host git on its open (or /dev/tty would read
    the user's terminal): the tool's runs name /dev/null instead and finish at once."""
    fifo = host_dir / "fifo"
    os.mkfifo(fifo)
    git(repo, "config", "core.excludesFile", str(fifo))
    git(repo, "config", "core.attributesFile", str(fifo))
    git(repo, "config", "mailmap.file", str(fifo))
    git(repo, "config", "diff.orderFile", str(fifo))
    done = threading.Event()
    results = []

    def run() -> None:
        for command in ("status", "diff", "log"):
            results.append(call(GIT, ctx, command=command))
        done.set()

    threading.Thread(target=run, daemon=True).start()
    if not done.wait(20):
        with open(fifo, "wb"):  # release the blocked git so the thread can end
            pass
        pytest.fail("the git tool blocked on a FIFO named by the repository configuration")
    assert all(r.success for r in results), [r.output for r in results]


def test_a_fifo_config_file_is_refused_without_blocking(repo, ctx):
    os.unlink(repo / ".git/config")
    os.mkfifo(repo / ".git/config")
    r = call(GIT, ctx, command="status")
    assert r.error_kind is ErrorKind.PERMISSION_DENIED and "regular file" in r.output


def test_submodule_gitdir_files_are_not_followed(repo, ctx, host_dir):
    """A nested checkout's `.git` file names a host repository; status never enters it."""
    outside = host_repo(host_dir, "a\n")
    head = git(outside, "rev-parse", "HEAD").strip()
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{head},sub")
    git(repo, "commit", "-qm", "add a gitlink")
    put(outside, "notes.txt", "changed\n")
    git(outside, "commit", "-qam", "another host commit")  # the host HEAD now differs
    (repo / "sub").mkdir()
    marker = host_dir / "ran"
    git(outside, "config", "core.fsmonitor", f"touch {marker}; true")
    (repo / "sub/.git").write_text(f"gitdir: {outside / '.git'}\n")
    for command in ("status", "diff"):
        r = call(GIT, ctx, command=command)
        assert r.success, r.output
        assert "sub" not in r.output.replace("## main", ""), r.output
    assert not marker.exists()


def test_the_private_index_keeps_the_index_s_time(repo, ctx):
    """git compares an entry's content only when the index file is not older than the entry
    ("racily clean": a file rewritten with the same size in the same clock tick as it was
    staged). With its own, later time, the tool's private copy of the index would make git
    trust the equal stat and miss such a change (seen as a rare `git diff` with no output);
    so the copy keeps the index's times."""
    index = repo / ".git" / "index"
    staged = (repo / "app.py").stat()
    os.utime(index, ns=(staged.st_atime_ns, staged.st_mtime_ns))  # staged in the same tick
    with private_index(ctx.workspace) as copy:
        assert os.stat(copy).st_mtime_ns == index.stat().st_mtime_ns
        assert Path(copy).read_bytes() == index.read_bytes()
