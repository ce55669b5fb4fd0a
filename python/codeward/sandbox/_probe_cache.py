"""The readiness probe's verdict, kept across processes while nothing it depends on changes.

The probe starts a real sandbox and checks its boundary from inside, which
costs more than a whole ``codeward exec -- true`` should. Its verdict
depends only on facts that are cheap to read: the bubblewrap, a3s-init and
C core files (path and identity: device, inode, size, mtime, ctime), the
kernel (release, version, boot id), who the caller is (uid, gid, user and
mount namespaces) and the kernel settings that decide whether a sandbox can
start (user namespace sysctls, the LSMs). Those facts are the key: a passed
probe is stored under their digest, and a process that computes the same
digest skips the probe. Change any of them and the digest changes, so the
probe runs again. A failed probe is never stored (a transient failure must
not stick), and an entry older than ``MAX_AGE_S`` is ignored.

Only a pass is ever read from the store, so what matters is that nobody
else can write one: the entry is read only from a directory the caller owns
that nobody else can write (``$XDG_RUNTIME_DIR/codeward``, else the cache
directory), only from a regular file the caller owns with one link, opened
without following a symlink. Anything else counts as no entry.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import time
from typing import Any

__all__ = ["MAX_AGE_S", "cache_dir", "probe_key", "recall_pass", "remember_pass"]

MAX_AGE_S = 24 * 3600
_SCHEMA = "codeward.probe-cache/v1"
# Kernel settings that decide whether an unprivileged sandbox can start.
_SETTINGS = (
    "/proc/sys/kernel/unprivileged_userns_clone",
    "/proc/sys/user/max_user_namespaces",
    "/proc/sys/user/max_pid_namespaces",
    "/proc/sys/user/max_mnt_namespaces",
    "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
    "/proc/sys/kernel/apparmor_restrict_unprivileged_unconfined",
    "/proc/sys/kernel/seccomp/actions_avail",
    "/proc/sys/kernel/random/boot_id",
    "/sys/kernel/security/lsm",
)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _identity(path: str | None) -> list[Any]:
    if not path:
        return [None]
    try:
        st = os.stat(path)
    except OSError:
        return [path, None]
    return [path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode]


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(4096)
    except OSError:
        return None


def _namespace(name: str) -> str | None:
    try:
        return os.readlink(f"/proc/self/ns/{name}")
    except OSError:
        return None


def probe_key(bwrap: str, init: str | None, native: str | None) -> str:
    """The digest of everything the probe's verdict depends on."""
    uname = os.uname()
    facts = {
        "schema": _SCHEMA,
        "bwrap": _identity(bwrap),
        "init": _identity(init),
        "native": _identity(native),
        "kernel": [uname.sysname, uname.release, uname.version, uname.machine],
        "ids": [os.geteuid(), os.getegid()],
        "namespaces": [_namespace("user"), _namespace("mnt")],
        "settings": {path: _read(path) for path in _SETTINGS},
    }
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()


def cache_dir() -> str | None:
    """Where entries live: a ``codeward`` directory in the runtime or cache directory."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(runtime):
        return os.path.join(runtime, "codeward")
    cache = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(cache):
        home = os.path.expanduser("~")
        if not os.path.isabs(home):
            return None
        cache = os.path.join(home, ".cache")
    return os.path.join(cache, "codeward")


def _owned_private(st: os.stat_result) -> bool:
    """Ours alone: owned by the caller, writable by nobody else."""
    return st.st_uid == os.geteuid() and not st.st_mode & 0o022


def _open_dir(path: str, create: bool) -> int | None:
    if create:
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
        except OSError:
            return None
    try:
        fd = os.open(path, _DIR_FLAGS)
    except OSError:
        return None
    if not _owned_private(os.fstat(fd)):
        os.close(fd)
        return None
    return fd


def recall_pass(key: str) -> bool:
    """Whether a pass for exactly ``key`` was stored, by this user, less than a day ago."""
    directory = cache_dir()
    dirfd = None if directory is None else _open_dir(directory, create=False)
    if dirfd is None:
        return False
    try:
        fd = os.open(f"probe-{key}", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dirfd)
    except OSError:
        return False
    finally:
        os.close(dirfd)
    try:
        st = os.fstat(fd)
        if not (stat.S_ISREG(st.st_mode) and st.st_nlink == 1 and _owned_private(st)):
            return False
        data = json.loads(os.read(fd, 4096))
    except (OSError, ValueError):
        return False
    finally:
        os.close(fd)
    if not isinstance(data, dict) or data.get("key") != key or data.get("verdict") != "pass":
        return False
    stored = data.get("at")
    return isinstance(stored, (int, float)) and 0 <= time.time() - stored < MAX_AGE_S


def remember_pass(key: str) -> None:
    """Stores a pass under ``key`` (atomically; silently not, if the directory is not ours)."""
    directory = cache_dir()
    dirfd = None if directory is None else _open_dir(directory, create=True)
    if dirfd is None:
        return
    temp = f".probe-{key}.{os.getpid()}"
    body = json.dumps({"key": key, "verdict": "pass", "at": time.time()}).encode()
    try:
        fd = os.open(
            temp,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o600,
            dir_fd=dirfd,
        )
        try:
            os.write(fd, body)
        finally:
            os.close(fd)
        os.replace(temp, f"probe-{key}", src_dir_fd=dirfd, dst_dir_fd=dirfd)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=dirfd)
    finally:
        os.close(dirfd)
