"""patch: unified diffs over several files, checked completely, applied all or nothing."""

from __future__ import annotations

import hashlib
import os
import subprocess

import pytest
from toolkit import call, put, temps

from codeward.tools import ErrorKind, PatchTool
from codeward.tools._diff import PatchError, apply_hunks, parse_patch
from codeward.workspace import _atomic

PATCH = PatchTool()

TWO_FILES = """\
diff --git a/src/a.py b/src/a.py
index 1111111..2222222 100644
--- a/src/a.py
+++ b/src/a.py
@@ -1,3 +1,3 @@
 def f():
-    return 1
+    return 2
 # end
--- /dev/null
+++ b/docs/new.md
@@ -0,0 +1,2 @@
+# New
+text
"""


def snapshot(root):
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            p = os.path.join(dirpath, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = fh.read()
    return out


def test_modify_and_create_and_record(root, ctx, recorder):
    put(root, "src/a.py", "def f():\n    return 1\n# end\n")
    r = call(PATCH, ctx, patch=TWO_FILES)
    assert r.success, r.output
    assert (root / "src/a.py").read_text() == "def f():\n    return 2\n# end\n"
    assert (root / "docs/new.md").read_text() == "# New\ntext\n"
    assert "M src/a.py (+1 -1)" in r.output and "A docs/new.md (+2 -0)" in r.output
    digest = hashlib.sha256(b"def f():\n    return 2\n# end\n").hexdigest()
    assert ("patch", "src/a.py", digest) in recorder.entries and len(recorder.entries) == 2
    assert temps(root) == []


def test_delete_and_rename(root, ctx, recorder):
    put(root, "old.txt", "a\nb\n")
    put(root, "gone.txt", "x\ny\n")
    patch = """\
diff --git a/old.txt b/renamed.txt
similarity index 70%
rename from old.txt
rename to renamed.txt
--- a/old.txt
+++ b/renamed.txt
@@ -1,2 +1,2 @@
 a
-b
+B
diff --git a/gone.txt b/gone.txt
deleted file mode 100644
--- a/gone.txt
+++ /dev/null
@@ -1,2 +0,0 @@
-x
-y
"""
    r = call(PATCH, ctx, patch=patch)
    assert r.success, r.output
    assert sorted(os.listdir(root)) == ["renamed.txt"]
    assert (root / "renamed.txt").read_text() == "a\nB\n"
    assert ("patch", "gone.txt", "deleted") in recorder.entries
    assert ("patch", "old.txt", "deleted") in recorder.entries


def test_a_pure_git_rename_moves_the_content(root, ctx):
    put(root, "a.txt", "keep\n")
    patch = (
        "diff --git a/a.txt b/b.txt\nsimilarity index 100%\nrename from a.txt\nrename to b.txt\n"
    )
    assert call(PATCH, ctx, patch=patch).success
    assert os.listdir(root) == ["b.txt"] and (root / "b.txt").read_text() == "keep\n"


def test_one_bad_hunk_changes_nothing(root, ctx, recorder):
    put(root, "src/a.py", "def f():\n    return 1\n# end\n")
    put(root, "b.txt", "one\ntwo\n")
    before = snapshot(root)
    bad = TWO_FILES + "--- a/b.txt\n+++ b/b.txt\n@@ -1,2 +1,2 @@\n one\n-TWO\n+2\n"
    r = call(PATCH, ctx, patch=bad)
    assert r.error_kind is ErrorKind.CONFLICT
    assert "hunk 1" in r.output and "'TWO'" in r.output and "no file was changed" in r.output
    assert snapshot(root) == before and recorder.entries == []
    assert not (root / "docs").exists()


def test_rename_failure_midway_restores_the_originals(root, ctx, recorder, monkeypatch):
    """The third rename fails: the two files already renamed get their originals back."""
    for name in ("a", "b", "c"):
        put(root, f"{name}.txt", f"{name}\n")
    before = snapshot(root)
    patch = "".join(
        f"--- a/{n}.txt\n+++ b/{n}.txt\n@@ -1 +1 @@\n-{n}\n+{n.upper()}\n" for n in "abc"
    )
    real_rename = os.rename
    calls = []

    def failing_rename(src, dst, **kw):
        calls.append(dst)
        if dst == "c.txt":
            raise OSError(28, "No space left on device")
        return real_rename(src, dst, **kw)

    monkeypatch.setattr(_atomic.os, "rename", failing_rename)
    r = call(PATCH, ctx, patch=patch)
    assert r.error_kind is ErrorKind.IO_ERROR and "No space left" in r.output
    assert "c.txt" in calls
    assert snapshot(root) == before and temps(root) == [] and recorder.entries == []


def test_offsets_are_found_and_reported(root, ctx):
    put(root, "f.txt", "".join(f"l{i}\n" for i in range(1, 21)))
    patch = "--- a/f.txt\n+++ b/f.txt\n@@ -2,3 +2,3 @@\n l10\n-l11\n+L11\n l12\n"
    r = call(PATCH, ctx, patch=patch)
    assert r.success and "offset +8" in r.output
    assert "L11\n" in (root / "f.txt").read_text()


@pytest.mark.parametrize(
    ("patch", "kind"),
    [
        ("not a diff at all", ErrorKind.INVALID_ARGUMENT),
        ("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n", ErrorKind.INVALID_ARGUMENT),  # short hunk
        ("--- a/x\n+++ b/x\n@@ garbage @@\n", ErrorKind.INVALID_ARGUMENT),
        ("--- a/x\n+++ b/x\nGIT binary patch\nliteral 0\n", ErrorKind.INVALID_ARGUMENT),
        ("--- a/.env\n+++ b/.env\n@@ -1 +1 @@\n-A=1\n+A=2\n", ErrorKind.CREDENTIAL_BOUNDARY),
        ("--- /dev/null\n+++ b/.env.prod\n@@ -0,0 +1 @@\n+A=1\n", ErrorKind.CREDENTIAL_BOUNDARY),
        ("--- a/../x\n+++ b/../x\n@@ -1 +1 @@\n-a\n+b\n", ErrorKind.PERMISSION_DENIED),
        ("--- a/missing\n+++ b/missing\n@@ -1 +1 @@\n-a\n+b\n", ErrorKind.NOT_FOUND),
        ("--- /dev/null\n+++ b/exists.txt\n@@ -0,0 +1 @@\n+new\n", ErrorKind.CONFLICT),
        (
            "--- a/exists.txt\n+++ b/exists.txt\n@@ -1 +1 @@\n-old\n+x\n"
            "--- a/exists.txt\n+++ b/exists.txt\n@@ -1 +1 @@\n-x\n+y\n",
            ErrorKind.INVALID_ARGUMENT,
        ),
        ("--- a/exists.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-other\n", ErrorKind.CONFLICT),
        ("diff --git a/exists.txt b/exists.txt\nold mode 100644\nnew mode 100755\n", None),
    ],
)
def test_errors_leave_everything_as_it_was(root, ctx, patch, kind):
    put(root, "exists.txt", "old\n")
    before = snapshot(root)
    r = call(PATCH, ctx, patch=patch)
    assert r.error_kind is (kind or ErrorKind.INVALID_ARGUMENT), r.output
    assert snapshot(root) == before


def test_patches_made_by_git_and_diff_apply(root, ctx, tmp_path):
    """Real tool output: git diff (with a no-newline end) and diff -u with timestamps."""
    old = "".join(f"line {i}\n" for i in range(1, 30))
    new = old.replace("line 3\n", "line three\n").replace("line 25\n", "") + "tail"
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text(old)
    b.write_text(new)
    gitdiff = subprocess.run(
        ["git", "diff", "--no-index", "--no-color", str(a), str(b)],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    assert "\\ No newline at end of file" in gitdiff
    text = gitdiff.replace(str(a).lstrip("/"), "f.txt").replace(str(b).lstrip("/"), "f.txt")
    put(root, "f.txt", old)
    r = call(PATCH, ctx, patch=text)
    assert r.success, r.output
    assert (root / "f.txt").read_text() == new
    unified = subprocess.run(
        ["diff", "-u", str(b), str(a)], capture_output=True, text=True, check=False
    ).stdout
    put(root, "g.txt", new)
    r = call(PATCH, ctx, patch=unified.replace(str(b), "g.txt").replace(str(a), "g.txt"))
    assert r.success, r.output
    assert (root / "g.txt").read_text() == old


def test_crlf_files_take_lf_patches(root, ctx):
    p = put(root, "w.txt", b"a\r\nb\r\nc\r\n")
    r = call(PATCH, ctx, patch="--- a/w.txt\n+++ b/w.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n")
    assert r.success and p.read_bytes() == b"a\r\nB\r\nc\r\n"


def test_paths_lists_both_sides():
    assert PATCH.paths({"patch": TWO_FILES}) == ["src/a.py", "docs/new.md"]
    assert PATCH.paths({"patch": "garbage"}) == []


def test_hunk_application_unit():
    (fp,) = parse_patch(
        "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n\\ No newline at end of file\n"
    )
    assert fp.hunks[0].old_no_eol is False and fp.hunks[0].new_no_eol
    assert apply_hunks("x", "a\nb\n", fp.hunks)[0] == "a\nc"
    (fp,) = parse_patch('--- "a/t\\303\\251st"\n+++ "b/t\\303\\251st"\n@@ -1 +1 @@\n-a\n+b\n')
    assert fp.old_path == "tést" == fp.new_path
    with pytest.raises(PatchError):
        apply_hunks("x", "z\n", fp.hunks)


DELETE_LINK_AS_DIFF = "--- a/link.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-one\n-two\n"
DELETE_LINK_AS_GIT = (
    "diff --git a/link.txt b/link.txt\ndeleted file mode 120000\nindex 1111111..0000000\n"
    "--- a/link.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-sub/target.txt\n"
    "\\ No newline at end of file\n"
)


@pytest.mark.parametrize("patch", [DELETE_LINK_AS_DIFF, DELETE_LINK_AS_GIT])
def test_deleting_a_symlink_removes_the_link_not_its_target(root, ctx, recorder, patch):
    """diff -u shows the content the link points to, git the link's text: either deletes it."""
    target = put(root, "sub/target.txt", "one\ntwo\n")
    os.symlink("sub/target.txt", root / "link.txt")
    r = call(PATCH, ctx, patch=patch)
    assert r.success, r.output
    assert not os.path.lexists(root / "link.txt")
    assert target.read_text() == "one\ntwo\n"
    assert recorder.entries == [("patch", "link.txt", "deleted")]
    assert temps(root) == []


def test_deleting_a_symlink_checks_its_content(root, ctx):
    put(root, "sub/target.txt", "one\ntwo\n")
    os.symlink("sub/target.txt", root / "link.txt")
    r = call(PATCH, ctx, patch="--- a/link.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-other\n")
    assert r.error_kind is ErrorKind.CONFLICT and "symbolic link" in r.output
    assert os.readlink(root / "link.txt") == "sub/target.txt"


def test_deleting_a_dangling_symlink_by_its_text(root, ctx):
    os.symlink("nowhere.txt", root / "dangling")
    patch = (
        "--- a/dangling\n+++ /dev/null\n@@ -1 +0,0 @@\n-nowhere.txt\n\\ No newline at end of file\n"
    )
    assert call(PATCH, ctx, patch=patch).success
    assert not os.path.lexists(root / "dangling")


def test_deleting_a_symlink_that_leads_outside_or_to_a_credential_is_refused(root, ctx, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("one\ntwo\n")
    os.symlink(outside, root / "link.txt")
    r = call(PATCH, ctx, patch=DELETE_LINK_AS_DIFF)
    assert r.error_kind is ErrorKind.PERMISSION_DENIED, r.output
    assert os.path.islink(root / "link.txt") and outside.read_text() == "one\ntwo\n"
    os.unlink(root / "link.txt")
    put(root, ".env", "one\ntwo\n")
    os.symlink(".env", root / "link.txt")
    r = call(PATCH, ctx, patch=DELETE_LINK_AS_DIFF)
    assert r.error_kind is ErrorKind.CREDENTIAL_BOUNDARY, r.output
    assert os.path.islink(root / "link.txt") and (root / ".env").read_text() == "one\ntwo\n"


def test_renaming_a_symlink_is_refused(root, ctx):
    put(root, "target.txt", "x\n")
    os.symlink("target.txt", root / "link.txt")
    patch = "diff --git a/link.txt b/moved.txt\nrename from link.txt\nrename to moved.txt\n"
    r = call(PATCH, ctx, patch=patch)
    assert r.error_kind is ErrorKind.INVALID_ARGUMENT and "symbolic link" in r.output
    assert os.readlink(root / "link.txt") == "target.txt" and not (root / "moved.txt").exists()


def test_batch_delete_of_a_symlink_swapped_in_after_the_read_fails(root, ws):
    """The deletion checks the name it removes: a file replaced by a link meanwhile is kept."""
    put(root, "a.txt", "a\n")
    st = os.lstat(root / "a.txt")
    put(root, "b.txt", "b\n")
    os.unlink(root / "a.txt")
    os.symlink("b.txt", root / "a.txt")
    with _atomic.AtomicBatch(ws) as batch, pytest.raises(_atomic.FileChanged):
        batch.delete("a.txt", expect=st)
    assert os.readlink(root / "a.txt") == "b.txt" and (root / "b.txt").read_text() == "b\n"
