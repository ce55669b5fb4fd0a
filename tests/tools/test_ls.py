"""ls: one directory, bounded, directories and links marked, credential entries counted only."""

from __future__ import annotations

import os

from toolkit import call, put

from codeward.tools import ErrorKind, LsTool
from codeward.tools import _ls as ls_mod

LS = LsTool()


def test_listing_marks_kinds_and_omits_credentials(root, ctx, tmp_path):
    put(root, "a.txt", "12345")
    (root / "dir").mkdir()
    os.symlink("dir", root / "dlink")
    os.symlink("/etc", root / "out")
    os.mkfifo(root / "pipe")
    put(root, ".env", "SECRET=1")
    put(root, ".aws/credentials", "x")
    put(root, ".netrc", "x")
    r = call(LS, ctx)
    assert r.output.splitlines() == [
        "a.txt  5",
        "dir/",
        "dlink@/",
        "out@",
        "pipe  (special file)",
        "[3 protected entries omitted by the credential boundary]",
    ]
    assert r.metadata["omitted"] == 3 and r.metadata["entries"] == 5


def test_subdirectory_and_errors(root, ctx):
    put(root, "src/x.py", "")
    assert call(LS, ctx, path="src").output == "x.py  0"
    assert call(LS, ctx, path="src").metadata["path"] == "src"
    put(root, "empty/.keep", "")
    os.unlink(root / "empty/.keep")
    assert call(LS, ctx, path="empty").output == "(empty directory)"
    assert call(LS, ctx, path="nope").error_kind is ErrorKind.NOT_FOUND
    assert call(LS, ctx, path="src/x.py").error_kind is ErrorKind.INVALID_ARGUMENT
    assert call(LS, ctx, path="..").error_kind is ErrorKind.PERMISSION_DENIED
    put(root, ".ssh/id_rsa", "")
    assert call(LS, ctx, path=".ssh").error_kind is ErrorKind.CREDENTIAL_BOUNDARY


def test_bounded(root, ctx, monkeypatch):
    monkeypatch.setattr(ls_mod, "MAX_ENTRIES", 3)
    for i in range(7):
        put(root, f"f{i}", "")
    r = call(LS, ctx)
    assert r.metadata["shown"] == 3 and r.metadata["truncated"]
    assert "showing 3 of 7 entries" in r.output


def test_hard_link_to_a_credential_is_omitted(root, ctx):
    put(root, ".env", "SECRET=1")
    os.makedirs(root / "node_modules/p")
    os.link(root / ".env", root / "node_modules/p/innocent.js")
    ctx.workspace._inodes_at = -1e9
    r = call(LS, ctx, path="node_modules/p")
    assert r.output.startswith("(empty directory)") and r.metadata["omitted"] == 1
