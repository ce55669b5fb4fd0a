"""Fixtures of the hostile sandbox suites.

Each suite keeps its own helpers in its own files; what is here is shared and
prefixed by the suite that owns it (``fs_`` for the file-system suite,
tests/sandbox/test_fs_*.py). Add fixtures; do not change someone else's.

Every suite runs against the default, long-lived sandbox (``reuse=True``);
``A3S_TEST_SANDBOX_REUSE=0`` runs them all one-shot (one bubblewrap per command).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from execcheckkit import FAKE_GIT

from codeward import _native
from codeward.sandbox import CommandOutput, NativeBashSandbox
from codeward.sandbox._locate import find_bwrap, init_path
from codeward.sandbox._native_runner import _CoreSandbox

NativeBashSandbox._default_reuse = os.environ.get("A3S_TEST_SANDBOX_REUSE", "1") != "0"

# ---- file-system suite (test_fs_*.py) -------------------------------------------------------

# Trees the sandbox replaces with a private tmpfs: a directory there is invisible inside.
FS_MASKED_TREES = ("/tmp", "/var/tmp", "/run", "/home", "/root", "/dev", "/proc")
# Where a test may create a host directory that the sandbox sees through its read-only root.
FS_HOST_BASES = ("/var/lib", "/opt", "/srv", "/var/cache")


def _fs_under(path: str, tree: str) -> bool:
    return path == tree or path.startswith(tree.rstrip("/") + "/")


def _fs_force_rmtree(path: Path) -> None:
    """rmtree that also gets through read-only placeholders and mode-0 directories."""

    def retry(func, p, _exc):  # type: ignore[no-untyped-def]
        try:
            os.chmod(os.path.dirname(p), 0o700)
            if os.path.isdir(p) and not os.path.islink(p):
                os.chmod(p, 0o700)
            func(p)
        except OSError:
            pass

    if os.path.lexists(path):
        if sys.version_info >= (3, 12):
            shutil.rmtree(path, onexc=retry)
        else:
            shutil.rmtree(path, onerror=retry)


def fs_snapshot(root: Path | str) -> dict[str, tuple]:
    """Everything a write could change under `root`, without following symlinks.

    Per entry: type, mode, inode, link count, size, mtime and a content digest
    (files) or target (symlinks). Access times are left out: reading is allowed.
    """
    root = Path(root)
    out: dict[str, tuple] = {}

    def one(p: Path, rel: str) -> None:
        st = os.lstat(p)
        if stat.S_ISLNK(st.st_mode):
            extra: object = os.readlink(p)
        elif stat.S_ISREG(st.st_mode):
            extra = hashlib.sha256(p.read_bytes()).hexdigest()
        else:
            extra = None
        out[rel] = (
            stat.S_IFMT(st.st_mode),
            stat.S_IMODE(st.st_mode),
            st.st_ino,
            st.st_nlink,
            st.st_size if not stat.S_ISDIR(st.st_mode) else None,
            st.st_mtime_ns,
            extra,
        )
        if stat.S_ISDIR(st.st_mode):
            for child in sorted(os.listdir(p)):
                one(p / child, f"{rel}/{child}" if rel else child)

    if os.path.lexists(root):
        one(root, "")
    return out


@pytest.fixture
def fs_names_emulated() -> bool:
    """Whether a sandbox built now keeps missing protected names missing by emulating the calls
    that make names (native/init/names.c), rather than with placeholders in the workspace."""
    forced = os.environ.get("A3S_CODE_PROTECT_NAMES") == "placeholders"
    return bool(_native.features().get("names_emulated")) and not forced


@pytest.fixture
def fs_force_placeholders(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sandboxes built in this test use the fallback (placeholders, journals, janitor), as on a
    kernel without SECCOMP_ADDFD_FLAG_SEND."""
    monkeypatch.setenv("A3S_CODE_PROTECT_NAMES", "placeholders")


def janitors_of(workspace: Path) -> list[int]:
    """The pids of the placeholder janitors (a3s-init --mode janitor) serving `workspace`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if b"janitor" in argv and os.fsencode(workspace) in argv and b"--mode" in argv:
            found.append(int(entry))
    return found


def fs_diff(before: dict[str, tuple], after: dict[str, tuple]) -> list[str]:
    """Human-readable differences between two snapshots (empty when equal)."""
    fields = ("type", "mode", "inode", "nlink", "size", "mtime", "content")
    lines = []
    for rel in sorted(set(before) | set(after)):
        if rel not in after:
            lines.append(f"removed: {rel or '.'}")
        elif rel not in before:
            lines.append(f"created: {rel or '.'}")
        elif before[rel] != after[rel]:
            changed = [f for f, a, b in zip(fields, before[rel], after[rel], strict=True) if a != b]
            lines.append(f"changed {','.join(changed)}: {rel or '.'}")
    return lines


@pytest.fixture(scope="session")
def fs_boundary_ready() -> None:
    """The native boundary must work here: a security suite fails, it does not skip."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the native sandbox is Linux-only")
    reason = NativeBashSandbox.probe()
    if reason is not None:
        pytest.fail(f"the native sandbox cannot run on this machine: {reason}")


@pytest.fixture
def fs_host_dir(fs_boundary_ready: None) -> Iterator[Path]:
    """A fresh host directory on the read-only root of the sandbox.

    It is outside every tree the sandbox covers with a tmpfs, so a command
    sees it (and a workspace's parent made in it) read-only: a write that got
    through would land on the real host file system.
    """
    base = next(
        (
            b
            for b in FS_HOST_BASES
            if os.path.isdir(b)
            and os.access(b, os.W_OK)
            and not any(_fs_under(os.path.realpath(b), t) for t in FS_MASKED_TREES)
        ),
        None,
    )
    if base is None:
        pytest.fail(f"no writable host directory among {FS_HOST_BASES} for the canaries")
    path = Path(tempfile.mkdtemp(prefix="a3s-fs-test-", dir=base))
    try:
        yield path
    finally:
        _fs_force_rmtree(path)


@pytest.fixture
def fs_tmp_dir(tmp_path: Path, fs_boundary_ready: None) -> Iterator[Path]:
    """A fresh directory in the host /tmp, which the sandbox replaces with its own tmpfs."""
    path = tmp_path / "host"
    path.mkdir()
    try:
        yield path
    finally:
        _fs_force_rmtree(path)


@pytest.fixture
def fs_sandbox() -> Callable[..., _CoreSandbox]:
    """fs_sandbox(workspace, landlock=True): the native boundary over `workspace`.

    landlock=False builds the same boundary without the Landlock layer, to
    show that the mounts hold on their own.
    """

    def make(workspace: Path | str, *, landlock: bool = True) -> _CoreSandbox:
        if landlock:
            return NativeBashSandbox(workspace)
        handle = _native.Sandbox(
            os.fspath(workspace),
            init_path(),
            bwrap=find_bwrap(os.fspath(workspace)),
            no_landlock=True,
            reuse=NativeBashSandbox._default_reuse,
        )
        return _CoreSandbox(workspace, _handle=handle)

    return make


@pytest.fixture
def fs_env_sandbox() -> Callable[..., _CoreSandbox]:
    """fs_env_sandbox(workspace, host_env): the native boundary for a caller whose
    environment is `host_env` ("K=V" entries: its HOME, VIRTUAL_ENV, PATH ...)."""

    def make(workspace: Path | str, host_env: list[str]) -> _CoreSandbox:
        handle = _native.Sandbox(
            os.fspath(workspace),
            init_path(),
            bwrap=find_bwrap(os.fspath(workspace)),
            host_env=host_env,
            reuse=NativeBashSandbox._default_reuse,
        )
        return _CoreSandbox(workspace, _handle=handle)

    return make


def fs_run(sb: _CoreSandbox, command: str, *, timeout_ms: int = 30_000) -> CommandOutput:
    """Runs `command` and checks that it really ran inside the boundary."""
    out = sb.exec(command, timeout_ms=timeout_ms, max_output_bytes=1 << 20)
    assert out.sandboxed and out.backend == "bwrap", out
    assert out.setup_error is None, f"the sandbox refused or failed to start: {out}"
    assert not out.timed_out, out
    return out


@pytest.fixture
def fs() -> SimpleNamespace:
    """The file-system suite's helpers: snapshot, diff, run, rmtree, janitors_of."""
    return SimpleNamespace(
        snapshot=fs_snapshot,
        diff=fs_diff,
        run=fs_run,
        rmtree=_fs_force_rmtree,
        janitors_of=janitors_of,
    )


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty workspace directory (the process and network suites' fixture)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture
def marker() -> Iterator[str]:
    """A unique process marker; whatever still carries it at teardown is killed."""
    from hostprocs import kill_marked, new_marker

    m = new_marker()
    yield m
    kill_marked(m)


# -- the exec check's tests (test_exec_check.py, test_exec_check_notify.py) ----------------


@pytest.fixture(params=["one-shot", "long-lived"])
def sandbox(request: pytest.FixtureRequest, workspace: Path) -> NativeBashSandbox:
    """A native sandbox over the workspace, of each kind."""
    sb = NativeBashSandbox(workspace, reuse=request.param == "long-lived")
    request.addfinalizer(sb.close)
    return sb


@pytest.fixture
def fake_git(workspace: Path) -> Path:
    """A fake ``git`` in workspace/bin; the marker file it leaves if it ever runs."""
    bin_dir = workspace / "bin"
    bin_dir.mkdir()
    git = bin_dir / "git"
    git.write_text(FAKE_GIT)
    git.chmod(0o755)
    return workspace / "marker"
