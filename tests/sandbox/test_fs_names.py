"""Missing protected names stay missing inside the sandbox only (native/init/names.c).

Where the kernel has seccomp user notification with SECCOMP_ADDFD_FLAG_SEND (Linux
5.14), the init emulates every call that makes or renames a name: the host's listing of
the workspace is the same before, during and after a sandbox, and no command can make a
protected name by any route (a racing thread, a symlink, a rename, O_TMPFILE). Ordinary
creations behave as the kernel's own: the same modes, errors and flags as under the
fallback (placeholders, forced by A3S_CODE_PROTECT_NAMES=placeholders), which the
comparison test runs side by side.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import nodump
import pytest

from codeward import _native
from codeward.sandbox import NativeBashSandbox

pytestmark = pytest.mark.skipif(
    not _native.features().get("names_emulated"),
    reason="the kernel lacks SECCOMP_ADDFD_FLAG_SEND (Linux 5.14): placeholders are used",
)

ALL_PROTECTED = [name for group in _native.protected_names() for name in group]
PYTHON = os.path.realpath(getattr(sys, "_base_executable", sys.executable))


@pytest.fixture
def ws(fs_host_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("A3S_CODE_PROTECT_NAMES", raising=False)
    path = fs_host_dir / "ws"
    path.mkdir()
    (path / "README").write_text("workspace\n")
    (path / "sub").mkdir()
    return path


def listing(ws: Path) -> dict[str, tuple[int, int, int] | None]:
    """The host's view: the workspace's entries and an lstat of every protected name."""
    view: dict[str, tuple[int, int, int] | None] = {}
    with os.scandir(ws) as it:
        for entry in it:
            st = entry.stat(follow_symlinks=False)
            view[entry.name] = (st.st_mode, st.st_ino, st.st_nlink)
    for name in ALL_PROTECTED:
        try:
            st = os.lstat(ws / name)
            view["lstat " + name] = (st.st_mode, st.st_ino, st.st_nlink)
        except FileNotFoundError:
            view["lstat " + name] = None
    return view


def _until(cond, what: str, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


@pytest.mark.parametrize("reuse", [True, False], ids=["long-lived", "one-shot"])
def test_host_listing_is_the_same_before_during_and_after(ws, reuse):
    before = listing(ws)
    sb = NativeBashSandbox(ws, reuse=reuse)
    try:
        assert sb.exec("true").exit_code == 0
        assert listing(ws) == before, "the open sandbox shows in the host's listing"
        result: list = []
        runner = threading.Thread(
            target=lambda: result.append(sb.exec("echo go > sub/started; sleep 2"))
        )
        runner.start()
        _until((ws / "sub" / "started").exists, "the command never started")
        during = listing(ws)
        runner.join()
        assert result and result[0].exit_code == 0, result
        assert during == before, "a running command shows in the host's listing"
    finally:
        sb.close()
    assert listing(ws) == before


RACER = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
static char path[64] = "harmless";
static volatile int stop;
static void *flip(void *arg) {
    (void)arg;
    while (!stop) {
        memcpy(path, ".mcp.json", 10);
        memcpy(path, "harmless", 9);
    }
    return NULL;
}
int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, flip, NULL);
    int made = 0;
    for (int i = 0; i < 20000; i++) {
        int fd = open(path, O_CREAT | O_WRONLY, 0644);
        if (fd >= 0) {
            made++;
            close(fd);
        }
        unlink("harmless");
    }
    stop = 1;
    pthread_join(t, NULL);
    printf("opened %d\n", made);
    return 0;
}
"""

HOSTILE_PY = r"""
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
out = []
def attempt(what, fn):
    try:
        fn()
        out.append(what + " MADE")
    except OSError as e:
        out.append(what + " " + errno.errorcode[e.errno])
root = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
sub = os.open("sub", os.O_RDONLY | os.O_DIRECTORY)
attempt("dirfd", lambda: os.open(".mcp.json", os.O_CREAT | os.O_WRONLY, dir_fd=root))
attempt("dotdot", lambda: os.open("../.bashrc", os.O_CREAT | os.O_WRONLY, dir_fd=sub))
attempt("abs", lambda: os.open(os.path.abspath(".zshrc"), os.O_CREAT | os.O_WRONLY))
attempt("proc-self", lambda: os.open("/proc/self/cwd/.profile", os.O_CREAT | os.O_WRONLY))
attempt("mkdirat", lambda: os.mkdir(".claude", dir_fd=root))
def tmpfile():
    fd = os.open(".", os.O_TMPFILE | os.O_WRONLY, 0o600)
    os.write(fd, b"x")
    r = libc.linkat(fd, b"", -100, b".mcp.json", 0x1000)  # AT_EMPTY_PATH
    if r != 0:
        e = ctypes.get_errno()
        r = libc.linkat(-100, b"/proc/self/fd/%d" % fd, -100, b".mcp.json", 0x400)
        if r != 0:
            raise OSError(ctypes.get_errno(), "linkat")
tempfile_ok = attempt("tmpfile-linkat", tmpfile)
open("plain", "w").close()
def renameat2(flags):
    if libc.renameat2(-100, b"plain", -100, b".gitmodules", flags) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")
attempt("renameat2-noreplace", lambda: renameat2(1))
attempt("renameat2-exchange", lambda: renameat2(2))
attempt("renameat2-plain", lambda: renameat2(0))
os.symlink(".cursorrules", "dangling")
attempt("dangling", lambda: os.open("dangling", os.O_CREAT | os.O_WRONLY))
os.symlink("sub/../.roorules", "dangling2")
attempt("dangling2", lambda: open("dangling2", "a").close())
print("\n".join(out))
"""


@pytest.mark.parametrize("reuse", [True, False], ids=["long-lived", "one-shot"])
def test_no_route_makes_a_protected_name(ws, reuse, tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler for the racing thread")
    src = tmp_path / "racer.c"
    src.write_text(RACER)
    subprocess.run([cc, "-O1", "-pthread", str(src), "-o", str(ws / "sub" / "racer")], check=True)
    (ws / "hostile.py").write_text(HOSTILE_PY)
    (ws / "file").write_text("x\n")
    before = listing(ws)
    shell = textwrap.dedent(
        """
        > .mcp.json; echo x > .mcp.json; mkdir .vscode; ln -s x .bashrc; ln file .mcp.json
        mv file .mcp.json; mkfifo .git; mknod .zprofile p; cp README .ripgreprc
        echo x > sub/../.mcp.json; touch .cursorrules .roomodes; mkdir -p .codex/x
        ln -s .mcp.json foo; echo x > foo; ln -sf ../.gemini sub/link; mkdir sub/link
        install -d .idea; tar -C . -xf /dev/null; git init -q .git 2>/dev/null
        (cd sub && echo y > ../.clinerules)
        echo shell-done
        """
    )
    sb = NativeBashSandbox(ws, reuse=reuse)
    try:
        out = sb.exec(shell)
        assert "shell-done" in out.stdout, out
        out = sb.exec(f"{PYTHON} hostile.py")
        assert out.exit_code == 0, out
        assert "MADE" not in out.stdout, out.stdout
        out = sb.exec("sub/racer")
        assert out.exit_code == 0 and out.stdout.startswith("opened"), out
        seen = sb.exec("ls -A")
    finally:
        sb.close()
    for name in ALL_PROTECTED:
        assert not os.path.lexists(ws / name), f"{name} was made on the host"
        assert name not in seen.stdout.split(), f"{name} is visible in the sandbox"
    after = listing(ws)
    assert all(after["lstat " + name] is None for name in ALL_PROTECTED), after
    assert before.keys() <= after.keys()


ORDINARY_PY = r"""
import ctypes, errno, fcntl, os, stat
libc = ctypes.CDLL(None, use_errno=True)
out = []
def rec(what, fn):
    try:
        r = fn()
        out.append(f"{what} ok {r if r is not None else ''}")
    except OSError as e:
        out.append(f"{what} {errno.errorcode[e.errno]}")
def mode(p):
    return oct(stat.S_IMODE(os.lstat(p).st_mode))
os.chdir("t")
os.umask(0o027)
def mk(p, flags, m=0o666):
    fd = os.open(p, flags, m)
    fl = fcntl.fcntl(fd, fcntl.F_GETFL)
    fdfl = fcntl.fcntl(fd, fcntl.F_GETFD)
    os.close(fd)
    return f"{mode(p)} append={bool(fl & os.O_APPEND)} cloexec={bool(fdfl & fcntl.FD_CLOEXEC)}"
rec("create", lambda: mk("a", os.O_CREAT | os.O_WRONLY))
rec("create-cloexec-append", lambda: mk("b", os.O_CREAT | os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC))
rec("excl-exists", lambda: mk("a", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
rec("excl-new", lambda: mk("c", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
rec("trunc-keeps", lambda: (open("a", "w").write("data"), mk("a", os.O_CREAT | os.O_WRONLY))[1])
rec("size-kept", lambda: os.path.getsize("a"))
rec("noent-parent", lambda: mk("missing/x", os.O_CREAT | os.O_WRONLY))
rec("notdir-parent", lambda: mk("a/x", os.O_CREAT | os.O_WRONLY))
rec("isdir", lambda: mk(".", os.O_CREAT | os.O_WRONLY))
rec("trailing-slash", lambda: mk("new/", os.O_CREAT | os.O_WRONLY))
rec("mkdir", lambda: (os.mkdir("d", 0o777), mode("d"))[1])
rec("mkdir-exists", lambda: os.mkdir("d"))
rec("mkdir-slash", lambda: (os.mkdir("e/"), mode("e"))[1])
rec("mkdir-dot", lambda: os.mkdir("d/.."))
rec("symlink", lambda: (os.symlink("a", "s"), os.readlink("s"))[1])
rec("symlink-exists", lambda: os.symlink("a", "s"))
rec("follow-create", lambda: (os.symlink("d/target", "s2"), mk("s2", os.O_CREAT | os.O_WRONLY), mode("d/target"))[2])
rec("nofollow", lambda: mk("s", os.O_CREAT | os.O_WRONLY | os.O_NOFOLLOW))
rec("excl-symlink", lambda: mk("s", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
rec("loop", lambda: (os.symlink("l2", "l1"), os.symlink("l1", "l2"), mk("l1", os.O_CREAT | os.O_WRONLY))[2])
rec("link", lambda: (os.link("a", "hard"), os.lstat("a").st_nlink)[1])
rec("link-exists", lambda: os.link("a", "hard"))
rec("link-noent", lambda: os.link("nothing", "hard2"))
rec("rename", lambda: (os.rename("hard", "moved"), os.path.exists("hard"))[1])
rec("rename-noent", lambda: os.rename("nothing", "x"))
rec("rename-dir-over-file", lambda: os.rename("d", "a"))
rec("noreplace", lambda: libc.renameat2(-100, b"a", -100, b"b", 1) or ctypes.get_errno())
rec("exchange", lambda: libc.renameat2(-100, b"a", -100, b"b", 2) or ctypes.get_errno())
rec("fifo", lambda: (os.mkfifo("f", 0o666), mode("f"))[1])
rec("fifo-exists", lambda: os.mkfifo("f"))
rec("mknod-reg", lambda: (os.mknod("n", 0o644 | stat.S_IFREG), mode("n"))[1])
rec("mknod-dev", lambda: os.mknod("dev", 0o644 | stat.S_IFCHR, os.makedev(1, 3)))
rec("outside-rofs", lambda: mk("/usr/a3s-names-test", os.O_CREAT | os.O_WRONLY))
rec("outside-etc", lambda: os.mkdir("/etc/a3s-names-test"))
rec("tmp-ok", lambda: mk("/tmp/x", os.O_CREAT | os.O_WRONLY))
rec("badfd", lambda: os.open("x", os.O_CREAT | os.O_WRONLY, dir_fd=999))
rec("efault", lambda: (libc.open(ctypes.c_void_p(8), os.O_CREAT | os.O_WRONLY, 0o644), errno.errorcode[ctypes.get_errno()])[1])
def inheritable():
    fd = libc.open(b"i", os.O_CREAT | os.O_WRONLY, 0o666)
    r = fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC
    os.close(fd)
    return f"{mode('i')} cloexec={bool(r)}"
rec("create-inheritable", inheritable)
rec("many", lambda: sum(1 for i in range(2000) if os.close(os.open(f"m{i}", os.O_CREAT | os.O_WRONLY)) is None))
rec("umask-still", lambda: oct(os.umask(0o027)))
print("\n".join(out))
"""  # noqa: E501


def _ordinary(ws: Path, reuse: bool) -> str:
    shutil.rmtree(ws / "t", ignore_errors=True)
    (ws / "t").mkdir()
    (ws / "ordinary.py").write_text(ORDINARY_PY)
    sb = NativeBashSandbox(ws, reuse=reuse)
    try:
        out = sb.exec(f"{PYTHON} ordinary.py")
        assert out.exit_code == 0, out
        # a FIFO open waits for its reader, and a git repository in a subdirectory
        fifo = sb.exec(
            "echo out > /dev/stdout; echo err > /dev/stderr; echo p > /proc/self/cwd/t/viaproc;"
            " exec 3<t; echo q > /dev/fd/3/viafd; cat t/viaproc t/viafd;"
            " cd t && (sleep 0.3; cat f > got) & cd t && echo hello > f; wait; cat got;"
            " mkdir -p g && cd g && git init -q . && git config user.email a@b && "
            " git config user.name a && echo x > x && git add x && git commit -qm m && echo ok"
        )
        assert fifo.exit_code == 0, fifo
        return out.stdout + fifo.stdout
    finally:
        sb.close()


@pytest.mark.parametrize("reuse", [True, False], ids=["long-lived", "one-shot"])
def test_ordinary_creations_behave_as_the_kernels(ws, reuse, monkeypatch):
    emulated = _ordinary(ws, reuse)
    monkeypatch.setenv("A3S_CODE_PROTECT_NAMES", "placeholders")
    native = _ordinary(ws, reuse)
    assert emulated == native
    assert "create-inheritable ok 0o640 cloexec=False" in emulated
    assert "efault ok EFAULT" in emulated
    assert "create-cloexec-append ok 0o640 append=True cloexec=True" in emulated
    assert "excl-exists EEXIST" in emulated and "outside-rofs EROFS" in emulated
    assert "out\np\nq\nhello\n" in emulated and emulated.rstrip().endswith("ok")


_CHILD = textwrap.dedent(
    """
    import sys
    from codeward.sandbox import NativeBashSandbox

    sb = NativeBashSandbox(sys.argv[1], reuse=sys.argv[2] == "1")
    sb.exec("echo go > sub/started; sleep 30", timeout_ms=60000)
    """
)


@pytest.mark.parametrize("reuse", [True, False], ids=["long-lived", "one-shot"])
def test_sigkill_of_the_host_leaves_nothing(ws, reuse, fs):
    before = listing(ws)
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(ws), "1" if reuse else "0"])
    try:
        _until((ws / "sub" / "started").exists, "the command never started")
        assert listing(ws) == before
        assert fs.janitors_of(ws) == [], "a janitor was started although nothing needs one"
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    time.sleep(1)
    assert listing(ws) == before


def test_a_name_the_host_makes_while_the_sandbox_lives_is_protected_next(ws):
    """The user creates `.mcp.json` on the host while a long-lived sandbox is open: the next
    command gets it read-only (the sandbox is rebuilt around it), by any route."""
    with NativeBashSandbox(ws, reuse=True) as sb:
        assert sb.exec("true").exit_code == 0
        (ws / ".mcp.json").write_text('{"mine": 1}\n')
        (ws / ".vscode").mkdir()
        out = sb.exec(
            "cat .mcp.json; echo evil > .mcp.json; echo evil >> .mcp.json; "
            f'{PYTHON} -c \'import os; os.write(os.open(".mcp.json", os.O_WRONLY), b"evil")\'; '
            "echo evil > .vscode/tasks.json; echo tried"
        )
        assert out.stdout == '{"mine": 1}\ntried\n', out
    assert (ws / ".mcp.json").read_text() == '{"mine": 1}\n'
    assert os.listdir(ws / ".vscode") == []


CLOSER = r"""
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

/* Opens, writes and closes "f" many times; after each close the IN_CLOSE_WRITE
 * must already be queued, as it is when the caller's close is the file's last. */
int main(void) {
    int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (in < 0 || inotify_add_watch(in, ".", IN_CLOSE_WRITE) < 0) {
        perror("inotify");
        return 2;
    }
    char buf[4096];
    int late = 0, first = -1;
    for (int i = 0; i < 2000; i++) {
        int fd = open("f", O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, "x", 1) != 1) {
            perror("f");
            return 2;
        }
        close(fd);
        if (read(in, buf, sizeof buf) <= 0 && late++ == 0)
            first = i;
    }
    printf("late %d\n", late);
    if (late)
        fprintf(stderr, "first late close: %d\n", first);
    return 0;
}
"""


@pytest.mark.parametrize("reuse", [True, False], ids=["long-lived", "one-shot"])
def test_a_created_file_is_closed_when_its_caller_closes_it(ws, reuse, tmp_path):
    """The emulated open hands its file over before the command resumes: the helper holds
    no reference after the answer, so the command's own close is the last and its
    IN_CLOSE_WRITE is queued at once (a change detector never sees it after the command)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    src = tmp_path / "closer.c"
    src.write_text(CLOSER)
    subprocess.run([cc, "-O1", str(src), "-o", str(ws / "closer")], check=True)
    sb = NativeBashSandbox(ws, reuse=reuse)
    try:
        out = sb.exec("./closer")
    finally:
        sb.close()
    assert out.exit_code == 0, out
    assert out.stdout.strip() == "late 0", out.stdout


@pytest.mark.parametrize("reuse", [True, False], ids=["long-lived", "one-shot"])
def test_a_non_dumpable_program_makes_names_and_no_protected_one(ws, reuse, tmp_path):
    """prctl(PR_SET_DUMPABLE, 0) (ssh-agent, gpg-agent) closes the program's memory to the
    init: its calls are still emulated, from what was opened while it waited in the prctl,
    and where nothing was (a dirfd, a directory it moved to, a child it forks, unreadable
    from birth) they are refused, never let through."""
    try:
        nodump.build(ws / "sub", tmp_path)
    except RuntimeError:
        pytest.skip("no C compiler")
    before = listing(ws)
    with NativeBashSandbox(ws, reuse=reuse) as sb:
        out = sb.exec("umask 022; sub/nodump; ls -A")
    assert out.exit_code == 0, out
    got = nodump.results(out.stdout)
    ok = [
        "prctl", "create", "write", "mkdir", "create-in-dir", "create-abs", "rename",
        "symlink", "link", "thread-create", "race", "chdir",
    ]  # fmt: skip
    assert {k: got.get(k) for k in ok} == dict.fromkeys(ok, "ok"), out.stdout
    assert got["dumpable"] == "0"
    for refused in (
        "protected-create", "protected-mkdir", "protected-rename", "protected-symlink",
        "protected-dotdot", "protected-dirfd", "ordinary-dirfd", "child-protected",
        "after-chdir",
    ):  # fmt: skip
        assert got[refused] == "EACCES", (refused, out.stdout)
    assert (ws / "dir" / "moved").read_text() == "hello\n"
    assert oct((ws / "dir").stat().st_mode & 0o777) == oct(0o755)  # the caller's umask
    assert os.readlink(ws / "dir" / "link") == "moved"
    assert (ws / "dir" / "hard").stat().st_ino == (ws / "dir" / "moved").stat().st_ino
    assert (ws / "from-thread").exists() and (ws / "race-ordinary").exists()
    assert (ws / "dir" / "absolute").exists()
    assert not (ws / "via-dirfd").exists() and not (ws / "dir" / "after").exists()
    for name in ALL_PROTECTED:
        assert not os.path.lexists(ws / name), f"{name} was made on the host"
        assert name not in out.stdout.split(), f"{name} is visible in the sandbox"
    after = listing(ws)
    assert all(after["lstat " + name] is None for name in ALL_PROTECTED), after
    assert before.keys() <= after.keys()
