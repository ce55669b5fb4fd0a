"""The exec check: every program a command runs is checked as it runs (issue 21).

Under ``deny=["bash(git push**)"]`` (and the same pattern as an ask nobody
approved) each spelling of the issue's list that reaches an exec of git push
is stopped before git's first instruction: a marker the program would leave
never appears, the result says what was stopped and by which rule, the exit
status is 126. Allowed commands keep running, approved ones run, and a
program that flips its exec argument from another thread does not slip
through. Real bubblewrap, real bash, a fake ``git`` on PATH (a script that
leaves the marker), and real git against a local bare repository.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codeward.sandbox import CommandOutput, ExecRules, NativeBashSandbox, ProcessHostBashSandbox

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the exec check runs in the Linux init"
)

DENY = ExecRules(deny=("git push**",))
ASK = ExecRules(ask=("git push**",))
ROOT = Path(__file__).resolve().parents[2]

# Each reaches an exec of `git push` in its own way (the classes that exec).
SPELLINGS = {
    "brace": "{git,push}",
    "path-glob": '"$PWD"/bin/gi? push',
    "word-split": "x='git push'; $x",
    "ifs": "IFS=,; x=git,push; $x",
    "positional": 'set -- push; git "$@"',
    "bash-c-arg": "bash -c 'git $1' _ push",
    "trap": "trap 'git push' EXIT",
    "hash": 'hash -p "$PWD"/bin/git g; g push',
    "source-procsub": "source <(echo git push)",
    "script": "printf 'git push\\n' > x.sh; bash x.sh",
    "stdin-script": "bash /dev/stdin <<< 'git push'",
    "time-compound": "time { git push; }",
    "eval": "eval 'gi''t pu''sh'",
    "env-wrapper": 'env -i PATH="$PATH" MARK="$MARK" git push',
    "nice-wrapper": "nice -n 1 git push",
    "python-system": "python3 -c \"import os; os.system('git push')\"",
    "python-subprocess": "python3 -c \"import subprocess; subprocess.run(['git', 'push'])\"",
    "python-spawn": "python3 -c \"import os; os.posix_spawnp('git', ['git', 'push'], os.environ)\"",
    "exec-a": "exec -a notgit git push",
    "xargs": "echo push | xargs git",
    "find-exec": "find . -maxdepth 0 -exec git push \\;",
    "alias": "git -c alias.p=push p",
    "git-dash-c": "git -C . push",
    "self-exe": "/proc/self/exe -c 'git push'",
}


def run(sb: object, line: str, rules: ExecRules | None) -> CommandOutput:
    prefix = 'export PATH="$PWD/bin:$PATH" MARK="$PWD/marker"; '
    out = sb.exec(prefix + line, timeout_ms=60_000, exec_rules=rules)  # type: ignore[attr-defined]
    assert out.setup_error is None, out
    return out


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_denied_spelling_never_runs(sandbox: NativeBashSandbox, fake_git: Path, name: str):
    out = run(sandbox, SPELLINGS[name], DENY)
    assert not fake_git.exists(), f"{name}: git ran: {fake_git.read_text()!r} {out}"
    assert out.exec_stopped is not None, out
    assert out.exec_stopped.decision == "deny"
    assert out.exec_stopped.rule == "bash(git push**)"
    assert out.exec_stopped.command.startswith("git ")
    assert out.exit_code == 126
    assert "codeward: stopped exec of `git" in out.stderr


@pytest.mark.parametrize("name", ["brace", "word-split", "trap", "script", "python-system"])
def test_unapproved_ask_never_runs(sandbox: NativeBashSandbox, fake_git: Path, name: str):
    out = run(sandbox, SPELLINGS[name], ASK)
    assert not fake_git.exists(), out
    assert out.exec_stopped is not None and out.exec_stopped.decision == "ask", out
    assert "not approved for this call" in out.stderr


def test_approved_ask_runs(sandbox: NativeBashSandbox, fake_git: Path):
    rules = ExecRules(ask=("git push**",), approved=("git push origin main",))
    out = run(sandbox, "git push origin main", rules)
    assert out.exec_stopped is None and out.exit_code == 0, out
    assert fake_git.read_text() == "push origin main\n"
    out = run(sandbox, "git push origin other", rules)  # not what was approved
    assert out.exec_stopped is not None and out.exec_stopped.command == "git push origin other"


def test_allowed_commands_keep_running(sandbox: NativeBashSandbox, fake_git: Path):
    out = run(sandbox, "git status; git log --format=push", DENY)
    assert out.exec_stopped is None and out.exit_code == 0, out
    assert fake_git.read_text() == "status\nlog --format=push\n"
    # an npm-test-like script that execs many programs
    script = (
        "for i in $(seq 1 150); do /bin/true; printf '%s\\n' $i | cat >/dev/null; done; echo ok"
    )
    out = run(sandbox, script, DENY)
    assert out.exit_code == 0 and out.stdout == "ok\n", out


def test_job_control_and_signals_pass_through_the_tracer(
    sandbox: NativeBashSandbox, fake_git: Path
):
    # a stopped and continued process, a trapped signal, a program killed by a signal: the
    # tracer passes each on as bash sees it without one
    line = (
        "sleep 5 & p=$!; kill -STOP $p; kill -CONT $p; kill -TERM $p; wait $p; echo status $?; "
        "bash -c 'trap \"echo trapped\" USR1; kill -USR1 $$; echo after'; "
        "python3 -c 'import os, signal; os.kill(os.getpid(), signal.SIGSEGV)'; echo segv $?"
    )
    out = run(sandbox, line, DENY)
    assert out.stdout == "status 143\ntrapped\nafter\nsegv 139\n", out
    assert out.exec_stopped is None and out.exit_code == 0, out


def test_an_exec_storm_still_times_out(sandbox: NativeBashSandbox):
    # eight loops of execs keep the tracer busy: the timeout still stops everything
    storm = "for i in $(seq 8); do (while :; do /bin/true; done) & done; wait"
    out = sandbox.exec(storm, timeout_ms=3000, kill_grace_ms=500, exec_rules=DENY)
    assert out.timed_out and out.exit_code == 124, out
    after = sandbox.exec("echo next", exec_rules=DENY)  # and the sandbox goes on
    assert after.stdout == "next\n", after


def test_no_rules_no_check(sandbox: NativeBashSandbox, fake_git: Path):
    out = run(sandbox, "git push", None)
    assert out.exit_code == 0 and out.exec_stopped is None, out
    assert fake_git.read_text() == "push\n"
    out = run(sandbox, "git push", ExecRules())
    assert out.exec_stopped is None, out


def test_the_command_cannot_ptrace_or_write_program_memory(sandbox: NativeBashSandbox):
    # the init may trace; the command under it may not, and /proc/PID/mem is read-only to it
    probe = (
        "import ctypes, os, sys\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "print('ptrace', libc.ptrace(0x4206, int(sys.argv[1]), 0, 0), ctypes.get_errno())\n"
        "try:\n"
        "    os.open('/proc/%s/mem' % sys.argv[1], os.O_RDWR)\n"
        "    print('mem open')\n"
        "except OSError as e:\n"
        "    print('mem refused', e.errno)\n"
    )
    out = run(sandbox, f"sleep 30 & python3 -c {_quote(probe)} $!; kill $!", DENY)
    assert "ptrace -1 1" in out.stdout, out  # EPERM
    assert "mem refused" in out.stdout, out


def test_a_child_cannot_leave_the_trace(sandbox: NativeBashSandbox, fake_git: Path):
    # clone(CLONE_UNTRACED) would make a child the tracer does not follow: refused
    probe = (
        "import ctypes, os, platform\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "nr = 56 if platform.machine() == 'x86_64' else 220\n"
        "pid = libc.syscall(nr, 0x00800000 | 17, 0, 0, 0, 0)\n"
        "if pid == 0:\n"
        "    os.execvp('git', ['git', 'push'])\n"
        "print('clone', pid, ctypes.get_errno())\n"
        "if pid > 0:\n"
        "    os.waitpid(pid, 0)\n"
    )
    out = run(sandbox, f"python3 -c {_quote(probe)}", DENY)
    assert not fake_git.exists(), out
    assert "clone -1 1" in out.stdout, out  # EPERM


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


@pytest.fixture
def race_helper(workspace: Path) -> Path:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.fail("a C compiler is needed to build the race helper")
    out = workspace / "execrace"
    src = ROOT / "native" / "tests" / "child_execrace.c"
    subprocess.run([cc, "-O2", "-pthread", str(src), "-o", str(out)], check=True)
    return out


def test_flipping_the_argv_from_another_thread_does_not_slip_through(
    sandbox: NativeBashSandbox, fake_git: Path, race_helper: Path
):
    # 60 execs whose argument another thread flips between "show" and "push": each runs with
    # what the kernel copied, and that is what is checked
    loop = (
        'for i in $(seq 1 40); do ./execrace "$PWD/bin/git" show push; '
        './execrace "$PWD/bin/git" show push from-thread; done; true'
    )
    out = run(sandbox, loop, DENY)
    ran = fake_git.read_text().split() if fake_git.exists() else []
    assert "push" not in ran, out
    assert set(ran) <= {"show"}, ran
    assert ran or out.exec_stopped is not None, f"nothing was exec'd: {out}"


@pytest.fixture
def repo(workspace: Path) -> Path:
    """The workspace as a git repository with one commit, whose origin is a bare one in it."""
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=workspace, env=env, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    git(
        "-c",
        "user.email=t@example.com",
        "-c",
        "user.name=t",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "x",
    )
    git("init", "-q", "--bare", "remote.git")
    git("remote", "add", "origin", str(workspace / "remote.git"))
    return workspace / "remote.git"


def _pushed(bare: Path) -> bool:
    refs = subprocess.run(["git", "--git-dir", str(bare), "show-ref"], capture_output=True)
    return bool(refs.stdout.strip())


REAL_GIT = {
    "plain": "git push -q origin main",
    "copied-binary": 'cp "$(command -v git)" ./mygit; ./mygit push -q origin main',
    "symlinked-binary": 'ln -s "$(command -v git)" ./g; ./g push -q origin main',
    "helper": "/usr/lib/git-core/git-push -q origin main",
    "alias": "git -c alias.p=push p -q origin main",
    "loader": '"$(ls /lib64/ld-linux-*.so.* /lib/ld-linux-*.so.* 2>/dev/null | head -1)" '
    '"$(command -v git)" push -q origin main',
    "loader-copy": 'cp "$(command -v git)" ./mygit; '
    '"$(ls /lib64/ld-linux-*.so.* /lib/ld-linux-*.so.* 2>/dev/null | head -1)" ./mygit '
    "push -q origin main",
}


@pytest.mark.parametrize("name", sorted(REAL_GIT))
def test_real_git_push_is_stopped(sandbox: NativeBashSandbox, repo: Path, name: str):
    if name == "helper" and not os.path.exists("/usr/lib/git-core/git-push"):
        pytest.skip("no /usr/lib/git-core/git-push here")
    out = sandbox.exec(REAL_GIT[name], timeout_ms=60_000, exec_rules=DENY)
    assert out.setup_error is None, out
    assert not _pushed(repo), f"{name}: the push went through: {out}"
    assert out.exec_stopped is not None and out.exit_code == 126, out


def test_real_git_push_without_rules_works(sandbox: NativeBashSandbox, repo: Path):
    out = sandbox.exec(
        REAL_GIT["plain"], timeout_ms=60_000, exec_rules=ExecRules(deny=("rm -rf /",))
    )
    assert out.exit_code == 0 and out.exec_stopped is None, out
    assert _pushed(repo)


def test_process_host_checks_execs_too(workspace: Path, fake_git: Path):
    sb = ProcessHostBashSandbox(workspace)
    out = run(sb, "x='git push'; $x", DENY)
    assert not fake_git.exists(), out
    assert out.exec_stopped is not None and out.exit_code == 126, out
