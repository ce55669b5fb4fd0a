"""The boundary of in-process file access: confinement, symlinks, credentials, hard links."""

from __future__ import annotations

import contextlib
import os
import threading

import pytest

from codeward._errors import (
    CredentialBoundaryError,
    DestinationExists,
    HardLinkRefused,
    PathOutsideWorkspace,
    WorkspaceError,
)
from codeward.workspace import AtomicWriter, Workspace, write_atomic


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    return Workspace(root)


@pytest.mark.parametrize(
    "path",
    [
        "/etc/passwd",
        "../x",
        "a/../../x",
        "~",
        "~/x",
        "~root/x",
        "$HOME/x",
        "${HOME}/x",
        "C:\\x",
        "c:/x",
        "\\\\server\\share",
        "//server/share",
        "%USERPROFILE%\\x",
    ],
)
def test_lexical_escapes_are_refused(ws, path):
    with pytest.raises(PathOutsideWorkspace):
        ws.parts(path)


@pytest.mark.parametrize("path", ["", "  ", "a\x00b"])
def test_impossible_paths(ws, path):
    with pytest.raises(WorkspaceError):
        ws.parts(path)


def test_paths_normalise_inside(ws):
    assert ws.parts("a/./b/../c") == ("a", "c")
    assert ws.parts(os.path.join(ws.root, "x/y")) == ("x", "y")
    assert ws.relpath(ws.root) == "."


@pytest.mark.parametrize(
    "rel",
    [
        ".env",
        ".env.local",
        "app/.ENV.production",
        ".envrc",
        "cfg/.netrc",
        ".npmrc",
        ".pypirc",
        ".git-credentials",
        ".a3s/os-auth.json",
        ".codex/auth.json",
        ".claude/.credentials.json",
        ".claude.json",
        "x/.ssh/id_rsa",
        ".aws/credentials",
        ".Env/x",
    ],
)
def test_credential_names_are_refused(ws, rel):
    with pytest.raises(CredentialBoundaryError):
        ws.resolve(rel)


@pytest.mark.parametrize(
    "rel", ["node_modules/x/.env", ".git/.envelope", "target/.env", "environment.py", "a.env"]
)
def test_lookalikes_and_exempt_trees_are_allowed(ws, rel):
    os.makedirs(os.path.join(ws.root, os.path.dirname(rel)), exist_ok=True)
    assert ws.resolve(rel).st is None


def test_boundary_off_allows_credential_names(tmp_path):
    ws = Workspace(tmp_path, credential_boundary=False)
    (tmp_path / ".env").write_text("A=1")
    fd, _ = ws.open_file(".env")
    os.close(fd)


def test_symlink_inside_is_followed_and_rechecked(ws):
    root = ws.root
    os.mkdir(os.path.join(root, "real"))
    with open(os.path.join(root, "real/f.txt"), "w") as f:
        f.write("hi")
    os.symlink("real", os.path.join(root, "alias"))
    fd, res = ws.open_file("alias/f.txt")
    assert os.read(fd, 10) == b"hi" and res.parts == ("real", "f.txt")
    os.close(fd)
    with open(os.path.join(root, ".env"), "w") as f:
        f.write("SECRET=1")
    os.symlink(".env", os.path.join(root, "notes.txt"))
    with pytest.raises(CredentialBoundaryError):
        ws.open_file("notes.txt")


@pytest.mark.parametrize("target", ["/etc", "../", "../../etc/passwd", "/"])
def test_symlinks_leading_out_are_refused(ws, target):
    os.symlink(target, os.path.join(ws.root, "out"))
    with pytest.raises(PathOutsideWorkspace):
        ws.open_file("out/passwd" if not target.endswith("passwd") else "out")
    with pytest.raises(PathOutsideWorkspace):
        write_atomic(ws, "out/new.txt", b"x")


def test_symlink_loop(ws):
    os.symlink("b", os.path.join(ws.root, "a"))
    os.symlink("a", os.path.join(ws.root, "b"))
    with pytest.raises(WorkspaceError, match="too many levels"):
        ws.open_file("a")


def test_hard_links_outside_package_stores_are_refused(ws):
    src = os.path.join(ws.root, "a.txt")
    with open(src, "w") as f:
        f.write("x")
    os.link(src, os.path.join(ws.root, "b.txt"))
    with pytest.raises(HardLinkRefused):
        ws.open_file("b.txt")
    with pytest.raises(HardLinkRefused):
        write_atomic(ws, "a.txt", b"y")
    assert _read(src) == "x"


def test_package_store_hard_links_work_unless_they_alias_a_credential(ws):
    store = os.path.join(ws.root, "node_modules", "pkg")
    os.makedirs(store)
    with open(os.path.join(store, "index.js"), "w") as f:
        f.write("1")
    os.link(os.path.join(store, "index.js"), os.path.join(store, "copy.js"))
    fd, _ = ws.open_file("node_modules/pkg/copy.js")
    os.close(fd)
    with open(os.path.join(ws.root, ".env"), "w") as f:
        f.write("SECRET=1")
    os.link(os.path.join(ws.root, ".env"), os.path.join(store, "leak.js"))
    ws._inodes_at = -1e9  # the cache is time-based; do not wait for it
    with pytest.raises(HardLinkRefused, match="credential"):
        ws.open_file("node_modules/pkg/leak.js")


def test_atomic_write_keeps_mode_and_creates_parents(ws):
    path = os.path.join(ws.root, "run.sh")
    with open(path, "w") as f:
        f.write("old")
    os.chmod(path, 0o750)
    res = write_atomic(ws, "run.sh", b"new")
    assert res.overwritten and _read(path) == "new" and os.stat(path).st_mode & 0o7777 == 0o750
    res = write_atomic(ws, "deep/er/file.txt", b"x")
    assert res.relpath == "deep/er/file.txt" and not res.overwritten
    assert not [n for n in os.listdir(ws.root) if n.endswith(".a3s-tmp")]


def test_no_clobber_even_when_the_file_appears_during_the_write(ws):
    with pytest.raises(DestinationExists):
        write_atomic(ws, "x", b"1") and write_atomic(ws, "x", b"2", overwrite=False)
    with AtomicWriter(ws, "late.txt", overwrite=False) as w:
        w.write(b"mine")
        with open(os.path.join(ws.root, "late.txt"), "w") as f:
            f.write("theirs")
        with pytest.raises(DestinationExists):
            w.commit()
    assert _read(os.path.join(ws.root, "late.txt")) == "theirs"
    assert not [n for n in os.listdir(ws.root) if n.endswith(".a3s-tmp")]


def test_failure_mid_write_leaves_destination_untouched(ws):
    path = os.path.join(ws.root, "keep.txt")
    with open(path, "w") as f:
        f.write("original")
    with pytest.raises(RuntimeError), AtomicWriter(ws, "keep.txt") as w:
        w.write(b"half")
        raise RuntimeError("boom")
    assert _read(path) == "original"
    assert os.listdir(ws.root) == ["keep.txt"]


def test_symlink_swap_race_never_redirects_a_write_outside(ws, tmp_path):
    """A thread flips a directory and a symlink to outside during writes; nothing lands outside."""
    outside = tmp_path / "outside"
    outside.mkdir()
    root = ws.root
    stop = threading.Event()

    def flip():
        d = os.path.join(root, "d")
        while not stop.is_set():
            try:
                os.mkdir(d)
                os.rmdir(d)
                os.symlink(str(outside), d)
                os.unlink(d)
            except OSError:
                pass

    t = threading.Thread(target=flip)
    t.start()
    try:
        for i in range(300):
            with contextlib.suppress(OSError, WorkspaceError):
                write_atomic(ws, f"d/f{i}", b"x", create_parents=False)
    finally:
        stop.set()
        t.join()
    assert list(outside.iterdir()) == []


def _read(path):
    with open(path) as f:
        return f.read()
