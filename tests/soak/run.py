"""A soak of the sandbox as a busy host uses it: many slots, faults, and the invariants (issue 26).

    python tests/soak/run.py --minutes 8          # the long form
    python tests/soak/run.py --seconds 40         # what CI runs (tests/soak/test_soak.py)

Slots are threads of this process and of worker processes (``--threads``,
``--procs`` x ``--proc-threads``; 16 by default). Each slot owns a workspace
and a long-lived sandbox (small memory and process bounds) and runs, at
random, until the time is up:

  quick      ``echo``, checked
  write      a file of known content, checked at once and again at the end
  flood      a large output (the head and tail are kept, every byte counted)
  timeout    ``sleep`` past a short timeout
  daemon     a ``setsid`` daemon left behind by a command that returns
  forks      a storm of background processes under the process bound
  hog        a memory hog under the memory bound
  close      ``close()`` from another thread while a command runs in it
  reopen     a new sandbox object on the same workspace
  kill-init  SIGKILL of the sandbox's init while a command runs

and this process SIGKILLs a worker process (a host) now and then and starts
another on the same workspaces. The invariants, checked as it goes and at
the end:

  bounded    every call returns within its timeout plus GRACE_S
  nothing    no process carrying the soak's marker or its directories is left
  baseline   this process's descriptors, threads and inotify watches are back
             to what they were after the first round, once everything is closed
  intact     every file written holds what was written
  clean      no placeholder, run directory (a3s-run-*, a3s-new-*), live journal or
             cgroup (codeward-<pid>-* of this process or a worker, in every
             hierarchy: native/src/cgroup_linux.c) is left once the hosts are
             gone and a last handle over each workspace closed
  steady     throughput per quarter of the run is printed (last / first);
             the long form (``--minutes``) also requires it above 0.3

Exit status 0 when every invariant held; the last line is a JSON summary.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

# What a call may take past its timeout on a loaded 2-core machine: a long-lived
# sandbox's start (bounded by the timeout itself), the kill grace (KILL_GRACE_MS), the
# init's backstop (3 s) and the drain of its output.
GRACE_S = 10.0
KILL_GRACE_MS = 300
PROTECTED = (".git", ".a3s", ".agents", ".codex", ".claude", ".vscode", ".idea", ".gitmodules")
PROTECTED += (".mcp.json", ".ripgreprc", ".bashrc", ".bash_profile", ".zshrc", ".zprofile")
PROTECTED += (".profile",)


# ---- one slot ------------------------------------------------------------------------


class Slot:
    """One workspace, its sandbox object, and what its calls did."""

    def __init__(self, ws: Path, marker: str, flood: int, seed: int) -> None:
        from codeward.sandbox import SandboxLimits

        self.ws = ws
        self.marker = marker
        self.flood = flood
        self.rng = random.Random(seed)
        self.limits = SandboxLimits(memory_max_bytes=96 << 20, max_processes=128)
        self.sb = self.make()
        self.files: dict[str, str] = {}  # name -> sha256 of what was written
        self.counts: collections.Counter[str] = collections.Counter()
        self.violations: list[str] = []
        self.first = ""  # an action to run first (see main)

    def make(self) -> Any:
        from codeward.sandbox import NativeBashSandbox

        return NativeBashSandbox(self.ws, reuse=True, limits=self.limits)

    def exec(self, what: str, command: str, timeout_ms: int, **kw: Any) -> Any:
        started = time.monotonic()
        out = self.sb.exec(command, timeout_ms=timeout_ms, kill_grace_ms=KILL_GRACE_MS, **kw)
        took = time.monotonic() - started
        if took > timeout_ms / 1000 + GRACE_S:
            self.violations.append(f"bounded: {what} took {took:.1f} s (timeout {timeout_ms} ms)")
        self.counts[what] += 1
        return out

    def check(self, ok: bool, what: str, detail: Any) -> None:
        if not ok:
            self.violations.append(f"{what}: {str(detail)[:300]}")

    def step(self) -> None:
        action = self.rng.choices(ACTIONS, weights=[w for _, w in ACTIONS])[0][0]
        if self.first:  # this slot's first action is its own: every action runs at least once
            action, self.first = self.first, ""
        getattr(self, "do_" + action.replace("-", "_"))()

    def do_quick(self) -> None:
        n = self.rng.randint(0, 10**6)
        out = self.exec("quick", f"echo {n}", 30_000)
        self.check(out.stdout == f"{n}\n", "quick", out)

    def do_write(self) -> None:
        name = f"data-{len(self.files)}.txt"
        lines = self.rng.randint(1, 3000)
        tag = self.rng.randint(0, 10**9)
        out = self.exec(
            "write", f'for i in $(seq 1 {lines}); do echo "$i {tag}"; done > {name}', 60_000
        )
        want = "".join(f"{i} {tag}\n" for i in range(1, lines + 1)).encode()
        got = (self.ws / name).read_bytes() if (self.ws / name).exists() else b""
        self.check(out.exit_code == 0 and got == want, "intact: write", out)
        self.files[name] = hashlib.sha256(want).hexdigest()

    def do_flood(self) -> None:
        out = self.exec("flood", f"head -c {self.flood} /dev/zero", 60_000)
        self.check(out.total_bytes == self.flood and out.exit_code == 0, "flood", out.total_bytes)

    def do_timeout(self) -> None:
        out = self.exec("timeout", f"sleep 30.{self.marker}", 300)
        self.check(out.timed_out, "timeout", out)

    def do_daemon(self) -> None:
        out = self.exec("daemon", f"setsid sleep 600.{self.marker} & echo up", 30_000)
        self.check(out.stdout == "up\n", "daemon", out)

    def do_forks(self) -> None:
        command = (
            f"for i in $(seq 1 100); do sleep 2.{self.marker} 2>/dev/null & done; wait; echo done"
        )
        out = self.exec("forks", command, 20_000)
        self.check(out.stdout.endswith("done\n") or out.timed_out, "forks", out)

    def do_hog(self) -> None:
        out = self.exec("hog", "x=$(head -c 400000000 /dev/zero | tr '\\0' a); echo ${#x}", 30_000)
        self.check(out.exit_code != 0 or out.oom_killed, "hog not bounded", out)

    def do_close(self) -> None:
        token = f"{self.marker}{self.rng.randint(1000, 9999)}"
        result: list[Any] = []
        t = threading.Thread(
            target=lambda: result.append(self.exec("close", f"sleep 30.{token}", 30_000))
        )
        t.start()
        # a close before the command runs only stops an idle sandbox: the command then starts
        # another and runs its 30 s; on a loaded machine a start can take that long
        running = self.wait_running(token, t)
        time.sleep(self.rng.uniform(0.0, 0.3))
        self.sb.close()
        t.join()
        out = result[0] if result else None
        if running:
            self.check(out is not None and out.exit_code != 0, "close while running", out)
        else:
            self.counts["close-unobserved"] += 1

    def do_reopen(self) -> None:
        self.sb.close()
        self.sb = self.make()
        self.counts["reopen"] += 1

    def do_kill_init(self) -> None:
        token = f"{self.marker}{self.rng.randint(1000, 9999)}"
        result: list[Any] = []
        t = threading.Thread(
            target=lambda: result.append(self.exec("kill-init", f"sleep 30.{token}", 30_000))
        )
        t.start()
        pid = self.wait_running(token, t)
        if pid:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        t.join()
        out = result[0] if result else None
        if pid:
            self.check(out is not None and out.exit_code != 0, "kill-init", out)
        else:
            self.counts["kill-init-unobserved"] += 1

    def wait_running(self, token: str, call: threading.Thread) -> int:
        """The pid of the sandbox's init once the command carrying ``token`` runs; 0 if the call
        ended first, or nothing ran within 25 s (a start on a loaded machine: not a finding,
        but the action is then not checked, and counted as unobserved)."""
        deadline = time.monotonic() + 25
        while call.is_alive() and time.monotonic() < deadline:
            info = self.sb._handle.info()
            if info["running"] and processes_with(token):
                return int(info["pid"])
            time.sleep(0.05)
        return 0

    def verify_files(self) -> None:
        for name, digest in self.files.items():
            path = self.ws / name
            got = hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else "missing"
            self.check(got == digest, f"intact: {name}", got)


ACTIONS = [
    ("quick", 30),
    ("write", 12),
    ("flood", 4),
    ("timeout", 6),
    ("daemon", 5),
    ("forks", 3),
    ("hog", 3),
    ("close", 4),
    ("reopen", 3),
    ("kill-init", 3),
]


def run_slots(slots: list[Slot], until: float, progress: list[float]) -> None:
    """Each slot in a thread of its own until ``until``; every finished call is timed."""

    def loop(slot: Slot) -> None:
        while time.monotonic() < until:
            try:
                slot.step()
            except Exception as exc:  # a call that raises is a finding, not the end
                slot.violations.append(f"raised: {type(exc).__name__}: {exc}")
            progress.append(time.monotonic())

    threads = [threading.Thread(target=loop, args=(s,)) for s in slots]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


# ---- what a process holds --------------------------------------------------------------


def resources() -> dict[str, int]:
    watches = 0
    for fd in os.listdir("/proc/self/fdinfo"):
        with contextlib.suppress(OSError):
            watches += Path(f"/proc/self/fdinfo/{fd}").read_text().count("inotify wd:")
    return {
        "fds": len(os.listdir("/proc/self/fd")),
        "threads": len(os.listdir("/proc/self/task")),
        "watches": watches,
    }


def cgroups_made_by(pids: list[int]) -> list[str]:
    """Cgroups named codeward-<pid>-* (native/src/cgroup_linux.c) for `pids`, in every cgroup
    hierarchy mounted here (v1 controllers and v2)."""
    prefixes = tuple(f"codeward-{pid}-" for pid in pids)
    found = []
    with open("/proc/self/mountinfo") as f:
        mounts = [ln.split() for ln in f]
    for fields in mounts:
        if fields[fields.index("-") + 1] in ("cgroup", "cgroup2"):
            for parent, dirs, _ in os.walk(fields[4]):
                found += [os.path.join(parent, d) for d in dirs if d.startswith(prefixes)]
    return sorted(found)


def processes_with(token: str) -> list[str]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            with contextlib.suppress(OSError):
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
                if token.encode() in cmd:
                    shown = cmd.replace(b"\0", b" ").decode(errors="replace")
                    found.append(f"{entry} {shown}")
    return found


# ---- a worker process (a host that may be killed) ------------------------------------


def worker(args: argparse.Namespace) -> int:
    root = Path(args.root)
    slots = [
        Slot(root / f"p{args.worker}-{i}", args.marker, args.flood, args.seed + i)
        for i in range(args.proc_threads)
    ]
    progress: list[float] = []
    print("ready", flush=True)
    # the driver's end (CLOCK_MONOTONIC is the machine's): a late start does not run late
    run_slots(slots, args.until or time.monotonic() + args.seconds, progress)
    for s in slots:
        s.sb.close()
        s.verify_files()
    print(
        json.dumps(
            {
                "calls": len(progress),
                "actions": sum((s.counts for s in slots), collections.Counter()),
                "violations": [v for s in slots for v in s.violations],
                "files": {str(s.ws): s.files for s in slots},
            }
        ),
        flush=True,
    )
    return 0


def start_worker(args: argparse.Namespace, index: int, until: float) -> subprocess.Popen[str]:
    argv = [sys.executable, __file__, "--worker", str(index), "--root", args.root]
    argv += ["--marker", args.marker, "--until", repr(until), "--flood", str(args.flood)]
    argv += ["--proc-threads", str(args.proc_threads), "--seed", str(args.seed + 1000 * index)]
    for i in range(args.proc_threads):
        (Path(args.root) / f"p{index}-{i}").mkdir(exist_ok=True)
    return subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=dict(os.environ))


# ---- the driver -----------------------------------------------------------------------


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--minutes", type=float)
    p.add_argument("--seconds", type=float, default=40.0)
    p.add_argument("--threads", type=int, default=10, help="slots in this process")
    p.add_argument("--procs", type=int, default=3, help="worker processes")
    p.add_argument("--proc-threads", type=int, default=2, help="slots in each worker")
    p.add_argument("--flood", type=int, default=0, help="bytes of a flood (default by length)")
    p.add_argument("--kill-every", type=float, default=0.0, help="s between host kills")
    p.add_argument("--root", help="the soak's directory (default: a new one)")
    p.add_argument("--seed", type=int, default=int(time.time()))
    p.add_argument("--worker", type=int, default=-1, help=argparse.SUPPRESS)
    p.add_argument("--marker", default="", help=argparse.SUPPRESS)
    p.add_argument("--until", type=float, default=0.0, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker >= 0:
        return worker(args)
    long_form = args.minutes is not None
    seconds = args.minutes * 60 if long_form else args.seconds
    args.flood = args.flood or (50_000_000 if long_form else 5_000_000)
    kill_every = args.kill_every or max(5.0, seconds / 8)
    import tempfile

    made_root = not args.root  # removed at the end when every invariant held
    root = Path(args.root or tempfile.mkdtemp(prefix="codeward-soak-"))
    args.root = str(root)
    # the hosts' scratch and journals are the soak's own: "clean" is checked there
    for sub in ("scratch", "state"):
        (root / sub).mkdir(exist_ok=True)
    os.environ["TMPDIR"] = str(root / "scratch")
    os.environ["XDG_STATE_HOME"] = str(root / "state")
    args.marker = args.marker or f"7{random.randint(10**8, 10**9 - 1)}"
    rng = random.Random(args.seed)

    slots = []
    for i in range(args.threads):
        (root / f"t{i}").mkdir(exist_ok=True)
    # a first round: imports, the readiness probe and caches are in place for the baseline
    warm = Slot(root / "t0", args.marker, args.flood, args.seed)
    warm.do_quick()
    warm.sb.close()
    del warm
    base = resources()
    slots = [
        Slot(root / f"t{i}", args.marker, args.flood, args.seed + i) for i in range(args.threads)
    ]
    for i, slot in enumerate(slots):  # a short run still has each action, and its checks, once
        slot.first = ACTIONS[i % len(ACTIONS)][0]

    started = time.monotonic()
    until = started + seconds
    progress: list[float] = []
    driver = threading.Thread(target=run_slots, args=(slots, until, progress))
    driver.start()

    violations: list[str] = []
    worker_calls = 0
    actions: collections.Counter[str] = collections.Counter()  # of the workers that reported
    files: dict[str, dict[str, str]] = {}
    hosts_killed = 0
    workers = {i: start_worker(args, i, until) for i in range(args.procs)}
    hosts = [os.getpid()] + [w.pid for w in workers.values()]  # whose cgroups "clean" checks
    phases: dict[str, float] = {}  # seconds past the end at which each closing phase began
    next_kill = started + kill_every
    while driver.is_alive():
        driver.join(0.2)
        now = time.monotonic()
        if now >= next_kill and now < until - 3 and workers:
            victim = rng.choice(sorted(workers))
            workers[victim].kill()  # SIGKILL of a host mid-run
            workers[victim].wait()
            hosts_killed += 1
            workers[victim] = start_worker(args, victim, until)
            hosts.append(workers[victim].pid)
            next_kill = now + kill_every
    phases["slots"] = round(time.monotonic() - until, 1)
    for proc in workers.values():
        out, _ = proc.communicate(timeout=seconds + 120)
        last = out.strip().splitlines()[-1] if out.strip() else "{}"
        report = json.loads(last) if last.startswith("{") else {}
        if not report:
            violations.append(f"a worker ended without a report (status {proc.returncode})")
        worker_calls += report.get("calls", 0)
        actions.update(report.get("actions", {}))
        violations += report.get("violations", [])
        files.update(report.get("files", {}))

    phases["workers"] = round(time.monotonic() - until, 1)
    for slot in slots:
        slot.sb.close()
        slot.verify_files()
        violations += slot.violations
        actions.update(slot.counts)
    del slot
    slots.clear()  # the handles are freed: what a closed one keeps (its init's copy) goes

    phases["closed"] = round(time.monotonic() - until, 1)
    # nothing left: no process of the soak (its marker, its directories)
    deadline = time.monotonic() + 60  # a bound for a loaded machine: seconds in practice
    while (left := processes_with(args.marker) + processes_with(str(root))) and (
        time.monotonic() < deadline
    ):
        time.sleep(0.1)
    violations += [f"nothing: left running: {p}" for p in left]

    phases["nothing"] = round(time.monotonic() - until, 1)
    # baseline: everything closed, this process holds what it held after its first round
    deadline = time.monotonic() + 30
    while (now_held := resources()) != base and time.monotonic() < deadline:
        time.sleep(0.1)
    if now_held != base:
        violations.append(f"baseline: {now_held} after close, {base} before")

    phases["baseline"] = round(time.monotonic() - until, 1)
    # clean: a last handle over each workspace sweeps what killed hosts left; then nothing is
    from codeward.sandbox import NativeBashSandbox

    def last_handle(ws: Path) -> None:
        with NativeBashSandbox(ws, reuse=True) as sb:
            out = sb.exec("echo last", timeout_ms=60_000)
            if out.stdout != "last\n":
                violations.append(f"clean: {ws.name}: {out}")

    last = [
        threading.Thread(target=last_handle, args=(ws,))
        for ws in sorted(p for p in root.iterdir() if p.name[0] in "tp")
    ]
    for t in last:
        t.start()
    for t in last:
        t.join()
    for ws in sorted(p for p in root.iterdir() if p.name[0] in "tp"):
        placeholders = [n for n in PROTECTED if os.path.lexists(ws / n)]
        if placeholders:
            violations.append(f"clean: {ws.name} keeps {placeholders}")
    runs = [p.name for p in (root / "scratch").glob("a3s-*")]
    if runs:
        violations.append(f"clean: run directories left: {runs}")
    cgroups = cgroups_made_by(hosts)
    if cgroups:
        violations.append(f"clean: cgroups left: {cgroups}")
    journals = [p.name for p in (root / "state").rglob("*.journal*")]
    if journals:
        violations.append(f"clean: journals left: {journals}")
    for ws_path, written in files.items():  # a killed host's files are not checked: unreported
        for name, digest in written.items():
            path = Path(ws_path) / name
            got = hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else "missing"
            if got != digest:
                violations.append(f"intact: {ws_path}/{name}")

    phases["clean"] = round(time.monotonic() - until, 1)
    # steady: calls of this process's slots per quarter of the run
    quarters = [0, 0, 0, 0]
    for t in progress:
        quarters[min(3, int((t - started) / seconds * 4))] += 1
    ratio = quarters[3] / quarters[0] if quarters[0] else 0.0
    if long_form and ratio < 0.3:
        violations.append(f"steady: the last quarter ran {ratio:.2f}x the first")
    summary = {
        "seconds": round(time.monotonic() - started, 1),
        "after_the_end": round(time.monotonic() - until, 1),
        "phases": phases,
        "slots": args.threads + args.procs * args.proc_threads,
        "calls": len(progress) + worker_calls,
        "per_quarter": quarters,
        "last_over_first": round(ratio, 2),
        "hosts_killed": hosts_killed,
        "hosts": len(hosts),
        "actions": dict(sorted(actions.items())),
        "load": [round(x, 1) for x in os.getloadavg()],
        "baseline": base,
        "after_close": now_held,
        "violations": violations,
    }
    print(json.dumps(summary))
    if made_root and not violations:
        import shutil

        shutil.rmtree(root, ignore_errors=True)
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
