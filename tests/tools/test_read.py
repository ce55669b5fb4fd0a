"""read: numbered lines, ranges, caps, binary refusal, several files in one call."""

from __future__ import annotations

import os

import pytest
from toolkit import call, put

from codeward.tools import ErrorKind, ReadTool
from codeward.tools import _read as read_mod

READ = ReadTool()


def test_numbered_like_cat_n(root, ctx):
    put(root, "a.txt", "one\ntwo\r\nthree")
    r = call(READ, ctx, file_path="a.txt")
    assert r.success and r.output == "     1\tone\n     2\ttwo\n     3\tthree"
    assert r.metadata == {
        "path": "a.txt",
        "first_line": 1,
        "last_line": 3,
        "total_lines": 3,
        "truncated": False,
    }


def test_range_and_continuation(root, ctx):
    put(root, "a.txt", "".join(f"line {i}\n" for i in range(1, 11)))
    r = call(READ, ctx, file_path="a.txt", offset=4, limit=3)
    assert r.output.splitlines()[:3] == ["     4\tline 4", "     5\tline 5", "     6\tline 6"]
    assert "offset=7" in r.output and r.metadata["next_offset"] == 7
    r = call(READ, ctx, file_path="a.txt", offset=20)
    assert r.success and "has 10 lines; offset 20 is past the end" in r.output


def test_empty_file(root, ctx):
    put(root, "e.txt", "")
    r = call(READ, ctx, file_path="e.txt")
    assert r.success and r.output == "[empty file]"


def test_long_lines_are_cut(root, ctx):
    put(root, "long.txt", "x" * 100_000 + "\nshort\n")
    r = call(READ, ctx, file_path="long.txt")
    first, second = r.output.splitlines()[:2]
    assert first.endswith("[… line cut]") and len(first) < read_mod.MAX_LINE_CHARS + 40
    assert second == "     2\tshort" and r.metadata["truncated"]


def test_output_byte_cap(root, ctx, monkeypatch):
    monkeypatch.setattr(read_mod, "MAX_OUTPUT_BYTES", 200)
    put(root, "a.txt", "".join(f"{i:040d}\n" for i in range(50)))
    r = call(READ, ctx, file_path="a.txt")
    assert r.success and r.metadata["truncated"] and r.metadata["last_line"] < 10
    assert f"offset={r.metadata['next_offset']}" in r.output


@pytest.mark.parametrize(
    "content", [b"\x89PNG\r\n\x1a\n\x00\x00\x00", b"text then \x00 nul", b"\xff\xfe\xfa latin"]
)
def test_binary_is_refused(root, ctx, content):
    put(root, "bin.dat", content)
    r = call(READ, ctx, file_path="bin.dat")
    assert r.error_kind is ErrorKind.BINARY_FILE and "binary" in r.output


def test_utf8_cut_at_the_probe_boundary_is_text(root, ctx):
    put(root, "u.txt", ("a" * 8191 + "é\n").encode())  # é straddles byte 8192
    assert call(READ, ctx, file_path="u.txt").success


def test_size_cap_whole_read_refused_ranged_read_allowed(root, ctx, monkeypatch):
    monkeypatch.setattr(read_mod, "MAX_TEXT_FILE_BYTES", 1000)
    put(root, "big.log", "".join(f"entry {i}\n" for i in range(500)))
    r = call(READ, ctx, file_path="big.log")
    assert r.error_kind is ErrorKind.TOO_LARGE and "offset and limit" in r.output
    r = call(READ, ctx, file_path="big.log", offset=100, limit=2)
    assert r.output.splitlines()[:2] == ["   100\tentry 99", "   101\tentry 100"]


def test_several_files_with_own_ranges_and_errors(root, ctx):
    put(root, "a.txt", "a1\na2\n")
    put(root, "b.txt", "b1\nb2\nb3\n")
    put(root, ".env", "SECRET=hunter2\n")
    r = call(
        READ,
        ctx,
        files=[{"path": "a.txt"}, {"path": "b.txt", "offset": 2, "limit": 1}, {"path": ".env"}],
    )
    assert r.success
    assert "==> a.txt <==\n     1\ta1" in r.output and "     2\tb2" in r.output
    assert "b3" not in r.output and "hunter2" not in r.output and "CredentialBoundary" in r.output
    kinds = [f.get("error_kind") for f in r.metadata["files"]]
    assert kinds == [None, None, "CredentialBoundary"]


def test_several_files_all_failing_is_a_failure(root, ctx):
    r = call(READ, ctx, files=[{"path": "nope"}, {"path": "nope2"}])
    assert r.error_kind is ErrorKind.NOT_FOUND


@pytest.mark.parametrize(
    "args",
    [
        {},
        {"file_path": "a", "files": [{"path": "b"}]},
        {"files": [{"path": "a"}], "offset": 2},
        {"file_path": "a", "offset": 0},
        {"file_path": "a", "limit": 10**6},
        {"files": [{"path": "a", "extra": 1}]},
        {"file_path": "a", "bogus": True},
    ],
)
def test_invalid_arguments(ctx, args):
    assert call(READ, ctx, **args).error_kind is ErrorKind.INVALID_ARGUMENT


def test_errors(root, ctx):
    os.mkdir(root / "d")
    os.mkfifo(root / "fifo")
    assert call(READ, ctx, file_path="missing.txt").error_kind is ErrorKind.NOT_FOUND
    assert call(READ, ctx, file_path="d").error_kind is ErrorKind.INVALID_ARGUMENT
    assert call(READ, ctx, file_path="fifo").error_kind is ErrorKind.INVALID_ARGUMENT  # no hang
    r = call(READ, ctx, file_path="../outside")
    assert r.error_kind is ErrorKind.PERMISSION_DENIED


def test_paths_names_every_file():
    assert READ.paths({"file_path": "a"}) == ["a"]
    assert READ.paths({"files": [{"path": "a"}, {"path": "b"}]}) == ["a", "b"]
