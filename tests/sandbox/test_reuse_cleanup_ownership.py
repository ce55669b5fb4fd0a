"""The init cleans only what it made: a host bind is never a cleanup target (issue 9, item 3).

The long-lived sandbox's init puts the trees it covers with a tmpfs (/tmp,
/var/tmp, /run, the homes) back after every command. When the workspace is
also one of them, or they hold one another, that cleanup must not reach the
workspace: files a command made there, and files the host wrote there
between commands, stay. Run long-lived and (A3S_TEST_SANDBOX_REUSE=0)
one-shot; each case also checks that what must stay masked stays masked.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from codeward.sandbox import NativeBashSandbox
from codeward.sandbox._native_runner import _CoreSandbox


def _env(home: Path) -> list[str]:
    """The caller's environment: its HOME (outside /home), a PATH, a locale."""
    return [f"PATH={os.environ.get('PATH', '/usr/bin:/bin')}", f"HOME={home}", "LANG=C.UTF-8"]


def _two_commands_and_a_host_write(sb: _CoreSandbox, ws: Path, fs) -> tuple[str, str]:
    first = fs.run(sb, "echo made > made-by-command && echo FIRST").stdout
    (ws / "written-by-host").write_text("host\n")
    second = fs.run(sb, "cat made-by-command written-by-host && echo SECOND").stdout
    return first, second


def _long_lived_if_reusing(sb: _CoreSandbox) -> None:
    """The commands really shared one long-lived sandbox (a failed start runs one-shot)."""
    if NativeBashSandbox._default_reuse:
        assert sb._handle.info()["starts"] == 1


def test_a_home_that_is_the_workspace_is_not_cleaned(fs_host_dir, fs, fs_env_sandbox):
    """HOME=ws outside /home (root's /root, a service account): the home is the workspace,
    and the init used to delete what the command and the host wrote into it."""
    ws = fs_host_dir / "svc-home"
    ws.mkdir()
    with fs_env_sandbox(ws, _env(ws)) as sb:
        first, second = _two_commands_and_a_host_write(sb, ws, fs)
        _long_lived_if_reusing(sb)
    assert first == "FIRST\n" and second == "made\nhost\nSECOND\n", second
    assert (ws / "made-by-command").exists() and (ws / "written-by-host").exists()


def test_a_home_that_is_the_workspace_keeps_its_credential_stores_masked(
    fs_host_dir, fs, fs_env_sandbox
):
    ws = fs_host_dir / "svc-home"
    for store in (".ssh", ".config", ".aws", ".docker"):
        (ws / store).mkdir(parents=True)
        (ws / store / "secret").write_text("HOME-SECRET\n")
    (ws / ".netrc").write_text("HOME-SECRET\n")
    with fs_env_sandbox(ws, _env(ws)) as sb:
        out = fs.run(
            sb,
            "cat .ssh/secret .config/secret .aws/secret .docker/secret .netrc; "
            "echo x > .config/planted; echo END",
        )
    assert "HOME-SECRET" not in out.stdout, "a home's credential stores must stay masked"
    assert not (ws / ".config" / "planted").exists()


def test_a_workspace_inside_the_home(fs_host_dir, fs, fs_env_sandbox):
    home = fs_host_dir / "home-u"
    ws = home / "proj"
    ws.mkdir(parents=True)
    (home / "private").write_text("HOME-SECRET\n")
    with fs_env_sandbox(ws, _env(home)) as sb:
        _, second = _two_commands_and_a_host_write(sb, ws, fs)
        _long_lived_if_reusing(sb)
        hidden = fs.run(sb, f"cat {home}/private; ls -A {home}; echo END").stdout
    assert second == "made\nhost\nSECOND\n", second
    assert (ws / "made-by-command").exists() and (ws / "written-by-host").exists()
    assert "HOME-SECRET" not in hidden and hidden.split() == ["proj", "END"], hidden


def test_a_home_inside_the_workspace(fs_host_dir, fs, fs_env_sandbox):
    """The home is masked inside the workspace too; the rest of the workspace is not
    cleaned, and what a command writes into the masked home never reaches the host."""
    ws = fs_host_dir / "ws"
    home = ws / "home"
    home.mkdir(parents=True)
    (home / "private").write_text("HOME-SECRET\n")
    with fs_env_sandbox(ws, _env(home)) as sb:
        _, second = _two_commands_and_a_host_write(sb, ws, fs)
        _long_lived_if_reusing(sb)
        inside = fs.run(sb, "cat home/private; echo x > home/planted; ls -A home; echo END")
    assert second == "made\nhost\nSECOND\n", second
    assert (ws / "made-by-command").exists() and (ws / "written-by-host").exists()
    assert "HOME-SECRET" not in inside.stdout, inside
    assert (home / "private").read_text() == "HOME-SECRET\n"
    assert not (home / "planted").exists(), "a write into the masked home reached the host"


# A private /root: a tmpfs, with the interpreter's own tree (pyenv lives under /root
# on some machines) bound back in.
ROOT_HOME_MOUNTS = """
set -e
keep=$(mktemp -d)
mount --bind /root "$keep"
mount -t tmpfs -o mode=0700 tmpfs /root
for d in "$@"; do mkdir -p "$d"; mount --bind "$keep${d#/root}" "$d"; done
exec "$PYTHON" -c "$SCRIPT" "$REUSE"
"""

ROOT_HOME_SCRIPT = """
import os, sys
os.makedirs("/root/.ssh")
with open("/root/.ssh/id_rsa", "w") as f:
    f.write("ROOT-SECRET\\n")
from codeward.sandbox import NativeBashSandbox
NativeBashSandbox._default_reuse = sys.argv[1] == "1"
os.environ["HOME"] = "/root"
with NativeBashSandbox("/root") as sb:
    a = sb.exec("echo made > /root/made-by-command && echo FIRST")
    with open("/root/written-by-host", "w") as f:
        f.write("host\\n")
    b = sb.exec("cat made-by-command written-by-host .ssh/id_rsa; echo SECOND")
    assert not NativeBashSandbox._default_reuse or sb._handle.info()["starts"] == 1
print(repr(a.stdout), repr(b.stdout), a.setup_error, b.setup_error)
print(sorted(os.listdir("/root")))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for a private /root")
def test_roots_home_as_the_workspace(fs_boundary_ready):
    """The workspace is /root and HOME is /root (in a private mount namespace with a
    tmpfs on /root, so the host's own /root is never at risk)."""
    if shutil.which("unshare") is None:
        pytest.fail("unshare is needed")
    keep = [p for p in {sys.base_prefix, sys.prefix} if p.startswith("/root/")]
    env = {
        **os.environ,
        "PYTHON": sys.executable,
        "SCRIPT": textwrap.dedent(ROOT_HOME_SCRIPT),
        "REUSE": "1" if NativeBashSandbox._default_reuse else "0",
    }
    p = subprocess.run(
        [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            ROOT_HOME_MOUNTS,
            "sh",
            *keep,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert p.returncode == 0, p
    results, listing = p.stdout.splitlines()
    assert results == "'FIRST\\n' 'made\\nhost\\nSECOND\\n' None None", p.stdout
    assert "made-by-command" in listing and "written-by-host" in listing, listing
