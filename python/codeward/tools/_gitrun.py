"""Running git on the host, read-only and defanged: the only way the git tool starts git.

git never discovers a repository: it is given the workspace's own ``.git``
directory and the workspace as its working tree (``--git-dir``,
``--work-tree``), after ``_gitdir`` has checked that directory, so
``core.worktree``, ``core.bare`` and a bare repository written at the
workspace root change nothing. Nothing in the repository's configuration may
make git run a program or read a host file: fsmonitor, hooks, external diff,
textconv, pagers, signature programs and clean/smudge filters are switched
off, and the files git would read from configured paths (attributes,
excludes, mailmap, diff order) are ``/dev/null``, all on the command line,
which wins over every configuration file. System and global configuration
are not read, the environment is minimal, no lock is taken, no network
protocol is allowed, and submodules are never entered.

git never writes the repository's index either: a porcelain ``git diff``
refreshes stat information and rewrites ``.git/index`` (taking
``index.lock``) whatever ``GIT_OPTIONAL_LOCKS`` says, so each tool call
gives git a private copy of the index (:func:`private_index`) through
``GIT_INDEX_FILE``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import selectors
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass

from ..workspace import Workspace
from ._base import CancelToken, ErrorKind
from ._failure import ToolError
from ._gitdir import Repository, open_repository

__all__ = ["GitOutput", "git_available", "private_index", "run_git"]

TIMEOUT_S = 30.0
CANCEL_POLL_S = 0.05  # how often a running git looks at its cancel token
_SAFE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_CONFIG = (
    "core.fsmonitor=",
    "core.hooksPath=/dev/null",
    "diff.external=",
    "protocol.allow=never",
    "core.pager=cat",
    "core.quotePath=false",
    "core.sshCommand=false",
    "core.askPass=/bin/false",
    "core.editor=/bin/false",
    "sequence.editor=/bin/false",
    "core.attributesFile=/dev/null",
    "core.excludesFile=/dev/null",
    "safe.bareRepository=explicit",
    "color.ui=false",
    "log.showSignature=false",
    "log.mailmap=false",
    "mailmap.file=/dev/null",
    "mailmap.blob=",
    "diff.orderFile=/dev/null",
    "gpg.program=/bin/false",
    "gpg.ssh.program=/bin/false",
    "gpg.x509.program=/bin/false",
    "gc.auto=0",
    "maintenance.auto=false",
    "submodule.recurse=false",
    "status.submoduleSummary=false",
    "diff.ignoreSubmodules=all",
    "credential.helper=",
)
_MAX_STDERR = 8192
MAX_INDEX_BYTES = 1 << 30  # a larger index is not copied: the call is refused


@dataclass(frozen=True)
class GitOutput:
    stdout: bytes
    stderr: str
    returncode: int
    complete: bool  # False when the read stopped at the byte limit


def git_available() -> str | None:
    """The git executable on the safe PATH, or None."""
    return shutil.which("git", path=_SAFE_PATH)


def run_git(
    ws: Workspace,
    args: list[str],
    *,
    limit: int | None = None,
    deadline: float | None = None,
    index_file: str | None = None,
    cancel: CancelToken | None = None,
) -> GitOutput:
    """Runs ``git <defanged config> args`` on the workspace's repository; reads at most
    ``limit`` bytes.

    The repository is checked first (see ``_gitdir``); a workspace without a
    ``.git`` directory of its own, or with one git must not read, raises a
    ToolError before git starts. Past ``limit`` git is stopped and
    ``complete`` is False. Past the deadline (TIMEOUT_S from now by default)
    it is killed and a Timeout ToolError raised; once ``cancel`` is set
    (checked every CANCEL_POLL_S), its process group is killed and a
    Cancelled ToolError raised. ``index_file`` is the index
    git reads and refreshes instead of the repository's (see
    :func:`private_index`).
    """
    git = git_available()
    if git is None:
        raise ToolError(ErrorKind.TOOL_FAILED, "git is not installed on this machine")
    deadline = deadline if deadline is not None else time.monotonic() + TIMEOUT_S
    repo = open_repository(ws, git, deadline)
    argv = [git, "--no-pager", f"--git-dir={repo.git_dir}", f"--work-tree={repo.work_tree}"]
    for setting in _CONFIG:
        argv += ["-c", setting]
    argv += args
    proc = subprocess.Popen(
        argv,
        cwd=ws.root,
        env=_environment(ws, {**_filter_overrides(repo), **_index_environment(index_file)}),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group: a kill reaches whatever it started
        close_fds=True,
    )
    out = bytearray()
    err = bytearray()
    complete = True
    try:
        with selectors.DefaultSelector() as sel:
            assert proc.stdout is not None and proc.stderr is not None
            sel.register(proc.stdout, selectors.EVENT_READ, out)
            sel.register(proc.stderr, selectors.EVENT_READ, err)
            while sel.get_map():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise ToolError(
                        ErrorKind.TIMEOUT,
                        f"git {args[0]} took longer than {TIMEOUT_S:.0f} s and was stopped",
                    )
                if cancel is not None:
                    if cancel.is_set():
                        raise ToolError(ErrorKind.CANCELLED, f"git {args[0]} was cancelled")
                    remaining = min(remaining, CANCEL_POLL_S)
                for key, _ in sel.select(remaining):
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        sel.unregister(key.fileobj)
                        continue
                    buf: bytearray = key.data
                    if buf is err:
                        if len(err) < _MAX_STDERR:
                            err += chunk[: _MAX_STDERR - len(err)]
                        continue
                    out += chunk
                    if limit is not None and len(out) > limit:
                        complete = False
                        del out[limit:]
                        sel.unregister(proc.stdout)
                        _kill(proc)
                        sel.unregister(proc.stderr)
                        break
        returncode = proc.wait(timeout=max(0.1, deadline - time.monotonic()))
    except BaseException:
        _kill(proc)
        raise
    finally:
        if proc.stdout:
            proc.stdout.close()
        if proc.stderr:
            proc.stderr.close()
    return GitOutput(bytes(out), err.decode("utf-8", "replace"), returncode, complete)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _environment(ws: Workspace, extra: dict[str, str]) -> dict[str, str]:
    """A minimal environment: no inherited GIT_DIR, GIT_CONFIG_*, pager, editor or askpass."""
    env = {
        "PATH": _SAFE_PATH,
        "LC_ALL": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "/bin/false",
        "SSH_ASKPASS": "/bin/false",
        "GIT_PAGER": "cat",
        "PAGER": "cat",
        "GIT_LITERAL_PATHSPECS": "1",
        "GIT_NO_LAZY_FETCH": "1",
        "GIT_CEILING_DIRECTORIES": os.path.dirname(ws.root),
    }
    env.update(extra)
    return env


def _filter_overrides(repo: Repository) -> dict[str, str]:
    """Configuration (as GIT_CONFIG_KEY_n/VALUE_n, which takes any name) that empties every
    clean/smudge filter the repository defines, so status and diff never run one."""
    names: list[str] = []
    for key, _value in repo.config:
        if key.lower().startswith("filter.") and key.count(".") >= 2:
            name = key[len("filter.") : key.rindex(".")]
            if name not in names:
                names.append(name)
    pairs = []
    for name in names:
        for item, value in (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")):
            pairs.append((f"filter.{name}.{item}", value))
    env = {"GIT_CONFIG_COUNT": str(len(pairs))}
    for i, (key, value) in enumerate(pairs):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    return env


def _index_environment(index_file: str | None) -> dict[str, str]:
    return {} if index_file is None else {"GIT_INDEX_FILE": index_file}


@contextlib.contextmanager
def private_index(
    ws: Workspace, deadline: float | None = None, cancel: CancelToken | None = None
) -> Iterator[str]:
    """The path of a private copy of the repository's index, removed afterwards.

    Read-only git commands still refresh the index's stat information and
    write it back (a porcelain ``git diff`` does, taking ``index.lock``,
    even with ``GIT_OPTIONAL_LOCKS=0``); given this copy as
    ``GIT_INDEX_FILE``, they write there, in a private temporary directory
    outside the workspace, and the repository is never changed. A
    repository without an index gets a path where none exists, which git
    reads as empty, as it reads the missing original. Raises ToolError when
    the index is a symbolic link, not a regular file, or larger than
    MAX_INDEX_BYTES.
    """
    out = run_git(ws, ["rev-parse", "--git-path", "index"], deadline=deadline, cancel=cancel)
    where = os.fsdecode(out.stdout).strip()
    source = os.path.join(ws.root, where) if where else ""
    with tempfile.TemporaryDirectory(prefix="codeward-git-index-") as private:
        copy = os.path.join(private, "index")
        if out.returncode == 0 and source:
            _copy_index(source, copy)
        yield copy


def _copy_index(source: str, copy: str) -> None:
    refused = ToolError(
        ErrorKind.TOOL_FAILED,
        f"the git index is not a regular file of at most {MAX_INDEX_BYTES} bytes (a symbolic "
        "link, a FIFO or a device is not one); the git tool does not read it",
    )
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return  # no index yet (a new repository): git reads the missing copy as empty
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise refused from None
        raise ToolError(ErrorKind.TOOL_FAILED, f"cannot read the git index: {exc}") from None
    with os.fdopen(fd, "rb") as src, open(copy, "xb") as dst:
        st = os.fstat(src.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise refused
        copied = 0
        while chunk := src.read(1 << 20):
            copied += len(chunk)
            if copied > MAX_INDEX_BYTES:  # it grew while it was copied
                raise refused
            dst.write(chunk)
    # The copy keeps the index's times: git takes an entry whose mtime is not older than the
    # index file's as "racily clean" and compares its content. With the copy's own (later)
    # mtime, a file rewritten with the same size in the same clock tick as it was staged would
    # look unchanged, and diff and status would miss the change.
    os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns))
