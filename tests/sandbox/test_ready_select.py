"""Fail-closed readiness: when the boundary cannot run, nothing runs unconfined by accident.

Each case breaks one precondition (no bubblewrap, no user namespaces, a
broken or filter-less init, a hanging init, a bubblewrap planted in the
workspace) and checks host-side that the command did not run, that the
error names the workspace and the cause, and that only an explicit opt-in
gives the (unsandboxed, but still tree-killing) process host.
"""

from __future__ import annotations

import os
import random
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
from hostprocs import kill_marked, survivors

from codeward import _native
from codeward._errors import SandboxUnavailable
from codeward.sandbox import (
    ENV_OPT_IN,
    NativeBashSandbox,
    ProcessHostBashSandbox,
    UnavailableBashSandbox,
    _locate,
    _native_runner,
    select_sandbox,
)
from codeward.sandbox._output import CommandOutput

REAL_INIT = _locate.init_path()


@pytest.fixture(autouse=True)
def fresh_probe(monkeypatch, tmp_path_factory):
    """Each case probes for itself; nothing it breaks leaks into the cache of later tests
    (neither the process's nor the verdicts kept for other processes)."""
    monkeypatch.setattr(NativeBashSandbox, "_probe_cache", {})
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path_factory.mktemp("runtime")))
    monkeypatch.delenv(ENV_OPT_IN, raising=False)


@pytest.fixture
def no_bwrap(monkeypatch):
    """No bubblewrap anywhere the locator looks: not at the fixed system paths,
    not on PATH; every other program stays on PATH (the process host needs them)."""
    real_which = _locate._which

    def which(name):
        return None if os.path.basename(name) == "bwrap" else real_which(name)

    monkeypatch.setattr(_locate, "SYSTEM_BWRAP", ())
    monkeypatch.setattr(_locate, "_which", which)
    assert _locate.find_bwrap() is None


def _ran(ws: Path) -> bool:
    return (ws / "ran").exists()


def _touch(ws: Path) -> str:
    return f"/usr/bin/touch {shlex.quote(str(ws / 'ran'))}"


def _assert_unavailable(sb, ws: Path, cause_words: tuple[str, ...]) -> SandboxUnavailable:
    assert isinstance(sb, UnavailableBashSandbox), f"expected the error-only handle, got {sb!r}"
    assert sb.sandboxed is False and sb.backend == "unavailable"
    with pytest.raises(SandboxUnavailable) as info:
        sb.exec(_touch(ws))
    exc = info.value
    assert not _ran(ws), "the error-only handle ran the command"
    assert exc.workspace == str(ws)
    assert str(ws) in str(exc), f"the message does not name the workspace: {exc}"
    for word in cause_words:
        assert word.lower() in exc.cause.lower(), f"cause {exc.cause!r} lacks {word!r}"
        assert word.lower() in str(exc).lower(), f"message {exc} lacks {word!r}"
    return exc


# ---- bubblewrap missing ---------------------------------------------------------


def test_no_bwrap_gives_the_error_only_handle(workspace, no_bwrap) -> None:
    _assert_unavailable(select_sandbox(workspace), workspace, ("bubblewrap",))


def test_no_bwrap_on_path_gives_the_error_only_handle(workspace, monkeypatch, tmp_path) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setattr(_locate, "SYSTEM_BWRAP", ())
    monkeypatch.setenv("PATH", str(empty))
    _assert_unavailable(select_sandbox(workspace), workspace, ("bubblewrap",))


def test_no_bwrap_via_the_locator_gives_the_error_only_handle(workspace, monkeypatch) -> None:
    monkeypatch.setattr(_native_runner, "find_bwrap", lambda workspace=None: None)
    _assert_unavailable(select_sandbox(workspace), workspace, ("bubblewrap",))


def test_no_bwrap_direct_native_construction_refuses(workspace, no_bwrap) -> None:
    with pytest.raises(SandboxUnavailable) as info:
        NativeBashSandbox(workspace)
    assert info.value.workspace == str(workspace)


def test_old_bwrap_gives_the_error_only_handle(workspace, monkeypatch) -> None:
    monkeypatch.setattr(_native_runner, "bwrap_version", lambda path: (0, 7, 0))
    _assert_unavailable(select_sandbox(workspace), workspace, ("0.8",))


def test_unreadable_bwrap_version_gives_the_error_only_handle(workspace, monkeypatch) -> None:
    monkeypatch.setattr(_native_runner, "bwrap_version", lambda path: None)
    _assert_unavailable(select_sandbox(workspace), workspace, ("version",))


# ---- the process-host opt-in ------------------------------------------------------


def _assert_process_host(sb, ws: Path) -> CommandOutput:
    assert isinstance(sb, ProcessHostBashSandbox), f"expected the process host, got {sb!r}"
    out = sb.exec(f"{_touch(ws)}; echo ran-on-host")
    assert out.sandboxed is False and out.backend == "process-host", out
    assert out.exit_code == 0 and out.stdout == "ran-on-host\n", out
    assert _ran(ws)
    return out


def test_opt_in_argument_gives_the_process_host(workspace, no_bwrap) -> None:
    _assert_process_host(select_sandbox(workspace, allow_process_host_sandbox=True), workspace)


@pytest.mark.parametrize(
    "value", ["1", "true", "TRUE", "True", "yes", "YES", "on", " on ", "\tyes\n"]
)
def test_opt_in_env_values(workspace, no_bwrap, monkeypatch, value) -> None:
    monkeypatch.setenv(ENV_OPT_IN, value)
    _assert_process_host(select_sandbox(workspace), workspace)


@pytest.mark.parametrize(
    "value", ["0", "no", "", " ", "false", "off", "2", "y", "enable", "yes please", "1 0", "on;"]
)
def test_values_that_do_not_opt_in(workspace, no_bwrap, monkeypatch, value) -> None:
    monkeypatch.setenv(ENV_OPT_IN, value)
    _assert_unavailable(select_sandbox(workspace), workspace, ("bubblewrap",))


def test_opt_in_never_downgrades_a_working_boundary(workspace, monkeypatch) -> None:
    monkeypatch.setenv(ENV_OPT_IN, "1")
    sb = select_sandbox(workspace, allow_process_host_sandbox=True)
    assert isinstance(sb, NativeBashSandbox), sb
    out = sb.exec("echo ok")
    assert out.sandboxed is True and out.backend == "bwrap", out


def test_opted_in_process_host_still_kills_background_children(workspace, no_bwrap) -> None:
    sb = select_sandbox(workspace, allow_process_host_sandbox=True)
    assert isinstance(sb, ProcessHostBashSandbox)
    m = f"535.{random.randint(100000, 999999)}"
    try:
        out = sb.exec(
            f"sleep {m}1 & setsid sleep {m}2 & ( ( sleep {m}3 & ) & ); "
            f"nohup sleep {m}4 >/dev/null 2>&1 & echo started; "
            f"until [ $(pgrep -fc '^sleep {m}') = 4 ]; do sleep 0.01; done",
            timeout_ms=20_000,
        )
        assert out.exit_code == 0 and out.sandboxed is False, out
        assert out.duration_ms < 5_000, out
        assert survivors(m) == [], "the process host left background children alive"
    finally:
        kill_marked(m)


# ---- kernel features missing ----------------------------------------------------------


@pytest.mark.parametrize(
    "feature,words",
    [("user_namespaces", ("user namespaces",)), ("seccomp_filter", ("seccomp",))],
)
def test_missing_kernel_feature_gives_the_error_only_handle(
    workspace, monkeypatch, feature, words
) -> None:
    real = _native.features()
    monkeypatch.setattr(_native, "features", lambda: {**real, feature: False})
    _assert_unavailable(select_sandbox(workspace), workspace, words)


def test_missing_kernel_feature_with_opt_in_gives_the_process_host(workspace, monkeypatch) -> None:
    real = _native.features()
    monkeypatch.setattr(_native, "features", lambda: {**real, "user_namespaces": False})
    monkeypatch.setenv(ENV_OPT_IN, "yes")
    _assert_process_host(select_sandbox(workspace), workspace)


# ---- a host-supplied handle ------------------------------------------------------------


class HostHandle:
    backend = "host-own"
    sandboxed = True

    def __init__(self) -> None:
        self.calls: list[str] = []

    def exec(self, command, **kw):
        self.calls.append(command)
        return CommandOutput("", "", 0, False, False, 0, True, "host-own")


@pytest.mark.parametrize("situation", ["working", "no-bwrap", "no-bwrap-opted-in"])
def test_host_supplied_handle_wins_over_everything(
    workspace, monkeypatch, tmp_path, situation
) -> None:
    if situation != "working":
        monkeypatch.setattr(_locate, "SYSTEM_BWRAP", ())
        monkeypatch.setenv("PATH", str(tmp_path))
    if situation == "no-bwrap-opted-in":
        monkeypatch.setenv(ENV_OPT_IN, "1")
    handle = HostHandle()
    sb = select_sandbox(workspace, allow_process_host_sandbox=True, sandbox_handle=handle)
    assert sb is handle
    sb.exec(_touch(workspace))
    assert handle.calls == [_touch(workspace)] and not _ran(workspace)


# ---- a broken init / filter ----------------------------------------------------------------


def _fake_init(tmp_path: Path, body: str) -> str:
    d = tmp_path / "fake-init"
    d.mkdir(exist_ok=True)
    path = d / "a3s-init"
    path.write_text("#!/bin/bash\n" + textwrap.dedent(body))
    path.chmod(0o755)
    return str(path)


def _use_init(monkeypatch, path: str) -> None:
    # the package's init path, both where it is defined and where it was imported
    monkeypatch.setattr(_locate, "init_path", lambda: path)
    monkeypatch.setattr(_native_runner, "init_path", lambda: path)
    # not the init the package was built with: no digest, so that the probe's own checks are
    # what refuses it (outside the workspace, the core takes an init without one)
    monkeypatch.setattr(_native, "INIT_SHA256", None)


def test_init_that_exits_1_fails_the_probe(workspace, tmp_path, monkeypatch) -> None:
    _use_init(monkeypatch, _fake_init(tmp_path, "exit 1\n"))
    exc = _assert_unavailable(select_sandbox(workspace), workspace, ())
    assert "did not start" in exc.cause or "self-test" in exc.cause or "exit" in exc.cause, exc


# Trees the sandbox covers with a private tmpfs, and host places it sees read-only.
MASKED_TREES = ("/tmp", "/var/tmp", "/run", "/home", "/root", "/dev", "/proc")
VISIBLE_BASES = ("/var/lib", "/opt", "/srv", "/var/cache", "/usr/local")


@pytest.fixture
def visible_real_init():
    """The real a3s-init at a path the sandbox can see (the package may live in a masked tree)."""
    real = os.path.realpath(REAL_INIT)
    if not any(real == t or real.startswith(t + "/") for t in MASKED_TREES):
        yield real
        return
    for base in VISIBLE_BASES:
        if os.path.isdir(base) and os.access(base, os.W_OK):
            d = tempfile.mkdtemp(prefix="a3s-real-init-", dir=base)
            break
    else:
        pytest.skip("no host directory visible inside the sandbox to put a3s-init in")
    try:
        os.chmod(d, 0o755)
        copy = os.path.join(d, "a3s-init")
        shutil.copy2(REAL_INIT, copy)
        yield copy
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_init_without_the_filter_fails_the_probe(
    workspace, tmp_path, monkeypatch, visible_real_init
) -> None:
    """An init that starts the command but applies neither seccomp nor Landlock:
    the self-test, run through it, must notice and refuse the boundary."""
    real = shlex.quote(visible_real_init)
    body = f"""
        if [ "$1" = "--probe" ]; then exec {real} --probe; fi
        fd=
        while [ $# -gt 0 ]; do
          case "$1" in
            --status-fd) fd=$2; shift 2;;
            --no-landlock) shift;;
            --) shift; break;;
            *) shift 2;;
          esac
        done
        [ -n "$fd" ] && eval "printf R >&$fd"
        exec "$@"
    """
    _use_init(monkeypatch, _fake_init(tmp_path, body))
    exc = _assert_unavailable(select_sandbox(workspace), workspace, ("seccomp",))
    assert "FAIL" in exc.cause, exc


def test_init_whose_server_mode_fails_falls_back_to_one_shot(
    workspace, tmp_path, monkeypatch, visible_real_init
) -> None:
    """The long-lived sandbox does not come up (its init fails in server mode): commands
    still run, one-shot, through the same boundary; after a few failed starts the handle
    stops trying. Never a run outside the boundary."""
    real = shlex.quote(visible_real_init)
    body = f"""
        for a in "$@"; do [ "$a" = server ] && {{ echo 'no server here' >&2; exit 1; }}; done
        exec {real} "$@"
    """
    _use_init(monkeypatch, _fake_init(tmp_path, body))
    monkeypatch.setattr(NativeBashSandbox, "_default_reuse", True)
    sb = select_sandbox(workspace)
    assert isinstance(sb, NativeBashSandbox) and sb.reuse, sb
    for _ in range(4):
        out = sb.exec("grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status; echo $HOME")
        assert out.exit_code == 0 and "Seccomp:\t2" in out.stdout, out
        assert not out.stdout.splitlines()[-1].startswith("/run/a3s/"), out
    info = sb._handle.info()
    assert not info["running"] and info["starts"] == 3, info
    sb.close()


def test_hanging_init_fails_the_probe_and_leaves_nothing(workspace, tmp_path, monkeypatch) -> None:
    m = f"646.{random.randint(100000, 999999)}"
    _use_init(monkeypatch, _fake_init(tmp_path, f"exec /bin/sleep {m}\n"))
    monkeypatch.setattr(_native_runner, "PROBE_TIMEOUT_MS", 500)
    try:
        t0 = time.monotonic()
        sb = select_sandbox(workspace)
        assert time.monotonic() - t0 < 10, "the probe did not honour its timeout"
        _assert_unavailable(sb, workspace, ())
        assert survivors(m) == [], "the hung probe was left running"
    finally:
        kill_marked(m)


def test_missing_init_gives_the_error_only_handle(workspace, monkeypatch) -> None:
    monkeypatch.setattr(_locate, "init_path", lambda: None)
    monkeypatch.setattr(_native_runner, "init_path", lambda: None)
    _assert_unavailable(select_sandbox(workspace), workspace, ("a3s-init",))


# ---- a bubblewrap supplied by the repository --------------------------------------------------


def test_a_bwrap_inside_the_workspace_is_never_run(workspace, monkeypatch) -> None:
    """With no system bubblewrap, a `bwrap` the repository ships on PATH must not
    be executed on the host (not even for --version) nor become the boundary."""
    bindir = workspace / "node_modules" / ".bin"
    bindir.mkdir(parents=True)
    fake = bindir / "bwrap"
    pwned = workspace / "PWNED"
    fake.write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> {shlex.quote(str(pwned))}\n'
        'case "$1" in --version) echo "bubblewrap 0.11.0"; exit 0;; esac\n'
        'while [ "$1" != "--" ]; do shift; done; shift; exec "$@"\n'
    )
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    monkeypatch.setattr(_locate, "SYSTEM_BWRAP", ())
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    if _locate._which("bwrap") != str(fake):
        pytest.skip("a system bwrap on PATH shadows the planted one")
    try:
        sb = select_sandbox(workspace)
    except SandboxUnavailable as exc:  # refusing outright is also fail-closed
        sb = None
        err: Exception | None = exc
    else:
        err = None
    assert not pwned.exists(), (
        "the repository's own `bwrap` was executed on the host during selection: "
        f"{pwned.read_text()!r}"
    )
    if sb is not None:
        assert isinstance(sb, UnavailableBashSandbox), f"got {sb!r}"
    else:
        assert err is not None


# ---- codeward exec --------------------------------------------------------------------------

CLI_WITHOUT_BWRAP = """
import sys
from codeward.sandbox import _locate
_locate.SYSTEM_BWRAP = ()
from codeward.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _cli_no_bwrap(ws: Path, tmp_path: Path, *args: str, env_extra=None):
    env = {k: v for k, v in os.environ.items() if k != ENV_OPT_IN}
    env["PATH"] = str(tmp_path / "no-bwrap-here")
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "-c", CLI_WITHOUT_BWRAP, "exec", "--workspace", str(ws), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


@pytest.mark.parametrize("opt_in", [None, "no", "0", ""])
def test_cli_exits_125_with_one_line_when_unavailable(workspace, tmp_path, opt_in) -> None:
    extra = {ENV_OPT_IN: opt_in} if opt_in is not None else None
    r = _cli_no_bwrap(workspace, tmp_path, "--", _touch(workspace), env_extra=extra)
    assert r.returncode == 125, r
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, f"expected one line, got {r.stderr!r}"
    assert str(workspace) in lines[0] and "bubblewrap" in lines[0], lines[0]
    assert r.stdout == ""
    assert not _ran(workspace), "codeward exec ran the command without a boundary"


def test_cli_opted_in_runs_on_the_host_and_says_so(workspace, tmp_path) -> None:
    r = _cli_no_bwrap(
        workspace, tmp_path, "--", f"{_touch(workspace)}; exit 5", env_extra={ENV_OPT_IN: "1"}
    )
    assert r.returncode == 5, r
    assert _ran(workspace)
    assert "no sandbox" in r.stderr, r.stderr
