"""Run codeward in this Python as macOS or Windows would load it: a subprocess's harness.

Usage: ``python tests/platform_sim.py darwin|win32 SCENARIO``. The wheels for macOS and Windows
are cross-built and tested on their own runners (docs/packaging.md); this harness lets the
Linux test suite prove the part that only depends on Python: which modules and attributes the
package touches when it is imported and when the policy, the kernel and the tools run.

It first imports the standard library modules the package imports (found in its sources), so
that those load as the real platform would have them ready, and then makes the platform's
absences real: a meta-path finder refuses the modules the platform lacks (``fcntl``, ``termios``,
``pwd`` ... on Windows), the ``os``, ``signal``, ``select`` and ``socket`` attributes it lacks
are deleted (``os.pidfd_open`` on macOS, ``os.O_NOFOLLOW`` or ``os.geteuid`` on Windows),
``sys.platform`` says the platform's name, and on Windows ``os.open`` and the other ``dir_fd``
calls raise NotImplementedError as they do there. The C extension stays this machine's: the
cross-built ones are checked by ci/cross_compile.py.

A scenario is a function below; it prints one JSON object the test reads.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.abc
import importlib.util
import json
import os
import pkgutil
import sys
from collections.abc import Callable
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "python" / "codeward"

# What each platform lacks that the package could reach for (Linux has all of it).
MISSING_MODULES = {
    "darwin": set(),  # (nothing of the standard library that the package imports)
    "win32": {"fcntl", "termios", "pwd", "grp", "resource", "pty", "tty", "_posixsubprocess"},
}
LINUX_ONLY_OS = {
    "pidfd_open", "pipe2", "memfd_create", "eventfd", "O_PATH", "O_TMPFILE", "O_DIRECT",
    "O_NOATIME", "O_LARGEFILE", "sched_getaffinity", "sched_setaffinity", "copy_file_range",
    "splice", "posix_fadvise", "posix_fallocate", "getresuid", "getresgid", "setresuid",
    "setresgid", "P_PIDFD", "RWF_NOWAIT", "RWF_HIPRI", "RWF_DSYNC", "RWF_SYNC", "RWF_APPEND",
    "getxattr", "setxattr", "listxattr", "removexattr", "unshare", "setns",
    # os.waitid (with P_PID, WEXITED, WNOWAIT) reached macOS only in Python 3.13
    "waitid", "P_PID", "P_PGID", "P_ALL", "WEXITED", "WNOWAIT", "WSTOPPED",
}  # fmt: skip
POSIX_ONLY_OS = {
    "O_CLOEXEC", "O_NOFOLLOW", "O_DIRECTORY", "O_NONBLOCK", "O_NOCTTY", "O_SYNC", "O_DSYNC",
    "O_NDELAY", "O_ASYNC", "O_SHLOCK", "O_EXLOCK", "geteuid", "getuid", "getegid", "getgid",
    "getgroups", "setuid", "setgid", "seteuid", "setegid", "initgroups", "fchown", "lchown",
    "fchmod", "lchmod", "fchdir", "uname", "pread", "pwrite", "preadv", "pwritev", "killpg",
    "setsid", "getsid", "setpgid", "getpgid", "getpgrp", "setpgrp", "fork", "forkpty",
    "register_at_fork", "confstr", "sysconf", "pathconf", "fpathconf", "WNOHANG", "WUNTRACED",
    "WCONTINUED", "WIFEXITED", "WEXITSTATUS", "WIFSIGNALED", "WTERMSIG", "wait", "wait3",
    "wait4", "waitstatus_to_exitcode", "mkfifo", "mknod", "openpty", "ttyname", "fdatasync",
    "sync", "posix_spawn", "posix_spawnp", "statvfs", "fstatvfs", "chroot", "getloadavg",
    "sched_yield", "nice", "getpriority", "setpriority", "ctermid", "getlogin", "major",
    "minor", "makedev", "setgroups",
}  # fmt: skip
MISSING_ATTRS = {
    "darwin": {
        "os": LINUX_ONLY_OS,
        "signal": {"pidfd_send_signal", "SIGRTMIN", "SIGRTMAX", "SIGPOLL", "SIGPWR", "SIGSTKFLT"},
        "select": {"epoll", "EPOLLIN", "EPOLLOUT", "EPOLLERR", "EPOLLHUP", "EPOLLRDHUP"},
        "socket": {"SO_PEERCRED", "SOCK_CLOEXEC", "SOCK_NONBLOCK", "AF_NETLINK", "SO_PEERSEC"},
    },
    "win32": {
        "os": LINUX_ONLY_OS | POSIX_ONLY_OS,
        "signal": {
            "SIGKILL", "SIGHUP", "SIGQUIT", "SIGCHLD", "SIGPIPE", "SIGALRM", "SIGUSR1",
            "SIGUSR2", "SIGSTOP", "SIGCONT", "SIGTSTP", "SIGTTIN", "SIGTTOU", "SIGWINCH",
            "SIGXCPU", "SIGXFSZ", "SIGSYS", "SIGTRAP", "SIGBUS", "SIGPROF", "SIGVTALRM",
            "SIGIO", "SIGURG", "SIGRTMIN", "SIGRTMAX", "SIGPOLL", "SIGPWR", "SIGSTKFLT",
            "pidfd_send_signal", "pthread_kill", "pthread_sigmask", "sigwait", "sigwaitinfo",
            "sigtimedwait", "sigpending", "siginterrupt", "setitimer", "getitimer", "alarm",
            "pause", "SIG_BLOCK", "SIG_UNBLOCK", "SIG_SETMASK", "ITIMER_REAL",
        },
        "select": {"epoll", "poll", "POLLIN", "POLLOUT", "POLLERR", "POLLHUP", "POLLNVAL"},
        "socket": {"AF_UNIX", "SO_PEERCRED", "SOCK_CLOEXEC", "SOCK_NONBLOCK", "AF_NETLINK",
                   "SO_PEERSEC", "socketpair_unix", "sethostname", "CMSG_LEN", "CMSG_SPACE"},
    },
}  # fmt: skip
DIR_FD_CALLS = (
    "open", "stat", "lstat", "mkdir", "rmdir", "unlink", "remove", "rename", "replace",
    "readlink", "symlink", "link", "utime", "chmod", "access", "scandir", "listdir",
)  # fmt: skip


class Blocker(importlib.abc.MetaPathFinder):
    """Refuses the modules the simulated platform does not have, as a missing module fails."""

    def __init__(self, names: set[str]) -> None:
        self.names = names

    def find_spec(self, fullname: str, path: object, target: object = None) -> None:
        if fullname.partition(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


def stdlib_imports() -> set[str]:
    """The standard library modules (dotted) that the package's sources import."""
    found: set[str] = set()
    for source in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(), str(source))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            found |= {n for n in names if n.partition(".")[0] in sys.stdlib_module_names}
    return found


def no_dir_fd(call: Callable[..., object]) -> Callable[..., object]:
    def refuse(*args: object, **kwargs: object) -> object:
        if kwargs.get("dir_fd") is not None or kwargs.get("src_dir_fd") is not None:
            raise NotImplementedError("dir_fd unavailable on this platform")
        return call(*args, **kwargs)

    return refuse


def simulate(platform: str) -> None:
    missing = MISSING_MODULES[platform]
    for name in sorted(stdlib_imports()):
        if name.partition(".")[0] not in missing:
            with contextlib.suppress(ImportError):  # (one this Python lacks, e.g. _scproxy)
                importlib.import_module(name)
    for name in list(sys.modules):
        if name.partition(".")[0] in missing:
            del sys.modules[name]
    sys.meta_path.insert(0, Blocker(missing))
    for module_name, attrs in MISSING_ATTRS[platform].items():
        module = importlib.import_module(module_name)
        for attr in attrs:
            if hasattr(module, attr):
                delattr(module, attr)
    if platform == "win32":
        for call in DIR_FD_CALLS:
            setattr(os, call, no_dir_fd(getattr(os, call)))
        os.supports_dir_fd = set()
    sys.platform = platform


def native_as_built_there() -> None:
    """This machine's extension as codeward._native, minus what _native.c has only on Linux."""
    spec = importlib.util.find_spec("codeward")
    assert spec is not None and spec.submodule_search_locations is not None
    package = Path(spec.submodule_search_locations[0])
    (path,) = (p for p in package.glob("_native.*") if p.name.endswith(tuple(EXTENSION_SUFFIXES)))
    native_spec = importlib.util.spec_from_file_location("codeward._native", path)
    assert native_spec is not None and native_spec.loader is not None
    native = importlib.util.module_from_spec(native_spec)
    native_spec.loader.exec_module(native)
    for name in list(vars(native)):
        if name.startswith(("inotify_", "IN_")) or name == "fstatfs_type":
            delattr(native, name)
    sys.modules["codeward._native"] = native


def import_everything() -> list[str]:
    """Imports every module of the package; returns the ones that failed, with why."""
    import codeward

    failed = []
    for info in pkgutil.walk_packages(codeward.__path__, "codeward."):
        if info.name.endswith(".__main__"):  # (runs the command line)
            continue
        try:
            importlib.import_module(info.name)
        except Exception as exc:
            failed.append(f"{info.name}: {type(exc).__name__}: {exc}")
    return failed


def use(workspace: str) -> dict[str, object]:
    """The policy, the sandbox selection and a session's kernel and tools, as a host uses them."""
    from codeward import CodewardError, Origin, PermissionPolicy, Session, SessionOptions, ToolCall
    from codeward.sandbox import select_sandbox

    out: dict[str, object] = {}
    policy = PermissionPolicy(deny=["bash(git push**)", "write(.env)"], allow=["bash(ls*)"])
    out["policy"] = [
        policy.check("bash", {"command": "cd x && git push"}).value,
        policy.check("bash", {"command": "ls -la"}).value,
        policy.check("write", {"file_path": ".env"}).value,
    ]

    def attempt(what: str, call: Callable[[], object]) -> object:
        try:
            return call()
        except CodewardError as exc:
            out[what] = {"error": type(exc).__name__, "message": str(exc)}
            return None

    opted_in = attempt("opt_in", lambda: select_sandbox(workspace, allow_process_host_sandbox=True))
    if opted_in is not None:
        out["opt_in"] = {"backend": getattr(opted_in, "backend", "?")}
    sandbox = attempt("select_sandbox", lambda: select_sandbox(workspace))
    if sandbox is not None:
        out["select_sandbox"] = {"backend": getattr(sandbox, "backend", "?")}
        attempt("exec", lambda: sandbox.exec("true"))  # type: ignore[attr-defined]
    options = SessionOptions(permission_policy=PermissionPolicy(default_decision="allow"))
    session = attempt("session", lambda: Session(workspace, options))
    if isinstance(session, Session):
        with session:
            calls = [
                ("write", {"file_path": "a.txt", "content": "made here\n"}),
                ("read", {"file_path": "a.txt"}),
                ("read", {"file_path": "../outside.txt"}),
                ("bash", {"command": "echo hi"}),
            ]
            outcomes = []
            for i, (tool, args) in enumerate(calls):
                outcome = session.invoke(ToolCall(f"c{i}", tool, args), Origin.MODEL)
                kind = outcome.error_kind.value if outcome.error_kind else None
                text = outcome.result.output if outcome.result is not None else outcome.reason
                outcomes.append([tool, outcome.executed, kind, str(text)[:300]])
            out["session"] = outcomes
    return out


def importable(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


def main() -> None:
    platform, scenario = sys.argv[1], sys.argv[2]
    native_as_built_there()
    simulate(platform)
    result: dict[str, object] = {"platform": sys.platform}
    if scenario == "import":
        result["failed"] = import_everything()
        result["absent"] = sorted(  # the simulation holds: what the platform lacks stays absent
            [name for name in MISSING_MODULES[platform] if not importable(name)]
            + [f"os.{name}" for name in MISSING_ATTRS[platform]["os"] if not hasattr(os, name)]
        )
    elif scenario == "use":
        result.update(use(sys.argv[3]))
    else:
        raise SystemExit(f"unknown scenario {scenario!r}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
