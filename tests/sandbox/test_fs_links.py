"""Hard links made inside the sandbox never alias a masked, protected or host file.

Every such file is on another mount than the workspace, so link(2) fails
(EXDEV, or EPERM); Landlock's REFER right is a second wall, so each case also
runs without Landlock. link() itself stays allowed: Python multiprocessing
(POSIX semaphores in /dev/shm) needs it and must work inside.
"""

from __future__ import annotations

import os
import shlex
import textwrap
from pathlib import Path

import pytest

PY = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else "python3"

_LINK = textwrap.dedent(
    """
    import errno, os, sys
    try:
        os.link(sys.argv[1], "alias")
    except OSError as e:
        print("ERRNO", errno.errorcode.get(e.errno, e.errno))
    else:
        print("LINKED")
    """
)


@pytest.fixture
def scene(fs_host_dir: Path) -> tuple[Path, Path]:
    ws = fs_host_dir / "ws"
    ws.mkdir()
    (ws / ".env").write_text("TOKEN=secret-env\n")
    (ws / "sub" / ".ssh").mkdir(parents=True)
    (ws / "sub" / ".ssh" / "id_ed25519").write_text("secret-key\n")
    (ws / ".bashrc").write_text("original bashrc\n")
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n")
    canary = fs_host_dir / "canary"
    canary.mkdir()
    (canary / "keep.txt").write_text("canary\n")
    return ws, canary


SOURCES = {
    "masked-credential-file": (".env", {"EXDEV", "EPERM"}),
    "file-in-masked-credential-dir": ("sub/.ssh/id_ed25519", {"EXDEV", "EPERM", "EACCES"}),
    "protected-file": (".bashrc", {"EXDEV", "EPERM"}),
    # missing: a placeholder on the fallback, nothing at all with the emulation (ENOENT)
    "protected-placeholder": (".profile", {"EXDEV", "EPERM", "ENOENT"}),
    "file-in-protected-dir": (".git/config", {"EXDEV", "EPERM"}),
    "host-file-etc-passwd": ("/etc/passwd", {"EXDEV", "EPERM"}),
    "host-canary-file": ("{canary}/keep.txt", {"EXDEV", "EPERM"}),
    "masked-host-file-etc-shadow": ("/etc/shadow", {"EXDEV", "EPERM"}),
}


@pytest.mark.parametrize("landlock", [True, False], ids=["landlock", "no-landlock"])
@pytest.mark.parametrize("source", sorted(SOURCES))
def test_hard_link_inside_sandbox_cannot_alias(source, landlock, scene, fs, fs_sandbox):
    ws, canary = scene
    rel, allowed = SOURCES[source]
    src = rel.format(canary=canary)
    src_path = Path(src) if src.startswith("/") else ws / src
    before = fs.snapshot(src_path) if os.path.lexists(src_path) else None
    out = fs.run(
        fs_sandbox(ws, landlock=landlock),
        f"{PY} -I -S -c {shlex.quote(_LINK)} {shlex.quote(src)}; "
        f"ln {shlex.quote(src)} alias2; echo ATTEMPTED",
    )
    assert "ATTEMPTED" in out.stdout
    assert "LINKED" not in out.stdout, out
    errno_name = out.stdout.split("ERRNO", 1)[1].split()[0]
    assert errno_name in allowed, out
    for alias in (ws / "alias", ws / "alias2"):
        if os.path.lexists(alias) and os.path.exists(src_path):
            assert not os.path.samefile(alias, src_path), f"{alias} aliases {src_path}"
    if before is not None:
        assert fs.diff(before, fs.snapshot(src_path)) == []


_MP = textwrap.dedent(
    """
    import multiprocessing as mp

    def square(x):
        return x * x

    def put(q, lock, counter):
        with lock:
            counter.value += 1
        q.put("hello")

    if __name__ == "__main__":
        ctx = mp.get_context("fork")
        lock, q, counter = ctx.Lock(), ctx.Queue(), ctx.Value("i", 0)
        procs = [ctx.Process(target=put, args=(q, lock, counter)) for _ in range(3)]
        for p in procs:
            p.start()
        got = [q.get(timeout=10) for _ in procs]
        for p in procs:
            p.join()
        with ctx.Pool(2) as pool:
            squares = pool.map(square, range(10))
        sem = ctx.Semaphore(2)
        sem.acquire()
        sem.release()
        ev = ctx.Event()
        ev.set()
        assert got == ["hello"] * 3 and counter.value == 3 and ev.is_set()
        assert squares == [x * x for x in range(10)]
        print("MP-OK")
    """
)


def test_python_multiprocessing_with_fork_works(scene, fs, fs_sandbox):
    ws, _ = scene
    (ws / "mp_check.py").write_text(_MP)
    out = fs.run(fs_sandbox(ws), f"{PY} mp_check.py", timeout_ms=60_000)
    assert out.exit_code == 0 and "MP-OK" in out.stdout, out


def test_hard_link_between_workspace_files_still_works(scene, fs, fs_sandbox):
    ws, _ = scene
    (ws / "a.txt").write_text("shared\n")
    out = fs.run(fs_sandbox(ws), "ln a.txt b.txt && echo more >> b.txt && echo LINKED")
    assert "LINKED" in out.stdout, out
    assert os.path.samefile(ws / "a.txt", ws / "b.txt")
    assert (ws / "a.txt").read_text() == "shared\nmore\n"
