"""write and edit: atomic, mode kept, parents created inside only, exact-match edits, the ledger."""

from __future__ import annotations

import hashlib
import os

import pytest
from toolkit import call, put, temps

from codeward.tools import EditTool, ErrorKind, WriteTool
from codeward.tools import _edit as edit_mod
from codeward.workspace import write_atomic

WRITE, EDIT = WriteTool(), EditTool()


def sha(data: str) -> str:
    return hashlib.sha256(data.encode()).hexdigest()


def test_write_creates_parents_and_records(root, ctx, recorder):
    r = call(WRITE, ctx, file_path="a/b/c.txt", content="héllo\n")
    assert r.success and (root / "a/b/c.txt").read_text() == "héllo\n"
    assert r.metadata["created"] and r.metadata["bytes"] == 7
    assert recorder.entries == [("write", "a/b/c.txt", sha("héllo\n"))]
    assert temps(root) == []


def test_write_replaces_and_keeps_mode(root, ctx):
    p = put(root, "run.sh", "old")
    os.chmod(p, 0o751)
    r = call(WRITE, ctx, file_path="run.sh", content="new")
    assert r.success and not r.metadata["created"] and "replaced" in r.output
    assert p.read_text() == "new" and os.stat(p).st_mode & 0o7777 == 0o751


def test_write_through_an_inside_symlink_writes_the_target(root, ctx):
    put(root, "real.txt", "old")
    os.symlink("real.txt", root / "link.txt")
    r = call(WRITE, ctx, file_path="link.txt", content="new")
    assert r.success and r.metadata["path"] == "real.txt"
    assert os.path.islink(root / "link.txt") and (root / "real.txt").read_text() == "new"


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("../escape.txt", ErrorKind.PERMISSION_DENIED),
        ("/etc/passwd", ErrorKind.PERMISSION_DENIED),
        ("~/x", ErrorKind.PERMISSION_DENIED),
        (".env", ErrorKind.CREDENTIAL_BOUNDARY),
        ("cfg/.npmrc", ErrorKind.CREDENTIAL_BOUNDARY),
        (".claude/.credentials.json", ErrorKind.CREDENTIAL_BOUNDARY),
        (".", ErrorKind.INVALID_ARGUMENT),
    ],
)
def test_write_refusals_touch_nothing(root, ctx, recorder, path, kind):
    before = sorted(os.listdir(root))
    r = call(WRITE, ctx, file_path=path, content="x")
    assert r.error_kind is kind and r.output.startswith("write: ")
    assert sorted(os.listdir(root)) == before and recorder.entries == []


def test_write_into_a_directory_and_through_an_outside_symlink(root, ctx, tmp_path):
    (root / "d").mkdir()
    assert call(WRITE, ctx, file_path="d", content="x").error_kind is ErrorKind.INVALID_ARGUMENT
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, root / "out")
    r = call(WRITE, ctx, file_path="out/new.txt", content="x")
    assert r.error_kind is ErrorKind.PERMISSION_DENIED and list(outside.iterdir()) == []
    put(root, "file", "x")
    r = call(WRITE, ctx, file_path="file/child", content="x")
    assert r.error_kind is ErrorKind.INVALID_ARGUMENT


def test_write_rejects_lone_surrogates(ctx):
    r = call(WRITE, ctx, file_path="a.txt", content="bad \udc80")
    assert r.error_kind is ErrorKind.INVALID_ARGUMENT and "surrogate" in r.output


def test_edit_replaces_exactly_once(root, ctx, recorder):
    p = put(root, "m.py", "a = 1\nb = 2\n")
    os.chmod(p, 0o640)
    r = call(EDIT, ctx, file_path="m.py", old_string="b = 2", new_string="b = 3")
    assert r.success and p.read_text() == "a = 1\nb = 3\n"
    assert os.stat(p).st_mode & 0o777 == 0o640
    assert recorder.entries == [("edit", "m.py", sha("a = 1\nb = 3\n"))]


def test_edit_conflicts_carry_the_match_count(root, ctx, recorder):
    p = put(root, "m.py", "x\nx\nx\n")
    r = call(EDIT, ctx, file_path="m.py", old_string="x", new_string="y")
    assert r.error_kind is ErrorKind.CONFLICT and r.metadata["match_count"] == 3
    assert "3 times" in r.output
    r = call(EDIT, ctx, file_path="m.py", old_string="zzz", new_string="y")
    assert r.error_kind is ErrorKind.CONFLICT and r.metadata["match_count"] == 0
    assert p.read_text() == "x\nx\nx\n" and recorder.entries == []
    r = call(EDIT, ctx, file_path="m.py", old_string="x", new_string="y", replace_all=True)
    assert r.success and r.metadata["replacements"] == 3 and p.read_text() == "y\ny\ny\n"


def test_edit_matches_lf_text_in_a_crlf_file(root, ctx):
    p = put(root, "w.txt", b"one\r\ntwo\r\nthree\r\n")
    r = call(EDIT, ctx, file_path="w.txt", old_string="one\ntwo", new_string="1\n2")
    assert r.success and p.read_bytes() == b"1\r\n2\r\nthree\r\n"


def test_edit_errors(root, ctx):
    put(root, "bin", b"\x00\x01\x02")
    put(root, "t.txt", "same")
    assert call(EDIT, ctx, file_path="nope", old_string="a", new_string="b").error_kind is (
        ErrorKind.NOT_FOUND
    )
    r = call(EDIT, ctx, file_path="bin", old_string="a", new_string="b")
    assert r.error_kind is ErrorKind.BINARY_FILE
    r = call(EDIT, ctx, file_path="t.txt", old_string="same", new_string="same")
    assert r.error_kind is ErrorKind.INVALID_ARGUMENT
    r = call(EDIT, ctx, file_path="t.txt", old_string="", new_string="x")
    assert r.error_kind is ErrorKind.INVALID_ARGUMENT
    put(root, ".env.local", "A=1")
    r = call(EDIT, ctx, file_path=".env.local", old_string="A", new_string="B")
    assert r.error_kind is ErrorKind.CREDENTIAL_BOUNDARY


def test_edit_refuses_when_the_file_changed_after_it_was_read(root, ctx, monkeypatch):
    """A concurrent writer's change is never overwritten by an edit computed from older text."""
    p = put(root, "f.txt", "alpha\n")
    real = edit_mod.write_atomic

    def racing(ws, path, data, **kw):
        write_atomic(ws, path, b"someone else\n")  # lands between the edit's read and write
        return real(ws, path, data, **kw)

    monkeypatch.setattr(edit_mod, "write_atomic", racing)
    r = call(EDIT, ctx, file_path="f.txt", old_string="alpha", new_string="beta")
    assert r.error_kind is ErrorKind.CONFLICT and "changed since it was read" in r.output
    assert p.read_text() == "someone else\n" and temps(root) == []
