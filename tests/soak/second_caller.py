"""A second caller of the product on the same machine, counting what fails for it.

The project's rule: tests pass while another caller uses the product on the
same machine, another pid namespace included, and a cleanup, a kill or a
fallback never reaches beyond what it owns. This script is that other
caller. Run it beside the tests, as a plain second process and in a pid
namespace of its own (root), niced on a shared machine:

    nice -n 10 python tests/soak/second_caller.py --minutes 10
    nice -n 10 unshare --pid --fork --mount-proc python tests/soak/second_caller.py --minutes 10
    # as an unprivileged user (a copy of the checkout and a venv it can read):
    setpriv --reuid=nobody --regid=nogroup --clear-groups python .../second_caller.py ...

Until the time is up it uses the product at random, each action checked:

  oneshot    select_sandbox(ws, reuse=False): a file made inside, read on the host
  reuse      one long-lived sandbox (kept for the whole run): files, children
  timeout    ``sleep`` past a short timeout in the long-lived sandbox
  daemon     a ``setsid`` daemon left by a one-shot command: gone after it returns
  names      a missing protected name (.git) cannot be made; a plain directory can
  close      close() of a sandbox from another thread while a command runs in it
  cli        ``python -m codeward exec --workspace ws -- ...``
  mcp        a host-mode MCP server (servers/hostile.py ``stubborn``: a setsid
             double-forked daemon), owned by a pid namespace, or (``--cgroup-mcp``,
             root) by a cgroup under a warden, the host run under nouserns.py;
             called, closed; its daemon must be gone

and, all along, what it owns must stay alive, whatever the other caller's
sweeps, wardens and janitors do:

  canary     a plain ``sleep`` child of this process (a warden's kill or a
             sweep reaching beyond its own would end it)
  run dir    the long-lived sandbox's run directory (its HOME inside is the
             host path of a3s-run-R/home) exists and its commands still run
  mcp-long   (``--cgroup-mcp``) a cgroup-owned MCP server kept for the whole run
             answers, and its cgroup directory exists

SIGTERM ends it early (after the action under way). The last line is a JSON
summary: ``runs`` per action, ``failures`` (a list of what failed and why).
Exit status 0 when nothing failed.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
SERVERS = TESTS / "mcp" / "servers"
NOUSERNS = TESTS / "sandbox" / "nouserns.py"
SYSTEM_PYTHON = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable

# A host application keeping one MCP server: "call" lines on stdin get one JSON line back
# (what the call answered, the server's cgroup directories, its daemon's pids); end of input
# closes the client, and the last line says which of the daemon's pids are still alive.
MCP_HOST = textwrap.dedent(
    """
    import json, os, sys, time
    from codeward.mcp import McpClient, McpServerConfig
    server, marker = sys.argv[1], sys.argv[2]
    def daemons():
        found = []
        for e in os.listdir("/proc"):
            if e.isdigit():
                try:
                    if open(f"/proc/{e}/cmdline", "rb").read().startswith(
                            b"sleep\\0" + marker.encode()):
                        found.append(int(e))
                except OSError:
                    pass
        return found
    config = McpServerConfig("second", sys.executable if len(sys.argv) < 4 else sys.argv[3],
                             (server, "stubborn", marker))
    client = McpClient(config)
    deadline = time.monotonic() + 60
    while not daemons() and time.monotonic() < deadline:
        time.sleep(0.05)
    pids = daemons()
    cgroups = []
    for pid in pids:
        for line in open(f"/proc/{pid}/cgroup").read().splitlines():
            path = line.split(":", 2)[2]
            if "/codeward-" in path:
                cgroups.append(line)
    print(json.dumps({"ownership": client.ownership, "daemons": pids, "cgroups": cgroups}),
          flush=True)
    for line in sys.stdin:
        out = client.call_tool("work", {"n": line.strip()})
        print(json.dumps({"answer": out.content[0]["text"] if out.content else ""}), flush=True)
    client.close()
    def running(pid):  # a zombie is gone (in a pid namespace of its own, this caller is
        try:           # its init: orphans come to it, and it reaps none)
            return open(f"/proc/{pid}/stat").read().rsplit(") ", 1)[1][0] != "Z"
        except OSError:
            return False
    print(json.dumps({"left": [p for p in pids if running(p)]}), flush=True)
    """
)


class Caller:
    """The second caller: its workspaces, its long-lived objects and its counts."""

    def __init__(self, root: Path, seed: int, cgroup_mcp: bool) -> None:
        from codeward.sandbox import select_sandbox

        self.root = root
        self.rng = random.Random(seed)
        self.cgroup_mcp = cgroup_mcp
        self.runs: collections.Counter[str] = collections.Counter()
        self.failures: list[str] = []
        # a number of seconds (sleep takes it) that names this caller: every sleep it starts
        self.marker = f"86400.{os.getpid()}{self.rng.randint(1000, 9999)}"
        self.ws = root / "ws"
        self.ws.mkdir()
        self.long_ws = root / "long"
        self.long_ws.mkdir()
        self.long = select_sandbox(self.long_ws, reuse=True)
        self.run_dir = ""
        self.canary = subprocess.Popen(["sleep", f"{self.marker}0"])
        self.mcp_long: subprocess.Popen[str] | None = None
        self.mcp_long_cgroups: list[str] = []

    # ---- bookkeeping ---------------------------------------------------------------

    def check(self, ok: bool, what: str, detail: Any) -> None:
        self.runs[what] += 1
        if not ok:
            self.failures.append(f"{time.strftime('%H:%M:%S')} {what}: {str(detail)[:400]}")
            print(f"FAIL {self.failures[-1]}", file=sys.stderr, flush=True)

    def owned_alive(self) -> None:
        """What this caller owns is still alive and usable."""
        self.check(self.canary.poll() is None, "canary alive", self.canary.returncode)
        if self.run_dir:
            self.check(Path(self.run_dir).is_dir(), "run dir kept", self.run_dir)
        if self.mcp_long is not None:
            line = self.mcp_call(self.mcp_long, "ping")
            self.check(line is not None and "answer" in line, "mcp-long answers", line)
            for entry in self.mcp_long_cgroups:
                self.check(cgroup_exists(entry), "mcp-long cgroup kept", entry)

    # ---- actions ---------------------------------------------------------------------

    def do_oneshot(self) -> None:
        from codeward.sandbox import select_sandbox

        n = self.rng.randint(0, 10**9)
        with select_sandbox(self.ws, reuse=False) as sb:
            out = sb.exec(f"echo {n} > one-{n}.txt && cat one-{n}.txt", timeout_ms=60_000)
        made = self.ws / f"one-{n}.txt"
        got = made.read_text() if made.exists() else ""
        self.check(out.exit_code == 0 and out.stdout == f"{n}\n" == got, "oneshot", out)
        made.unlink(missing_ok=True)

    def do_reuse(self) -> None:
        n = self.rng.randint(0, 10**9)
        command = (
            f"for i in 1 2 3; do (echo $i.{n} > kid-$i.txt) & done; wait; "
            f"cat kid-1.txt kid-2.txt kid-3.txt"
        )
        out = self.long.exec(command, timeout_ms=60_000)
        lines = out.stdout.splitlines()
        ok = out.exit_code == 0 and lines[:3] == [f"{i}.{n}" for i in (1, 2, 3)]
        self.check(ok, "reuse", out)
        run_dir = self.long_run_dir()
        if run_dir and run_dir != self.run_dir:
            self.runs["reuse run dir seen"] += 1  # the first, or a rebuilt sandbox's
            self.run_dir = run_dir

    def long_run_dir(self) -> str:
        """The long-lived sandbox's run directory on the host (its mask objects are bound
        from it: the init's mountinfo names it), or ""."""
        pid = self.long._handle.info().get("pid")
        try:
            text = Path(f"/proc/{pid}/mountinfo").read_text() if pid else ""
        except OSError:
            return ""
        found = re.search(r"/(a3s-run-[0-9a-f]{16})/", text)
        scratch = os.environ.get("TMPDIR") or "/tmp"
        return os.path.join(os.path.realpath(scratch), found.group(1)) if found else ""

    def do_timeout(self) -> None:
        out = self.long.exec(f"sleep {self.marker}1", timeout_ms=300, kill_grace_ms=300)
        self.check(out.timed_out and out.exit_code == 124, "timeout", out)

    def do_daemon(self) -> None:
        from codeward.sandbox import select_sandbox

        token = f"{self.marker}{self.rng.randint(1000, 9999)}"
        with select_sandbox(self.ws, reuse=False) as sb:
            out = sb.exec(f"setsid sleep {token} & echo up", timeout_ms=60_000)
        left = sleeping(token)
        self.check(out.stdout == "up\n" and not left, "daemon", (out, left))

    def do_names(self) -> None:
        out = self.long.exec(
            "mkdir .git 2>/dev/null && echo made-git; mkdir -p sub/d && echo ok > sub/d/f && "
            "cat sub/d/f; rm -rf sub",
            timeout_ms=60_000,
        )
        ok = out.stdout == "ok\n" and not (self.long_ws / ".git").exists()
        self.check(ok, "names", out)

    def do_close(self) -> None:
        from codeward.sandbox import select_sandbox

        sb = select_sandbox(self.ws, reuse=True)
        result: list[Any] = []
        t = threading.Thread(
            target=lambda: result.append(sb.exec(f"sleep {self.marker}2", timeout_ms=60_000))
        )
        t.start()
        time.sleep(self.rng.uniform(0.2, 2.0))
        sb.close()
        t.join(90)
        out = result[0] if result else None
        # closed before it ran, or while it ran: either way it ends now, never after 30 s
        self.check(not t.is_alive() and out is not None and out.exit_code != 0, "close", out)

    def do_cli(self) -> None:
        n = self.rng.randint(0, 10**9)
        argv = [sys.executable, "-m", "codeward", "exec", "--workspace", str(self.ws), "--"]
        argv += ["sh", "-c", f"echo {n} > cli-{n}.txt; echo {n}"]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        made = self.ws / f"cli-{n}.txt"
        ok = proc.returncode == 0 and proc.stdout == f"{n}\n" and made.exists()
        self.check(ok, "cli", (proc.returncode, proc.stdout[-200:], proc.stderr[-300:]))
        made.unlink(missing_ok=True)

    def do_mcp(self) -> None:
        cgroup = self.cgroup_mcp and self.rng.random() < 0.5
        token = f"{self.marker}{self.rng.randint(1000, 9999)}"
        host = self.start_mcp(token, cgroup)
        first = read_json(host)
        what = "mcp-cgroup" if cgroup else "mcp"
        if not first or "ownership" not in first:
            self.check(False, what, (first, stop(host)))
            return
        want = "cgroup" if cgroup else "pid-namespace"
        answer = self.mcp_call(host, "1")
        assert host.stdin is not None
        host.stdin.close()
        last = read_json(host)
        stop(host)
        left = (last or {}).get("left", ["?"])
        ok = first["ownership"] == want and answer is not None and left == []
        self.check(ok, what, (first, answer, last, sleeping(token)))

    def start_mcp(self, token: str, cgroup: bool) -> subprocess.Popen[str]:
        script = self.root / "mcp_host.py"
        if not script.exists():
            script.write_text(MCP_HOST)
        argv = [sys.executable, str(script), str(SERVERS / "hostile.py"), token, SYSTEM_PYTHON]
        if cgroup:
            argv = [sys.executable, str(NOUSERNS), *argv]
        return subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    def mcp_call(self, host: subprocess.Popen[str], n: str) -> dict[str, Any] | None:
        if host.poll() is not None or host.stdin is None:
            return None
        try:
            host.stdin.write(n + "\n")
            host.stdin.flush()
        except OSError:
            return None
        return read_json(host)

    def start_mcp_long(self) -> None:
        self.mcp_long = self.start_mcp(f"{self.marker}0000", cgroup=True)
        first = read_json(self.mcp_long)
        ok = bool(first) and first.get("ownership") == "cgroup" and bool(first.get("cgroups"))
        self.check(ok, "mcp-long start", (first, None if ok else stop(self.mcp_long)))
        if ok:
            self.mcp_long_cgroups = first["cgroups"]
        else:
            self.mcp_long = None

    def close(self) -> None:
        if self.mcp_long is not None:
            assert self.mcp_long.stdin is not None
            self.mcp_long.stdin.close()
            last = read_json(self.mcp_long)
            stop(self.mcp_long)
            self.check(last == {"left": []}, "mcp-long close", last)
        self.long.close()
        self.canary.kill()
        self.canary.wait()
        left = sleeping(self.marker)
        self.check(not left, "nothing left", left)


ACTIONS = [
    ("oneshot", 3),
    ("reuse", 4),
    ("timeout", 2),
    ("daemon", 2),
    ("names", 2),
    ("close", 2),
    ("cli", 2),
    ("mcp", 2),
]


def sleeping(needle: str) -> list[int]:
    """Pids of visible ``sleep ...NEEDLE...`` processes."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
                if cmd[0].endswith(b"sleep") and len(cmd) > 1 and needle.encode() in cmd[1]:
                    found.append(int(entry))
    return found


def cgroup_exists(entry: str) -> bool:
    """Whether a /proc/PID/cgroup line's cgroup directory still exists (v2 or v1)."""
    _, controllers, path = entry.split(":", 2)
    base = Path("/sys/fs/cgroup")
    if controllers == "":
        mounts = [base / "unified", base]
    else:
        mounts = [base / c for c in controllers.split(",") if not c.startswith("name=")]
    return any((m / path.lstrip("/")).is_dir() for m in mounts if (m / "cgroup.procs").exists())


def read_json(proc: subprocess.Popen[str]) -> dict[str, Any] | None:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    try:
        return json.loads(line) if line else None
    except ValueError:
        return None


def stop(proc: subprocess.Popen[str]) -> str:
    """Ends a helper of ours (the host application) and returns its stderr's tail."""
    if proc.poll() is None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=30)
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    return proc.stderr.read()[-1500:] if proc.stderr else ""


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--minutes", type=float)
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--seed", type=int, default=int(time.time()) ^ os.getpid() << 8)
    p.add_argument(
        "--cgroup-mcp",
        action="store_true",
        help="also own MCP servers by a cgroup (root: needs nouserns.py and a cgroup)",
    )
    args = p.parse_args()
    seconds = args.minutes * 60 if args.minutes is not None else args.seconds
    root = Path(tempfile.mkdtemp(prefix="codeward-second-"))
    stopping = threading.Event()  # SIGTERM: finish the action under way, close, report
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    caller = Caller(root, args.seed, args.cgroup_mcp)
    started = time.monotonic()
    try:
        if args.cgroup_mcp:
            caller.start_mcp_long()
        while time.monotonic() - started < seconds and not stopping.is_set():
            action = caller.rng.choices(ACTIONS, weights=[w for _, w in ACTIONS])[0][0]
            try:
                getattr(caller, "do_" + action)()
            except Exception as exc:  # a failure of the product, counted, not fatal
                caller.check(False, action, f"raised {type(exc).__name__}: {exc}")
            caller.owned_alive()
    finally:
        caller.close()
        shutil.rmtree(root, ignore_errors=True)
    summary = {
        "pid": os.getpid(),
        "uid": os.geteuid(),
        "seconds": round(time.monotonic() - started),
        "runs": dict(sorted(caller.runs.items())),
        "failures": caller.failures,
    }
    print(json.dumps(summary))
    return 1 if caller.failures else 0


if __name__ == "__main__":
    sys.exit(main())
