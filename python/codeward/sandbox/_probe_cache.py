"""The readiness probe's verdict, kept across processes while nothing it depends on changes.

The probe starts a real sandbox and checks its boundary from inside, which
costs more than a whole ``codeward exec -- true`` should. Its verdict
depends only on facts that are cheap to read: the bubblewrap, a3s-init and
C core files (path and identity: device, inode, size, mtime, ctime), the
kernel (release, version, boot id), who the caller is (uid, gid, user and
mount namespaces), what confines the caller itself (its seccomp mode and
number of filters, no-new-privs, its effective and bounding capabilities and
its LSM label: a container runtime's seccomp profile refusing user
namespaces, or an AppArmor profile, is inherited by bubblewrap) and the
kernel settings that decide whether a sandbox can start (user namespace
sysctls, the LSMs). Those facts are the key: a passed
probe is stored under their digest, and a process that computes the same
digest skips the probe. Change any of them and the digest changes, so the
probe runs again. The facts themselves are stored and compared exactly (the
file name is only a short checksum of them, to keep different
configurations apart). A failed probe is never stored (a transient failure
must not stick), and an entry older than ``MAX_AGE_S`` is ignored. A
sandbox that fails to start after its pass was read from here withdraws it
(:func:`forget_pass`) and probes again (sandbox/_native_runner.py).

Only a pass is ever read from the store, so what matters is that nobody
else can write one: the entry is read only from a directory the caller owns
that nobody else can write (``$XDG_RUNTIME_DIR/codeward``, else the cache
directory), only from a regular file the caller owns with one link, opened
without following a symlink. Anything else counts as no entry.
"""

from __future__ import annotations

import os
import stat
import time
import zlib

from .._platform import DIR_FLAGS

__all__ = [
    "MAX_AGE_S",
    "cache_dir",
    "forget_pass",
    "probe_key",
    "recall_pass",
    "remember_pass",
]

MAX_AGE_S = 24 * 3600
_HEADER = "codeward probe pass v1"
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
_DIR_FLAGS = DIR_FLAGS


def _identity(path: str | None) -> str:
    if not path:
        return "-"
    try:
        st = os.stat(path)
    except OSError:
        return f"{path} missing"
    fields = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)
    return " ".join(map(str, (path, *fields)))


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(4096)
    except OSError:
        return "-"


def _namespace(name: str) -> str:
    try:
        return os.readlink(f"/proc/self/ns/{name}")
    except OSError:
        return "-"


# The caller's own confinement, from /proc/self/status: bubblewrap inherits all of it.
_STATUS_FIELDS = ("Seccomp", "Seccomp_filters", "NoNewPrivs", "CapEff", "CapBnd")
# Its LSM labels (AppArmor, SELinux, Smack ...); "-" where the kernel has none.
_LABELS = ("/proc/self/attr/current", "/proc/self/attr/apparmor/current")


def _confinement() -> list[str]:
    """What confines this process: seccomp, no-new-privs, capabilities, LSM labels."""
    found = dict.fromkeys(_STATUS_FIELDS, "-")
    try:
        with open("/proc/self/status", encoding="utf-8", errors="replace") as f:
            for line in f:
                name, _, value = line.partition(":")
                if name in found:
                    found[name] = value.strip()
    except OSError:
        pass
    return [
        *(f"status {name} {value}" for name, value in found.items()),
        *(f"label {path} {_read(path)!r}" for path in _LABELS),
    ]


def probe_key(bwrap: str, init: str | None, native: str | None) -> str:
    """Everything the probe's verdict depends on, as one text, a fact a line."""
    uname = os.uname()
    facts = [
        f"bwrap {_identity(bwrap)}",
        f"init {_identity(init)}",
        f"native {_identity(native)}",
        f"kernel {uname.sysname} {uname.release} {uname.version} {uname.machine}",
        f"ids {os.geteuid()} {os.getegid()}",
        f"namespaces {_namespace('user')} {_namespace('mnt')}",
        *_confinement(),
        *(f"setting {path} {_read(path)!r}" for path in _SETTINGS),
    ]
    return "\n".join(line.replace("\n", " ") for line in facts)


def _entry_name(key: str) -> str:
    return f"probe-{zlib.crc32(key.encode()):08x}"


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
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(_entry_name(key), flags, dir_fd=dirfd)
    except OSError:
        return False
    finally:
        os.close(dirfd)
    try:
        st = os.fstat(fd)
        if not (stat.S_ISREG(st.st_mode) and st.st_nlink == 1 and _owned_private(st)):
            return False
        data = os.read(fd, 65536).decode("utf-8", "replace")
    except OSError:
        return False
    finally:
        os.close(fd)
    header, _, rest = data.partition("\n")
    stored, _, facts = rest.partition("\n")
    if header != _HEADER or facts != key:
        return False
    try:
        age = time.time() - float(stored)
    except ValueError:
        return False
    return 0 <= age < MAX_AGE_S


def remember_pass(key: str) -> None:
    """Stores a pass under ``key`` (atomically; silently not, if the directory is not ours)."""
    directory = cache_dir()
    dirfd = None if directory is None else _open_dir(directory, create=True)
    if dirfd is None:
        return
    name = _entry_name(key)
    temp = f".{name}.{os.getpid()}"
    body = f"{_HEADER}\n{time.time()!r}\n{key}".encode()
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
        os.replace(temp, name, src_dir_fd=dirfd, dst_dir_fd=dirfd)
    except OSError:
        try:  # noqa: SIM105 (contextlib is one more import on `codeward exec`'s path)
            os.unlink(temp, dir_fd=dirfd)
        except OSError:
            pass
    finally:
        os.close(dirfd)


def forget_pass(key: str) -> None:
    """Removes the pass stored under ``key``, if there is one (a start failed after it was read)."""
    directory = cache_dir()
    dirfd = None if directory is None else _open_dir(directory, create=False)
    if dirfd is None:
        return
    try:
        os.unlink(_entry_name(key), dir_fd=dirfd)
    except OSError:
        pass
    finally:
        os.close(dirfd)
