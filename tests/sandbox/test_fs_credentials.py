"""Credential masking: secrets in the workspace, the homes and /etc stay unreadable inside.

Every credential file holds a unique secret. A command tries every way to
read it (cat, cp, python, grep -r, tar, find -exec) and to remove or replace
it; the secret must appear neither in stdout/stderr nor in any file the
command left in the workspace, and the host file must be unchanged.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeward import _native
from codeward.sandbox._locate import find_bwrap, init_path
from codeward.sandbox._native_runner import _CoreSandbox

PY = "/usr/bin/python3 -I -S" if os.access("/usr/bin/python3", os.X_OK) else "python3 -I -S"

CREDENTIALS = [
    ".env",
    ".env.local",
    ".ENV",
    ".envrc",
    ".Env.Production",
    "a/b/.env",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
    ".claude.json",
    ".pgpass",
    ".codex/auth.json",
    ".claude/.credentials.json",
    ".a3s/os-auth.json",
    "pkg/.docker/config.json",
    "pkg/.kube/config",
    "pkg/.cargo/credentials.toml",
    "sub/.ssh/id_ed25519",
    "sub/.aws/credentials",
    "sub/.gnupg/private-keys-v1.d/key",
    "deep/er/.config/gh/hosts.yml",
    "pass/.password-store/email.gpg",
]
# Credential *directories*: the whole directory is masked.
CRED_DIRS = {".ssh", ".aws", ".gnupg", "gh", ".password-store"}


def _secret() -> str:
    return f"A3S-SECRET-{uuid.uuid4().hex}"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def ws(fs_host_dir: Path) -> Path:
    path = fs_host_dir / "ws"
    path.mkdir()
    (path / "README").write_text("workspace\n")
    return path


def _read_everything(rel: str) -> str:
    """Every way to get at `rel` and at the whole workspace, plus attempts to move it away."""
    r = shlex.quote(rel)
    script = (
        "import os, sys\n"
        "p = sys.argv[1]\n"
        "for f in (lambda: open(p).read(), lambda: os.listdir(os.path.dirname(p) or '.'),\n"
        "          lambda: open(os.open(p, os.O_RDONLY | os.O_NOATIME)).read()):\n"
        "    try:\n"
        "        print(f())\n"
        "    except OSError as e:\n"
        "        print('refused', e.errno)\n"
    )
    return (
        f"cat {r} >/dev/null 2>&1 || echo CAT-FAILED; "
        f"cat {r}; head -c 4096 {r}; cp {r} copied.txt; dd if={r} of=dd.txt; "
        f"{PY} -c {shlex.quote(script)} {r}; "
        f"grep -r A3S-SECRET . ; tar cf - . | strings | grep A3S-SECRET; "
        f"find . -type f -exec cat {{}} + ; cat $(dirname {r})/*; "
        f"echo replaced > {r}; rm -rf {r}; mv {r} moved.txt; "
        f"ln -s {r} via-link; cat via-link; echo ATTEMPTED"
    )


def _leaks_in_workspace(ws: Path, secret: str, original: Path) -> list[str]:
    hits = []
    for root, _dirs, files in os.walk(ws):
        for name in files:
            p = Path(root) / name
            if p == original or p.is_symlink():
                continue
            try:
                if secret in p.read_text(errors="replace"):
                    hits.append(str(p.relative_to(ws)))
            except OSError:
                pass
    return hits


@pytest.mark.parametrize("rel", CREDENTIALS)
def test_credential_file_is_unreadable_and_intact(rel, ws, fs, fs_sandbox):
    secret = _secret()
    path = ws / rel
    _write(path, f"token={secret}\n")
    before = fs.snapshot(path)
    out = fs.run(fs_sandbox(ws), _read_everything(rel))
    assert "ATTEMPTED" in out.stdout and "CAT-FAILED" in out.stdout, out
    assert secret not in out.stdout and secret not in out.stderr, out
    assert _leaks_in_workspace(ws, secret, path) == []
    assert fs.diff(before, fs.snapshot(path)) == [], "the masked file changed on the host"
    if Path(rel).parent.name in CRED_DIRS or Path(rel).parent.parent.name in CRED_DIRS:
        masked_dir = rel.rsplit("/", 1)[0]
        out = fs.run(fs_sandbox(ws), f"ls -A {shlex.quote(masked_dir)} && echo LISTED")
        assert "LISTED" not in out.stdout and Path(rel).name not in out.stdout, out


def test_symlink_named_env_masks_its_workspace_target(ws, fs, fs_sandbox):
    secret = _secret()
    _write(ws / "config" / "settings.txt", f"password={secret}\n")
    os.symlink("config/settings.txt", ws / ".env")
    (ws / "app").mkdir()
    os.symlink("../config/settings.txt", ws / "app" / ".env.local")
    out = fs.run(fs_sandbox(ws), _read_everything("config/settings.txt") + "; cat .env")
    assert "CAT-FAILED" in out.stdout, out
    assert secret not in out.stdout + out.stderr, out
    assert (ws / "config" / "settings.txt").read_text() == f"password={secret}\n"


def test_symlinked_credential_directory_masks_its_workspace_target(ws, fs, fs_sandbox):
    """`sub/.ssh -> ../keys`: the keys are reachable both through the credential name and
    directly; masking the name but not what it points at exposes them."""
    secret = _secret()
    _write(ws / "keys" / "id_ed25519", f"-----KEY {secret}\n")
    (ws / "sub").mkdir()
    os.symlink("../keys", ws / "sub" / ".ssh")
    out = fs.run(fs_sandbox(ws), "cat sub/.ssh/id_ed25519; cat keys/id_ed25519; echo ATTEMPTED")
    assert "ATTEMPTED" in out.stdout
    assert secret not in out.stdout + out.stderr, out


HARDLINK_CASES = {
    ".env+alias-in-workspace": (".env", "alias.txt"),
    "nested-.npmrc+alias-elsewhere": ("a/.npmrc", "b/alias"),
    ".env+two-aliases": (".env", "x/y/second"),
}


@pytest.mark.parametrize("case", sorted(HARDLINK_CASES))
def test_every_name_of_a_linked_credential_file_is_masked(case, ws, fs, fs_sandbox):
    """A command can write .env and link it (never link a masked file: EXDEV), so a
    refusal would let it disable every later command: every name in the workspace is
    masked instead, and the result says so."""
    rel, alias = HARDLINK_CASES[case]
    secret = _secret()
    _write(ws / rel, f"token={secret}\n")
    (ws / alias).parent.mkdir(parents=True, exist_ok=True)
    os.link(ws / rel, ws / alias)
    if case == ".env+two-aliases":
        os.link(ws / rel, ws / "third")
    out = fs.run(fs_sandbox(ws), f"cat {shlex.quote(alias)} third {shlex.quote(rel)}; touch ran")
    assert secret not in out.stdout + out.stderr, out
    assert (ws / "ran").exists()
    assert any("hard links: every name is masked" in n for n in out.neutralized), out


def test_credential_file_with_a_hard_link_outside_the_workspace_refuses_the_run(ws, fs, fs_sandbox):
    """A name outside the workspace cannot be masked (only the host can make one)."""
    secret = _secret()
    _write(ws / ".netrc", f"token={secret}\n")
    os.link(ws / ".netrc", ws.parent / "outside-alias")
    out = fs_sandbox(ws).exec("cat .netrc; touch ran")
    assert out.exit_code == 125, out
    assert out.setup_error and "outside the workspace" in out.setup_error, out
    assert secret not in out.stdout + out.stderr
    assert not (ws / "ran").exists()


def test_a_command_that_links_a_credential_file_cannot_disable_later_commands(ws, fs, fs_sandbox):
    with fs_sandbox(ws) as sb:
        fs.run(
            sb,
            "echo TOKEN=x > .env && ln .env alias && mkdir -p k/.ssh && "
            "echo key > k/.ssh/id && ln k/.ssh/id key-copy",
        )
        out = fs.run(sb, "cat alias key-copy 2>&1; echo RAN")
    assert out.stdout.endswith("RAN\n") and "TOKEN=x" not in out.stdout, out
    assert "key\n" not in out.stdout, out


def test_file_in_masked_credential_directory_is_not_readable_through_a_hard_link(
    ws, fs, fs_sandbox
):
    secret = _secret()
    _write(ws / "sub" / ".ssh" / "id_ed25519", f"-----KEY {secret}\n")
    os.link(ws / "sub" / ".ssh" / "id_ed25519", ws / "key-backup")
    out = fs_sandbox(ws).exec("cat key-backup; echo ATTEMPTED")
    assert secret not in out.stdout + out.stderr, out
    assert out.setup_error is not None or "ATTEMPTED" in out.stdout


def _deep_tree(ws: Path, depth: int, name: str) -> list[str]:
    """Creates `depth` nested directories called `name` without building the whole path
    (it may be longer than PATH_MAX); returns the components."""
    fd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir(name, dir_fd=fd)
            nxt = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nxt
        out = os.open(".env", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd)
        os.close(out)
    finally:
        os.close(fd)
    return [name] * depth


DEEP_CASES = {
    "1100-levels": (1100, "d"),  # deeper than any fixed recursion limit of the scan
    "longer-than-path-max": (24, "x" * 200),  # ~4.8 KB of path: no mount can name it
}


@pytest.mark.parametrize("case", sorted(DEEP_CASES))
def test_credential_file_beyond_the_scan_limits_is_masked_or_the_run_refused(
    case, ws, fs, fs_sandbox
):
    """A scan that stops at some depth or path length must refuse the run, not leave the
    secrets below that point bare."""
    depth, name = DEEP_CASES[case]
    secret = _secret()
    parts = _deep_tree(ws, depth, name)
    try:
        fd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
        for part in parts:
            nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nxt
        with open(os.open(".env", os.O_WRONLY, dir_fd=fd), "w") as f:
            f.write(f"token={secret}\n")
        os.close(fd)
        # walk down one component at a time: the full path may not fit in PATH_MAX
        walk = f"for i in $(seq {depth}); do cd {name} || exit 9; done"
        out = fs_sandbox(ws).exec(f"{walk}; cat .env; echo ATTEMPTED", timeout_ms=60_000)
        assert secret not in out.stdout + out.stderr, out
        assert out.setup_error is not None or "ATTEMPTED" in out.stdout, out
    finally:
        subprocess.run(["rm", "-rf", "--one-file-system", str(ws / name)], check=False)


def test_credential_in_directory_named_like_a_skipped_tree_in_another_case_is_masked(
    ws, fs, fs_sandbox
):
    """docs/security.md skips `target`, `node_modules`, `.venv` ...; a user directory that
    only resembles one of them in another case (Target/, NODE_MODULES/, .Venv/) is ordinary
    content and must be scanned."""
    secrets = {d: _secret() for d in ("Target", "NODE_MODULES", ".Venv")}
    for d, secret in secrets.items():
        _write(ws / d / ".env", f"token={secret}\n")
    out = fs.run(fs_sandbox(ws), "cat Target/.env NODE_MODULES/.env .Venv/.env; echo ATTEMPTED")
    assert "ATTEMPTED" in out.stdout
    leaked = [d for d, s in secrets.items() if s in out.stdout + out.stderr]
    assert leaked == [], out


# ---- the scan cache -------------------------------------------------------------------------


def test_credential_created_after_a_run_is_masked_by_the_next(ws, fs, fs_sandbox):
    """The directory-metadata cache must notice new files in known and in new directories."""
    (ws / "existing").mkdir()
    (ws / "deep" / "a" / "b").mkdir(parents=True)
    (ws / "renamed-src").mkdir()
    sb = fs_sandbox(ws)
    time.sleep(2.1)  # older than the racy window: the first scan trusts these directories
    fs.run(sb, "ls -R > /dev/null")
    secrets = {
        "existing/.env": _secret(),
        "brand-new/dir/.env": _secret(),
        "deep/a/b/.netrc": _secret(),
        ".env.late": _secret(),
        "renamed-src/.npmrc": _secret(),
    }
    for rel, secret in secrets.items():
        _write(ws / rel, f"token={secret}\n")
    (ws / "renamed-src").rename(ws / "renamed-dst")
    reads = "; ".join(
        f"cat {shlex.quote(r.replace('renamed-src', 'renamed-dst'))}" for r in secrets
    )
    out = fs.run(sb, reads + "; echo ATTEMPTED")
    assert "ATTEMPTED" in out.stdout
    leaked = [r for r, s in secrets.items() if s in out.stdout + out.stderr]
    assert leaked == [], out

    # within the same second as that scan: a second file next to the first
    racy = _secret()
    _write(ws / "existing" / ".env.local", f"token={racy}\n")
    out = fs.run(sb, "cat existing/.env.local; echo ATTEMPTED")
    assert racy not in out.stdout + out.stderr, out


def test_credential_written_by_a_sandboxed_command_is_masked_in_the_next_run(ws, fs, fs_sandbox):
    sb = fs_sandbox(ws)
    secret = _secret()
    fs.run(sb, f"mkdir -p made/here && echo token={secret} > made/here/.env")
    assert secret in (ws / "made" / "here" / ".env").read_text()
    out = fs.run(sb, "cat made/here/.env; echo ATTEMPTED")
    assert "ATTEMPTED" in out.stdout
    assert secret not in out.stdout + out.stderr, out


@pytest.fixture
def coarse_fs(tmp_path: Path) -> Iterator[Path]:
    """A file system with one-second timestamps (ext4 with 128-byte inodes on a loop device).

    Only there do two changes in the same second leave a directory's mtime and
    ctime identical, which is what the racy-timestamp rule is for.
    """
    if os.geteuid() != 0 or not shutil.which("mkfs.ext4"):
        pytest.skip("needs root and mkfs.ext4 to mount a loop file system")
    img, mnt = tmp_path / "coarse.img", tmp_path / "coarse"
    mnt.mkdir()
    with open(img, "wb") as f:
        f.truncate(8 << 20)
    made = subprocess.run(
        ["mkfs.ext4", "-q", "-F", "-I", "128", str(img)], capture_output=True, text=True
    )
    mounted = (
        made.returncode == 0
        and (
            subprocess.run(["mount", "-o", "loop", str(img), str(mnt)], capture_output=True)
        ).returncode
        == 0
    )
    if not mounted:
        pytest.skip("cannot mount a loop file system here (no loop devices?)")
    try:
        yield mnt
    finally:
        if subprocess.run(["umount", str(mnt)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_credential_created_in_the_same_second_as_the_scan_is_masked(coarse_fs, fs, fs_sandbox):
    ws = coarse_fs / "ws"
    ws.mkdir()
    sb = fs_sandbox(ws)
    for attempt in range(6):
        while time.time() % 1 > 0.4:  # start early in a second: all of it fits in one
            time.sleep(0.05)
        second = int(time.time())
        sub = ws / f"sub{attempt}"
        sub.mkdir()
        fs.run(sb, "true")  # scans sub while its timestamps are this very second
        secret = _secret()
        _write(sub / ".env", f"token={secret}\n")
        st = os.stat(sub)
        if int(time.time()) != second or int(st.st_mtime) != second:
            continue  # crossed a second boundary: try again
        out = fs.run(sb, f"cat sub{attempt}/.env; echo ATTEMPTED")
        assert "ATTEMPTED" in out.stdout
        assert secret not in out.stdout + out.stderr, (
            "a file created in the same second as the previous scan was not masked",
            out,
        )
        return
    pytest.fail("could not fit the sequence into one second")


# ---- the host's own secrets -----------------------------------------------------------------


def test_etc_shadow_and_friends_are_unreadable(ws, fs, fs_sandbox):
    out = fs.run(
        fs_sandbox(ws),
        "for f in /etc/shadow /etc/gshadow /etc/shadow- /etc/gshadow- /etc/sudoers; do "
        "  if [ -e $f ] && cat $f >/dev/null 2>&1; then echo READABLE $f; fi; done; "
        "ls /etc/ssh/ 2>/dev/null | grep -q . && echo LISTED /etc/ssh; "
        "grep -h '^root:' /etc/shadow 2>/dev/null; echo ATTEMPTED",
    )
    assert "ATTEMPTED" in out.stdout
    assert "READABLE" not in out.stdout and "LISTED" not in out.stdout, out
    assert "root:" not in out.stdout


@pytest.fixture
def host_home_secrets() -> Iterator[tuple[Path, str]]:
    """Secret files in the real host HOME (and its .ssh), removed afterwards."""
    home = Path(os.path.expanduser("~"))
    tag = uuid.uuid4().hex[:10]
    secret = _secret()
    made: list[Path] = []
    ssh = home / ".ssh"
    if not ssh.exists():
        ssh.mkdir(mode=0o700)
        made.append(ssh)
    for p in (home / f".a3s-fs-history-{tag}", ssh / f"a3s-fs-key-{tag}"):
        p.write_text(f"{secret}\n")
        made.insert(0, p)
    try:
        yield home, secret
    finally:
        for p in made:
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)


def test_host_home_and_its_ssh_dir_are_not_visible(ws, host_home_secrets, fs, fs_sandbox):
    home, secret = host_home_secrets
    h = shlex.quote(str(home))
    out = fs.run(
        fs_sandbox(ws),
        f"ls -A {h}; ls -A {h}/.ssh; cat {h}/.a3s-fs-history-* {h}/.ssh/*; "
        f"cat {h}/.bash_history; ls -AR /home; echo ATTEMPTED",
    )
    assert "ATTEMPTED" in out.stdout
    assert secret not in out.stdout + out.stderr, out
    assert "a3s-fs-key-" not in out.stdout and ".a3s-fs-history-" not in out.stdout, out


def test_path_entries_inside_home_secret_dirs_are_not_re_exposed(ws, fs):
    """Toolchain roots under a home come back read-only, but never a credential directory
    or the home itself, whatever PATH or the toolchain variables say."""
    home = Path(os.path.expanduser("~"))
    tag = uuid.uuid4().hex[:10]
    secret = _secret()
    roots = [home / ".ssh" / f"a3s-fs-{tag}", home / ".config" / f"a3s-fs-{tag}" / "bin"]
    made = []
    for sub in (home / ".ssh", home / ".config"):
        if not sub.exists():
            sub.mkdir(mode=0o700)
            made.append(sub)
    for r in roots:
        r.mkdir(parents=True)
        (r / "token").write_text(f"{secret}\n")
    try:
        env = [
            f"HOME={home}",
            f"PATH={roots[0]}:{roots[1]}:/usr/local/bin:/usr/bin:/bin",
            f"VIRTUAL_ENV={roots[0]}",
            f"CONDA_PREFIX={home}",
        ]
        handle = _native.Sandbox(str(ws), init_path(), bwrap=find_bwrap(str(ws)), host_env=env)
        sb = _CoreSandbox(ws, _handle=handle)
        cmd = "; ".join(f"cat {shlex.quote(str(r))}/token" for r in roots)
        out = fs.run(sb, f"{cmd}; ls -A {shlex.quote(str(home))}; echo ATTEMPTED")
        assert "ATTEMPTED" in out.stdout
        assert secret not in out.stdout + out.stderr, out
    finally:
        for r in roots:
            shutil.rmtree(r.parent if r.name == "bin" else r, ignore_errors=True)
        for sub in made:
            shutil.rmtree(sub, ignore_errors=True)


def test_toolchains_under_the_home_still_run(ws, fs, fs_sandbox):
    out = fs.run(fs_sandbox(ws), "python3 -c 'print(6 * 7)'")
    assert out.stdout.strip() == "42", out
    real = os.path.realpath(sys.executable)
    home = os.path.realpath(os.path.expanduser("~"))
    if real.startswith(home + os.sep):
        out = fs.run(fs_sandbox(ws), f"{shlex.quote(real)} -c 'import sys; print(sys.prefix)'")
        assert out.exit_code == 0 and out.stdout.strip(), out
