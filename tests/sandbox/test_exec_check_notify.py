"""The exec check's seize at the exec notification: the cases it must get right.

In a sandbox the init sees each execve and execveat of a command as a seccomp
user notification, seizes the calling thread with ptrace (exec stops only)
and checks the new image's argv at its exec stop (native/init/exectrace.c).
These are the paths where that differs from tracing the whole tree: an exec
that fails (the thread stays traced, its next exec is checked, its signals
and stops pass through), an exec from a thread other than the leader, a
vfork child's exec, a process that made itself non-dumpable (seized at its
prctl, followed whole from there), an exec-only program (its image is
non-dumpable: kept traced from its exec stop), pipelines and background jobs. Real
bubblewrap, real processes; a fake ``git`` leaves a marker if it ever runs.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from execcheckkit import FAKE_GIT

from codeward import _native
from codeward.sandbox import CommandOutput, ExecRules, NativeBashSandbox

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the exec check runs in the Linux init"
)

DENY = ExecRules(deny=("git push**",))


@pytest.fixture
def marker(fake_git: Path) -> Path:
    """The fake git's marker (conftest.py), under the name these tests use."""
    return fake_git


def run(sb: NativeBashSandbox, line: str, rules: ExecRules | None = DENY) -> CommandOutput:
    prefix = 'export PATH="$PWD/bin:$PATH" MARK="$PWD/marker"; '
    out = sb.exec(prefix + line, timeout_ms=60_000, exec_rules=rules)
    assert out.setup_error is None, out
    return out


def py(script: str) -> str:
    text = textwrap.dedent(script).strip()
    return "python3 -c '" + text.replace("'", "'\\''") + "'"


def assert_stopped(out: CommandOutput, marker: Path) -> None:
    assert not marker.exists(), f"git ran: {marker.read_text()!r} {out}"
    assert out.exec_stopped is not None and out.exec_stopped.decision == "deny", out
    assert out.exit_code == 126, out


# ---- an exec after a failed exec ---------------------------------------------------


def test_a_path_search_through_missing_directories_is_checked(
    sandbox: NativeBashSandbox, marker: Path
):
    # execvp tries execve in each PATH directory: the first ones fail (ENOENT) and the
    # thread stays traced; the exec that succeeds is the one checked
    search = 'PATH="/nope1:/nope2:/nope3:$PATH" '
    out = run(sandbox, search + py("import subprocess; subprocess.run(['git', 'push'])"))
    assert_stopped(out, marker)
    out = run(sandbox, search + "env git push")
    assert_stopped(out, marker)
    out = run(sandbox, search + "env /nope/git push; env PATH=/nope:/x:$PATH git push")
    assert_stopped(out, marker)


def test_an_allowed_exec_after_failed_ones_runs(sandbox: NativeBashSandbox, marker: Path):
    line = (
        'PATH="/nope1:/nope2:$PATH" '
        + py("import subprocess; subprocess.run(['git', 'status']); print('after')")
        + '; PATH="/nope1:$PATH" env git log; env /nope/x; echo $?'
    )
    out = run(sandbox, line)
    assert out.exec_stopped is None and out.exit_code == 0, out
    assert marker.read_text() == "status\nlog\n", out
    assert out.stdout.endswith("after\nfake git ran: log\n127\n"), out


def test_a_denied_exec_hidden_behind_a_failed_one(sandbox: NativeBashSandbox, marker: Path):
    # the same process fails an exec, lives on traced (forks, a thread), then execs git push
    script = """
        import os, threading
        for p in ('/nope/a', '/nope/b'):
            try:
                os.execv(p, [p])
            except OSError as e:
                print('failed', e.errno, flush=True)
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        t = threading.Thread(target=lambda: None)
        t.start()
        t.join()
        os.execvp('git', ['git', 'push'])
    """
    out = run(sandbox, py(script))
    assert_stopped(out, marker)
    assert out.stdout == "failed 2\nfailed 2\n", out


def test_a_child_of_a_traced_process_is_checked(sandbox: NativeBashSandbox, marker: Path):
    # a process still traced after a failed exec forks: its child is not traced, and its
    # exec is seized at its own notification
    script = """
        import os
        try:
            os.execv('/nope', ['/nope'])
        except OSError:
            pass
        pid = os.fork()
        if pid == 0:
            os.execvp('git', ['git', 'push'])
        print('child', os.waitpid(pid, 0)[1], flush=True)
    """
    out = run(sandbox, py(script))
    assert_stopped(out, marker)
    assert out.stdout == "child 9\n", out  # SIGKILL


# ---- threads, vfork, posix_spawn ----------------------------------------------------


def test_an_exec_from_a_thread_other_than_the_leader(sandbox: NativeBashSandbox, marker: Path):
    deny = """
        import os, threading, time
        threading.Thread(target=lambda: os.execvp('git', ['git', 'push'])).start()
        time.sleep(30)
    """
    out = run(sandbox, py(deny))
    assert_stopped(out, marker)
    allow = """
        import os, threading, time
        threading.Thread(target=lambda: os.execv('/bin/echo', ['echo', 'threaded'])).start()
        time.sleep(30)
    """
    out = run(sandbox, py(allow) + "; echo $?")
    assert out.exec_stopped is None and out.stdout == "threaded\n0\n", out


def test_threads_racing_to_exec(sandbox: NativeBashSandbox, marker: Path):
    # several threads exec at once: one wins (the others die with the old image), and
    # whichever it is, git push never runs
    script = """
        import os, threading, time
        for i in range(8):
            argv = ['git', 'push'] if i % 2 else ['git', 'status']
            threading.Thread(target=lambda a=argv: os.execvp('git', a)).start()
        time.sleep(30)
    """
    for _ in range(5):
        out = run(sandbox, py(script) + "; true")
        ran = marker.read_text().split() if marker.exists() else []
        assert "push" not in ran, out
        assert out.exec_stopped is not None or ran, out


def test_vfork_and_posix_spawn_children(sandbox: NativeBashSandbox, marker: Path):
    # subprocess uses vfork (CLONE_VM) where it can; posix_spawn too
    for script in (
        "import subprocess; subprocess.run(['git', 'push'])",
        "import os; os.waitpid(os.posix_spawnp('git', ['git', 'push'], os.environ), 0)",
        "import subprocess; subprocess.run(['git', 'push'], close_fds=False)",
    ):
        out = run(sandbox, py(script))
        assert_stopped(out, marker)
    out = run(
        sandbox,
        py(
            "import os, subprocess\n"
            "subprocess.run(['git', 'status'])\n"
            "os.waitpid(os.posix_spawnp('git', ['git', 'log'], os.environ), 0)"
        ),
    )
    assert out.exec_stopped is None and out.exit_code == 0, out
    assert marker.read_text() == "status\nlog\n"


# ---- non-dumpable --------------------------------------------------------------------

# Says whether it is dumpable, then (flags in argv[1]) p: prctl(PR_SET_DUMPABLE, 0); f: forks
# and execs from the child; then execs argv[2:].
NODUMP_EXEC = r"""
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
    if (argc < 3)
        return 2;
    if (strchr(argv[1], 'p') && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
        perror("prctl");
        return 3;
    }
    printf("dumpable %d\n", prctl(PR_GET_DUMPABLE, 0, 0, 0, 0));
    fflush(stdout);
    if (strchr(argv[1], 'f')) {
        pid_t pid = fork();
        if (pid < 0)
            return 4;
        if (pid > 0) {
            int st;
            waitpid(pid, &st, 0);
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        }
    }
    execvp(argv[2], argv + 2);
    perror("execvp");
    return 127;
}
"""


def build_nodump_exec(workspace: Path, tmp: Path) -> Path:
    """The program above, built into the workspace's bin (mode 0755); its path."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.fail("a C compiler is needed to build the non-dumpable helper")
    src = tmp / "nodump_exec.c"
    src.write_text(NODUMP_EXEC)
    out = workspace / "bin" / "nodump-exec"
    subprocess.run([cc, "-O1", str(src), "-o", str(out)], check=True)
    return out


@pytest.fixture
def nodump_exec(workspace: Path, marker: Path, tmp_path: Path) -> Path:
    return build_nodump_exec(workspace, tmp_path)


@pytest.mark.parametrize("flags", ["p", "pf"], ids=["itself", "its-child"])
def test_a_process_that_makes_itself_non_dumpable_is_followed_and_checked(
    sandbox: NativeBashSandbox, marker: Path, nodump_exec: Path, flags: str
):
    # seized at its prctl, before it becomes non-dumpable, and followed whole from there:
    # its execs (and its children's, non-dumpable from birth) run when allowed...
    out = run(sandbox, f"nodump-exec {flags} git status; nodump-exec {flags} /bin/echo ran")
    assert out.exit_code == 0 and out.exec_stopped is None, out
    assert out.stdout == "dumpable 0\nfake git ran: status\ndumpable 0\nran\n", out
    assert marker.read_text() == "status\n"
    marker.unlink()
    # ...and are stopped when denied
    out = run(sandbox, f"nodump-exec {flags} git push")
    assert out.stdout == "dumpable 0\n", out
    assert "codeward: stopped exec of `git push`: denied by bash(git push**)" in out.stderr, out
    assert_stopped(out, marker)


@pytest.mark.skipif(
    not _native.features().get("names_emulated"), reason="no SECCOMP_ADDFD_FLAG_SEND"
)
@pytest.mark.parametrize("reuse", [False, True], ids=["one-shot", "long-lived"])
def test_with_names_emulated_the_prctl_comes_through_names_c(
    fs_host_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, reuse: bool
):
    # protected names kept missing: names.c's thread holds the listener and passes the prctl
    # on to the main thread, which seizes the caller before answering
    monkeypatch.delenv("A3S_CODE_PROTECT_NAMES", raising=False)
    ws = fs_host_dir / "ws"
    (ws / "bin").mkdir(parents=True)
    (ws / "bin" / "git").write_text(FAKE_GIT)
    (ws / "bin" / "git").chmod(0o755)
    build_nodump_exec(ws, tmp_path)
    sb = NativeBashSandbox(ws, reuse=reuse)
    try:
        out = run(sb, "nodump-exec pf git status; nodump-exec p git push")
        assert out.stdout == "dumpable 0\nfake git ran: status\ndumpable 0\n", out
        assert_stopped(out, Path("/nonexistent"))
        assert (ws / "marker").read_text() == "status\n"
    finally:
        sb.close()


def test_an_exec_only_program_is_followed_and_checked(
    sandbox: NativeBashSandbox, marker: Path, nodump_exec: Path
):
    # a program the command may run but not read (--x): its image is non-dumpable (no
    # later seize could take it or its children), so it is kept traced from its exec stop,
    # with its children
    nodump_exec.chmod(0o111)
    out = run(sandbox, "nodump-exec - git status; nodump-exec f /bin/echo ran")
    assert out.exit_code == 0 and out.exec_stopped is None, out
    assert out.stdout == "dumpable 0\nfake git ran: status\ndumpable 0\nran\n", out
    marker.unlink()
    for flags in ("-", "f"):
        out = run(sandbox, f"nodump-exec {flags} git push")
        assert_stopped(out, marker)


def test_a_prctl_of_a_thread_seized_at_a_failed_exec_is_refused(sandbox: NativeBashSandbox):
    # held (seized at its failed exec, exec stops only): its options cannot widen to its forks
    # outside a stop, so it may not become non-dumpable; another process may
    script = """
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        try:
            os.execv('/nope', ['/nope'])
        except OSError:
            pass
        print(libc.prctl(4, 0, 0, 0, 0), ctypes.get_errno())
    """
    other = py("import ctypes; print(ctypes.CDLL(None).prctl(4, 0))")
    out = run(sandbox, py(script) + "; " + other)
    assert out.stdout == "-1 1\n0\n", out  # EPERM
    assert "refused prctl(PR_SET_DUMPABLE, 0)" in out.stderr, out
    assert out.exit_code == 0 and out.exec_stopped is None, out


# ---- signals, stops, pipelines, background jobs ---------------------------------------


def test_signals_and_stops_reach_a_process_still_traced(sandbox: NativeBashSandbox):
    # traced since its failed exec: a handled signal, a stop and a continue, a TERM, and
    # then an exec, which is checked and runs
    script = """
        import os, signal, sys, time
        try:
            os.execv('/nope', ['/nope'])
        except OSError:
            pass
        signal.signal(signal.SIGUSR1, lambda *a: print('usr1', flush=True))
        os.kill(os.getpid(), signal.SIGUSR1)
        open(sys.argv[1], 'w').close()
        while not os.path.exists('go'):
            time.sleep(0.02)
        os.execv('/bin/echo', ['echo', 'done'])
    """
    wait_for = "until [ -e {0} ]; do sleep 0.02; done; "
    line = (
        py(script) + " r1 & p=$!; " + wait_for.format("r1") + "kill -STOP $p; sleep 0.1; "
        "kill -CONT $p; touch go; wait $p; echo status $?; rm go; "
        + py(script)
        + " r2 & q=$!; "
        + wait_for.format("r2")
        + "kill -TERM $q; wait $q; "
        "echo term $?"
    )
    out = run(sandbox, line)
    assert out.stdout == "usr1\ndone\nstatus 0\nusr1\nterm 143\n", out
    assert out.exec_stopped is None and out.exit_code == 0, out


def test_deep_pipelines_and_background_jobs(sandbox: NativeBashSandbox, marker: Path):
    pipeline = "seq 1 200 | " + " | ".join(["cat"] * 24) + " | wc -l"
    jobs = "for i in $(seq 1 12); do (/bin/true; sleep 0.05; echo job) & done; wait"
    out = run(sandbox, f"{pipeline}; {{ {jobs}; }} | sort | uniq -c")
    assert out.exec_stopped is None and out.exit_code == 0, out
    assert out.stdout.split() == ["200", "12", "job"], out
    out = run(sandbox, f"{pipeline}; (sleep 0.1; git push) & {jobs}; wait")
    assert_stopped(out, marker)
    out = run(sandbox, "seq 3 | cat | git push | cat; echo ${PIPESTATUS[2]}")
    assert_stopped(out, marker)


def test_no_rules_after_rules_runs_unchecked(sandbox: NativeBashSandbox, marker: Path):
    # a long-lived sandbox: a command without rules after one with them
    assert_stopped(run(sandbox, "git push"), marker)
    out = run(sandbox, "git push; git push", None)
    assert out.exit_code == 0 and out.exec_stopped is None, out
    assert marker.read_text() == "push\npush\n"
    assert_stopped(run(sandbox, 'PATH="/nope:$PATH" git push', DENY), Path("/nonexistent"))


def test_a_long_lived_sandbox_started_without_rules_traces_from_the_fork(
    workspace: Path, marker: Path
):
    # its init does not watch execs (a session without rules pays nothing for them): a
    # later command with rules is traced whole, from its fork, and checked all the same
    sb = NativeBashSandbox(workspace, reuse=True)
    try:
        assert run(sb, "true", None).exit_code == 0
        out = run(sb, "grep TracerPid /proc/self/status")
        assert out.stdout == "TracerPid:\t1\n", out  # the whole tree, still traced
        assert_stopped(run(sb, 'PATH="/nope:$PATH" env git push'), marker)
    finally:
        sb.close()
    sb = NativeBashSandbox(workspace, reuse=True)
    try:
        out = run(sb, "grep TracerPid /proc/self/status")  # the first has rules
        assert out.stdout == "TracerPid:\t0\n", out  # let go at its exec stop
        assert_stopped(run(sb, 'PATH="/nope:$PATH" env git push'), marker)
    finally:
        sb.close()
