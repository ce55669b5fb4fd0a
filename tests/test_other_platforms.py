"""The package as macOS and Windows load it: what imports, what works, what is refused and how.

Each test runs tests/platform_sim.py in a subprocess, which takes away what the platform lacks
(modules such as fcntl, termios and pwd on Windows; os.pidfd_open, os.waitid and the inotify
calls of the extension on macOS; os.O_NOFOLLOW, dir_fd and the POSIX process calls on Windows)
before the package is imported. The wheels themselves are built and tested on macOS and Windows
runners (.github/workflows/wheels.yml); their extensions are cross-built and checked here by
ci/cross_compile.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SIM = Path(__file__).with_name("platform_sim.py")


def simulate(platform: str, *args: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, str(SIM), platform, *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    assert result["platform"] == platform
    return result


@pytest.mark.parametrize("platform", ["darwin", "win32"])
def test_every_module_imports_without_what_the_platform_lacks(platform: str) -> None:
    result = simulate(platform, "import")
    assert result["failed"] == []
    absent = result["absent"]
    assert isinstance(absent, list)
    if platform == "win32":  # the simulation held: the modules were refused, the flags absent
        assert {"fcntl", "termios", "pwd", "os.O_NOFOLLOW", "os.geteuid"} <= set(absent)
    else:
        assert {"os.pidfd_open", "os.waitid"} <= set(absent)


def test_on_macos_the_policy_kernel_and_tools_work_and_bash_names_seatbelt(
    tmp_path: Path,
) -> None:
    result = simulate("darwin", "use", str(tmp_path))
    assert result["policy"] == ["deny", "allow", "deny"]
    # no /usr/bin/sandbox-exec on this machine: the Seatbelt probe fails, closed
    assert result["select_sandbox"] == {"backend": "unavailable"}
    exec_error = result["exec"]
    assert isinstance(exec_error, dict)
    assert exec_error["error"] == "SandboxUnavailable"
    assert "Seatbelt" in exec_error["message"] and "sandbox-exec" in exec_error["message"]
    assert result["opt_in"] == {"backend": "process-host"}
    write, read, outside, bash = result["session"]  # type: ignore[misc]
    assert write[:3] == ["write", True, None]
    assert read[:3] == ["read", True, None] and "made here" in read[3]
    assert outside[:3] == ["read", False, "PermissionDenied"]
    assert bash[:3] == ["bash", False, "SandboxUnavailable"] and "Seatbelt" in bash[3]
    assert (tmp_path / "a.txt").read_text() == "made here\n"


def test_on_windows_the_policy_works_and_sandbox_and_files_are_refused_by_name(
    tmp_path: Path,
) -> None:
    result = simulate("win32", "use", str(tmp_path))
    assert result["policy"] == ["deny", "allow", "deny"]
    for key in ("select_sandbox", "opt_in"):  # the process host cannot run there either
        error = result[key]
        assert isinstance(error, dict)
        assert error["error"] == "SandboxUnavailable"
        assert "no sandbox on Windows" in error["message"]
    session = result["session"]
    assert isinstance(session, dict)
    assert session["error"] == "WorkspaceError"
    assert "not supported on Windows" in session["message"]
    assert "dir_fd" in session["message"]
    assert list(tmp_path.iterdir()) == []
