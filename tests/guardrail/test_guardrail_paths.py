"""The path guardrail and the protected names, on real directories and symlinks."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from codeward.guardrail import (
    PROTECTED_NAMES,
    check_path,
    check_paths,
    is_protected_path,
)
from codeward.workspace import Workspace
from protectednames import ALL_PROTECTED


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A workspace with a file, a directory, and an outside directory next to it."""
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("x = 1\n")
    (root / "file.txt").write_text("hi\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret").write_text("s\n")
    return root


@pytest.fixture
def ws(tree: Path) -> Workspace:
    return Workspace(tree)


ESCAPES = [
    ("/etc/passwd", "path.outside_workspace"),
    ("/", "path.outside_workspace"),
    ("..", "path.outside_workspace"),
    ("../x", "path.outside_workspace"),
    ("a/../../x", "path.outside_workspace"),
    ("src/../../outside/secret", "path.outside_workspace"),
    ("~", "path.home"),
    ("~/x", "path.home"),
    ("~root/.ssh/id_rsa", "path.home"),
    ("$HOME/x", "path.home"),
    ("${HOME}/.bashrc", "path.home"),
    ("%USERPROFILE%\\x", "path.home"),
    ("C:\\Windows\\System32", "path.windows"),
    ("c:/x", "path.windows"),
    ("D:", "path.windows"),
    ("\\\\server\\share\\x", "path.windows"),
    ("//server/share", "path.windows"),
    ("", "path.invalid"),
    ("   ", "path.invalid"),
    ("a\x00b", "path.invalid"),
]


@pytest.mark.parametrize(("path", "rule"), ESCAPES)
def test_lexical_escapes(ws: Workspace, path: str, rule: str) -> None:
    hit = check_path(ws, path)
    assert hit is not None and hit.rule == rule, hit
    assert hit.fragment == path
    assert repr(path) in hit.message


def test_absolute_path_elsewhere_says_why(ws: Workspace, tree: Path) -> None:
    hit = check_path(ws, str(tree.parent / "outside" / "secret"))
    assert hit is not None and hit.rule == "path.outside_workspace"
    assert "outside the workspace" in hit.message


def test_not_a_string(ws: Workspace) -> None:
    hit = check_path(ws, 42)  # type: ignore[arg-type]
    assert hit is not None and hit.rule == "path.invalid"


@pytest.mark.parametrize(
    "path",
    [
        ".",
        "src",
        "src/a.py",
        "./src/../file.txt",
        "new/dir/file.txt",  # missing components are fine: a write may create them
        "file.txt/child",  # a file used as a directory: the tool will say so
        ".env",  # credential files are the credential boundary's business, not this one's
        "src/.env.local",
        ".git/config",
    ],
)
def test_inside_paths_pass(ws: Workspace, path: str) -> None:
    assert check_path(ws, path) is None


def test_absolute_path_inside_passes(ws: Workspace, tree: Path) -> None:
    assert check_path(ws, str(tree / "src" / "a.py")) is None
    assert check_path(ws, str(tree)) is None


def test_symlinks_that_stay_inside_pass(ws: Workspace, tree: Path) -> None:
    (tree / "lib").symlink_to("src")
    (tree / "abs").symlink_to(tree / "src")
    (tree / "src" / "up").symlink_to("..")
    (tree / "chain").symlink_to("lib")
    for path in ["lib/a.py", "abs/a.py", "src/up/file.txt", "chain/a.py", "lib/new.py", "lib"]:
        assert check_path(ws, path) is None, path


@pytest.mark.parametrize("relative", [False, True])
def test_symlink_out_as_the_final_component(ws: Workspace, tree: Path, relative: bool) -> None:
    target = "../outside/secret" if relative else str(tree.parent / "outside" / "secret")
    (tree / "leak").symlink_to(target)
    hit = check_path(ws, "leak")
    assert hit is not None and hit.rule == "path.symlink_escape"
    assert "symlink" in hit.message


def test_dangling_symlink_out_is_refused(ws: Workspace, tree: Path) -> None:
    (tree / "dangling").symlink_to(tree.parent / "outside" / "not-there-yet")
    hit = check_path(ws, "dangling")
    assert hit is not None and hit.rule == "path.symlink_escape"


@pytest.mark.parametrize(
    "path", ["out/secret", "out/missing", "out/missing/deeper/x", "src/../out/secret"]
)
def test_symlink_out_as_an_intermediate_component(ws: Workspace, tree: Path, path: str) -> None:
    """The walk goes component by component: a link leading out is reported even when a
    later component does not exist."""
    (tree / "out").symlink_to(tree.parent / "outside")
    hit = check_path(ws, path)
    assert hit is not None and hit.rule == "path.symlink_escape", path


def test_symlink_out_behind_a_symlink_inside(ws: Workspace, tree: Path) -> None:
    (tree / "src" / "out").symlink_to("../../outside")
    (tree / "hop").symlink_to("src/out")
    for path in ["hop/secret", "src/out/secret", "hop"]:
        hit = check_path(ws, path)
        assert hit is not None and hit.rule == "path.symlink_escape", path


def test_escape_is_found_before_a_missing_component(ws: Workspace, tree: Path) -> None:
    """``missing/out`` never reaches the link, ``out/missing`` does."""
    (tree / "out").symlink_to(tree.parent / "outside")
    assert check_path(ws, "missing/out/secret") is None
    assert check_path(ws, "out/missing") is not None


def test_escape_under_a_credential_name_is_still_reported(ws: Workspace, tree: Path) -> None:
    """The workspace refuses ``.env`` names before walking; the guardrail walks anyway."""
    (tree / "out").symlink_to(tree.parent / "outside")
    hit = check_path(ws, "out/.env")
    assert hit is not None and hit.rule == "path.symlink_escape"
    (tree / ".env").symlink_to(tree.parent / "outside" / "secret")
    hit = check_path(ws, ".env")
    assert hit is not None and hit.rule == "path.symlink_escape"
    assert check_path(ws, "src/.env") is None


def test_symlink_loop_fails_closed(ws: Workspace, tree: Path) -> None:
    (tree / "a").symlink_to("b")
    (tree / "b").symlink_to("a")
    hit = check_path(ws, "a/x")
    assert hit is not None and hit.rule == "path.symlink_loop"


def test_workspace_opened_through_a_symlink(tmp_path: Path, tree: Path) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(tree)
    ws = Workspace(alias)
    assert check_path(ws, str(alias / "src" / "a.py")) is None
    (tree / "back").symlink_to(alias / "src")
    assert check_path(ws, "back/a.py") is None


def test_check_paths_returns_the_first_hit(ws: Workspace) -> None:
    assert check_paths(ws, []) is None
    assert check_paths(ws, ["src/a.py", "file.txt"]) is None
    hit = check_paths(ws, ["src/a.py", "~/x", "/etc/passwd"])
    assert hit is not None and hit.rule == "path.home"


# -- protected names ---------------------------------------------------------------------------


def test_protected_names_are_the_documented_set() -> None:
    assert frozenset(ALL_PROTECTED) == PROTECTED_NAMES


def test_protected_names_are_the_one_list() -> None:
    from codeward import workspace
    from codeward.sandbox import _seatbelt
    from codeward.verification import _snapshot

    assert PROTECTED_NAMES is workspace.PROTECTED_NAMES
    assert _seatbelt.PROTECTED_NAMES is _snapshot.PROTECTED_NAMES is workspace.PROTECTED_NAMES


@pytest.mark.parametrize(
    "path",
    [
        *sorted(PROTECTED_NAMES),
        ".git/config",
        ".git/hooks/pre-commit",
        ".vscode/settings.json",
        ".claude/settings.json",
        "./.git/config",
        "src/../.git/HEAD",
        ".GIT/config",
        ".Git/hooks/x",
        ".MCP.JSON",
        ".BashRC",
        ".VSCode/tasks.json",
        ".git./config",  # Windows drops trailing dots
        ".git /config",  # ... and blanks
        ".g\u200bit/config",  # HFS+ ignores zero-width characters
        ".ba\u017fhrc",  # LATIN SMALL LETTER LONG S folds to s
    ],
)
def test_protected(ws: Workspace, path: str) -> None:
    assert is_protected_path(ws, path)


@pytest.mark.parametrize(
    "path",
    [".", "src/a.py", "src/.git/config", ".github/workflows/ci.yml", ".gitignore", "git", ".envrc"],
)
def test_not_protected(ws: Workspace, path: str) -> None:
    assert not is_protected_path(ws, path)


def test_absolute_protected_path(ws: Workspace, tree: Path) -> None:
    assert is_protected_path(ws, str(tree / ".git" / "config"))
    assert not is_protected_path(ws, str(tree / "src" / "a.py"))


def test_outside_paths_count_as_protected(ws: Workspace) -> None:
    assert is_protected_path(ws, "/etc/passwd")
    assert is_protected_path(ws, "../x")


def test_symlink_into_a_protected_name(ws: Workspace, tree: Path) -> None:
    (tree / ".git").mkdir()
    (tree / "hooks").symlink_to(".git/hooks")
    (tree / "cfg").symlink_to(tree / ".git" / "config")
    assert is_protected_path(ws, "hooks/pre-commit")
    assert is_protected_path(ws, "cfg")
    (tree / "leak").symlink_to(tree.parent / "outside")
    assert is_protected_path(ws, "leak/x")  # leads out: fail closed


def _worktree(tree: Path, gitdir: str) -> None:
    (tree / ".git").write_text(f"gitdir: {gitdir}\n")


def test_worktree_gitdir_inside_the_workspace(ws: Workspace, tree: Path) -> None:
    (tree / "repo.git" / "objects").mkdir(parents=True)
    _worktree(tree, "./repo.git")
    assert is_protected_path(ws, "repo.git/config")
    assert is_protected_path(ws, "repo.git/objects/ab")
    assert is_protected_path(ws, ".git")
    assert not is_protected_path(ws, "repo.gitx/config")
    assert not is_protected_path(ws, "src/a.py")


def test_worktree_gitdir_and_commondir(ws: Workspace, tree: Path) -> None:
    """``git worktree add`` layout kept inside one directory: gitdir/commondir -> ../.."""
    common = tree / "store"
    gitdir = common / "worktrees" / "wt"
    gitdir.mkdir(parents=True)
    (gitdir / "commondir").write_text("../..\n")
    _worktree(tree, str(gitdir))
    assert is_protected_path(ws, "store/worktrees/wt/HEAD")
    assert is_protected_path(ws, "store/refs/heads/main")  # the common dir
    assert not is_protected_path(ws, "src/a.py")


def test_worktree_gitdir_outside_the_workspace(ws: Workspace, tree: Path) -> None:
    outside_gitdir = tree.parent / "main" / ".git" / "worktrees" / "ws"
    outside_gitdir.mkdir(parents=True)
    _worktree(tree, str(outside_gitdir))
    assert is_protected_path(ws, str(outside_gitdir / "HEAD"))  # outside at all: protected
    assert check_path(ws, str(outside_gitdir / "HEAD")) is not None
    assert not is_protected_path(ws, "src/a.py")


def test_git_file_that_is_not_a_pointer(ws: Workspace, tree: Path) -> None:
    (tree / ".git").write_text("not a pointer\n")
    os.makedirs(tree / "x")
    assert is_protected_path(ws, ".git")
    assert not is_protected_path(ws, "x/y")


def test_a_fifo_where_a_git_pointer_is_read_does_not_hang(ws: Workspace, tree: Path) -> None:
    """The pointer files are workspace content: a FIFO there (made by a command) must not
    block the host's check, nor may it be followed."""
    (tree / "g").mkdir()
    os.mkfifo(tree / "g" / "commondir")
    _worktree(tree, "./g")
    done, unblocked = threading.Event(), threading.Event()

    def unblock() -> None:  # only if the check hangs on the FIFO: then the test fails
        if not done.wait(20):
            unblocked.set()
            with open(tree / "g" / "commondir", "w") as f:
                f.write("../src\n")

    threading.Thread(target=unblock, daemon=True).start()
    protected = is_protected_path(ws, "g/HEAD")
    done.set()
    assert protected and not unblocked.is_set()
