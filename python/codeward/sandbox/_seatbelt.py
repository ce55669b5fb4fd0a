"""The macOS boundary: one Seatbelt (``sandbox-exec``) profile per command.

The profile expresses the policy of the native Linux boundary
(native/src/sandbox_linux.c, docs/security.md) in SBPL, the Scheme dialect
Seatbelt compiles: deny by default; the file system readable except the
homes, with toolchain roots under a home re-allowed read-only; credential
stores never readable; writes only beneath the workspace, the private scratch
directory and a few devices; the protected top-level names read-only (and
impossible to create); credential files found in the workspace unreadable;
no network and no Unix-socket connections. In SBPL the *last* rule that
matches an operation decides it, so the profile goes from broad to narrow
and ends with the denials that must win.

Differences from Linux that a profile cannot close (docs/security.md should
list them): there is no pid namespace or subreaper, so a descendant that
leaves the command's process group (``setsid``, ``setpgid``) outlives it,
still inside the sandbox; the host's ``/tmp`` and per-user temporary
directory stay readable (not writable); rules match paths, so hard links
that already exist would be aliases: protected and credential files with
extra links refuse the run, as on Linux, and the directories above a masked
file cannot be renamed during the run. Missing protected names get no
placeholder: creating them is denied by path, in any ASCII case.

The environment follows native/src/env.c (ported below with identical lists)
and credential files are found with the rules of native/src/credscan.c.
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import re
import shlex
import socket
import stat
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from .._errors import SandboxArgumentError, SandboxUnavailable
from .._untrusted import read_small_file
from ..workspace import PROTECTED_DIRS, PROTECTED_FILES, PROTECTED_NAMES
from ._args import check_exec_args
from ._base import SandboxBase
from ._output import CommandOutput
from ._pyrunner import RunResult, run_bounded

__all__ = [
    "PROTECTED_NAMES",
    "SANDBOX_EXEC",
    "PythonProcessHostBashSandbox",
    "SeatbeltBashSandbox",
    "build_env",
    "check_extra_env",
    "env_name_is_injection",
    "env_name_is_secret",
    "env_value_is_secret",
    "sbpl_string",
    "seatbelt_probe",
    "seatbelt_profile",
]

SANDBOX_EXEC = "/usr/bin/sandbox-exec"
BASH_CANDIDATES = ("/bin/bash", "/usr/bin/bash", "/usr/local/bin/bash")
DEFAULT_TIMEOUT_MS = 120_000
DEFAULT_MAX_OUTPUT = 102_400
DEFAULT_GRACE_MS = 500  # exec's kill_grace_ms (native/abi/options.json)
PROBE_TIMEOUT_MS = 10_000
MAX_MASKS = 4096  # as native/src/sandbox_linux.c
MAX_SCAN_DIRS = 250_000  # directories one credential scan may visit before refusing
MAX_PROFILE_BYTES = 512 * 1024  # stays well inside ARG_MAX (1 MiB for argv and environment)

# ---- the policy's names (kept identical to native/src/sandbox_linux.c) ------------------

# PROTECTED_DIRS, PROTECTED_FILES and PROTECTED_NAMES come from the workspace layer (one list);
# the profile names them in this order, so that it is the same text on every run.
_PROTECTED_ORDER = PROTECTED_DIRS + PROTECTED_FILES

# Toolchain roots re-exposed (read-only) when they live under a masked home.
TOOLCHAIN_VARS = (
    "CARGO_HOME",
    "RUSTUP_HOME",
    "GOPATH",
    "GOROOT",
    "NVM_DIR",
    "JAVA_HOME",
    "PYENV_ROOT",
    "VOLTA_HOME",
    "PNPM_HOME",
    "BUN_INSTALL",
    "SDKMAN_DIR",
    "ASDF_DATA_DIR",
    "ASDF_DIR",
    "RBENV_ROOT",
    "GEM_HOME",
    "DOTNET_ROOT",
    "CONDA_PREFIX",
    "VIRTUAL_ENV",
)
# Entries under a home that hold credentials: never re-exposed, never readable.
# The first nine are HOME_SECRETS of sandbox_linux.c; the keychains are macOS's.
HOME_SECRETS = (
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".docker",
    ".config",
    ".netrc",
    ".password-store",
    "Library/Keychains",
)
# Host credential files outside any home (/etc is a symlink to /private/etc on macOS,
# and Seatbelt matches resolved paths: both spellings are denied).
HOST_SECRETS = (
    "/etc/master.passwd",
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/shadow-",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssh",
    "/private/etc/master.passwd",
    "/private/etc/sudoers",
    "/private/etc/sudoers.d",
    "/private/etc/ssh",
    "/private/var/db/dslocal",
    "/private/var/db/sudo",
    "/Library/Keychains",
)
# Every home is masked whole (like /home and /root on Linux), not only the caller's.
OTHER_HOMES = ("/Users", "/private/var/root")
# On APFS the data volume is also reachable as /System/Volumes/Data/<path> (firmlinks):
# every path rule is emitted for both spellings.
DATA_VOLUME = "/System/Volumes/Data"

# Mach services the command may look up: the rest are denied. Each is needed by
# bash itself or by common toolchains.
MACH_SERVICES = (
    # getpwuid/getgrgid: bash's ~ expansion and prompt, id, whoami, git's identity, Python pwd
    ("com.apple.system.opendirectoryd.libinfo", "user and group lookups (getpwuid, getgrgid)"),
    # getgrouplist / mbr_* membership checks
    ("com.apple.system.opendirectoryd.membership", "group membership (id -G, access checks)"),
    # libnotify: libc's localtime watches the time zone through it
    ("com.apple.system.notification_center", "libc notifications (time zone changes)"),
)

WRITABLE_DEVICES = (
    "/dev/null",
    "/dev/zero",
    "/dev/tty",
    "/dev/dtracehelper",
    "/dev/stdout",
    "/dev/stderr",
)
IOCTL_DEVICES = (
    "/dev/null",
    "/dev/zero",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/dtracehelper",
)

# What reading a file covers: its data and metadata, mapping it as code, running it.
READ = "file-read* file-map-executable process-exec*"

# ---- SBPL text ------------------------------------------------------------------------


def sbpl_string(value: str) -> str:
    """``value`` as an SBPL (TinyScheme) string literal, quotes included.

    Inside a literal only the backslash and the double quote are special:
    both are backslash-escaped; every other character, control characters
    included, stands for itself. A NUL cannot be passed to sandbox-exec at
    all and is refused. Paths that are not valid UTF-8 arrive as surrogate
    escapes and go back to their bytes when the profile becomes an argument.
    """
    if not isinstance(value, str):
        raise TypeError(f"expected a string, not {type(value).__name__}")
    if "\0" in value:
        raise ValueError("a NUL byte cannot appear in a sandbox profile")
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _check_path(path: str, what: str) -> str:
    if not isinstance(path, str) or not path.startswith("/") or path.startswith("//"):
        raise ValueError(f"{what} must be an absolute path, not {path!r}")
    if "\0" in path or posixpath.normpath(path) != path:
        raise ValueError(f"{what} must be a normalized absolute path, not {path!r}")
    return path


def _is_under(path: str, root: str) -> bool:
    """path == root or path is below root (both normalized absolute paths)."""
    if root == "/":
        return True
    return path == root or path.startswith(root + "/")


def _forms(path: str) -> list[str]:
    """The spellings Seatbelt may see for path: itself and its data-volume firmlink twin."""
    if path == DATA_VOLUME or path.startswith(DATA_VOLUME + "/"):
        plain = path[len(DATA_VOLUME) :] or "/"
        return [path, plain] if plain != "/" else [path]
    if path.startswith("/dev/") or path == "/":
        return [path]
    return [path, DATA_VOLUME + path]


def _ancestors(path: str) -> list[str]:
    """The proper ancestors of path, nearest last, without "/"."""
    parts = path.strip("/").split("/")
    return ["/" + "/".join(parts[:i]) for i in range(1, len(parts))]


def _case_regex(name: str) -> str:
    """A regex for name in any (ASCII) case, without backslashes or quotes: a plain string."""
    out = []
    for ch in name:
        if ch.isascii() and ch.isalpha():
            out.append(f"[{ch.lower()}{ch.upper()}]")
        elif ch == ".":
            out.append("[.]")
        elif ch.isascii() and (ch.isalnum() or ch in "_-"):
            out.append(ch)
        else:
            raise ValueError(f"unexpected character {ch!r} in a protected name")
    return "".join(out)


def _top_level_regex(workspace: str, name: str) -> str:
    """Matches workspace/NAME in any case (and below), without quoting the workspace.

    The workspace's components are matched by count (``/[^/]+`` each); the
    rule that uses it also requires ``(subpath workspace)``, so together they
    match exactly the top-level entry, whatever bytes the workspace path holds.
    """
    depth = len(workspace.strip("/").split("/")) if workspace != "/" else 0
    return "^" + "/[^/]+" * depth + "/" + _case_regex(name) + "(/|$)"


def _filters(kind: str, paths: Iterable[str]) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    for path in paths:
        for form in _forms(path):
            if form not in seen:
                seen.add(form)
                out.append(f"({kind} {sbpl_string(form)})")
    return out


def _rule(action: str, operations: str, filters: Sequence[str], comment: str = "") -> list[str]:
    """One rule over ``filters`` (any of them matches); nothing at all when there are none.

    A rule without filters would apply to every path: callers that mean that
    write it out literally.
    """
    if not filters:
        return []
    lines = [f"; {line}" for line in comment.splitlines()] if comment else []
    if len(filters) == 1:
        return [*lines, f"({action} {operations} {filters[0]})"]
    body = [f"  {f}" for f in filters]
    body[-1] += ")"
    return [*lines, f"({action} {operations}", *body]


_USER_HOME = re.compile(r"^(?:/System/Volumes/Data)?/Users/[^/]+")
ROOT_HOME = "/private/var/root"


def _owning_home(path: str, home: str | None) -> str | None:
    """The home directory path lies in: the caller's, root's, or a /Users/<name>."""
    if home is not None and _is_under(path, home):
        return home
    for root_home in _forms(ROOT_HOME):
        if _is_under(path, root_home):
            return root_home
    match = _USER_HOME.match(path)
    return match.group(0) if match else None


def _home_secrets(home: str) -> list[str]:
    return [posixpath.join(home, secret) for secret in HOME_SECRETS]


def _usable_toolchain_root(
    root: str, homes: Sequence[str], home: str | None, workspace: str
) -> bool:
    """sandbox_linux.c's test: under a masked home, never a home itself nor a credential store."""
    if not any(_is_under(root, h) for h in homes) or root in homes:
        return False
    if _is_under(root, workspace):
        return False  # already readable and writable
    owner = _owning_home(root, home)
    if owner is None or root == owner:
        return owner is None  # under a masked region but in no home (/Users/Shared ...)
    return not any(_is_under(root, s) or _is_under(s, root) for s in _home_secrets(owner))


def seatbelt_profile(
    workspace: str,
    scratch: str,
    *,
    home: str | None,
    toolchain_roots: Iterable[str] = (),
    protected_paths: Iterable[str] | None = None,
    masked_paths: Iterable[str] = (),
    other_homes: Iterable[str] = OTHER_HOMES,
) -> str:
    """The SBPL profile for one command over ``workspace``.

    Every path must be absolute, normalized and canonical (symlinks resolved,
    the on-disk case): Seatbelt matches the resolved path of each file.

    - ``scratch``: the private directory that is HOME and TMPDIR (writable);
    - ``home``: the caller's home (masked like ``other_homes``);
    - ``toolchain_roots``: candidate roots to re-expose read-only (those not
      under a home, a home itself, or related to a credential store are
      skipped, as on Linux);
    - ``protected_paths``: paths that must stay read-only and cannot be
      created (default: each protected name at the workspace top level); any
      case variant of a protected name is denied in addition;
    - ``masked_paths``: credential files and directories inside the workspace,
      neither readable nor writable.
    """
    workspace = _check_path(workspace, "the workspace")
    if workspace == "/":
        raise ValueError("the workspace cannot be the root directory")
    scratch = _check_path(scratch, "the scratch directory")
    homes = [_check_path(h, "a home") for h in other_homes]
    if home is not None:
        home = _check_path(home, "the home")
        if home != "/" and home not in homes:
            homes.append(home)
    homes = [h for h in homes if h != "/"]
    roots = [_check_path(r, "a toolchain root") for r in toolchain_roots]
    roots = [r for r in dict.fromkeys(roots) if _usable_toolchain_root(r, homes, home, workspace)]
    if protected_paths is None:
        protected = [posixpath.join(workspace, n) for n in _PROTECTED_ORDER]
    else:
        protected = [_check_path(p, "a protected path") for p in protected_paths]
    masked = [_check_path(p, "a masked path") for p in masked_paths]
    writable = [workspace, scratch]

    # Credential stores: under the caller's home, root's and the one holding the workspace;
    # inside each toolchain root (cargo's registry token); the host's own. A store that
    # holds the workspace or the scratch dir (a workspace inside ~/.config) is skipped:
    # denying it would deny them whole.
    owners = {h for h in (home, ROOT_HOME, _owning_home(workspace, home)) if h is not None}
    stores = [s for h in sorted(owners) for s in _home_secrets(h)]
    stores += [posixpath.join(r, c) for r in roots for c in ("credentials", "credentials.toml")]
    stores += list(HOST_SECRETS)
    stores = [s for s in stores if not any(_is_under(w, s) for w in writable)]

    walk = sorted(
        {a for p in [*writable, *roots, *protected] for a in _ancestors(p)} | set(homes),
    )
    outside = [p for p in protected if not _is_under(p, workspace)]  # a worktree's real gitdir
    unlink_guard = sorted(
        {workspace} | {a for m in masked for a in _ancestors(m) if _is_under(a, workspace)},
    )

    out = [
        "(version 1)",
        "; codeward: the macOS boundary of one command (generated; see docs/security.md).",
        "; The last rule that matches an operation decides it.",
        "(deny default)",
        "",
        "; ---- processes: the command's own, and read-only kernel information",
        "(allow process-fork)",
        "; (running a program is reading it: process-exec* follows the file-read* rules below)",
        "; signals and process information only within this sandbox (the command's own tree)",
        "(deny process-info*)",
        "(allow process-info* (target same-sandbox))",
        "(allow signal (target same-sandbox))",
        "(allow sysctl-read)",
        "; ... but not other processes' arguments and environment (ps -E reads them this way)",
        '(deny sysctl-read (sysctl-name-prefix "kern.procargs"))',
        "; Java reads its CPU type through a sysctl that Seatbelt counts as a write",
        '(allow sysctl-write (sysctl-name "kern.grade_cputype"))',
        "; host CPU statistics (Node's os.cpus(), through host_processor_info)",
        "(allow mach-host*)",
        "; Mach services: only these",
        "(allow mach-lookup",
    ]
    for i, (service, why) in enumerate(MACH_SERVICES):
        end = ")" if i == len(MACH_SERVICES) - 1 else ""
        out.append(f"  (global-name {sbpl_string(service)}){end} ; {why}")
    out += [
        "; libnotify's shared state, read alongside the notification center",
        '(allow ipc-posix-shm-read-data (ipc-posix-name "apple.shm.notification_center"))',
        "; named POSIX semaphores: Python multiprocessing locks and queues",
        "(allow ipc-posix-sem)",
        "; pseudo-terminals the command opens itself (script, expect, pty tests)",
        "(allow pseudo-tty)",
        '(allow file-read* file-write* file-ioctl (literal "/dev/ptmx"))',
        "(allow file-read* file-write* file-ioctl",
        '  (require-all (regex "^/dev/ttys[0-9]+$") (extension "com.apple.sandbox.pty")))',
        "",
        "; ---- reading (and mapping and running): everything except the homes",
        f"(allow {READ})",
    ]
    out += _rule("deny", READ, _filters("subpath", homes), "the homes, masked whole")
    out += _rule(
        "allow",
        "file-read-metadata",
        _filters("literal", walk),
        "path walking: stat (not list) the directories above what is re-allowed below",
    )
    out += _rule(
        "allow",
        READ,
        _filters("subpath", [*roots, *outside]),
        "toolchain roots under a home (and a worktree's real gitdir), read-only",
    )
    out += _rule(
        "allow",
        READ,
        _filters("subpath", writable),
        "the workspace and the scratch directory",
    )
    out += [
        "",
        "; ---- writing: the workspace, the scratch directory and a few devices",
    ]
    out += _rule("allow", "file-write*", _filters("subpath", writable))
    out += _rule(
        "allow",
        "file-write*",
        [*_filters("literal", WRITABLE_DEVICES), '(subpath "/dev/fd")'],
        "devices: the null sink, the (absent) terminal, dtrace's helper, the command's own fds",
    )
    out += _rule("allow", "file-ioctl", _filters("literal", IOCTL_DEVICES))
    out += [
        "; hard links and clones: both ends inside the workspace or the scratch directory",
        "(deny file-link file-clone)",
    ]
    out += _rule("allow", "file-link file-clone", _filters("subpath", writable))
    out += [
        "; a directory clones with everything beneath it, masked files included: never",
        "(deny file-clone (vnode-type DIRECTORY))",
    ]
    out += [""]
    out += _rule(
        "deny",
        f"{READ} file-write* file-link file-clone",
        _filters("subpath", stores),
        "---- credential stores: never readable nor writable, whatever the rules above allow",
    )
    out += [""]
    top = _filters("literal", protected) + _filters("subpath", protected)
    out += _rule(
        "deny",
        "file-write* file-link",
        top,
        "---- protected names: read-only, and a missing one cannot be created",
    )
    variants = [
        f"(require-all (subpath {sbpl_string(ws)}) (regex {sbpl_string(_top_level_regex(ws, n))}))"
        for ws in _forms(workspace)
        for n in _PROTECTED_ORDER
    ]
    out += _rule(
        "deny",
        "file-write* file-link",
        variants,
        "... in any case (APFS is case-insensitive: .GIT would be .git)",
    )
    out += [""]
    out += _rule(
        "deny",
        f"{READ} file-write* file-link file-clone",
        _filters("subpath", masked),
        "---- credential files inside the workspace: neither readable nor writable",
    )
    out += _rule(
        "deny",
        "file-write-unlink",
        _filters("literal", unlink_guard),
        "the workspace, and the directories above a masked file, cannot be renamed or removed\n"
        "(moving a directory would carry what it holds away from the rules above)",
    )
    out += [
        "",
        "; ---- no network: no TCP or UDP, no listening, no Unix-socket connections",
        "(deny network*)",
        "(deny network-outbound)",
        "(deny network-inbound)",
        "(deny network-bind)",
        "",
    ]
    return "\n".join(out)


# ---- the environment (native/src/env.c, same lists and rules) ----------------------------

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

ENV_ALLOWED = (
    "PATH",
    "LANG",
    "LANGUAGE",
    "TERM",
    "TZ",
    "USER",
    "LOGNAME",
    "COLORTERM",
    "NO_COLOR",
    "FORCE_COLOR",
    "CI",
    "SOURCE_DATE_EPOCH",
    # toolchain roots, so version-managed interpreters keep working
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "GOPATH",
    "GOROOT",
    "GOTOOLCHAIN",
    "NVM_DIR",
    "NVM_BIN",
    "NVM_INC",
    "JAVA_HOME",
    "PYENV_ROOT",
    "PYENV_VERSION",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "CONDA_DEFAULT_ENV",
    "GEM_HOME",
    "GEM_PATH",
    "RBENV_ROOT",
    "RBENV_VERSION",
    "SDKMAN_DIR",
    "DOTNET_ROOT",
    "BUN_INSTALL",
    "VOLTA_HOME",
    "PNPM_HOME",
    "ASDF_DIR",
    "ASDF_DATA_DIR",
    "MISE_DATA_DIR",
    "DENO_INSTALL_ROOT",
)
# Variables that make an interpreter or the dynamic loader run other code.
ENV_INJECTION = (
    "BASH_ENV",
    "ENV",
    "SHELLOPTS",
    "BASHOPTS",
    "PROMPT_COMMAND",
    "PS4",
    "CDPATH",
    "GLOBIGNORE",
    "IFS",
    "NODE_OPTIONS",
    "NODE_PATH",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "RUBYOPT",
    "RUBYLIB",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "CLASSPATH",
    "GCONV_PATH",
    "HOSTALIASES",
    "RESOLV_HOST_CONF",
    "LOCALDOMAIN",
    "TMPDIR",
    "HOME",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_EXEC_PATH",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "EDITOR",
    "VISUAL",
    "PAGER",
    "GIT_PAGER",
    "GIT_EDITOR",
    "MAKEFLAGS",
    "GOFLAGS",
    "RUSTC_WRAPPER",
    "RUSTFLAGS",
    "CARGO_BUILD_RUSTC_WRAPPER",
)
ENV_INJECTION_PREFIXES = ("LD_", "PYTHON", "DYLD_", "GIT_CONFIG", "XDG_", "BASH_FUNC_")
# Names that are, or point at, a credential or an escape route.
ENV_SECRET_NAMES = (
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "GPG_AGENT_INFO",
    "DBUS_SESSION_BUS_ADDRESS",
    "DOCKER_HOST",
    "DOCKER_CONFIG",
    "KUBECONFIG",
    "XAUTHORITY",
    "DISPLAY",
    "WAYLAND_DISPLAY",
)
ENV_SECRET_WORDS = (
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "CREDENTIAL",
    "PRIVATE",
    "APIKEY",
    "API_KEY",
    "ACCESS_KEY",
    "AUTH",
    "SESSION",
    "COOKIE",
    "PROXY",
)
# Value prefixes of well-known credential formats.
ENV_SECRET_VALUE_PREFIXES = (
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "xoxa-",
    "xoxr-",
    "xoxs-",
    "sk-ant-",
    "npm_",
    "pypi-AgE",
    "-----BEGIN",
    "AGE-SECRET-KEY-",
)

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_B64URL = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
_AWS_KEY = re.compile(r"A[KS]IA[A-Z0-9]{16}")


def _lower(text: str) -> str:
    """ASCII lower case, other characters unchanged (a3s_lower)."""
    return text.translate(_ASCII_LOWER)


def env_name_is_injection(name: str) -> bool:
    """A variable that makes interpreters or the loader run other code, or moves the sandbox."""
    return name in ENV_INJECTION or name.startswith(ENV_INJECTION_PREFIXES)


def env_name_is_secret(name: str) -> bool:
    """A name that is, or points at, a credential (case-insensitive words, ``*KEY``)."""
    if name in ENV_SECRET_NAMES:
        return True
    lowered = _lower(name)
    if any(_lower(word) in lowered for word in ENV_SECRET_WORDS):
        return True
    # ..._KEY, ...KEY (STRIPE_KEY, SIGNINGKEY) but not KEYBOARD or MONKEYS
    return len(name.encode("utf-8", "surrogateescape")) >= 3 and lowered.endswith("key")


def _looks_like_jwt(value: str) -> bool:
    if not value.startswith("eyJ"):
        return False
    dots = run = 0
    for ch in value:
        if ch == ".":
            if run < 4:
                return False
            dots += 1
            run = 0
        elif ch in _B64URL:
            run += 1
        else:
            return False
    return dots == 2 and run >= 4


def _has_url_credentials(value: str) -> bool:
    """scheme://user:password@host"""
    start = value.find("://")
    while start >= 0:
        colon = False
        for ch in value[start + 3 :]:
            if ch in "/ ":
                break
            if ch == ":":
                colon = True
            if ch == "@":
                if colon:
                    return True
                break
        start = value.find("://", start + 3)
    return False


def env_value_is_secret(value: str) -> bool:
    """A value in a well-known credential format (tokens, keys, JWTs, URLs with passwords)."""
    if value.startswith(ENV_SECRET_VALUE_PREFIXES):
        return True
    if value.startswith("sk-"):
        n = 0
        while 3 + n < len(value) and value[3 + n] in _B64URL:
            n += 1
        if n >= 20:
            return True
    if value.startswith("AIza") and len(value.encode("utf-8", "surrogateescape")) >= 39:
        return True
    return (
        _looks_like_jwt(value)
        or _AWS_KEY.search(value) is not None
        or _has_url_credentials(value)
        or "PRIVATE KEY-----" in value
    )


def check_extra_env(name: str, value: str) -> None:
    """Validates one per-call variable; raises SandboxArgumentError naming it."""
    if not isinstance(name, str) or not isinstance(value, str):
        raise SandboxArgumentError("environment names and values must be strings")
    if not name or "=" in name or "\0" in name:
        raise SandboxArgumentError(
            f"invalid environment variable name {name!r}: it must be non-empty, without '=' or NUL"
        )
    if "\0" in value:
        raise SandboxArgumentError(f"environment variable {name} contains a NUL byte")
    if env_name_is_injection(name):
        raise SandboxArgumentError(
            f"environment variable {name} is not allowed: it changes what code interpreters and "
            "tools load, or where the sandbox keeps its files"
        )
    if env_name_is_secret(name) or env_value_is_secret(value):
        raise SandboxArgumentError(
            f"environment variable {name} looks like a credential; the sandbox does not pass "
            "secrets to commands"
        )


def _clean_path(value: str) -> str:
    """PATH without empty or relative entries (both mean "the current directory")."""
    kept = [seg for seg in value.split(":") if seg.startswith("/")]
    return ":".join(kept) if kept else DEFAULT_PATH


def build_env(host: Mapping[str, str], extra: Mapping[str, str], home: str) -> dict[str, str]:
    """The command's whole environment, as a3s_env_build makes it.

    The allowlisted, non-secret part of ``host``; then the validated
    ``extra`` variables (they win over host values); PATH without relative
    entries; HOME, TMPDIR and XDG_* under ``home``.
    """
    for name, value in extra.items():
        check_extra_env(name, value)
    env: dict[str, str] = {}
    for name, value in host.items():
        if not (name in ENV_ALLOWED or (len(name) > 3 and name.startswith("LC_"))):
            continue
        if env_name_is_secret(name) or env_value_is_secret(value) or name in extra:
            continue
        env[name] = _clean_path(value) if name == "PATH" else value
    for name, value in extra.items():
        env[name] = _clean_path(value) if name == "PATH" else value
    env.setdefault("PATH", DEFAULT_PATH)
    env["HOME"] = home
    env["TMPDIR"] = home
    env["XDG_CONFIG_HOME"] = home + "/.config"
    env["XDG_CACHE_HOME"] = home + "/.cache"
    env["XDG_DATA_HOME"] = home + "/.local/share"
    env["XDG_STATE_HOME"] = home + "/.local/state"
    return env


# ---- credential files in the workspace (native/src/credscan.c, same rules) --------------

CRED_FILES = (
    ".netrc",
    "_netrc",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
    ".claude.json",
    ".pgpass",
    ".boto",
    ".s3cfg",
)
CRED_DIRS = (".ssh", ".gnupg", ".aws", ".password-store")
CRED_PAIRS = (
    (".a3s", "os-auth.json"),
    (".codex", "auth.json"),
    (".claude", ".credentials.json"),
    (".docker", "config.json"),
    (".kube", "config"),
    (".cargo", "credentials.toml"),
    (".cargo", "credentials"),
    (".config", "gh"),
)
SKIP_DIRS = (".git", "node_modules", "target", ".venv", "__pycache__")
_CRED_FILES = frozenset(_lower(n) for n in CRED_FILES)
_CRED_DIRS = frozenset(_lower(n) for n in CRED_DIRS)
_CRED_PAIRS = frozenset((_lower(d), _lower(n)) for d, n in CRED_PAIRS)
_RACY_NS = 2_000_000_000
_MAX_DEPTH = 1024
_MAX_PATH = 4096


def is_credential(dirname: str | None, name: str, is_dir: bool) -> bool:
    """Is ``name`` in a directory named ``dirname`` a credential (credscan.c's is_credential)?"""
    low = _lower(name)
    if low.startswith(".env"):
        return True  # .env, .env.local, .envrc, .ENV ...
    parent = _lower(dirname) if dirname is not None else None
    if is_dir:
        return low in _CRED_DIRS or (parent == ".config" and low == "gh")
    return low in _CRED_FILES or (parent is not None and (parent, low) in _CRED_PAIRS)


class _Refused(Exception):
    """The run is refused (exit 125 with this message), as A3S_E_REFUSED on Linux."""


_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_GONE = (errno.ENOENT, errno.ENOTDIR, errno.ELOOP)  # vanished, or replaced by a non-directory


class _Node:
    __slots__ = ("children", "creds", "ctime", "dev", "fresh", "ino", "mtime")

    def __init__(self) -> None:
        self.dev = self.ino = self.mtime = self.ctime = 0
        self.fresh = False
        self.children: dict[str, _Node] = {}
        self.creds: list[tuple[str, str]] = []  # ("f" | "d" | "l", name)


class CredentialScan:
    """Finds the credential entries of a workspace, re-reading only changed directories.

    A port of native/src/credscan.c: a directory whose (dev, inode, mtime,
    ctime) did not change still has the same entries; one modified within two
    seconds of the scan that read it is read again next time. Directories are
    opened relative to their parent (no symlink is followed, no path-length
    limit is hit before ours). A tree nested deeper than 1024 levels, a path
    longer than 4096 bytes, or more than ``max_dirs`` directories refuse the
    run rather than leave part of the workspace unchecked. Not thread-safe:
    the sandbox serializes runs.
    """

    def __init__(self, root: str, *, max_dirs: int = MAX_SCAN_DIRS) -> None:
        self.root = root
        self.max_dirs = max_dirs
        self._top = _Node()

    def run(self) -> list[tuple[str, str]]:
        """Every credential entry under the root: (tag, absolute path), tag f, d or l."""
        started = time.time_ns()
        found: list[tuple[str, str]] = []
        try:
            fd = os.open(self.root, _DIR_FLAGS | _NOFOLLOW)
        except OSError as exc:
            raise _Refused(f"cannot open the workspace {self.root}: {exc.strerror}") from None
        budget = self.max_dirs
        # depth-first, each frame holding its directory open: (node, fd, path, children left)
        stack: list[tuple[_Node, int, str, int, list[str]]] = []
        try:
            names = self._enter(self._top, fd, self.root, None, started, found)
        except BaseException:
            os.close(fd)
            raise
        stack.append((self._top, fd, self.root, 0, names))
        try:
            while stack:
                node, dfd, path, depth, pending = stack[-1]
                if not pending:
                    os.close(dfd)
                    stack.pop()
                    continue
                name = pending.pop()
                child = node.children[name]
                child_path = f"{path}/{name}"
                if len(os.fsencode(child_path)) >= _MAX_PATH:
                    raise _Refused(
                        f"a path in the workspace is longer than {_MAX_PATH} bytes: it cannot be "
                        "checked for credential files"
                    )
                try:
                    cfd = os.open(name, _DIR_FLAGS | _NOFOLLOW, dir_fd=dfd)
                except OSError as exc:
                    if exc.errno not in _GONE:
                        raise _Refused(
                            f"credential scan: cannot open the directory {child_path}: "
                            f"{exc.strerror}"
                        ) from None
                    child.fresh = False  # vanished or replaced: re-read its parent next time
                    node.fresh = False
                    continue
                budget -= 1
                if budget < 0:
                    os.close(cfd)
                    raise _Refused(
                        f"the workspace has more than {self.max_dirs} directories to scan for "
                        "credential files; choose a smaller workspace"
                    )
                try:
                    child_names = self._enter(child, cfd, child_path, name, started, found)
                except BaseException:
                    os.close(cfd)
                    raise
                if child_names and depth + 1 >= _MAX_DEPTH:
                    os.close(cfd)
                    raise _Refused(
                        f"the workspace nests directories deeper than {_MAX_DEPTH} levels (at "
                        f"{child_path}): it cannot be checked for credential files"
                    )
                stack.append((child, cfd, child_path, depth + 1, child_names))
        finally:
            for _node, dfd, *_rest in stack:
                os.close(dfd)
        return found

    def _enter(
        self,
        node: _Node,
        fd: int,
        path: str,
        dirname: str | None,
        started: int,
        found: list[tuple[str, str]],
    ) -> list[str]:
        """Visits one directory (open as fd); returns its subdirectories to visit, last first."""
        st = os.fstat(fd)
        meta = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
        if not (node.fresh and (node.dev, node.ino, node.mtime, node.ctime) == meta):
            self._reread(node, fd, path, dirname)
            node.dev, node.ino, node.mtime, node.ctime = meta
        # trust these entries next time only if the directory is not "racy"
        node.fresh = started - node.mtime > _RACY_NS and started - node.ctime > _RACY_NS
        found.extend((tag, f"{path}/{name}") for tag, name in node.creds)
        return sorted(node.children, reverse=True)

    @staticmethod
    def _reread(node: _Node, fd: int, path: str, dirname: str | None) -> None:
        old = node.children
        node.children = {}
        node.creds = []
        try:
            with os.scandir(fd) as entries:
                for entry in entries:
                    name = entry.name
                    try:
                        is_link = entry.is_symlink()
                        is_dir = not is_link and entry.is_dir(follow_symlinks=False)
                    except OSError:
                        continue
                    # a symlink may stand for a credential file or directory: test both
                    if is_credential(dirname, name, is_dir) or (
                        is_link and is_credential(dirname, name, True)
                    ):
                        node.creds.append(("d" if is_dir else "l" if is_link else "f", name))
                        continue  # a masked directory is not scanned further
                    if not is_dir or name in SKIP_DIRS:
                        continue
                    node.children[name] = old.get(name) or _Node()
        except OSError as exc:
            raise _Refused(
                f"credential scan: cannot read the directory {path}: {exc.strerror}"
            ) from None


LINK_WALK_BUDGET = 50_000


def _linked_file(directory: str, is_git: bool) -> str | None:
    """The first regular file with extra hard links under directory (sandbox_linux.c).

    A file under a protected or masked directory that has a second name
    elsewhere could be written or read through that name. Git's object store
    is left out (clones share objects through hard links, and objects are
    content-addressed). Raises _Refused past LINK_WALK_BUDGET entries.
    """
    try:
        top = os.open(directory, _DIR_FLAGS | _NOFOLLOW)
    except OSError:
        return None
    budget = LINK_WALK_BUDGET
    # depth-first; each frame holds its directory open: (fd, path, depth, names left)
    stack: list[tuple[int, str, int, list[str]]] = []
    try:
        stack.append((top, directory, 0, _listdir(top)))
        while stack:
            fd, path, depth, pending = stack[-1]
            if not pending:
                os.close(fd)
                stack.pop()
                continue
            name = pending.pop()
            budget -= 1
            if budget < 0:
                raise _Refused(
                    f"{directory} holds more than {LINK_WALK_BUDGET} entries: too many to check "
                    "for hard links"
                )
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue
            sub = f"{path}/{name}"
            if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
                return sub
            if not stat.S_ISDIR(st.st_mode) or depth >= 64:
                continue
            if is_git and depth == 0 and name == "objects":
                continue
            try:
                cfd = os.open(name, _DIR_FLAGS | _NOFOLLOW, dir_fd=fd)
            except OSError:
                continue
            stack.append((cfd, sub, depth + 1, _listdir(cfd)))
    finally:
        for fd, *_rest in stack:
            os.close(fd)
    return None


def _listdir(fd: int) -> list[str]:
    try:
        return sorted(os.listdir(fd), reverse=True)
    except OSError:
        return []


def _refuse_linked_files(directory: str, is_git: bool, what: str) -> None:
    found = _linked_file(directory, is_git)
    if found is not None:
        raise _Refused(f"{found} has extra hard links; another name could reach this {what} file")


# ---- helpers -------------------------------------------------------------------------------


def _canonical(path: str) -> str:
    """The path Seatbelt sees: symlinks resolved and, on macOS, the on-disk case (F_GETPATH)."""
    real = os.path.realpath(path)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        return real
    getpath = getattr(fcntl, "F_GETPATH", None)
    if getpath is None:
        return real
    try:
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return real
    try:
        raw = fcntl.fcntl(fd, getpath, bytes(1024))
    except OSError:
        return real
    finally:
        os.close(fd)
    found = os.fsdecode(raw.split(b"\0", 1)[0])
    return found if found.startswith("/") and posixpath.normpath(found) == found else real


def _extra_env(env: Mapping[str, str] | None) -> dict[str, str]:
    extra: dict[str, str] = {}
    for name, value in (env or {}).items():
        check_extra_env(name, value)
        extra[name] = value
    return extra


def _resolve_bash() -> str | None:
    for candidate in BASH_CANDIDATES:
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def _scratch_parent(given: str | None, host_env: Mapping[str, str]) -> str:
    if given is None:
        tmp = host_env.get("TMPDIR", "")
        given = (
            tmp
            if tmp.startswith("/") and os.path.isdir(tmp) and not os.path.islink(tmp)
            else "/tmp"
        )
    return _canonical(given)


def _remove_tree(path: str) -> None:
    """Removes a run directory without following symlinks planted inside it."""
    parent, name = os.path.split(path)
    try:
        pfd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        _remove_at(pfd, name, 0)
    finally:
        os.close(pfd)


def _remove_at(parent_fd: int, name: str, depth: int) -> None:
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(name, flags, dir_fd=parent_fd)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=parent_fd)
        return
    try:
        with contextlib.suppress(OSError):
            os.fchmod(fd, 0o700)  # the command may have made it unreadable
        if depth < 256:
            try:
                names = os.listdir(fd)
            except OSError:
                names = []
            for entry in names:
                _remove_at(fd, entry, depth + 1)
    finally:
        os.close(fd)
    with contextlib.suppress(OSError):
        os.rmdir(name, dir_fd=parent_fd)


def _setup_failure(backend: str, sandboxed: bool, message: str) -> CommandOutput:
    return CommandOutput(
        stdout="",
        stderr="",
        exit_code=125,
        timed_out=False,
        truncated=False,
        total_bytes=0,
        sandboxed=sandboxed,
        backend=backend,
        setup_error=message,
    )


def _home_of(host_env: Mapping[str, str]) -> str | None:
    home = host_env.get("HOME", "")
    if not home.startswith("/") or home == "/" or not os.path.isdir(home):
        return None
    real = _canonical(home)
    return real if real != "/" else None


# ---- the sandboxes ---------------------------------------------------------------------------


class _Limits(NamedTuple):
    """An exec's bounds, as run_bounded takes them."""

    timeout_ms: int
    kill_grace_ms: int
    max_output_bytes: int
    cancel: Any


class _PyHostBase(SandboxBase):
    """Shared plumbing: workspace checks, run directories, argument validation."""

    _backend = "seatbelt"
    _sandboxed = True

    def __init__(
        self,
        workspace: str | os.PathLike[str],
        *,
        host_env: Mapping[str, str] | None = None,
        scratch_parent: str | None = None,
    ) -> None:
        path = os.path.abspath(os.fspath(workspace))
        try:
            st = os.lstat(path)
        except OSError as exc:
            raise SandboxArgumentError(f"workspace {path}: {exc.strerror}") from None
        if stat.S_ISLNK(st.st_mode):
            cause = f"workspace {path} is a symlink; give the real directory"
            raise SandboxUnavailable(cause, workspace=path, cause=cause)
        if not stat.S_ISDIR(st.st_mode):
            raise SandboxArgumentError(f"workspace {path} is not a directory")
        bash = _resolve_bash()
        if bash is None:
            cause = "bash not found in /bin or /usr/bin"
            raise SandboxUnavailable(cause, workspace=path, cause=cause)
        self._bash = bash
        self._workspace = _canonical(path)
        self._host_env = dict(os.environ if host_env is None else host_env)
        self._scratch_parent = _scratch_parent(scratch_parent, self._host_env)

    def _new_run_dir(self) -> tuple[str, str]:
        run_dir = tempfile.mkdtemp(prefix="a3s-run-", dir=self._scratch_parent)
        home = os.path.join(run_dir, "home")
        os.mkdir(home, 0o700)
        st = os.lstat(home)
        if not stat.S_ISDIR(st.st_mode):
            raise _Refused("the scratch directory was replaced")
        return run_dir, home

    def _failure(self, message: str) -> CommandOutput:
        return _setup_failure(self._backend, self._sandboxed, message)

    def exec(
        self,
        command: str,
        *,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
        env: Mapping[str, str] | None = None,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT,
        kill_grace_ms: int = DEFAULT_GRACE_MS,
        cancel: Any = None,
    ) -> CommandOutput:
        """Runs ``bash -c command`` (never raises for the command's fate).

        The command gets a fresh run directory (removed afterwards) whose
        ``home`` is its HOME in the scrubbed environment; ``_run`` starts it.
        """
        check_exec_args(command, timeout_ms, max_output_bytes, kill_grace_ms)
        extra = _extra_env(env)
        run_dir = ""
        try:
            run_dir, home = self._new_run_dir()
            child_env = build_env(self._host_env, extra, home)
            limits = _Limits(timeout_ms, kill_grace_ms, max_output_bytes, cancel)
            raw, setup_error = self._run(command, run_dir, child_env, limits)
        except _Refused as exc:
            return self._failure(str(exc))
        except RuntimeError as exc:  # the runner cannot work in this process (SIGCHLD ignored)
            raise SandboxUnavailable(str(exc), workspace=self._workspace, cause=str(exc)) from None
        except OSError as exc:
            return self._failure(self._cannot_start(exc))
        finally:
            if run_dir:
                _remove_tree(run_dir)
        if setup_error is not None:
            return raw.to_output(
                backend=self._backend,
                sandboxed=self._sandboxed,
                exit_code=125,
                setup_error=setup_error,
            )
        return raw.to_output(backend=self._backend, sandboxed=self._sandboxed)

    def _run(
        self, command: str, run_dir: str, child_env: dict[str, str], limits: _Limits
    ) -> tuple[RunResult, str | None]:
        """Runs the command; its result, and why it did not start (None: it started)."""
        raise NotImplementedError

    def _cannot_start(self, exc: OSError) -> str:
        """The setup error for an OSError while starting the command."""
        return f"the sandbox could not start: {exc}"


class SeatbeltBashSandbox(_PyHostBase):
    """The macOS boundary: every command runs under its own Seatbelt profile.

    ``sandbox-exec -p PROFILE /bin/bash -c COMMAND`` in the workspace, with
    the scrubbed environment, a private scratch directory as HOME and TMPDIR
    (removed afterwards), the timeout, bounded output and process-group
    cleanup of the Python runner. Construct it through ``select_sandbox``,
    which probes first; building one directly skips :func:`seatbelt_probe`.

    ``sandbox_exec``, ``host_env`` (default: this process's environment) and
    ``scratch_parent`` (default: TMPDIR, else /tmp) exist for tests and hosts
    with unusual layouts.
    """

    _backend = "seatbelt"
    _sandboxed = True

    def __init__(
        self,
        workspace: str | os.PathLike[str],
        *,
        sandbox_exec: str = SANDBOX_EXEC,
        host_env: Mapping[str, str] | None = None,
        scratch_parent: str | None = None,
    ) -> None:
        super().__init__(workspace, host_env=host_env, scratch_parent=scratch_parent)
        if not os.path.isabs(sandbox_exec) or not os.access(sandbox_exec, os.X_OK):
            cause = f"{sandbox_exec} is missing or not executable"
            raise SandboxUnavailable(cause, workspace=self._workspace, cause=cause)
        self._sandbox_exec = sandbox_exec
        self._scan = CredentialScan(self._workspace)
        self._lock = threading.Lock()  # serializes the credential cache

    def _run(
        self, command: str, run_dir: str, child_env: dict[str, str], limits: _Limits
    ) -> tuple[RunResult, str | None]:
        """Runs ``bash -c command`` under the profile."""
        ready_r = ready_w = -1
        try:
            profile = self._build_profile(run_dir)
            ready_r, ready_w = _pipe_above_stdio()
            os.set_blocking(ready_r, False)
            # bash reads BASH_ENV before the command: the byte says the sandbox is in place
            rc = os.path.join(run_dir, "ready.sh")
            with open(rc, "x", encoding="ascii") as f:
                f.write(f"unset BASH_ENV\nprintf R >&{ready_w}\nexec {ready_w}>&-\n")
            child_env["BASH_ENV"] = rc
            raw = run_bounded(
                [self._sandbox_exec, "-p", profile, self._bash, "-c", command],
                cwd=self._workspace,
                env=child_env,
                pass_fds=(ready_w,),
                **limits._asdict(),
            )
            os.close(ready_w)
            ready_w = -1
            try:
                started = os.read(ready_r, 1) == b"R"
            except BlockingIOError:
                started = False
        finally:
            for fd in (ready_r, ready_w):
                if fd >= 0:
                    os.close(fd)
        return raw, None if started else _start_error(raw)

    def _build_profile(self, scratch: str) -> str:
        """The profile a command would run under now, with ``scratch`` as its scratch dir.

        Raises _Refused when the workspace must not run commands (a
        symlinked protected name, hard-linked protected or credential files,
        too many credential files).
        """
        protected = self._protected_paths()
        with self._lock:
            found = self._scan.run()
        masked = self._masked_paths(found)
        profile = seatbelt_profile(
            self._workspace,
            _canonical(scratch),
            home=_home_of(self._host_env),
            toolchain_roots=self._toolchain_roots(),
            protected_paths=protected,
            masked_paths=masked,
        )
        if len(profile.encode("utf-8", "surrogateescape")) > MAX_PROFILE_BYTES:
            raise _Refused(
                f"the sandbox profile for {self._workspace} would exceed {MAX_PROFILE_BYTES} "
                f"bytes ({len(masked)} credential files to mask)"
            )
        return profile

    def _protected_paths(self) -> list[str]:
        """The protected names (sandbox_linux.c's protect_names): refusals, variants, gitdir."""
        ws = self._workspace
        paths = [posixpath.join(ws, n) for n in _PROTECTED_ORDER]
        dirs = {_lower(n) for n in PROTECTED_DIRS}
        names = {_lower(n) for n in PROTECTED_NAMES}
        try:
            entries = os.listdir(ws)
        except OSError as exc:
            raise _Refused(f"cannot list the workspace: {exc.strerror}") from None
        for name in entries:
            if _lower(name) not in names:
                continue
            path = posixpath.join(ws, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode):
                kind = "directory" if _lower(name) in dirs else "file"
                raise _Refused(f"{path} is a symlink; a protected name must be a real {kind}")
            if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
                raise _Refused(
                    f"{path} has {st.st_nlink} hard links; another name could write to this "
                    "protected file"
                )
            if stat.S_ISDIR(st.st_mode):
                _refuse_linked_files(path, _lower(name) == ".git", "protected")
            if path not in paths:
                paths.append(path)  # a case variant on disk
        # a worktree or submodule: .git names the real gitdir, which names the common dir
        # (objects, refs, config); protected when inside the workspace, never followed out
        gitdir = _worktree_gitdir(ws)
        for extra in (gitdir, _commondir(ws, gitdir) if gitdir else None):
            if extra is not None and extra not in paths:
                paths.append(extra)
        return paths

    def _masked_paths(self, found: list[tuple[str, str]]) -> list[str]:
        """Credential entries to mask (sandbox_linux.c's mask_credentials)."""
        if len(found) > MAX_MASKS:
            raise _Refused(
                f"the workspace holds {len(found)} credential files; the sandbox masks at most "
                f"{MAX_MASKS}"
            )
        masked: list[str] = []
        for _tag, path in found:
            try:
                st = os.lstat(path)
            except OSError:
                continue  # gone since the scan
            if stat.S_ISLNK(st.st_mode):
                # a credential name pointing into the workspace exposes its target
                masked.append(path)
                real = _canonical(path)
                # never the workspace itself: `ln -s .. sub/.env` would deny it whole
                if (
                    real != self._workspace
                    and _is_under(real, self._workspace)
                    and (os.path.exists(real))
                ):
                    masked.append(real)
                continue
            if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
                raise _Refused(
                    f"credential file {path} has {st.st_nlink} hard links; an alias could expose it"
                )
            if stat.S_ISDIR(st.st_mode):
                _refuse_linked_files(path, False, "credential")
            masked.append(path)
        return list(dict.fromkeys(masked))

    def _toolchain_roots(self) -> list[str]:
        """Toolchain variables and absolute PATH entries, resolved (the profile filters them)."""
        candidates = [self._host_env.get(v, "") for v in TOOLCHAIN_VARS]
        candidates += self._host_env.get("PATH", "").split(":")
        roots: list[str] = []
        for candidate in candidates:
            if not candidate.startswith("/") or "\0" in candidate:
                continue
            real = os.path.realpath(candidate)
            if os.path.isdir(real) and not os.path.islink(real):
                roots.append(_canonical(real))
        return list(dict.fromkeys(roots))


def _inside(workspace: str, base: str, target: str) -> str | None:
    """The directory `target` (relative to `base`, or absolute) names, if it lies in the
    workspace and is reached through no symlink; None otherwise (never followed out)."""
    joined = posixpath.normpath(target if target.startswith("/") else posixpath.join(base, target))
    if joined == workspace or not _is_under(joined, workspace):
        return None
    real = _canonical(joined)
    return real if real == joined and os.path.isdir(real) and not os.path.islink(real) else None


def _pointer(directory: str, name: str, prefix: bytes) -> str | None:
    """The one-line pointer in workspace file directory/name, read as an attacker wrote it."""
    try:
        dirfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        data = read_small_file(dirfd, name, 4096)
    finally:
        os.close(dirfd)
    line = data.split(b"\n", 1)[0].rstrip(b"\r") if data else b""
    if not line.startswith(prefix):
        return None
    target = os.fsdecode(line[len(prefix) :])
    return target if target and "\0" not in target else None


def _commondir(workspace: str, gitdir: str) -> str | None:
    """The common dir a worktree's gitdir names in its ``commondir`` file, if inside."""
    target = _pointer(gitdir, "commondir", b"")
    return _inside(workspace, gitdir, target) if target else None


def _pipe_above_stdio() -> tuple[int, int]:
    """A pipe whose ends are not 0-2 (the child's stdio would replace them)."""
    import fcntl

    fds = list(os.pipe())
    for i, fd in enumerate(fds):
        if fd < 3:
            fds[i] = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
            os.close(fd)
    return fds[0], fds[1]


def _worktree_gitdir(workspace: str) -> str | None:
    """The gitdir the exact name ``.git`` names ("gitdir: PATH"), if inside the workspace."""
    target = _pointer(workspace, ".git", b"gitdir: ")
    return _inside(workspace, workspace, target) if target else None


def _start_error(raw: RunResult) -> str:
    """Why the sandbox did not start: sandbox-exec's own message when it left one."""
    text = raw.stderr.decode("utf-8", "replace")
    for line in text.splitlines():
        if line.startswith("sandbox-exec"):
            return line.strip()
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first or "the sandbox did not start"


class PythonProcessHostBashSandbox(_PyHostBase):
    """No boundary: ``bash -c`` on the host, for hosts whose outer container or VM is the boundary.

    The opted-in process host where the C core does not run (macOS): the
    command gets its own process group (killed when it ends, or after the
    timeout), bounded output and the scrubbed environment with the real
    HOME; every result says ``sandboxed=False``. Without a subreaper, a
    descendant that leaves the process group outlives the command.
    """

    _backend = "process-host"
    _sandboxed = False

    def _cannot_start(self, exc: OSError) -> str:
        return f"cannot start {self._bash}: {exc}"

    def _run(
        self, command: str, run_dir: str, child_env: dict[str, str], limits: _Limits
    ) -> tuple[RunResult, str | None]:
        """Runs ``bash -c command`` unconfined."""
        real_home = self._host_env.get("HOME", "")
        if real_home.startswith("/"):
            child_env["HOME"] = real_home  # no boundary to keep it from
        raw = run_bounded(
            [self._bash, "-c", command],
            cwd=self._workspace,
            env=child_env,
            **limits._asdict(),
        )
        return raw, None


# ---- readiness -------------------------------------------------------------------------------

_probe_cache: dict[str, str | None] = {}
_probe_lock = threading.Lock()


def seatbelt_probe(sandbox_exec: str = SANDBOX_EXEC) -> str | None:
    """None if the Seatbelt boundary works here, else the reason it does not.

    It runs a self-test through the real boundary once per process (per
    sandbox-exec path) and caches the verdict: the command must be able to
    write inside its workspace, and must fail to write outside it, to create
    a protected name, to read a file under HOME or a masked ``.env``, and to
    connect to a TCP listener of ours. Every check is verified from outside.
    """
    with _probe_lock:
        if sandbox_exec not in _probe_cache:
            _probe_cache[sandbox_exec] = _run_probe(sandbox_exec)
        return _probe_cache[sandbox_exec]


def _run_probe(sandbox_exec: str) -> str | None:
    if not os.path.isabs(sandbox_exec) or not os.access(sandbox_exec, os.X_OK):
        return f"{sandbox_exec} is missing: the macOS sandbox (Seatbelt) needs it"
    probe_dir = _canonical(tempfile.mkdtemp(prefix="a3s-probe-"))
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        listener.setblocking(False)
        port = listener.getsockname()[1]
        ws, outside, home = (os.path.join(probe_dir, d) for d in ("ws", "outside", "home"))
        for d in (ws, outside, os.path.join(home, ".ssh")):
            os.makedirs(d, 0o700)
        token = os.urandom(12).hex()
        secret = os.path.join(home, ".ssh", "id_probe")
        for path in (secret, os.path.join(ws, ".env")):
            with open(path, "w", encoding="ascii") as f:
                f.write(f"{token}\n")
        host_env = dict(os.environ)
        host_env["HOME"] = home
        sandbox = SeatbeltBashSandbox(ws, sandbox_exec=sandbox_exec, host_env=host_env)
        q = shlex.quote
        script = "\n".join(
            [
                "printf ok > inside.txt",
                f"printf x > {q(os.path.join(outside, 'x'))}",
                "mkdir .git; printf x > .gitmodules",
                f"cat {q(secret)} .env",
                f"(exec 3<>/dev/tcp/127.0.0.1/{port})",
                f"if [ -x /usr/bin/nc ]; then /usr/bin/nc -z -w 2 127.0.0.1 {port}; fi",
                "printf '\\na3s-probe: done\\n'",
            ]
        )
        out = sandbox.exec(script, timeout_ms=PROBE_TIMEOUT_MS, max_output_bytes=16384)
        if out.setup_error:
            return f"the sandbox cannot start: {out.setup_error}"
        if out.timed_out:
            return "the sandbox self-test timed out"
        if "a3s-probe: done" not in out.stdout:
            return f"the sandbox self-test did not finish (exit {out.exit_code})"
        try:
            with open(os.path.join(ws, "inside.txt"), encoding="ascii") as f:
                wrote_inside = f.read() == "ok"
        except OSError:
            wrote_inside = False
        try:
            conn, _ = listener.accept()
            conn.close()
            connected = True
        except (BlockingIOError, OSError):
            connected = False
        failures = [
            (not wrote_inside, "the command could not write inside its workspace"),
            (
                os.path.lexists(os.path.join(outside, "x")),
                "a write outside the workspace succeeded",
            ),
            (
                os.path.lexists(os.path.join(ws, ".git"))
                or os.path.lexists(os.path.join(ws, ".gitmodules")),
                "a protected name (.git, .gitmodules) could be created",
            ),
            (token in out.stdout, "a credential under HOME or a masked .env was readable"),
            (connected, "a TCP connection to 127.0.0.1 succeeded"),
        ]
        for failed, why in failures:
            if failed:
                return f"the sandbox self-test failed: {why}"
        return None
    except (OSError, SandboxUnavailable, SandboxArgumentError) as exc:
        return f"the sandbox self-test could not run: {exc}"
    finally:
        listener.close()
        _remove_tree(probe_dir)
