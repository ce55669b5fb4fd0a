"""Which paths are credentials: the names the in-process file tools never touch.

The bash sandbox masks the same names (native/src/credscan.c: every name it
masks is refused here too, as tests/workspace/test_credential_names.py
checks; this rule also refuses ``.password-store``); this is the rule for the
tools that run in the host process, where no mount hides a file.
Names compare case-insensitively: on a case-insensitive filesystem ``.ENV``
is ``.env``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

__all__ = [
    "HOME_STORES",
    "home_directories",
    "home_store_reason",
    "is_package_store",
    "workspace_reason",
]

# File names that are credentials wherever they are.
_FILES = frozenset(
    {
        ".netrc",
        "_netrc",
        ".npmrc",
        ".pypirc",
        ".git-credentials",
        ".claude.json",
        ".pgpass",
        ".boto",
        ".s3cfg",
    }
)
# Directories that hold nothing but credentials.
_DIRS = frozenset({".ssh", ".gnupg", ".aws", ".password-store"})
# (parent, directory) pairs: directories that hold nothing but credentials, below that parent
# (the GitHub CLI's tokens). Everything below one is refused too.
_DIR_PAIRS = frozenset({(".config", "gh")})
# (directory, file) pairs: agent and tool credential files.
_PAIRS = frozenset(
    {
        (".a3s", "os-auth.json"),
        (".codex", "auth.json"),
        (".claude", ".credentials.json"),
        (".docker", "config.json"),
        (".kube", "config"),
        (".cargo", "credentials.toml"),
        (".cargo", "credentials"),
    }
)
# Trees of generated or vendored files where a `.env...` name is not the user's secret.
_ENV_EXEMPT = frozenset({".git", "node_modules", "target"})
# Package and build stores: hard links there are how the tools share files.
_PACKAGE_STORES = frozenset(
    {
        "node_modules",
        ".venv",
        "venv",
        "target",
        ".pnpm-store",
        ".yarn",
        "site-packages",
        ".tox",
        ".nox",
    }
)
# Credential stores under a home directory, as relative paths.
HOME_STORES = (
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".docker",
    ".password-store",
    ".netrc",
    ".git-credentials",
    ".pgpass",
    ".config/gcloud",
    ".config/gh",
    ".config/hub",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".npmrc",
    ".pypirc",
    ".a3s",
    ".codex",
    ".claude",
    ".claude.json",
)


def workspace_reason(parts: Sequence[str]) -> str | None:
    """Why the workspace-relative path ``parts`` is a credential, or None if it is not."""
    folded = [p.casefold() for p in parts]
    for i, name in enumerate(folded):
        if name.startswith(".env") and not _ENV_EXEMPT.intersection(folded[:i]):
            return f"{parts[i]!r} is an environment file (.env*), which holds secrets"
        if name in _DIRS:
            return f"{parts[i]!r} is a credential directory"
        if name in _FILES:
            return f"{parts[i]!r} is a credential file"
        if i and (folded[i - 1], name) in _DIR_PAIRS:
            return f"{parts[i - 1]}/{parts[i]} is a credential directory"
        if i and (folded[i - 1], name) in _PAIRS:
            return f"{parts[i - 1]}/{parts[i]} is a credential file"
    return None


def _account_home() -> str:
    """The home directory of the user's account (the password database; none on Windows)."""
    try:
        import pwd
    except ImportError:
        return ""
    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        return ""


def home_directories() -> list[str]:
    """The home directories whose credential stores are off limits: $HOME and the user's own."""
    homes = []
    env_home = os.environ.get("HOME")
    if env_home and os.path.isabs(env_home):
        homes.append(os.path.realpath(env_home))
    pw_home = _account_home()
    if pw_home and os.path.isabs(pw_home):
        real = os.path.realpath(pw_home)
        if real not in homes:
            homes.append(real)
    return homes


def home_store_reason(real_path: str, homes: Sequence[str]) -> str | None:
    """Why the resolved absolute ``real_path`` lies in a home credential store, or None."""
    for home in homes:
        if real_path != home and not real_path.startswith(home.rstrip("/") + "/"):
            continue
        rel = os.path.relpath(real_path, home).casefold()
        for store in HOME_STORES:
            if rel == store or rel.startswith(store + "/"):
                return f"{real_path!r} is in the home credential store ~/{store}"
    return None


def is_package_store(parts: Sequence[str]) -> bool:
    """True when a workspace-relative path lies inside a package or build store."""
    return any(p.casefold() in _PACKAGE_STORES for p in parts[:-1])
