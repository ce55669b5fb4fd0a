"""The credential boundary across the tools: hard links, package stores, home stores, races."""

from __future__ import annotations

import contextlib
import os
import threading

import pytest
from toolkit import call, put

from codeward.tools import (
    EditTool,
    ErrorKind,
    LsTool,
    PatchTool,
    ReadTool,
    SearchTool,
    ToolContext,
    WriteTool,
)
from codeward.workspace import Workspace

READ, WRITE, EDIT, PATCH, SEARCH = ReadTool(), WriteTool(), EditTool(), PatchTool(), SearchTool()


@pytest.mark.parametrize(
    "rel",
    [
        ".env",
        ".ENV.Local",
        "app/.envrc",
        ".netrc",
        "sub/.npmrc",
        ".pypirc",
        ".git-credentials",
        ".a3s/os-auth.json",
        ".codex/auth.json",
        ".claude/.credentials.json",
        ".claude.json",
        ".config/gh/hosts.yml",
        "sub/.Config/GH/hosts.yml",
    ],
)
def test_every_file_tool_refuses_credential_paths(root, ctx, recorder, rel):
    put(root, rel, "SECRET=1\n")
    results = [
        call(READ, ctx, file_path=rel),
        call(READ, ctx, file_path=rel, offset=1, limit=1),
        call(READ, ctx, files=[{"path": rel}]),
        call(WRITE, ctx, file_path=rel, content="x"),
        call(EDIT, ctx, file_path=rel, old_string="SECRET", new_string="X"),
        call(PATCH, ctx, patch=f"--- a/{rel}\n+++ b/{rel}\n@@ -1 +1 @@\n-SECRET=1\n+X\n"),
        call(SEARCH, ctx, mode="grep", query="SECRET", path=rel),
    ]
    for r in results:
        assert r.error_kind is ErrorKind.CREDENTIAL_BOUNDARY, r
        assert "SECRET=1" not in r.output
    assert (root / rel).read_text() == "SECRET=1\n" and recorder.entries == []


@pytest.mark.parametrize("rel", ["node_modules/x/.env", ".git/.envelope", "target/.env.test"])
def test_env_names_in_generated_trees_are_allowed(root, ctx, rel):
    put(root, rel, "A=1\n")
    assert call(READ, ctx, file_path=rel).success


def test_boundary_off_is_a_host_decision(root, recorder):
    put(root, ".env", "A=1\n")
    ctx = ToolContext(Workspace(root, credential_boundary=False), sandbox=None, recorder=recorder)  # type: ignore[arg-type]
    assert call(READ, ctx, file_path=".env").success
    assert "A=1" in call(SEARCH, ctx, mode="grep", query="A=").output


def test_hard_links_outside_package_stores_are_refused_before_any_change(root, ctx, recorder):
    put(root, "a.txt", "one\n")
    os.link(root / "a.txt", root / "b.txt")
    for r in (
        call(READ, ctx, file_path="b.txt"),
        call(WRITE, ctx, file_path="a.txt", content="two\n"),
        call(EDIT, ctx, file_path="b.txt", old_string="one", new_string="two"),
        call(PATCH, ctx, patch="--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+two\n"),
    ):
        assert r.error_kind is ErrorKind.PERMISSION_DENIED and "hard link" in r.output
    assert (root / "a.txt").read_text() == "one\n" and os.stat(root / "a.txt").st_nlink == 2
    assert recorder.entries == []
    r = call(SEARCH, ctx, mode="grep", query="one")
    assert r.output.startswith("No matches.") and r.metadata["omitted"] == 2


@pytest.mark.parametrize(
    "store",
    ["node_modules/left-pad", ".venv/lib/python3.11/site-packages/pkg", "target/debug/deps",
     ".pnpm-store/v3/files/00", "node_modules/.pnpm/pkg@1.0.0/node_modules/pkg"],
)  # fmt: skip
def test_package_store_hard_links_keep_working(root, ctx, store):
    put(root, f"{store}/index.js", "module.exports = 1\n")
    os.link(root / store / "index.js", root / store / "copy.js")
    rel = f"{store}/copy.js"
    assert call(READ, ctx, file_path=rel).success
    assert "module.exports" in call(SEARCH, ctx, mode="grep", query="exports", path=store).output
    r = call(EDIT, ctx, file_path=rel, old_string="1", new_string="2")
    assert r.success, r.output
    # the atomic rename gave copy.js its own inode: the store's file is untouched
    assert (root / store / "index.js").read_text() == "module.exports = 1\n"
    assert (root / rel).read_text() == "module.exports = 2\n"


def test_package_store_hard_link_to_a_credential_is_refused(root, ctx):
    put(root, ".env", "SECRET=1\n")
    os.makedirs(root / "node_modules/evil")
    os.link(root / ".env", root / "node_modules/evil/index.js")
    ctx.workspace._inodes_at = -1e9  # the inode cache is time-based
    r = call(READ, ctx, file_path="node_modules/evil/index.js")
    assert r.error_kind is ErrorKind.PERMISSION_DENIED and "credential" in r.output
    r = call(SEARCH, ctx, mode="grep", query="SECRET", path="node_modules")
    assert "SECRET=1" not in r.output and r.metadata["omitted"] == 1
    r = call(WRITE, ctx, file_path="node_modules/evil/index.js", content="x")
    assert r.error_kind is ErrorKind.PERMISSION_DENIED
    assert (root / ".env").read_text() == "SECRET=1\n"


def test_home_credential_stores_are_refused(tmp_path, monkeypatch, recorder):
    """A workspace that is (or contains) a home directory: its stores stay closed."""
    home = tmp_path / "home"
    put(home, ".ssh/id_ed25519", "KEY\n")
    put(home, ".config/gh/hosts.yml", "token: abc\n")
    put(home, ".docker/config.json", "{}\n")
    put(home, "project/main.py", "KEY = 1\n")
    monkeypatch.setenv("HOME", str(home))
    ctx = ToolContext(Workspace(home), sandbox=None, recorder=recorder)  # type: ignore[arg-type]
    for rel in (".ssh/id_ed25519", ".config/gh/hosts.yml", ".docker/config.json"):
        assert call(READ, ctx, file_path=rel).error_kind is ErrorKind.CREDENTIAL_BOUNDARY
    r = call(SEARCH, ctx, mode="grep", query="KEY|token")
    assert r.output.splitlines()[0] == "project/main.py:1:KEY = 1"
    assert "abc" not in r.output and r.metadata["omitted"] == 3
    assert call(LsTool(), ctx, path=".config").metadata["omitted"] == 1


def test_symlink_swap_race_never_reads_outside(root, ctx, tmp_path):
    """A thread flips d/ between a real directory and a symlink to outside while read runs."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text("OUTSIDE SECRET\n")
    stop = threading.Event()
    d = root / "d"

    def flip():
        while not stop.is_set():
            with contextlib.suppress(OSError):
                os.mkdir(d)
                (d / "f.txt").write_text("inside\n")
                os.unlink(d / "f.txt")
                os.rmdir(d)
                os.symlink(outside, d)
                os.unlink(d)

    t = threading.Thread(target=flip)
    t.start()
    seen = set()
    try:
        for _ in range(400):
            r = call(READ, ctx, file_path="d/f.txt")
            seen.add(r.error_kind)
            assert "OUTSIDE" not in r.output
            r = call(SEARCH, ctx, mode="grep", query="SECRET|inside")
            assert "OUTSIDE" not in r.output
    finally:
        stop.set()
        t.join()
    assert ErrorKind.PERMISSION_DENIED in seen or ErrorKind.NOT_FOUND in seen


def test_final_component_swapped_to_a_symlink_is_not_followed(root, ctx, tmp_path, monkeypatch):
    """The swap lands exactly between the walk and the open: O_NOFOLLOW refuses it."""
    secret = tmp_path / "secret.txt"
    secret.write_text("OUTSIDE\n")
    put(root, "f.txt", "inside\n")
    ws = ctx.workspace
    real_open_final = ws._open_final

    def swap_then_open(dirfd, name, *a, **kw):
        os.unlink(root / "f.txt")
        os.symlink(secret, root / "f.txt")
        return real_open_final(dirfd, name, *a, **kw)

    monkeypatch.setattr(ws, "_open_final", swap_then_open)
    r = call(READ, ctx, file_path="f.txt")
    assert r.error_kind is ErrorKind.PERMISSION_DENIED and "replaced by a symlink" in r.output
