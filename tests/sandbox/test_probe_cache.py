"""The readiness verdict kept across processes: reused only while nothing it depends on
changed, and only from a store nobody else can write (sandbox/_probe_cache.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from codeward.sandbox import NativeBashSandbox, _native_runner, _probe_cache
from codeward.sandbox._locate import find_bwrap, init_path

NOBODY = 65534


@pytest.fixture
def store(monkeypatch, tmp_path) -> Path:
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setattr(NativeBashSandbox, "_probe_cache", {})
    return runtime / "codeward"


@pytest.fixture
def probes(monkeypatch) -> list[str]:
    """Counts the self-tests that really run (each one passes)."""
    ran: list[str] = []

    def fake_probe(bwrap: str) -> None:
        ran.append(bwrap)

    monkeypatch.setattr(NativeBashSandbox, "_run_probe", staticmethod(fake_probe))
    return ran


def _entry(store: Path) -> Path:
    (entry,) = store.glob("probe-*")
    return entry


def test_a_pass_is_reused_by_the_next_process_and_redone_on_request(store, probes) -> None:
    assert NativeBashSandbox.probe() is None
    assert len(probes) == 1
    assert _entry(store).stat().st_mode & 0o777 == 0o600
    assert store.stat().st_mode & 0o777 == 0o700
    NativeBashSandbox._probe_cache.clear()  # as in a new process
    assert NativeBashSandbox.probe() is None
    assert len(probes) == 1, "the kept pass was not reused"
    assert NativeBashSandbox.probe(fresh=True) is None
    assert len(probes) == 2, "fresh=True (codeward doctor) must run the self-test"


def test_a_failure_is_never_kept(store, monkeypatch) -> None:
    monkeypatch.setattr(NativeBashSandbox, "_run_probe", staticmethod(lambda bwrap: "broken"))
    assert NativeBashSandbox.probe() == "broken"
    assert not store.exists() or not list(store.glob("probe-*"))


def test_the_real_probe_is_kept_for_the_next_process(store) -> None:
    """Through the real boundary: a second process finds the pass and skips the self-test."""
    code = (
        "import time\n"
        "from codeward.sandbox import NativeBashSandbox\n"
        "t = time.monotonic()\n"
        "assert NativeBashSandbox.probe() is None\n"
        "print(time.monotonic() - t)\n"
    )
    env = {**os.environ, "XDG_RUNTIME_DIR": str(store.parent)}
    runs = [
        subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        for _ in range(2)
    ]
    assert _entry(store).read_text().startswith("codeward probe pass v1\n")
    # the second run did not start a sandbox: its probe is a few file reads
    assert float(runs[1].stdout) < float(runs[0].stdout)


def _copy_of(path: str, tmp_path: Path) -> str:
    copy = tmp_path / Path(path).name
    shutil.copy2(path, copy)
    return str(copy)


def test_the_key_follows_every_dependency(tmp_path, monkeypatch) -> None:
    bwrap, init = find_bwrap(), init_path()
    assert bwrap and init
    native = _native_runner._native.__file__
    base = _probe_cache.probe_key(bwrap, init, native)
    assert _probe_cache.probe_key(bwrap, init, native) == base, "the key is not stable"
    init_copy = _copy_of(init, tmp_path)
    assert _probe_cache.probe_key(bwrap, init_copy, native) != base  # another init
    before = _probe_cache.probe_key(bwrap, init_copy, native)
    with open(init_copy, "ab") as f:  # the same path, rebuilt
        f.write(b"\0")
    assert _probe_cache.probe_key(bwrap, init_copy, native) != before
    before = _probe_cache.probe_key(bwrap, init_copy, native)
    os.utime(init_copy, ns=(0, 0))  # same size, another mtime (and ctime)
    assert _probe_cache.probe_key(bwrap, init_copy, native) != before
    setting = tmp_path / "max_user_namespaces"
    setting.write_text("100\n")
    monkeypatch.setattr(_probe_cache, "_SETTINGS", (str(setting),))
    before = _probe_cache.probe_key(bwrap, init, native)
    setting.write_text("0\n")  # a kernel setting changed
    assert _probe_cache.probe_key(bwrap, init, native) != before
    monkeypatch.setattr(_probe_cache.os, "geteuid", lambda: NOBODY)  # another user
    assert _probe_cache.probe_key(bwrap, init, native) != before


def _plant(
    store: Path,
    key: str,
    *,
    at: float | None = None,
    header: str = "codeward probe pass v1",
    facts: str | None = None,
) -> Path:
    """An entry as remember_pass writes it, or with one part changed."""
    store.mkdir(mode=0o700, exist_ok=True)
    entry = store / _probe_cache._entry_name(key)
    stamp = time.time() if at is None else at
    entry.write_text(f"{header}\n{stamp!r}\n{key if facts is None else facts}")
    entry.chmod(0o600)
    return entry


@pytest.mark.skipif(os.geteuid() != 0, reason="planting files of another user needs root")
def test_a_pass_planted_by_another_user_is_ignored(store, probes) -> None:
    bwrap, init = find_bwrap(), init_path()
    assert bwrap
    key = _probe_cache.probe_key(bwrap, init, _native_runner._native.__file__)
    entry = _plant(store, key)
    assert _probe_cache.recall_pass(key)  # the genuine article
    os.chown(entry, NOBODY, NOBODY)
    assert not _probe_cache.recall_pass(key), "a file of another user was trusted"
    os.chown(entry, 0, 0)
    os.chown(store, NOBODY, NOBODY)
    assert not _probe_cache.recall_pass(key), "a directory of another user was trusted"
    os.chown(store, 0, 0)
    assert NativeBashSandbox.probe() is None
    assert probes == [], "the restored entry should be trusted again"


def test_entries_that_are_not_exactly_a_recent_pass_are_ignored(store, tmp_path) -> None:
    key = "bwrap /usr/bin/bwrap 1 2 3\nkernel Linux 6.1"
    entry = _plant(store, key)
    assert _probe_cache.recall_pass(key)
    entry.chmod(0o622)  # writable by others
    assert not _probe_cache.recall_pass(key)
    entry.chmod(0o600)
    store.chmod(0o777)  # a directory others can write
    assert not _probe_cache.recall_pass(key)
    store.chmod(0o700)
    os.link(entry, tmp_path / "second-name")  # a hard link: the bytes may change elsewhere
    assert not _probe_cache.recall_pass(key)
    (tmp_path / "second-name").unlink()
    assert _probe_cache.recall_pass(key)
    _plant(store, key, at=time.time() - _probe_cache.MAX_AGE_S - 1)  # too old
    assert not _probe_cache.recall_pass(key)
    _plant(store, key, at=time.time() + 3600)  # from the future
    assert not _probe_cache.recall_pass(key)
    _plant(store, key, header="codeward probe fail v1")
    assert not _probe_cache.recall_pass(key)
    _plant(store, key, facts=key + "\nsetting changed")  # the same file name, other facts
    assert not _probe_cache.recall_pass(key)
    entry.unlink()
    target = _plant(store, "other facts")
    entry.symlink_to(target)  # a symlink is never followed
    assert not _probe_cache.recall_pass(key)
    entry.unlink()
    entry.write_text("garbage")
    entry.chmod(0o600)
    assert not _probe_cache.recall_pass(key)


def test_no_usable_store_means_no_cache(monkeypatch, tmp_path, probes) -> None:
    monkeypatch.setattr(NativeBashSandbox, "_probe_cache", {})
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", "relative/home")
    assert _probe_cache.cache_dir() is None
    assert NativeBashSandbox.probe() is None
    NativeBashSandbox._probe_cache.clear()
    assert NativeBashSandbox.probe() is None
    assert len(probes) == 2


# ---- the caller's own confinement: a seccomp filter refusing user namespaces -------------

NOUSERNS = str(Path(__file__).with_name("nouserns.py"))
# codeward exec, with the probe key's view of the caller's confinement fixed when asked: a
# fact the key misses, so that a kept pass is read where it no longer holds
DRIVER = (
    "import sys\n"
    "from codeward.sandbox import _probe_cache\n"
    "if sys.argv[1] == 'blind':\n"
    "    _probe_cache._confinement = lambda: ['a fact the key does not see']\n"
    "from codeward.cli import main\n"
    "sys.exit(main(sys.argv[2:]))\n"
)


def _codeward_exec(
    store: Path, ws: Path, *args: str, filtered: bool, blind: bool = False, opt_in: str = ""
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_RUNTIME_DIR": str(store.parent)}
    env.pop("A3S_CODE_ALLOW_PROCESS_HOST_SANDBOX", None)
    if opt_in:
        env["A3S_CODE_ALLOW_PROCESS_HOST_SANDBOX"] = opt_in
    argv = [sys.executable, "-c", DRIVER, "blind" if blind else "-", "exec", "--workspace", str(ws)]
    argv += [*args, "--", "echo ran >> count; echo ok"]
    if filtered:
        argv = [sys.executable, NOUSERNS, *argv]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)


def _sandboxes_here(store: Path) -> None:
    if NativeBashSandbox.probe() is not None:
        pytest.skip("the native sandbox does not run here")
    for entry in store.glob("probe-*"):  # this process's pass: the runs below keep their own
        entry.unlink()


@pytest.fixture
def ws(tmp_path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


def test_the_key_holds_the_callers_seccomp_filter_no_new_privs_and_label(store, ws) -> None:
    """A pass kept by an unconfined run is not read under a filter refusing user
    namespaces (the key differs), so the opted-in run goes to the process host."""
    _sandboxes_here(store)
    first = _codeward_exec(store, ws, filtered=False)
    assert first.returncode == 0 and first.stdout == "ok\n", first
    assert len(list(store.glob("probe-*"))) == 1
    code = "from codeward.sandbox._probe_cache import _confinement; print(_confinement())"
    plain = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    confined = subprocess.run(
        [sys.executable, NOUSERNS, sys.executable, "-c", code], capture_output=True, text=True
    )
    assert "status Seccomp 0" in plain.stdout and "status Seccomp 2" in confined.stdout
    assert "status NoNewPrivs 1" in confined.stdout and "label " in confined.stdout
    for how in (("--allow-process-host-sandbox",), ()):
        out = _codeward_exec(store, ws, *how, filtered=True, opt_in="" if how else "1")
        assert out.returncode == 0 and out.stdout == "ok\n", out
        assert "process host" in out.stderr, out.stderr
    refused = _codeward_exec(store, ws, filtered=True)
    assert refused.returncode == 125 and refused.stdout == "", refused
    assert (ws / "count").read_text() == "ran\n" * 3  # each run ran its command once


@pytest.mark.parametrize("opt_in", ["flag", "env"])
def test_a_start_failure_after_a_kept_pass_withdraws_it_and_selects_again(
    store, ws, opt_in
) -> None:
    """A kept pass the key cannot tell apart (a confinement it does not see) is read, the
    start fails: the pass is dropped, the probe runs again and fails, and the command runs
    as if nothing had been kept: on the process host as asked, once, not exit 125."""
    _sandboxes_here(store)
    first = _codeward_exec(store, ws, filtered=False, blind=True)
    assert first.returncode == 0 and first.stdout == "ok\n", first
    assert len(list(store.glob("probe-*"))) == 1
    how = ("--allow-process-host-sandbox",) if opt_in == "flag" else ()
    out = _codeward_exec(
        store, ws, *how, filtered=True, blind=True, opt_in="1" if opt_in == "env" else ""
    )
    assert out.returncode == 0 and out.stdout == "ok\n", out
    assert "process host" in out.stderr, out.stderr
    assert list(store.glob("probe-*")) == [], "the pass that failed to hold is still kept"
    assert (ws / "count").read_text() == "ran\n" * 2  # the failed start ran nothing
    # and without the opt-in: unavailable (125), the command not run
    again = _codeward_exec(store, ws, filtered=False, blind=True)
    assert again.returncode == 0 and len(list(store.glob("probe-*"))) == 1
    refused = _codeward_exec(store, ws, filtered=True, blind=True)
    assert refused.returncode == 125 and refused.stdout == "", refused
    assert "unavailable" in refused.stderr, refused.stderr
    assert list(store.glob("probe-*")) == []
    assert (ws / "count").read_text() == "ran\n" * 3
