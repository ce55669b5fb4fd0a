"""The boundary for a non-root caller: the key hostile checks, run as `nobody`.

The root-owned Python environment is out of nobody's reach, so the C core is
driven by native/tests/sandbox_driver.c, built here against native/src into a
world-readable directory together with a copy of a3s-init, and run through
`setpriv --reuid=65534 --regid=65534 --clear-groups`.
"""

from __future__ import annotations

import errno
import json
import os
import select
import shlex
import shutil
import socket
import stat
import subprocess
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import nodump
import pytest
from hostload import (
    HostWatch,
    balloon,
    fork_bomb,
    fork_count,
    pipe_balloon,
    socket_balloon,
    tmpfs_fill,
)
from hostprocs import new_marker, sleeping, survivors
from initreach import EXPECTED_DENIED, FORGE, HOSTILE, REFUSED, STATE, py

from codeward import _native
from codeward.sandbox import _locate

REPO = Path(__file__).resolve().parents[2]
NATIVE = REPO / "native"
NOBODY = 65534
PY = "/usr/bin/python3"


def _py(script: str) -> str:
    return f"{PY} -c {shlex.quote(textwrap.dedent(script))}"


@dataclass
class Result:
    rc: str
    exit_code: int
    timed_out: bool
    setup_failed: bool
    oom_killed: bool
    setup_error: str
    stdout: str
    stderr: str
    raw: bytes


def _parse(raw: bytes) -> Result:
    return _parse_one(raw)[0]


def _parse_many(raw: bytes) -> tuple[list[Result], bytes]:
    """Every result block the driver printed, and what follows them."""
    results = []
    while raw.startswith(b"rc="):
        r, raw = _parse_one(raw)
        results.append(r)
    return results, raw


def _parse_one(raw: bytes) -> tuple[Result, bytes]:
    fields: dict[str, str] = {}
    rest = raw
    while rest and not rest.startswith(b"stdout "):
        line, _, rest = rest.partition(b"\n")
        key, _, value = line.decode(errors="replace").partition("=")
        fields[key] = value
    streams = {}
    for name in ("stdout", "stderr"):
        header, _, rest = rest.partition(b"\n")
        assert header.startswith(name.encode() + b" "), raw[:500]
        n = int(header.split()[1])
        streams[name] = rest[:n].decode(errors="replace")
        rest = rest[n + 1 :]
    result = Result(
        rc=fields.get("rc", "?"),
        exit_code=int(fields.get("exit_code", "-1")),
        timed_out=fields.get("timed_out") == "1",
        setup_failed=fields.get("setup_failed") == "1",
        oom_killed=fields.get("oom_killed") == "1",
        setup_error=fields.get("setup_error", ""),
        stdout=streams["stdout"],
        stderr=streams["stderr"],
        raw=raw,
    )
    return result, rest


class Driver:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.bin = root / "sandbox_driver"
        self.init = root / "a3s-init"
        self.ws = root / "ws"
        self.state = root / "state"
        self.scratch = root / "scratch"
        self.home = root / "home"
        bwrap = _locate.find_bwrap()
        assert bwrap, "bubblewrap is needed"
        self.bwrap = bwrap

    def argv(
        self,
        command: str | list[str] | None,
        timeout_ms: int = 20_000,
        probe: bool = False,
        reuse: bool = False,
        landlock: bool = True,
        limits: dict[str, int] | None = None,
        extra: list[str] | None = None,
    ) -> list:
        head = [
            "setpriv",
            f"--reuid={NOBODY}",
            f"--regid={NOBODY}",
            "--clear-groups",
            str(self.bin),
        ]
        opts = ["--state-dir", str(self.state), "--scratch", str(self.scratch)]
        if probe:
            return [*head, "--probe", *opts, str(self.init), self.bwrap, str(self.ws)]
        timing = ["--timeout-ms", str(timeout_ms), "--grace-ms", "300"]
        if reuse:
            timing.insert(0, "--reuse")
        if not landlock:
            timing.insert(0, "--no-landlock")
        for name, value in (limits or {}).items():  # --memory-max, --max-processes ...
            timing += [f"--{name.replace('_', '-')}", str(value)]
        timing += extra or []  # --exec-deny PATTERN ...
        commands = [command] if isinstance(command, str) else list(command or [])
        return [*head, *timing, *opts, str(self.init), self.bwrap, str(self.ws), *commands]

    @property
    def env(self) -> dict:
        return {"PATH": "/usr/bin:/bin", "HOME": str(self.home), "LANG": "C.UTF-8"}

    def run(
        self,
        command: str,
        timeout_ms: int = 20_000,
        limits: dict[str, int] | None = None,
        landlock: bool = True,
    ) -> Result:
        p = subprocess.run(
            self.argv(command, timeout_ms, landlock=landlock, limits=limits),
            capture_output=True,
            env=self.env,
            cwd=self.root,
            timeout=60,
        )
        assert p.returncode == 0, f"driver failed ({p.returncode}): {p.stdout!r} {p.stderr!r}"
        r = _parse(p.stdout)
        assert r.rc == "ok", r
        return r

    def run_reusing(
        self,
        commands: list[str],
        reuse: bool = True,
        env: dict | None = None,
        landlock: bool = True,
    ) -> tuple[list[Result], int]:
        """The commands one after the other through one handle; (results, starts).

        reuse=True runs them in one long-lived sandbox; reuse=False one-shot (starts 0).
        """
        results, info = self.run_session(commands, landlock=landlock, reuse=reuse, env=env)
        return results, int(info.get("starts", "0"))

    def run_session(
        self,
        commands: list[str],
        landlock: bool = True,
        limits: dict[str, int] | None = None,
        timeout_ms: int = 20_000,
        reuse: bool = True,
        env: dict | None = None,
        extra: list[str] | None = None,
    ) -> tuple[list[Result], dict[str, str]]:
        """The commands through one handle; (results, the driver's closing lines).

        reuse=True runs them in one long-lived sandbox (the lines then say starts= and
        cgroups=); reuse=False one-shot (no closing lines).
        """
        p = subprocess.run(
            self.argv(
                commands, timeout_ms, reuse=reuse, landlock=landlock, limits=limits, extra=extra
            ),
            capture_output=True,
            env=env or self.env,
            cwd=self.root,
            timeout=120,
        )
        assert p.returncode == 0, f"driver failed ({p.returncode}): {p.stdout!r} {p.stderr!r}"
        results, rest = _parse_many(p.stdout)
        assert len(results) == len(commands), p.stdout
        assert not reuse or rest.startswith(b"starts="), p.stdout
        info = dict(ln.split("=", 1) for ln in rest.decode().splitlines() if "=" in ln)
        return results, info


@pytest.fixture(scope="module")
def driver():
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None or shutil.which("setpriv") is None:
        pytest.fail("cc and setpriv are needed for the unprivileged checks")
    init = _locate.init_path()
    assert init, "a3s-init is not built"
    root = Path(tempfile.mkdtemp(prefix="a3s-unpriv-", dir="/tmp"))
    try:
        root.chmod(0o755)
        sources = sorted(str(p) for p in (NATIVE / "src").glob("*.c"))
        subprocess.run(
            [
                cc,
                "-std=c11",
                "-O1",
                "-w",
                f"-I{NATIVE / 'include'}",
                str(NATIVE / "tests" / "sandbox_driver.c"),
                *sources,
                "-o",
                str(root / "sandbox_driver"),
                "-lpthread",
            ],
            check=True,
        )
        shutil.copy2(init, root / "a3s-init")
        for f in ("sandbox_driver", "a3s-init"):
            (root / f).chmod(0o755)
        d = Driver(root)
        for sub in (d.ws, d.state, d.scratch, d.home):
            sub.mkdir()
            os.chown(sub, NOBODY, NOBODY)
            sub.chmod(0o755 if sub == d.ws else 0o700)
        p = subprocess.run(
            d.argv(None, probe=True), capture_output=True, env=d.env, cwd=root, timeout=60
        )
        assert p.returncode == 0 and b"rc=ok" in p.stdout, (
            f"the boundary does not start for an unprivileged caller: {p.stdout!r} {p.stderr!r}"
        )
        yield d
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_unprivileged_identity_no_caps_seccomp_mode_2(driver) -> None:
    r = driver.run(
        "id -u; grep -E '^(Seccomp|NoNewPrivs|Cap(Inh|Prm|Eff|Bnd|Amb)):' /proc/self/status"
    )
    lines = r.stdout.splitlines()
    assert lines[0] == str(NOBODY), r
    fields = dict(ln.split(":\t") for ln in lines[1:])
    assert fields["Seccomp"] == "2" and fields["NoNewPrivs"] == "1", r
    for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(fields[cap], 16) == 0, f"{cap}={fields[cap]}"


@pytest.fixture
def world_writable_host_dirs():
    """Host directories nobody could write to outside the sandbox."""
    made = []
    for parent in ("/tmp", "/var/tmp", "/dev/shm"):
        if os.path.isdir(parent):
            d = Path(tempfile.mkdtemp(prefix="a3s-outside-", dir=parent))
            d.chmod(0o777)
            os.chown(d, NOBODY, NOBODY)
            made.append(d)
    yield made
    for d in made:
        shutil.rmtree(d, ignore_errors=True)


def test_unprivileged_write_outside_the_workspace_fails(driver, world_writable_host_dirs) -> None:
    targets = [str(d / "escaped") for d in world_writable_host_dirs]
    targets += ["/escaped", "/etc/escaped", "/usr/escaped", str(driver.root / "escaped")]
    inside = driver.ws / "inside"
    command = "; ".join(f"echo x > {shlex.quote(t)} 2>/dev/null" for t in targets)
    r = driver.run(f"{command}; echo x > {shlex.quote(str(inside))}; echo done")
    assert r.exit_code == 0 and r.stdout == "done\n", r
    assert inside.exists() and inside.stat().st_uid == NOBODY, "the workspace is not writable"
    for t in targets:
        assert not os.path.exists(t), f"the sandbox wrote {t} on the host"
    inside.unlink()


def test_unprivileged_network_listener_and_egress_fail(driver) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as canary:
        canary.bind(("127.0.0.1", 0))
        canary.listen(16)
        port = canary.getsockname()[1]
        r = driver.run(
            _py(f"""
                import socket
                s = socket.socket()
                try:
                    s.listen(1); print("LISTENING")
                except OSError as e:
                    print("listen", e.errno)
                c = socket.socket()
                c.settimeout(2)
                try:
                    c.connect(("127.0.0.1", {port})); print("CONNECTED")
                except OSError as e:
                    print("connect", e.errno)
            """)
            + "; cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '"
        )
        lines = r.stdout.splitlines()
        assert lines[0] == f"listen {errno.EPERM}", r
        assert lines[1].startswith("connect ") and "CONNECTED" not in r.stdout, r
        assert lines[2:] == ["lo"], f"interfaces: {lines[2:]}"
        canary.setblocking(False)
        assert not select.select([canary], [], [], 0.3)[0], "the host canary was reached"


def test_unprivileged_af_unix_fails_and_host_socket_unreached(driver) -> None:
    path = driver.ws / "agent.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as agent:
        agent.bind(str(path))
        agent.listen(4)
        path.chmod(0o777)  # nobody could connect to it on the host
        r = driver.run(
            _py(f"""
                import socket
                for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
                    try:
                        s = socket.socket(socket.AF_UNIX, kind)
                        s.connect({str(path)!r}); print("CONNECTED")
                    except OSError as e:
                        print("errno", e.errno)
            """)
        )
        assert r.stdout.split() == ["errno", str(errno.EAFNOSUPPORT)] * 2, r
        agent.setblocking(False)
        assert not select.select([agent], [], [], 0.3)[0], "the host socket was reached"
    path.unlink()


def test_unprivileged_unshare_fails(driver) -> None:
    r = driver.run("unshare -r true; echo status=$?; unshare -n true; echo status=$?")
    assert "status=0" not in r.stdout, r


def test_unprivileged_placeholders_are_cleaned_up(driver) -> None:
    """The fallback (A3S_CODE_PROTECT_NAMES=placeholders): placeholders during the run only."""
    before = sorted(os.listdir(driver.ws))
    env = {**driver.env, "A3S_CODE_PROTECT_NAMES": "placeholders"}
    results, _ = driver.run_reusing(
        ["ls -A; test -d .git && test -d .bashrc && echo protected"], reuse=False, env=env
    )
    r = results[0]
    assert "protected" in r.stdout, f"placeholders were not in place during the run: {r}"
    assert sorted(os.listdir(driver.ws)) == before, "placeholders were left in the workspace"
    assert list(Path(driver.state).glob("**/*.journal")) == []


@pytest.mark.skipif(
    not _native.features().get("names_emulated"), reason="no SECCOMP_ADDFD_FLAG_SEND"
)
def test_unprivileged_missing_names_are_kept_missing_inside_only(driver) -> None:
    """With the emulation (init/names.c), nothing appears in the workspace and no route makes a
    missing protected name, for an unprivileged caller too."""
    before = sorted(os.listdir(driver.ws))
    r = driver.run(
        "echo x > .mcp.json; mkdir .vscode; "
        "ln -s x .bashrc; ln -s .git dangling; echo y > dangling; echo ok > ordinary; "
        "cat ordinary; rm -f ordinary dangling"
    )
    assert r.stdout == "ok\n", r
    assert r.stderr.count("Permission denied") == 4, r
    assert sorted(os.listdir(driver.ws)) == before, "something was left in the workspace"
    assert list(Path(driver.state).glob("**/*.journal")) == []


def test_unprivileged_scratch_run_directory_is_removed(driver) -> None:
    for leftover in os.listdir(driver.scratch):  # earlier tests' runs are not this test's subject
        shutil.rmtree(driver.scratch / leftover)
    r = driver.run("echo private > $HOME/note; echo $HOME")
    home = r.stdout.strip()
    assert home.startswith(str(driver.scratch) + "/"), r
    left = {d: sorted(os.listdir(driver.scratch / d)) for d in os.listdir(driver.scratch)}
    assert left == {}, f"the run directory of an unprivileged caller was left behind: {left}"


def test_unprivileged_background_children_are_killed(driver, marker) -> None:
    r = driver.run(
        f"sleep {marker}1 & setsid sleep {marker}2 & ( ( sleep {marker}3 & ) & ); "
        f"nohup sleep {marker}4 >/dev/null 2>&1 & echo started; "
        f"until [ $(pgrep -fc '^sleep {marker}') = 4 ]; do sleep 0.01; done"
    )
    assert r.exit_code == 0 and "started" in r.stdout, r
    assert survivors(marker) == []


def test_unprivileged_timeout_and_term_ignoring_tree(driver, marker) -> None:
    r = driver.run(f"trap '' TERM; sleep {marker} & sleep {marker}1", timeout_ms=300)
    assert r.exit_code == 124 and r.timed_out, r
    assert survivors(marker) == []


def test_unprivileged_host_processes_are_invisible(driver) -> None:
    r = driver.run(f"kill -0 {os.getpid()} 2>&1; echo kill=$?; ls /proc | grep -c '^[0-9]'")
    lines = r.stdout.splitlines()
    assert "kill=1" in lines, f"a host process was reachable: {r}"
    assert int(lines[-1]) <= 4, f"{lines[-1]} processes visible"


def test_unprivileged_caller_killed_mid_run_leaves_nothing(driver, marker) -> None:
    proc = subprocess.Popen(
        driver.argv(f"sleep {marker}1 & setsid sleep {marker}2 & sleep {marker}3", 60_000),
        env=driver.env,
        cwd=driver.root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 15
    while not sleeping(f"{marker}3"):
        assert time.monotonic() < deadline and proc.poll() is None, "the command never started"
        time.sleep(0.01)
    proc.kill()
    proc.wait()
    assert survivors(marker) == [], "killing the unprivileged caller left processes alive"


def test_driver_source_is_world_readable_build(driver) -> None:
    """The driver really runs as nobody (guards the other checks against a setpriv no-op)."""
    mode = driver.bin.stat().st_mode
    assert mode & stat.S_IXOTH
    r = driver.run("id -u; id -g; cat /proc/self/uid_map")
    assert r.stdout.splitlines()[:2] == [str(NOBODY), str(NOBODY)], r


# ---- the long-lived sandbox, for an unprivileged caller ------------------------------------


def test_unprivileged_reuse_keeps_the_boundary_and_isolates_commands(driver, marker) -> None:
    before = sorted(os.listdir(driver.ws))
    results, starts = driver.run_reusing(
        [
            "id -u; grep -E '^(Seccomp|NoNewPrivs|CapEff):' /proc/self/status; echo $HOME; "
            f"echo left > /tmp/left; setsid sleep {marker} & echo x > /escaped; echo done",
            "cat /tmp/left 2>/dev/null || echo no-leftover; echo $HOME; "
            f"pgrep -f '^sleep {marker}' || echo no-process; "
            # a placeholder on the fallback, a refused mkdir with the emulation
            "(test -d .git || ! mkdir .git 2>/dev/null) && echo protected; "
            "echo y > .bashrc 2>/dev/null || echo bashrc-read-only",
        ]
    )
    first, second = results
    assert starts == 1, "the commands did not share one sandbox"
    lines = first.stdout.splitlines()
    assert lines[0] == str(NOBODY) and "Seccomp:\t2" in lines and "NoNewPrivs:\t1" in lines, first
    assert "CapEff:\t0000000000000000" in lines, first
    assert first.stdout.rstrip().endswith("done") and not os.path.exists("/escaped"), first
    out = second.stdout.splitlines()
    assert out[0] == "no-leftover" and out[1] != lines[4], second
    assert "no-process" in out and "protected" in out and "bashrc-read-only" in out, second
    assert survivors(marker) == []
    # the driver freed its handle: the sandbox, its placeholders and its journal are gone
    assert sorted(os.listdir(driver.ws)) == before, "placeholders were left in the workspace"
    assert list(Path(driver.state).glob("**/*.journal")) == []
    assert os.listdir(driver.scratch) == [], "the run directory was left behind"


def test_unprivileged_reuse_caller_killed_leaves_nothing(driver, marker) -> None:
    proc = subprocess.Popen(
        driver.argv(
            ["true", f"sleep {marker}1 & setsid sleep {marker}2 & sleep {marker}3"],
            60_000,
            reuse=True,
        ),
        env=driver.env,
        cwd=driver.root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 15
    while not sleeping(f"{marker}3"):
        assert time.monotonic() < deadline and proc.poll() is None, "the command never started"
        time.sleep(0.01)
    proc.kill()
    proc.wait()
    assert survivors(marker) == [], "killing the unprivileged caller left processes alive"


# ---- host safety (issue 9) and commands that must not break later ones (issue 11) --------------


@pytest.fixture
def nobody_secret():
    """A host directory nobody can read outside, but the sandbox masks (host /tmp)."""
    d = Path(tempfile.mkdtemp(prefix="a3s-secret-", dir="/tmp"))
    (d / "key").write_text("NOBODY-HOST-SECRET\n")
    for p in (d, d / "key"):
        os.chown(p, NOBODY, NOBODY)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _two_commands(driver, commands: list[str], reuse: bool, planted: list[str]) -> Result:
    """Runs both through one handle and removes what they planted; the second's result."""
    try:
        results, _ = driver.run_reusing(commands, reuse=reuse)
    finally:
        for name in planted:
            path = driver.ws / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif os.path.lexists(path):
                path.unlink()
    return results[1]


@pytest.mark.parametrize("reuse", [True, False], ids=["long-lived", "one-shot"])
def test_unprivileged_a_git_pointer_a_command_writes_binds_nothing(
    driver, nobody_secret, reuse
) -> None:
    second = _two_commands(
        driver,
        [f"printf 'gitdir: {nobody_secret}\\n' > .GIT", f"cat {nobody_secret}/key; echo RAN"],
        reuse,
        [".GIT"],
    )
    assert second.exit_code == 0 and "RAN" in second.stdout, second
    assert "NOBODY-HOST-SECRET" not in second.stdout, second


@pytest.mark.parametrize("reuse", [True, False], ids=["long-lived", "one-shot"])
def test_unprivileged_a_symlinked_credential_name_cannot_disable_later_commands(
    driver, reuse
) -> None:
    second = _two_commands(driver, ["mkdir s && ln -s .. s/.env", "echo RAN"], reuse, ["s"])
    assert second.exit_code == 0 and second.stdout == "RAN\n", second


@pytest.mark.parametrize("reuse", [True, False], ids=["long-lived", "one-shot"])
def test_unprivileged_a_linked_credential_file_cannot_disable_later_commands(driver, reuse) -> None:
    second = _two_commands(
        driver,
        ["echo TOKEN=x > .env && ln .env alias", "cat alias 2>&1; echo RAN"],
        reuse,
        [".env", "alias"],
    )
    assert second.exit_code == 0 and second.stdout.endswith("RAN\n"), second
    assert "TOKEN=x" not in second.stdout, second


def test_unprivileged_a_home_that_is_the_workspace_is_not_cleaned(driver) -> None:
    env = {**driver.env, "HOME": str(driver.ws)}
    results, starts = driver.run_reusing(
        ["echo made > made-by-command && echo FIRST", "cat made-by-command && echo SECOND"],
        env=env,
    )
    assert starts == 1, results
    assert [r.stdout for r in results] == ["FIRST\n", "made\nSECOND\n"], results
    assert (driver.ws / "made-by-command").exists(), "the init deleted a workspace file"
    (driver.ws / "made-by-command").unlink()


def test_unprivileged_restored_trees_get_their_metadata_back(driver) -> None:
    results, starts = driver.run_reusing(
        [
            _py('import os; os.setxattr("/tmp", "user.leak", b"x"); print("SET")')
            + "; touch -d 2001-01-01 /tmp",
            _py('import os; print(os.listxattr("/tmp"))') + "; stat -c %Y /tmp",
        ]
    )
    assert starts == 1 and results[0].stdout == "SET\n", results
    lines = results[1].stdout.splitlines()
    assert lines[0] == "[]" and lines[1] != "978307200", results[1]


FAKE_BWRAP_HOST = r"""#!/bin/bash
args=("$@"); init=; rest=()
for ((i = 0; i < ${#args[@]}; i++)); do
    if [ "${args[i]}" = --ro-bind-data ] && [ "${args[i+2]}" = /run/a3s/init ]; then
        init=/proc/self/fd/${args[i+1]}
    elif [ "${args[i]}" = -- ]; then rest=("${args[@]:i+1}"); break; fi
done
[ "${rest[0]}" = /run/a3s/init ] && rest[0]=$init
exec "${rest[@]}"
"""


@pytest.mark.parametrize("reuse", [True, False], ids=["long-lived", "one-shot"])
def test_unprivileged_a_bwrap_that_does_not_isolate_kills_nothing(driver, reuse) -> None:
    """Inside a pid namespace of its own (so a regression cannot reach further), nobody's
    canary must survive a bubblewrap that runs the init on the host."""
    fake = driver.root / f"fake-bwrap-{int(reuse)}"
    fake.write_text(FAKE_BWRAP_HOST)
    fake.chmod(0o755)
    as_nobody = f"setpriv --reuid={NOBODY} --regid={NOBODY} --clear-groups"
    argv = [str(fake) if a == driver.bwrap else a for a in driver.argv("echo RAN", reuse=reuse)]
    script = (
        f"{as_nobody} sleep 300 & canary=$!; {shlex.join(argv)} > {driver.root}/fake.out; "
        "kill -0 $canary && echo CANARY-ALIVE; kill $canary"
    )
    p = subprocess.run(
        ["unshare", "--fork", "--pid", "--mount-proc", "sh", "-c", script],
        capture_output=True,
        text=True,
        env=driver.env,
        cwd=driver.root,
        timeout=60,
    )
    assert "CANARY-ALIVE" in p.stdout, p
    results, _ = _parse_many((driver.root / "fake.out").read_bytes())
    r = results[0]
    assert r.exit_code == 125 and "RAN" not in r.stdout, r
    assert "did not isolate" in r.setup_error, r


# ---- PID 1 out of reach, for an unprivileged caller (test_proc_init_reach.py) ----------------


@pytest.mark.parametrize("landlock", [True, False], ids=["landlock", "no-landlock"])
def test_unprivileged_pid1_is_out_of_reach_of_every_command(driver, landlock) -> None:
    results, starts = driver.run_reusing(
        [
            "grep -E '^(Seccomp|NoNewPrivs):' /proc/1/status",
            py(STATE),
            py(HOSTILE),
            py(STATE),
            py(FORGE) + "; echo alive",
            "exec /run/a3s/init --probe",
        ],
        landlock=landlock,
    )
    status, before, hostile, after, forged, probe = results
    assert starts == 1, "a command ended the sandbox"
    assert sorted(status.stdout.split()) == ["1", "2", "NoNewPrivs:", "Seccomp:"], status
    got = json.loads(hostile.stdout)
    assert {k: got[k] for k in REFUSED} == dict.fromkeys(REFUSED, errno.EPERM), got
    assert got["write /proc/1/oom_score_adj"] in (errno.EACCES, errno.EPERM), got
    assert json.loads(after.stdout) == json.loads(before.stdout)
    assert forged.exit_code == 0 and forged.stdout.endswith("alive\n"), forged
    if not landlock:  # without signal scoping they reach PID 1, which ignores them
        assert "queued SIGTERM" in forged.stdout and "killed SIGTERM" in forged.stdout, forged
    line = next(ln for ln in probe.stdout.splitlines() if "every denied system call" in ln)
    assert line.startswith("ok ") and set(line.split(": ", 1)[1].split()) >= EXPECTED_DENIED
    one_shot = driver.run(
        "grep -E '^(Seccomp|NoNewPrivs):' /proc/1/status; " + py(HOSTILE), landlock=landlock
    )
    lines = one_shot.stdout.splitlines()
    assert sorted(lines[:2]) == ["NoNewPrivs:\t1", "Seccomp:\t2"], one_shot
    got = json.loads(lines[2])
    assert {k: got[k] for k in REFUSED} == dict.fromkeys(REFUSED, errno.EPERM), got


# ---- bounded resources, for an unprivileged caller (test_proc_limits.py) ----------------------
# No cgroup can be made here for nobody: RLIMIT_NPROC bounds the processes and the
# init's watchdog the memory.

MiB = 1 << 20
TIGHT = {"memory_max": 256 * MiB, "max_processes": 48, "tmpfs_max": 8 * MiB}


@pytest.mark.parametrize("landlock", [True, False], ids=["landlock", "no-landlock"])
def test_unprivileged_fork_bomb_balloon_and_full_tmpfs_are_bounded(driver, landlock) -> None:
    m = new_marker()
    with HostWatch(m) as host:
        results, info = driver.run_session(
            [
                fork_count(m),
                fork_bomb(m),
                balloon(m, max_mib=64),
                balloon(m),
                tmpfs_fill(["/tmp", "/var/tmp", "/dev/shm", "/run", "$HOME"], 32),
                "ls /proc | grep -c '^[0-9]'; echo ok",
            ],
            landlock=landlock,
            limits=TIGHT,
        )
    counted, bomb, small, big, fill, after = results
    assert info["starts"] == "1" and info["cgroups"] == "", info
    kids, err = counted.stdout.split()
    assert err == "11" and int(kids) < 48, counted  # EAGAIN
    assert bomb.exit_code == 0 and bomb.stdout == "EAGAIN\n", bomb
    assert small.stdout.endswith("survived\n"), small
    assert big.exit_code == 137 and big.oom_killed, big
    assert int(big.stdout.split()[-1]) < 1024, big
    for line in fill.stdout.splitlines():
        _path, size, result = line.split()
        assert result == "ENOSPC" and int(size) <= 8 * MiB, fill
    assert len(fill.stdout.splitlines()) == 5, fill
    assert after.stdout.split() in (["3", "ok"], ["4", "ok"]), after
    assert host.max_marked <= 48, host
    assert host.max_load <= host.start_load + 48 + 2, host
    assert host.memory_drop() <= 256 * MiB + 768 * MiB, host
    assert survivors(m) == []


def test_unprivileged_one_shot_balloon_is_killed_and_says_why(driver) -> None:
    m = new_marker()
    r = driver.run(balloon(m), limits={"memory_max": 256 * MiB})
    assert r.exit_code == 137 and r.oom_killed and int(r.stdout.split()[-1]) < 1024, r
    assert survivors(m) == []


@pytest.mark.parametrize("payload", [socket_balloon, pipe_balloon], ids=["sockets", "pipes"])
def test_unprivileged_kernel_buffers_count_against_the_memory_bound(driver, payload) -> None:
    """Without a cgroup: 1 GiB queued in socketpairs or pipes under a 256 MiB bound is killed
    by the init's watchdog, and the result says oom_killed."""
    m = new_marker()
    with HostWatch(m) as host:
        results, info = driver.run_session(
            [payload(m, 1024), "echo next"], limits={"memory_max": 256 * MiB}
        )
    held, after = results
    assert info["cgroups"] == "", info
    assert held.exit_code == 137 and held.oom_killed, held
    assert int(held.stdout.split()[-1]) < 1024, held
    assert after.stdout == "next\n", after
    assert host.memory_drop() <= 256 * MiB + 768 * MiB, host
    assert survivors(m) == []


@pytest.mark.parametrize("reuse", [True, False], ids=["long-lived", "one-shot"])
def test_unprivileged_network_grant_reaches_the_origin_and_nothing_else(driver, reuse) -> None:
    """A grant for a non-root caller: the proxy works, its neighbours stay unreachable.

    The driver (nobody) runs the command with a grant; this process is the
    host's mediator (root), listening on the proxy socket the init binds in
    a network namespace that nobody's user namespace owns.
    """
    import http.server
    import threading

    from codeward.netgrant import NetworkGrant, NetworkMediator

    class Hello(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "6")
            self.end_headers()
            self.wfile.write(b"hello\n")

        def log_message(self, *args: object) -> None:
            pass

    origin = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    threading.Thread(target=origin.serve_forever, daemon=True).start()
    canary = socket.create_server(("127.0.0.1", 0))
    port, canary_port = origin.server_address[1], canary.getsockname()[1]
    probe = _py(
        f"""
        import errno, socket
        s = socket.socket()
        print("canary", errno.errorcode.get(s.connect_ex(("127.0.0.1", {canary_port}))))
        """
    )
    command = f"curl -sS --max-time 10 http://127.0.0.1:{port}/hello; {probe}"
    # the driver pins each exec to the digest it reads itself; this one is never compared
    grant = NetworkGrant.make("127.0.0.1", port, "sha256:" + "0" * 64)
    try:
        with NetworkMediator() as mediator, mediator.admit(grant) as admission:
            argv = driver.argv(command, reuse=reuse)
            at = argv.index(str(driver.bin)) + 1
            argv[at:at] = ["--grant-fd", str(admission.fd)]
            p = subprocess.run(
                argv,
                capture_output=True,
                env=driver.env,
                cwd=driver.root,
                timeout=60,
                pass_fds=(admission.fd,),
            )
            summary = admission.summary()
        assert p.returncode == 0, f"driver failed ({p.returncode}): {p.stdout!r} {p.stderr!r}"
        r = _parse_many(p.stdout)[0][0]
        assert r.stdout.split() in (
            ["hello", "canary", "EACCES"],
            ["hello", "canary", "ECONNREFUSED"],
        ), r
        assert summary["connections"] == 1 and summary["refused"] == 0, summary
        canary.setblocking(False)
        with pytest.raises(BlockingIOError):
            canary.accept()
    finally:
        origin.shutdown()
        origin.server_close()
        canary.close()


@pytest.mark.skipif(
    not _native.features().get("names_emulated"), reason="no SECCOMP_ADDFD_FLAG_SEND"
)
def test_unprivileged_non_dumpable_program_makes_names_and_no_protected_one(driver) -> None:
    """For nobody, a non-dumpable process's /proc files are also owned by a root outside the
    sandbox's user namespace (no DAC access at all, where root inside still owns them): the
    supervisor's handles, opened while it waited in its prctl, still serve its calls."""
    work = Path(tempfile.mkdtemp(prefix="a3s-nodump-"))
    try:
        binary = nodump.build(work, work)
        shutil.copy2(binary, driver.ws / "nodump")
        (driver.ws / "nodump").chmod(0o755)
        before = sorted(os.listdir(driver.ws))
        r = driver.run("./nodump; rm -rf dir from-thread race-ordinary")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        (driver.ws / "nodump").unlink(missing_ok=True)
    got = nodump.results(r.stdout)
    assert got["dumpable"] == "0", r
    for name in ("create", "mkdir", "rename", "link", "thread-create", "race", "create-abs"):
        assert got[name] == "ok", (name, r)
    for name in ("protected-create", "protected-mkdir", "protected-rename", "child-protected"):
        assert got[name] == "EACCES", (name, r)
    assert sorted(os.listdir(driver.ws)) == [n for n in before if n != "nodump"], r


@pytest.mark.parametrize("reuse", [False, True], ids=["one-shot", "long-lived"])
def test_unprivileged_exec_check_seizes_each_exec(driver, reuse) -> None:
    """For nobody too, each exec is seized at its notification and checked at its exec stop:
    after failed execs (a PATH search), from a thread, and a process that made itself
    non-dumpable (seized at its prctl) or runs a program it cannot read (kept traced from its
    exec stop) is followed and checked all the same."""
    bin_dir = driver.ws / "bin"
    bin_dir.mkdir()
    git = bin_dir / "git"
    git.write_text('#!/bin/sh\necho "$*" >> "$MARK"\n')
    git.chmod(0o755)
    os.chown(bin_dir, NOBODY, NOBODY)
    env = 'export PATH="$PWD/bin:$PATH" MARK="$PWD/marker"; '
    commands = [
        env + "git status; git push",
        env
        + 'PATH="/nope1:/nope2:$PATH" '
        + _py("import subprocess; subprocess.run(['git', 'push'])"),
        env
        + _py("""
            import os, threading, time
            threading.Thread(target=lambda: os.execvp('git', ['git', 'push'])).start()
            time.sleep(20)
        """),
        env
        + _py("""
            import ctypes, os
            assert ctypes.CDLL(None).prctl(4, 0, 0, 0, 0) == 0  # PR_SET_DUMPABLE
            os.execvp('git', ['git', 'push'])
        """),
        env + 'PATH="/nope:$PATH" env git log; echo ok',
        env
        + _py("""
            import ctypes, os
            assert ctypes.CDLL(None).prctl(4, 0, 0, 0, 0) == 0  # PR_SET_DUMPABLE
            if os.fork() == 0:
                os.execvp('git', ['git', 'diff'])
            os.wait()
        """),
        env + "cp /bin/env bin/xenv && chmod 0111 bin/xenv && xenv git tag; xenv git push",
    ]
    try:
        results, _ = driver.run_session(commands, reuse=reuse, extra=["--exec-deny", "git push**"])
        marker = driver.ws / "marker"
        ran = marker.read_text().split() if marker.exists() else []
    finally:
        shutil.rmtree(bin_dir, ignore_errors=True)
        (driver.ws / "marker").unlink(missing_ok=True)
    assert "push" not in ran, (ran, results)
    assert ran == ["status", "log", "diff", "tag"], (ran, results)
    for r in results[:4] + results[6:]:
        assert r.exit_code == 126 and "codeward: stopped exec of `git push`" in r.stderr, r
    assert results[4].exit_code == 0 and results[4].stdout == "ok\n", results[4]
    assert results[5].exit_code == 0, results[5]
