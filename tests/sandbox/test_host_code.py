"""The host's own code is read-only in the sandbox (docs/security.md, "The host's own code").

codeward installed in a virtual environment inside the workspace (a project's ``.venv`` the
agent runs from): a sandboxed command must not rewrite a module the host imports later, nor
add one on a path the host imports from; the rest of the workspace stays writable, and the
binds are part of the policy text and digest. Everything is checked on the host after the run.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

import codeward

PACKAGE = Path(codeward.__file__).parent

HOST = textwrap.dedent(
    """
    import json, sys
    from codeward.sandbox import NativeBashSandbox
    ws, reuse, command = sys.argv[1], sys.argv[2] == "reuse", sys.argv[3]
    sys.path.append(ws + "/hostlib")  # a module path entry of the host's own, added late
    with NativeBashSandbox(ws, reuse=reuse) as sb:
        out = sb.exec(command)
        policy = sb.policy()
    print(json.dumps({"exit": out.exit_code, "stdout": out.stdout, "stderr": out.stderr,
                      "setup_error": out.setup_error, "policy": policy.text,
                      "digest": policy.digest, "file": __import__("codeward").__file__}))
    """
)


@pytest.fixture
def venv_ws(fs_host_dir: Path) -> tuple[Path, Path]:
    """A workspace holding a virtual environment with codeward installed (copied) in it."""
    ws = fs_host_dir / "ws"
    ws.mkdir()
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(ws / ".venv")], check=True)
    purelib = sysconfig.get_path(
        "purelib", vars={"base": str(ws / ".venv"), "platbase": str(ws / ".venv")}
    )
    site = Path(purelib)
    shutil.copytree(PACKAGE, site / "codeward", ignore=shutil.ignore_patterns("__pycache__"))
    (ws / "hostlib").mkdir()
    (ws / "hostlib" / "helper.py").write_text("VALUE = 1\n")
    return ws, site / "codeward"


def _host(ws: Path, command: str, reuse: bool) -> dict:
    python = ws / ".venv" / "bin" / "python"
    run = subprocess.run(
        [str(python), "-c", HOST, str(ws), "reuse" if reuse else "one-shot", command],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


@pytest.mark.parametrize("reuse", [True, False], ids=["long-lived", "one-shot"])
def test_a_command_cannot_rewrite_the_hosts_modules(venv_ws, reuse) -> None:
    ws, package = venv_ws
    version = package / "_version.py"
    before = version.read_bytes()
    rel = version.relative_to(ws)
    command = (
        f"echo 'raise SystemExit(99)' >> {rel}; echo append=$?;"
        f" mv {rel} {rel}.x; echo move=$?;"
        f" echo 'import os' > {package.relative_to(ws)}/evil.py; echo add=$?;"
        " echo 'VALUE = 2' > hostlib/helper.py; echo hostlib=$?;"
        " echo 'x' > .venv/pyvenv.cfg; echo prefix=$?;"
        " echo mine > project.txt; echo project=$?"
    )
    out = _host(ws, command, reuse)
    assert out["setup_error"] is None, out
    assert out["file"].startswith(str(ws / ".venv")), "the host did not run from the venv"
    results = dict(line.split("=") for line in out["stdout"].split())
    assert results == {
        "append": "1",
        "move": "1",
        "add": "1",
        "hostlib": "1",
        "prefix": "1",
        "project": "0",
    }, out
    assert version.read_bytes() == before
    assert not (package / "evil.py").exists()
    assert (ws / "hostlib" / "helper.py").read_text() == "VALUE = 1\n"
    assert (ws / "project.txt").read_text() == "mine\n"
    # the binds are the policy's: its text names them, so its digest counts them
    assert f"{ws / '.venv'}" in out["policy"] and f"{ws / 'hostlib'}" in out["policy"], out


def test_the_workspace_itself_stays_writable_when_the_host_runs_from_it(fs_host_dir) -> None:
    """A module path entry that is the workspace root (a host started there) is not bound:
    the workspace would be read-only. The limit is documented."""
    ws = fs_host_dir / "ws"
    ws.mkdir()
    code = textwrap.dedent(
        """
        import sys
        sys.path.insert(0, sys.argv[1])
        from codeward.sandbox import NativeBashSandbox
        with NativeBashSandbox(sys.argv[1], reuse=False) as sb:
            print(sb.exec("echo ok > top.txt && cat top.txt").stdout, end="")
        """
    )
    run = subprocess.run([sys.executable, "-c", code, str(ws)], capture_output=True, text=True)
    assert run.stdout == "ok\n", run.stderr
