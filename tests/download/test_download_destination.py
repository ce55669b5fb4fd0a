"""The destination: below the workspace, no symlink, no credential, no clobbering, no leftovers."""

from __future__ import annotations

import os
import threading

import pytest
from dlserver import leftovers, send_head, serve_file

from codeward.download import Cancelled, DestinationRejected, download
from codeward.workspace import Workspace

DATA = os.urandom(200_000)


def _read(ws, rel):
    with open(os.path.join(ws.root, rel), "rb") as f:
        return f.read()


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("../escape.bin", "outside"),
        ("a/../../escape.bin", "outside"),
        ("/etc/passwd", "invalid"),
        ("/tmp/x", "invalid"),
        ("~/x", "outside"),
        ("C:\\x", "outside"),
        ("sub/", "invalid"),
        (".", "invalid"),
        ("", "invalid"),
        ("a\x00b", "invalid"),
        (".env", "credential"),
        ("conf/.env.production", "credential"),
        (".npmrc", "credential"),
        (".git-credentials", "credential"),
        (".ssh/id_rsa", "credential"),
    ],
)
def test_refused_destinations_cost_no_request(fetch, origin, net, path, reason, ws):
    origin["/f"] = serve_file(DATA)
    with pytest.raises(DestinationRejected) as info:
        fetch("http://dl.example.com/f", path)
    assert info.value.reason == reason
    assert net.dialed == [] and origin.requests == [] and leftovers(ws) == []


def test_symlinked_parent_inside_the_workspace_is_refused(fetch, origin, ws, net):
    os.mkdir(os.path.join(ws.root, "real"))
    os.symlink("real", os.path.join(ws.root, "link"))
    origin["/f"] = serve_file(DATA)
    with pytest.raises(DestinationRejected) as info:
        fetch("http://dl.example.com/f", "link/f.bin")
    assert info.value.reason == "symlink"
    assert os.listdir(os.path.join(ws.root, "real")) == [] and net.dialed == []


def test_symlinked_parent_leading_outside_is_refused(fetch, origin, ws, tmp_path, net):
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, os.path.join(ws.root, "out"))
    with pytest.raises(DestinationRejected) as info:
        fetch("http://dl.example.com/f", "out/f.bin")
    assert info.value.reason == "outside"
    assert list(outside.iterdir()) == [] and net.dialed == []


def test_symlink_as_the_final_name_is_refused(fetch, origin, ws, tmp_path):
    target = tmp_path / "victim"
    target.write_bytes(b"keep")
    os.symlink(target, os.path.join(ws.root, "f.bin"))
    os.symlink("inside.txt", os.path.join(ws.root, "g.bin"))
    origin["/f"] = serve_file(DATA)
    for name in ("f.bin", "g.bin"):
        with pytest.raises(DestinationRejected):
            fetch("http://dl.example.com/f", name, overwrite=True)
    assert target.read_bytes() == b"keep"
    assert os.path.islink(os.path.join(ws.root, "f.bin"))


def test_existing_file_is_kept_unless_overwrite(fetch, origin, ws, net):
    origin["/f"] = serve_file(DATA)
    with open(os.path.join(ws.root, "out.bin"), "wb") as f:
        f.write(b"old")
    with pytest.raises(DestinationRejected) as info:
        fetch("http://dl.example.com/f")
    assert info.value.reason == "exists" and net.dialed == []
    assert _read(ws, "out.bin") == b"old"
    result = fetch("http://dl.example.com/f", overwrite=True)
    assert result.overwritten and _read(ws, "out.bin") == DATA
    assert leftovers(ws) == []


def test_hard_linked_destination_is_refused(fetch, origin, ws):
    origin["/f"] = serve_file(DATA)
    path = os.path.join(ws.root, "out.bin")
    with open(path, "wb") as f:
        f.write(b"old")
    os.link(path, os.path.join(ws.root, "alias"))
    with pytest.raises(DestinationRejected) as info:
        fetch("http://dl.example.com/f", overwrite=True)
    assert info.value.reason == "links" and _read(ws, "out.bin") == b"old"


@pytest.mark.parametrize("connections", [1, 4])
def test_destination_created_mid_download_is_not_clobbered(fetch, origin, ws, connections):
    def handler(req, conn):
        send_head(conn, 200, [("Content-Length", str(len(DATA)))])
        conn.sendall(DATA[:1000])
        with open(os.path.join(ws.root, "out.bin"), "wb") as f:  # someone else wins the name
            f.write(b"theirs")
        conn.sendall(DATA[1000:])

    origin["/f"] = handler
    with pytest.raises(DestinationRejected) as info:
        fetch("http://dl.example.com/f", connections=connections)
    assert info.value.reason == "exists"
    assert _read(ws, "out.bin") == b"theirs" and leftovers(ws) == []


def test_parents_are_created_and_the_credential_boundary_can_be_lifted(fetch, origin, tmp_path):
    root = tmp_path / "open"
    root.mkdir()
    origin["/f"] = serve_file(DATA)
    open_ws = Workspace(root, credential_boundary=False)
    result = fetch("http://dl.example.com/f", "deep/er/.env", workspace=open_ws)
    assert result.file_path == "deep/er/.env" and (root / "deep/er/.env").read_bytes() == DATA


def test_workspace_given_as_a_path(origin, net, tmp_path):
    origin["/f"] = serve_file(DATA)
    result = download(
        "http://dl.example.com/f",
        "x.bin",
        workspace=str(tmp_path),
        resolver=net.resolver,
        dialer=net.dialer,
    )
    assert (tmp_path / "x.bin").read_bytes() == DATA and result.file_path == "x.bin"


def test_cancel_mid_body(fetch, origin, ws):
    cancel = threading.Event()
    release = threading.Event()

    def handler(req, conn):
        send_head(conn, 200, [("Content-Length", str(len(DATA)))])
        conn.sendall(DATA[:5000])
        cancel.set()
        release.wait(10)

    origin["/f"] = handler
    try:
        with pytest.raises(Cancelled):
            fetch("http://dl.example.com/f", cancel=cancel, connections=1)
    finally:
        release.set()
    assert not os.path.exists(os.path.join(ws.root, "out.bin")) and leftovers(ws) == []


def test_cancel_before_start(fetch, origin, net, ws):
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(Cancelled):
        fetch("http://dl.example.com/f", cancel=cancel)
    assert net.dialed == [] and leftovers(ws) == []


def test_cancel_after_the_body_but_before_the_commit(fetch, origin, ws):
    class LateCancel:
        """Reports cancelled only once the body is complete (the last check before commit)."""

        calls = 0

        def is_set(self) -> bool:
            return len(origin.requests) > 0 and _temp_size(ws) == len(DATA)

    origin["/f"] = serve_file(DATA)
    with pytest.raises(Cancelled):
        fetch("http://dl.example.com/f", cancel=LateCancel(), connections=1)
    assert not os.path.exists(os.path.join(ws.root, "out.bin")) and leftovers(ws) == []


def _temp_size(ws) -> int:
    temps = leftovers(ws)
    return os.path.getsize(temps[0]) if temps else -1
