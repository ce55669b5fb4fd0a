"""Helpers of the `codeward mcp serve` suites: a workspace, the server's command, what is left.

Every client test runs the real server (`python -m codeward mcp serve`) from a
real client, with TMPDIR pointed at a directory of the test so that the
sandbox's run directory can be looked for after the client exits.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import mcpkit

from codeward.workspace import PROTECTED_NAMES

POLICY = """\
deny:
  - read(secret*)
ask:
  - bash(touch asked-*)
default_decision: allow
"""


class Served:
    """One workspace for a server: its directory, policy, TMPDIR, and the server's argv."""

    def __init__(self, tmp_path: Path, marker: str) -> None:
        self.workspace = tmp_path / f"ws-{marker}"
        self.workspace.mkdir()
        (self.workspace / "hello.txt").write_text("hello from the workspace\n")
        (self.workspace / "secret.txt").write_text("do not read\n")
        self.policy = tmp_path / "policy.yaml"
        self.policy.write_text(POLICY)
        self.tmpdir = tmp_path / "tmp"
        self.tmpdir.mkdir()
        self.marker = marker
        # `sleep 60 0.00NNNNNN`: sixty seconds, and a command line no other test has
        self.tag = "0.00" + marker.replace(".", "")[-6:]
        self.sleep_command = f"sleep 60 {self.tag}"

    @property
    def command(self) -> str:
        return sys.executable

    @property
    def args(self) -> list[str]:
        return [
            "-m",
            "codeward",
            "mcp",
            "serve",
            "--workspace",
            str(self.workspace),
            "--policy",
            str(self.policy),
        ]

    @property
    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["TMPDIR"] = str(self.tmpdir)
        return env

    def processes(self) -> list[tuple[int, str]]:
        """Host processes naming the workspace or the marker (the server, its sandbox's init,
        the commands), this one excepted."""
        found = []
        needles = (str(self.workspace).encode(), self.marker.encode(), self.tag.encode())
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
                state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state != "Z" and any(n in cmdline for n in needles):
                found.append((int(entry), cmdline.replace(b"\0", b" ").decode(errors="replace")))
        return found

    def sleeping(self) -> list[int]:
        needle = b"sleep\x0060\x00" + self.tag.encode()
        return [pid for pid, _ in self.processes() if _cmdline(pid).startswith(needle)]

    def leftovers(self, within_s: float = 10.0) -> dict[str, list[str]]:
        """What is left once the server had `within_s` to go: processes, placeholders, run
        directories. Empty lists when nothing is."""
        deadline = time.monotonic() + within_s
        while True:
            left = {
                "processes": [c for _, c in self.processes()],
                "placeholders": [
                    n for n in sorted(PROTECTED_NAMES) if os.path.lexists(self.workspace / n)
                ],
                "run_dirs": sorted(n for n in os.listdir(self.tmpdir) if n.startswith("a3s-")),
            }
            if not any(left.values()) or time.monotonic() > deadline:
                return left
            time.sleep(0.05)


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def wait_for(predicate, timeout_s: float = 20.0, step_s: float = 0.02) -> bool:  # type: ignore[no-untyped-def]
    """mcpkit.wait_for, with a longer default: these suites wait for a whole server."""
    return mcpkit.wait_for(predicate, timeout_s, step_s)
