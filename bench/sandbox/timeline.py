"""Where the time of one ``exec("true")`` goes, from a syscall trace of a few execs.

A driver (``python timeline.py --driver WORKSPACE N``) runs ``exec("true")`` N
times after two warm-ups, between two ``getppid()`` markers each. It runs
under either

* ``perf record`` with tracepoints (syscall enter/exit of a handful of
  syscalls, process fork/exec/exit): a few microseconds per event, so the
  phases keep their real length; or
* ``strace -f -ttt -T``: every syscall of every process stops in the tracer,
  so syscall-heavy phases (bubblewrap's mounts, the capability drops) are
  inflated several times; it is kept for the structure (syscall counts per
  process) and as a fallback where perf cannot record tracepoints.

Both traces become the same events; the phases of each exec are cut at the
same boundaries (see ``PHASES``) found from the calls' flags and modes, which
both tools report, not from paths, which only strace does.
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

# x86_64/aarch64 open flags (the generic Linux values)
O_CREAT = 0o100
O_EXCL = 0o200
O_NONBLOCK = 0o4000
O_DIRECTORY = 0o200000
O_NOFOLLOW = 0o400000
O_CLOEXEC = 0o2000000
OPEN_FLAGS = {
    "O_RDONLY": 0,
    "O_WRONLY": 1,
    "O_RDWR": 2,
    "O_CREAT": O_CREAT,
    "O_EXCL": O_EXCL,
    "O_NOCTTY": 0o400,
    "O_TRUNC": 0o1000,
    "O_APPEND": 0o2000,
    "O_NONBLOCK": O_NONBLOCK,
    "O_DSYNC": 0o10000,
    "O_DIRECTORY": O_DIRECTORY,
    "O_NOFOLLOW": O_NOFOLLOW,
    "O_CLOEXEC": O_CLOEXEC,
    "O_PATH": 0o10000000,
    "O_LARGEFILE": 0,  # perf shows the raw flags, where glibc may or may not set it
}
AT_FDCWD = -100
SCAN_OPEN = (
    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
)  # credscan: O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC
DEVNULL_OPEN = O_CLOEXEC  # a3s_process_run: open("/dev/null", O_RDONLY|O_CLOEXEC)

SYSCALLS = (
    "getppid", "mkdir", "openat", "clone", "clone3", "mount", "umount", "pivot_root",
    "unshare", "landlock_create_ruleset", "landlock_restrict_self", "seccomp", "execve",
    "exit_group", "waitid", "rmdir", "unlink", "unlinkat",
)  # fmt: skip
WITH_EXIT = ("mkdir", "openat", "clone", "waitid", "unlinkat")


@dataclass
class Event:
    t: float  # seconds
    pid: int
    kind: str  # "enter", "exit", "fork", "exec", "exit_proc"
    name: str = ""  # syscall name; for exec the program
    args: dict[str, Any] = field(default_factory=dict)
    ret: int = 0
    child: int = 0  # fork: the new pid


# --------------------------------------------------------------------------
# perf
# --------------------------------------------------------------------------


def perf_events() -> list[str]:
    ev = ["sched:sched_process_fork", "sched:sched_process_exec", "sched:sched_process_exit"]
    for s in SYSCALLS:
        ev.append(f"syscalls:sys_enter_{s}")
        if s in WITH_EXIT:
            ev.append(f"syscalls:sys_exit_{s}")
    return ev


PERF_LINE = re.compile(
    r"^\s*(?P<comm>.*?)\s+(?P<pid>\d+)/(?P<tid>\d+)\s+(?P<t>\d+\.\d+):\s+(?P<ev>[\w:]+):\s?(?P<rest>.*)$"
)


def parse_perf(text: str) -> list[Event]:
    out: list[Event] = []
    for line in text.splitlines():
        m = PERF_LINE.match(line)
        if not m:
            continue
        t, tid, ev, rest = float(m["t"]), int(m["tid"]), m["ev"], m["rest"]
        if ev == "sched:sched_process_fork":
            child = int(re.search(r"child_pid=(\d+)", rest)[1])  # type: ignore[index]
            out.append(Event(t, tid, "fork", child=child))
        elif ev == "sched:sched_process_exec":
            fn = re.search(r"filename=(\S+)", rest)
            out.append(Event(t, tid, "exec", os.path.basename(fn[1]) if fn else "?"))
        elif ev == "sched:sched_process_exit":
            pid = re.search(r"pid=(\d+)", rest)
            out.append(Event(t, int(pid[1]) if pid else tid, "exit_proc"))
        elif ev.startswith("syscalls:sys_enter_"):
            args = {k: int(v, 16) for k, v in re.findall(r"(\w+): (0x[0-9a-f]+)", rest)}
            out.append(Event(t, tid, "enter", ev[len("syscalls:sys_enter_") :], args))
        elif ev.startswith("syscalls:sys_exit_"):
            ret = rest.strip()
            try:
                val = int(ret, 16)
                if val >= 1 << 63:
                    val -= 1 << 64
            except ValueError:
                val = 0
            out.append(Event(t, tid, "exit", ev[len("syscalls:sys_exit_") :], ret=val))
    out.sort(key=lambda e: e.t)
    return out


# --------------------------------------------------------------------------
# strace
# --------------------------------------------------------------------------

STRACE_LINE = re.compile(r"^(?P<pid>\d+)\s+(?P<t>\d+\.\d+)\s+(?P<body>.*)$")
STRACE_CALL = re.compile(r"^(?P<name>\w+)\((?P<args>.*)$")
STRACE_RESUMED = re.compile(r"^<\.\.\. (?P<name>\w+) resumed>(?P<rest>.*)$")
STRACE_RET = re.compile(
    r"\)\s+=\s+(?P<ret>-?\d+|0x[0-9a-f]+|\?)(?P<tail>[^<]*)(?:<(?P<dur>[\d.]+)>)?\s*$"
)


def _strace_args(name: str, args: str) -> dict[str, int]:
    if name == "mkdir":
        m = re.search(r'",\s*(0\d*)', args)
        return {"mode": int(m[1], 8)} if m else {}
    if name == "openat":
        m = re.search(r'",\s*([A-Z_|]+)(?:,\s*(0\d*))?', args)
        if not m:
            return {}
        flags = 0
        for f in m[1].split("|"):
            flags |= OPEN_FLAGS.get(f, 0)
        dfd = AT_FDCWD if args.startswith("AT_FDCWD") else int(args.split(",")[0].split("<")[0])
        return {"flags": flags, "mode": int(m[2], 8) if m[2] else 0, "dfd": dfd}
    return {}


def parse_strace(text: str) -> tuple[list[Event], Counter[int]]:
    """Events, and the number of syscalls each pid made."""
    out: list[Event] = []
    calls: Counter[int] = Counter()
    first_seen: dict[int, float] = {}
    clone_enter: dict[int, float] = {}
    for line in text.splitlines():
        m = STRACE_LINE.match(line)
        if not m:
            continue
        pid, t, body = int(m["pid"]), float(m["t"]), m["body"]
        first_seen.setdefault(pid, t)
        if body.startswith("+++"):
            out.append(Event(t, pid, "exit_proc"))
            continue
        if body.startswith("---"):
            continue
        r = STRACE_RESUMED.match(body)
        if r:
            name, rest = r["name"], r["rest"]
            ret = STRACE_RET.search(rest)
            val = _ret(ret["ret"]) if ret else 0
            out.append(Event(t, pid, "exit", name, ret=val))
            _after(out, t, pid, name, val, clone_enter.get(pid, t))
            continue
        c = STRACE_CALL.match(body)
        if not c:
            continue
        name, args = c["name"], c["args"]
        calls[pid] += 1
        if name in ("clone", "clone3", "fork", "vfork"):
            clone_enter[pid] = t
        out.append(Event(t, pid, "enter", name, _strace_args(name, args)))
        if args.endswith("<unfinished ...>"):
            continue
        ret = STRACE_RET.search(args)
        if ret:
            dur = float(ret["dur"]) if ret["dur"] else 0.0
            val = _ret(ret["ret"])
            out.append(Event(t + dur, pid, "exit", name, ret=val))
            _after(out, t + dur, pid, name, val, t)
    # A clone in a child pid namespace returns the pid there (2, 3 ...); the
    # trace names processes by their pid outside: take the first new pid seen
    # after that clone began.
    taken = set()
    for e in out:
        if e.kind != "fork" or e.child in first_seen:
            taken.add(e.child)
            continue
        since = e.args.get("t_enter", e.t)
        fresh = [p for p, t in first_seen.items() if t >= since and p not in taken]
        if fresh:
            e.child = min(fresh, key=lambda p: first_seen[p])
            taken.add(e.child)
    out.sort(key=lambda e: e.t)
    return out, calls


def _ret(s: str) -> int:
    if s == "?":
        return 0
    return int(s, 16) if s.startswith("0x") else int(s)


def _after(out: list[Event], t: float, pid: int, name: str, val: int, entered: float) -> None:
    """The fork and exec events a finished clone/execve implies."""
    if name in ("clone", "clone3", "fork", "vfork") and val > 0:
        out.append(Event(t, pid, "fork", args={"t_enter": entered}, child=val))
    elif name == "execve" and val == 0:
        out.append(Event(t, pid, "exec", "?"))


# --------------------------------------------------------------------------
# the phases of one exec
# --------------------------------------------------------------------------

PHASES = (
    ("python", "Python wrapper + binding + 2 pipes"),
    ("run_dir", "run dir: mkdtemp + home, maskdir, mask file"),
    ("plan", "plan: homes, toolchains, /etc masks, stale run dirs, protected names present"),
    ("placeholders", "create missing protected names (placeholders + journal)"),
    ("credscan", "credential scan of the workspace (+ checks of what it masks)"),
    ("prepare", "a3s_process_run: /dev/null, 3 pipes, argv/env arrays"),
    ("fork", "fork() of the Python process (parent side)"),
    ("child_pre_exec", "fork child: 64 signal dispositions, setsid, dup2, close_range"),
    ("exec_bwrap", "execve of bwrap"),
    ("bwrap_pre", "bwrap: start-up until its namespace clone"),
    ("ns_clone", "clone() into 7 new namespaces"),
    ("ns_child", "bwrap child: cap drops, uid map, loopback, until the first mount"),
    ("mounts", "bwrap: the mount calls"),
    ("pivot_exec", "pivot_root, old root unmounted, nested-userns block, exec init"),
    ("init", "a3s-init: start-up, Landlock ruleset, seccomp build, fork"),
    ("enforce", "child: Landlock + seccomp enforced, exec bash"),
    ("bash", "bash -c true"),
    ("exit_init", "teardown: init exits (kill -1, pid namespace gone)"),
    ("exit_bwrap", "teardown: bwrap exits"),
    ("reap", "parent: wake-up, waitid, drain"),
    ("unplace", "status read, placeholders removed (+ stale journals/run dirs)"),
    ("rm_run_dir", "run dir removed"),
    ("return", "result dict -> CommandOutput, back to the caller"),
)


ROLES = (
    "python",
    "fork child (before exec)",
    "bwrap",
    "bwrap namespace child",
    "a3s-init",
    "init child (before exec)",
    "bash -c true",
)


@dataclass
class ExecTrace:
    phases: dict[str, float]  # seconds
    total: float
    mounts: int
    scanned_dirs: int
    placeholders: int
    calls: dict[str, Counter[str]]  # syscalls per role, by name (strace only)


def _dfd(e: Event) -> int:
    d = int(e.args.get("dfd", AT_FDCWD))
    return d - (1 << 32) if d >= 1 << 31 else d  # perf shows it as an unsigned 32-bit value


def _first(evs: list[Event], pred: Callable[[Event], bool], after: float) -> Event | None:
    for e in evs:
        if e.t >= after and pred(e):
            return e
    return None


def split_execs(
    events: list[Event], pid: int, calls: Counter[int] | None = None
) -> list[ExecTrace]:
    markers = [e.t for e in events if e.pid == pid and e.kind == "enter" and e.name == "getppid"]
    out = []
    for a, b in zip(markers[0::2], markers[1::2], strict=False):
        win = [e for e in events if a <= e.t <= b]
        tr = _one(win, pid, a, b, calls)
        if tr:
            out.append(tr)
    return out


def _one(
    w: list[Event], P: int, a: float, b: float, calls: Counter[int] | None
) -> ExecTrace | None:
    def mine(kind: str, name: str = "") -> Callable[[Event], bool]:
        return lambda e: e.pid == P and e.kind == kind and (not name or e.name == name)

    def of(pid: int, kind: str, name: str = "") -> Callable[[Event], bool]:
        return lambda e: e.pid == pid and e.kind == kind and (not name or e.name == name)

    def openat(pred: Callable[[int], bool]) -> Callable[[Event], bool]:
        return lambda e: (
            e.pid == P
            and e.kind == "enter"
            and e.name == "openat"
            and pred(e.args.get("flags", -1))
        )

    r0 = _first(w, mine("enter", "mkdir"), a)
    if not r0:
        return None
    mask_open = _first(w, openat(lambda f: f >= 0 and bool(f & O_CREAT)), r0.t)
    r1 = _first(w, mine("exit", "openat"), mask_open.t) if mask_open else None
    t_r1 = r1.t if r1 else r0.t

    def is_placeholder(e: Event) -> bool:
        if e.pid != P or e.kind != "enter":
            return False
        if e.name == "mkdir":
            return e.args.get("mode") == 0o555
        if e.name == "openat":
            f = e.args.get("flags", 0)
            return bool(f & O_CREAT) and e.args.get("mode") == 0o444
        return False

    # The credential scan opens the workspace (from AT_FDCWD) with SCAN_OPEN flags, after
    # the placeholders; the hard-link walks of present protected directories open them
    # the same way but go on with openat(fd, ".", O_DIRECTORY|O_CLOEXEC).
    mine_opens = [e for e in w if e.pid == P and e.kind == "enter" and e.name == "openat"]
    clone_at = next(
        (e.t for e in w if e.pid == P and e.kind == "enter" and e.name in ("clone", "clone3")), b
    )
    ph_all = [e for e in w if is_placeholder(e) and t_r1 <= e.t <= clone_at]
    after = ph_all[-1].t if ph_all else t_r1
    scan = None
    for i, e in enumerate(mine_opens):
        if e.t < after or e.t > clone_at or e.args.get("flags") != SCAN_OPEN:
            continue
        if _dfd(e) != AT_FDCWD:
            continue
        nxt = mine_opens[i + 1] if i + 1 < len(mine_opens) else None
        if nxt and nxt.args.get("flags") == O_DIRECTORY | O_CLOEXEC and _dfd(nxt) != AT_FDCWD:
            continue  # a hard-link walk
        scan = e
        break
    t_scan = scan.t if scan else after
    ph = [e for e in ph_all if e.t <= t_scan]
    t_ph = ph[0].t if ph else t_scan
    devnull = _first(w, openat(lambda f: f == DEVNULL_OPEN), t_scan)
    t_dn = devnull.t if devnull else t_scan
    scanned = sum(
        1
        for e in w
        if e.pid == P and e.kind == "enter" and e.name == "openat"
        and e.args.get("flags") == SCAN_OPEN and t_scan <= e.t < t_dn
    )  # fmt: skip
    f0 = _first(
        w, lambda e: e.pid == P and e.kind == "enter" and e.name in ("clone", "clone3"), t_dn
    )
    fork = _first(w, mine("fork"), f0.t if f0 else t_dn)
    if not f0 or not fork:
        return None
    c = fork.child
    f1 = _first(
        w, lambda e: e.pid == P and e.kind == "exit" and e.name in ("clone", "clone3"), f0.t
    )
    xb = _first(w, of(c, "exec"), fork.t)
    xe = _first(w, of(c, "enter", "execve"), fork.t)
    ns0 = _first(
        w,
        lambda e: e.pid == c and e.kind == "enter" and e.name in ("clone", "clone3"),
        xb.t if xb else fork.t,
    )
    nsfork = _first(w, of(c, "fork"), ns0.t if ns0 else fork.t)
    c2 = nsfork.child if nsfork else -1
    ns1 = _first(w, of(c2, "exit"), nsfork.t) if nsfork else None
    mount_calls = ("mount", "umount", "umount2", "pivot_root")
    mounts = [e for e in w if e.pid == c2 and e.kind == "enter" and e.name in mount_calls]
    xi = _first(w, of(c2, "exec"), ns1.t if ns1 else fork.t)
    m_calls = [e for e in mounts if xi is None or e.t < xi.t]
    m0 = m_calls[0] if m_calls else None
    m1 = [e for e in m_calls if e.name == "mount"]
    m1e = m1[-1] if m1 else None
    ifork = _first(w, of(c2, "fork"), xi.t) if xi else None
    c3 = ifork.child if ifork else -1
    xs = _first(w, of(c3, "exec"), ifork.t) if ifork else None
    eb = _first(w, of(c3, "exit_proc"), xs.t) if xs else None
    ei = _first(w, of(c2, "exit_proc"), eb.t if eb else fork.t)
    ew = _first(w, of(c, "exit_proc"), ei.t if ei else fork.t)
    wt = None
    if ew:
        waits = [
            e for e in w if e.pid == P and e.kind == "exit" and e.name == "waitid" and e.t >= ew.t
        ]
        # the blocking reap follows a WNOWAIT check: take the last one before any removal
        rm_first = _first(
            w,
            lambda e: (
                e.pid == P
                and e.kind == "enter"
                and e.name in ("rmdir", "unlink", "unlinkat", "openat")
            ),
            ew.t,
        )
        cut = rm_first.t if rm_first else b
        waits = [e for e in waits if e.t <= cut]
        wt = waits[-1] if waits else None
    t_w = wt.t if wt else (ew.t if ew else b)
    # remove_tree(run dir) opens the parent with O_RDONLY|O_DIRECTORY|O_CLOEXEC (opendir
    # adds O_NONBLOCK): the last such open of the exec
    tree_opens = [
        e for e in w
        if e.pid == P and e.kind == "enter" and e.name == "openat" and e.t >= t_w
        and e.args.get("flags") == O_DIRECTORY | O_CLOEXEC
    ]  # fmt: skip
    rd0 = tree_opens[-1] if tree_opens else None
    unl = [e for e in w if e.pid == P and e.kind == "exit" and e.name == "unlinkat" and e.t >= t_w]
    rd1 = unl[-1] if unl else None

    bounds: list[float | None] = [
        a,
        r0.t,
        t_r1,
        t_ph,
        t_scan,
        t_dn,
        f0.t,
        f1.t if f1 else None,
        xe.t if xe else None,
        xb.t if xb else None,
        ns0.t if ns0 else None,
        ns1.t if ns1 else None,
        m0.t if m0 else None,
        m1e.t if m1e else None,
        xi.t if xi else None,
        ifork.t if ifork else None,
        xs.t if xs else None,
        eb.t if eb else None,
        ei.t if ei else None,
        ew.t if ew else None,
        t_w,
        rd0.t if rd0 else None,
        rd1.t if rd1 else None,
        b,
    ]
    filled: list[float] = []
    for x in bounds:
        filled.append(x if x is not None and (not filled or x >= filled[-1]) else filled[-1])
    phases = {name: filled[i + 1] - filled[i] for i, (name, _) in enumerate(PHASES)}
    roles: dict[str, Counter[str]] = {}
    if calls is not None:  # strace: every syscall is an event
        t_xb = xb.t if xb else fork.t
        t_xi = xi.t if xi else b
        t_xs = xs.t if xs else b
        roles = {r: Counter() for r in ROLES}
        for e in w:
            if e.kind != "enter":
                continue
            if e.pid == P:
                role = "python"
            elif e.pid == c:
                role = "fork child (before exec)" if e.t < t_xb else "bwrap"
            elif e.pid == c2:
                role = "bwrap namespace child" if e.t < t_xi else "a3s-init"
            elif e.pid == c3:
                role = "init child (before exec)" if e.t < t_xs else "bash -c true"
            else:
                continue
            roles[role][e.name] += 1
    return ExecTrace(
        phases=phases,
        total=b - a,
        mounts=len(m_calls),
        scanned_dirs=scanned,
        placeholders=len(ph),
        calls=roles,
    )


def summarize(traces: list[ExecTrace]) -> dict[str, Any]:
    if not traces:
        return {"execs": 0}
    med = {k: statistics.median(t.phases[k] for t in traces) for k, _ in PHASES}
    return {
        "execs": len(traces),
        "phase_median_s": med,
        "total_median_s": statistics.median(t.total for t in traces),
        "mount_calls": statistics.median(t.mounts for t in traces),
        "scanned_dirs": statistics.median(t.scanned_dirs for t in traces),
        "placeholders": statistics.median(t.placeholders for t in traces),
        "calls": {
            role: {
                "total": statistics.median(sum(t.calls[role].values()) for t in traces),
                "top": dict(traces[-1].calls[role].most_common(6)),
            }
            for role in (traces[0].calls or {})
        },
    }


# --------------------------------------------------------------------------
# running the driver under a tracer
# --------------------------------------------------------------------------


def _driver_cmd(workspace: str, n: int, pidfile: Path) -> list[str]:
    return [
        sys.executable,
        str(Path(__file__).resolve()),
        "--driver",
        workspace,
        str(n),
        str(pidfile),
    ]


def perf_usable() -> str | None:
    """None if perf can record our tracepoints here, else why not."""
    perf = shutil.which("perf")
    if not perf:
        return "perf is not installed"
    try:
        r = subprocess.run(
            [perf, "record", "-q", "-o", "/dev/null", "-e", "syscalls:sys_enter_getppid", "true"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    if r.returncode != 0:
        return (r.stderr.strip().splitlines() or ["perf record failed"])[-1]
    return None


def trace_perf(workspace: str, n: int, tmp: Path) -> dict[str, Any]:
    data, pidfile = tmp / "perf.data", tmp / "driver.pid"
    cmd = ["perf", "record", "-q", "-o", str(data), "-e", ",".join(perf_events())]
    r = subprocess.run(
        [*cmd, "--", *_driver_cmd(workspace, n, pidfile)], capture_output=True, text=True
    )
    if r.returncode != 0:
        return {"error": r.stderr[-2000:]}
    script = subprocess.run(
        ["perf", "script", "-i", str(data), "-F", "comm,pid,tid,time,event,trace"],
        capture_output=True,
        text=True,
    )
    events = parse_perf(script.stdout)
    pid = int(pidfile.read_text())
    data.unlink(missing_ok=True)
    return summarize(split_execs(events, pid))


def trace_strace(workspace: str, n: int, tmp: Path, keep: Path | None = None) -> dict[str, Any]:
    if not shutil.which("strace"):
        return {"error": "strace is not installed (apt-get install -y strace)"}
    out, pidfile = keep or tmp / "strace.txt", tmp / "driver.pid"
    cmd = ["strace", "-f", "-q", "-ttt", "-T", "-o", str(out)]
    r = subprocess.run([*cmd, *_driver_cmd(workspace, n, pidfile)], capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": r.stderr[-2000:]}
    events, calls = parse_strace(out.read_text())
    res = summarize(split_execs(events, int(pidfile.read_text()), calls))
    res["trace_file"] = str(out)
    return res


def driver(workspace: str, n: int, pidfile: str) -> int:
    try:
        import codeward  # noqa: F401
    except ImportError:  # a source tree with the extension built in place
        sys.path.insert(0, str(ROOT / "python"))
    from codeward.sandbox import NativeBashSandbox

    Path(pidfile).write_text(str(os.getpid()))
    sb = NativeBashSandbox(workspace, reuse=False)  # the one-shot phases
    for _ in range(2):
        sb.exec("true")
    time.sleep(0.05)
    for _ in range(n):
        os.getppid()
        out = sb.exec("true")
        os.getppid()
        if not out.ok:
            print(out, file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--driver":
        sys.exit(driver(sys.argv[2], int(sys.argv[3]), sys.argv[4]))
    sys.exit("usage: timeline.py --driver WORKSPACE N PIDFILE (run by breakdown.py)")
