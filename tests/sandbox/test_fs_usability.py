"""Ordinary offline work succeeds inside the boundary, and its results land where expected.

The boundary is only worth having if normal development runs in it: the
interpreters and compilers, git on a nested repository and read-only git on a
protected top-level one, make, pipes, a stream socketpair, the usual device
files, and scratch space in $HOME/$TMPDIR that is gone once the run is over.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

PY = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else "python3"


def _needs(tool: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(shutil.which(tool) is None, reason=f"{tool} is not installed")


@pytest.fixture
def ws(fs_host_dir: Path) -> Path:
    path = fs_host_dir / "ws"
    path.mkdir()
    return path


def test_python_runs_and_writes_to_the_workspace(ws, fs, fs_sandbox):
    out = fs.run(
        fs_sandbox(ws),
        f'{PY} -c \'import json, sqlite3, ssl; open("out.json", "w").write(json.dumps([1]))\'',
    )
    assert out.exit_code == 0, out
    assert (ws / "out.json").read_text() == "[1]"


@_needs("node")
def test_node_runs(ws, fs, fs_sandbox):
    out = fs.run(
        fs_sandbox(ws),
        'node -e \'require("fs").writeFileSync("n.txt", String(6*7)); console.log("NODE-OK")\'',
    )
    assert out.exit_code == 0 and "NODE-OK" in out.stdout, out
    assert (ws / "n.txt").read_text() == "42"


GIT_ID = "-c user.name=t -c user.email=t@example.invalid"


@_needs("git")
def test_git_workflow_in_a_nested_repository(ws, fs, fs_sandbox):
    out = fs.run(
        fs_sandbox(ws),
        "set -e; mkdir proj; cd proj; git init -q -b main .; echo one > a.txt; git add a.txt; "
        f"git {GIT_ID} commit -q -m first; echo two >> a.txt; git status --short; "
        f"git diff --stat; git {GIT_ID} commit -qam second; git log --format=%s; echo GIT-OK",
    )
    assert out.exit_code == 0 and "GIT-OK" in out.stdout, out
    assert "second\nfirst" in out.stdout
    log = subprocess.run(
        ["git", "-C", str(ws / "proj"), "log", "--format=%s"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert log.stdout.split() == ["second", "first"]


@_needs("git")
def test_git_read_only_commands_work_on_the_protected_top_level_repository(ws, fs, fs_sandbox):
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(ws.parent)}
    for cmd in (
        ["init", "-q", "-b", "main", "."],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@x", "commit", "-q", "--allow-empty", "-m", "c1"],
    ):
        subprocess.run(["git", *cmd], cwd=ws, env=env, check=True, capture_output=True)
    (ws / "file.txt").write_text("changed\n")
    before = fs.snapshot(ws / ".git")
    out = fs.run(
        fs_sandbox(ws),
        "git status --short && git diff --stat HEAD && git log --oneline && "
        "git show --stat HEAD >/dev/null && git rev-parse HEAD && echo GIT-RO-OK",
    )
    assert out.exit_code == 0 and "GIT-RO-OK" in out.stdout, out
    assert "?? file.txt" in out.stdout and "c1" in out.stdout
    assert fs.diff(before, fs.snapshot(ws / ".git")) == []


@pytest.fixture(params=["rootfs", "tmp", "home"])
def main_repo_parent(request, fs_host_dir: Path, tmp_path: Path) -> Iterator[Path]:
    """Where the main repository of a worktree lives: on the root file system, in the
    host /tmp, or in the host HOME (the last two are replaced by a tmpfs inside)."""
    if request.param == "rootfs":
        yield fs_host_dir
    elif request.param == "tmp":
        yield tmp_path
    else:
        path = Path(os.path.expanduser("~")) / f".a3s-fs-test-{uuid.uuid4().hex[:10]}"
        path.mkdir()
        try:
            yield path
        finally:
            shutil.rmtree(path, ignore_errors=True)


@_needs("git")
def test_git_in_a_worktree_workspace(main_repo_parent, request, fs_host_dir, fs, fs_sandbox):
    """`git worktree add` elsewhere: the workspace's .git names a gitdir inside the main
    repository. No host path outside the workspace is mounted because of what the
    workspace holds, so git works inside where the read-only root shows that repository,
    and where a tmpfs hides it (the host /tmp, a home) the result says why it does not."""
    main = main_repo_parent / "main"
    main.mkdir()
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(fs_host_dir)}
    ident = ["-c", "user.name=t", "-c", "user.email=t@x"]
    for cmd in (
        ["init", "-q", "-b", "main", "."],
        [*ident, "commit", "-q", "--allow-empty", "-m", "c1"],
        ["worktree", "add", "-q", "-b", "wt", str(fs_host_dir / "wt")],
    ):
        subprocess.run(["git", *cmd], cwd=main, env=env, check=True, capture_output=True)
    before = fs.snapshot(main / ".git")
    out = fs.run(
        fs_sandbox(fs_host_dir / "wt"),
        "git status --short --branch && git log --oneline && echo WT-OK",
    )
    if request.node.callspec.params["main_repo_parent"] == "rootfs":
        assert out.exit_code == 0 and "WT-OK" in out.stdout and "## wt" in out.stdout, out
    else:
        assert out.exit_code != 0 and "WT-OK" not in out.stdout, out
        assert any("outside the workspace" in n for n in out.neutralized), out
    assert fs.diff(before, fs.snapshot(main / ".git")) == []


@_needs("make")
@_needs("cc")
def test_make_and_cc_build_and_run_hello_world(ws, fs, fs_sandbox):
    (ws / "hello.c").write_text(
        '#include <stdio.h>\nint main(void) { puts("hello from cc"); return 0; }\n'
    )
    (ws / "Makefile").write_text("hello: hello.c\n\tcc -O0 -o $@ $<\n")
    out = fs.run(fs_sandbox(ws), "make -s && ./hello", timeout_ms=60_000)
    assert out.exit_code == 0 and "hello from cc" in out.stdout, out
    assert (ws / "hello").is_file() and os.access(ws / "hello", os.X_OK)


def test_pipes_devices_and_stream_socketpair(ws, fs, fs_sandbox):
    script = (
        "import socket\n"
        "a, b = socket.socketpair()\n"
        "a.sendall(b'ping')\n"
        "assert b.recv(4) == b'ping'\n"
        "print('SOCKETPAIR-OK')\n"
    )
    (ws / "sp.py").write_text(script)
    out = fs.run(
        fs_sandbox(ws),
        "seq 1 1000 | sort -rn | head -1 | tr 0 X; "
        "echo gone > /dev/null && echo DEVNULL-OK; "
        "[ $(head -c 16 /dev/zero | tr -d '\\0' | wc -c) = 0 ] && echo ZERO-OK; "
        "[ $(head -c 32 /dev/urandom | wc -c) = 32 ] && echo URANDOM-OK; "
        f"{PY} sp.py",
    )
    for token in ("1XXX", "DEVNULL-OK", "ZERO-OK", "URANDOM-OK", "SOCKETPAIR-OK"):
        assert token in out.stdout, (token, out)


def test_scratch_home_and_tmpdir_are_writable_and_removed_afterwards(ws, fs, fs_sandbox):
    out = fs.run(
        fs_sandbox(ws),
        'echo "HOME=$HOME"; echo "TMPDIR=$TMPDIR"; '
        'echo h > "$HOME/h.txt" && mkdir -p "$HOME/.cache/x" && echo HOME-OK; '
        'f=$(mktemp) && echo t > "$f" && echo TMP-OK; '
        "echo t > /tmp/plain.txt && echo SLASH-TMP-OK; "
        'ln -s /etc "$HOME/etc-link"; mkdir -p "$HOME/ro" && chmod 000 "$HOME/ro"',
    )
    for token in ("HOME-OK", "TMP-OK", "SLASH-TMP-OK"):
        assert token in out.stdout, (token, out)
    home = out.stdout.split("HOME=", 1)[1].split("\n", 1)[0]
    tmpdir = out.stdout.split("TMPDIR=", 1)[1].split("\n", 1)[0]
    assert home.startswith("/") and tmpdir.startswith("/")
    assert not Path(home).is_relative_to(ws)
    assert not os.path.lexists(home), f"scratch {home} survives the run"
    assert not os.path.lexists(tmpdir), f"scratch {tmpdir} survives the run"
    assert not os.path.lexists(os.path.dirname(home)), "the run directory survives"
