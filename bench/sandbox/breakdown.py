#!/usr/bin/env python3
"""Where the time of one ``NativeBashSandbox.exec("true")`` goes (``run.py --profile``).

    python bench/sandbox/breakdown.py [--quick] [--json OUT]

It profiles the one-shot path (``reuse=False``: one bubblewrap per command),
which is where the time of a sandbox start goes; the long-lived sandbox pays
it once, and appears among the API variants for comparison.

Nothing in the implementation is changed or instrumented; four views:

1. **Timeline** of a few execs from syscall tracepoints (``perf record``):
   each exec cut into 21 phases, Python wrapper to result, by the syscalls
   that start them (bench/sandbox/timeline.py), in three workspaces: one
   missing every protected name (15 placeholders), one with all present, and
   the 100k-file tree if run.py made it. Then the same under
   ``strace -f -ttt -T`` for the structure: syscalls per process and which.
2. **Variants through the real API**, timed like run.py (rounds of blocks):
   the native handle without the Python wrapper; every protected name present;
   ``no_landlock``; a minimal host environment (no toolchain binds); the run
   directory on tmpfs; the process host (a3s-init + bash, no bubblewrap).
3. **Replays of the exact bubblewrap command line** the sandbox builds
   (read from /proc while a command runs), started with ``subprocess``, minus
   one group of arguments at a time: the cost of each group of mounts, of
   a3s-init, of Landlock, of bash, of the nested-userns block.
4. **Single operations**: the run directory and 15 placeholders made and
   removed, fork+exec against posix_spawn (vfork), and the CLI's parts.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))  # bench/report.py

try:
    import codeward  # noqa: F401
except ImportError:  # a source tree with the extension built in place
    sys.path.insert(0, str(ROOT / "python"))

import timeline  # noqa: E402
from common import Series, measure, measure_paired, ms, paired_delta, plain  # noqa: E402

import workspace  # noqa: E402
from codeward import _native  # noqa: E402
from codeward.sandbox import NativeBashSandbox, ProcessHostBashSandbox  # noqa: E402
from codeward.sandbox._locate import find_bwrap, init_path  # noqa: E402
from report import section, table  # noqa: E402

PROTECTED_DIRS = (".git", ".a3s", ".agents", ".codex", ".claude", ".vscode", ".idea")
PROTECTED_FILES = (
    ".gitmodules", ".mcp.json", ".ripgreprc", ".bashrc", ".bash_profile", ".zshrc",
    ".zprofile", ".profile",
)  # fmt: skip


def full_workspace(path: Path) -> Path:
    """A small workspace where every protected name already exists."""
    workspace.small_workspace(path)
    for d in PROTECTED_DIRS:
        (path / d).mkdir(exist_ok=True)
    for f in PROTECTED_FILES:
        (path / f).touch()
    return path


# --------------------------------------------------------------------------
# 1. timeline
# --------------------------------------------------------------------------


def report_timeline(views: dict[str, dict[str, Any]], how: str) -> None:
    names = [k for k, v in views.items() if v.get("execs")]
    if not names:
        for k, v in views.items():
            print(f"  {k}: {v.get('error', 'no exec found in the trace')}")
        return
    rows = []
    first = views[names[0]]
    for key, label in timeline.PHASES:
        row: list[Any] = [label]
        for n in names:
            row.append(ms(views[n]["phase_median_s"][key]))
        row.append(f"{100 * first['phase_median_s'][key] / first['total_median_s']:.0f}%")
        rows.append(row)
    rows.append(["total (marker to marker)", *(ms(views[n]["total_median_s"]) for n in names), ""])
    table(["phase (median ms)", *names, "share"], rows)
    notes = [
        f"{n}: {views[n]['execs']} execs, {views[n]['mount_calls']:.0f} mount calls,"
        f" {views[n]['placeholders']:.0f} placeholders, {views[n]['scanned_dirs']:.0f} directories"
        " opened by the scan"
        for n in names
    ]
    print("  " + ";\n  ".join(notes) + f"\n  ({how}; share = of the first column's total)")


def report_calls(view: dict[str, Any]) -> None:
    calls = view.get("calls") or {}
    if not calls:
        return
    rows = []
    for role, c in calls.items():
        top = ", ".join(f"{k} {v}" for k, v in c["top"].items())
        rows.append([role, f"{c['total']:.0f}", top])
    table(["process (one exec)", "syscalls", "most frequent"], rows, align="lrl")


# --------------------------------------------------------------------------
# 2. variants through the API
# --------------------------------------------------------------------------


def api_variants(reps: int, ws_empty: Path, ws_full: Path) -> dict[str, Any]:
    init, bwrap = init_path(), find_bwrap()
    assert init and bwrap
    sb_empty = NativeBashSandbox(ws_empty, reuse=False)
    sb_full = NativeBashSandbox(ws_full, reuse=False)
    durations: dict[str, list[float]] = {}

    def raw(name: str, handle: Any) -> Callable[[], None]:
        durations[name] = []

        def fn() -> None:
            r = handle.exec(b"true", [], 120_000, 2000, 102_400, -1)
            if r["exit_code"] != 0:  # once more: a package rebuilt under us fails one run
                r = handle.exec(b"true", [], 120_000, 2000, 102_400, -1)
            if r["exit_code"] != 0:
                raise RuntimeError(f"{name}: {r}")
            durations[name].append(r["duration_us"] / 1e6)

        return fn

    def api(sb: Any) -> Callable[[], None]:
        def fn() -> None:
            out = sb.exec("true")
            if not out.ok:
                raise RuntimeError(str(out))

        return fn

    home = os.environ.get("HOME", "/root")
    fns: dict[str, Callable[[], None]] = {
        "sb.exec, long-lived sandbox (reuse=True)": api(NativeBashSandbox(ws_full, reuse=True)),
        "sb.exec, 15 placeholders": api(sb_empty),
        "handle.exec, 15 placeholders": raw("handle.exec, 15 placeholders", sb_empty._handle),
        "sb.exec, all names present": api(sb_full),
        "handle.exec, all names present": raw("handle.exec, all names present", sb_full._handle),
        "  no_landlock=True": raw(
            "  no_landlock=True", _native.Sandbox(str(ws_full), init, bwrap=bwrap, no_landlock=True)
        ),
        "  host_env: PATH=/usr/bin:/bin only": raw(
            "  host_env: PATH=/usr/bin:/bin only",
            _native.Sandbox(
                str(ws_full), init, bwrap=bwrap, host_env=["PATH=/usr/bin:/bin", f"HOME={home}"]
            ),
        ),
    }
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        fns["  run dir on tmpfs (/dev/shm)"] = raw(
            "  run dir on tmpfs (/dev/shm)",
            _native.Sandbox(str(ws_full), init, bwrap=bwrap, scratch_parent="/dev/shm"),
        )
    fns["process host: a3s-init + bash, no bwrap"] = api(ProcessHostBashSandbox(ws_full))
    series = measure_paired(fns, reps)
    inside = {k: statistics.median(v) for k, v in durations.items() if v}
    return {"series": series, "process_run_median_s": inside}


def report_api(res: dict[str, Any]) -> dict[str, float]:
    s: dict[str, Series] = res["series"]
    inside: dict[str, float] = res["process_run_median_s"]
    ref = s["handle.exec, all names present"]
    rows = []
    for name, x in s.items():
        pr = inside.get(name)
        rows.append(
            [
                name,
                ms(x.median),
                ms(x.p90),
                ms(x.best),
                ms(x.cpu_mean),
                ms(pr) if pr else "-",
                ms(x.median - pr) if pr else "-",
                f"{paired_delta(x, ref) * 1e3:+.2f}",
            ]
        )
    table(
        ["exec('true') variant", "median", "p90", "min", "cpu", "in run", "outside", "vs full"],
        rows,
    )
    print(
        "  in run = duration_us the C core reports (fork to reap); outside = the rest of the\n"
        "  native call: planning (run dir, placeholders, credential scan) and teardown.\n"
        "  Indented rows are handle.exec in the all-names-present workspace with one change;\n"
        "  vs full = median over the rounds of (this - 'handle.exec, all names present')."
    )
    d = {k: paired_delta(v, ref) * 1e3 for k, v in s.items()}
    return {
        "python_wrapper_ms": d["sb.exec, all names present"],
        "placeholders_ms": d["handle.exec, 15 placeholders"],
        "landlock_ms": -d["  no_landlock=True"],
        "toolchain_binds_ms": -d["  host_env: PATH=/usr/bin:/bin only"],
        "run_dir_on_tmpfs_gain_ms": -d.get("  run dir on tmpfs (/dev/shm)", 0.0),
        "bwrap_total_ms": -d["process host: a3s-init + bash, no bwrap"],
        "outside_run_ms": (ref.median - inside["handle.exec, all names present"]) * 1e3,
    }


# --------------------------------------------------------------------------
# 3. replays of the bubblewrap command line
# --------------------------------------------------------------------------


def capture_bwrap(sb: NativeBashSandbox) -> tuple[list[str], list[str]]:
    """The argv and environment of the bwrap process of one exec, read from /proc."""
    me = os.getpid()
    found: dict[str, list[str]] = {}
    t = threading.Thread(target=sb.exec, args=("sleep 0.4",))
    t.start()
    deadline = time.monotonic() + 5
    while not found and time.monotonic() < deadline:
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
                ppid = int(stat.rsplit(")", 1)[1].split()[1])
                if ppid != me:
                    continue
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:-1]
                if argv and os.path.basename(argv[0]) == b"bwrap" and b"/run/a3s/init" in argv:
                    env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")[:-1]
                    found["argv"] = [a.decode() for a in argv]
                    found["env"] = [e.decode() for e in env]
                    break
            except (OSError, ValueError, IndexError):
                continue
        time.sleep(0.005)
    t.join()
    if not found:
        raise RuntimeError("could not read the bwrap command line from /proc")
    return found["argv"], found["env"]


def _drop_triples(argv: list[str], pred: Callable[[str, str, str], bool]) -> list[str]:
    out, i = [], 0
    while i < len(argv):
        a = argv[i]
        if a in ("--ro-bind", "--ro-bind-try", "--bind") and i + 2 < len(argv):
            if pred(a, argv[i + 1], argv[i + 2]):
                i += 3
                continue
            out += argv[i : i + 3]
            i += 3
            continue
        out.append(a)
        i += 1
    return out


def replay_variants(argv: list[str], env: list[str], ws: Path, tmp: Path) -> dict[str, Any]:
    sep = argv.index("--")
    head, init_args = argv[:sep], argv[sep + 1 :]
    cmd_at = init_args.index("--")
    init_opts, command = init_args[:cmd_at], init_args[cmd_at + 1 :]
    command = [*command[:-1], "true"]  # captured while running a sleep
    # a stand-in run dir, with the same objects as the real one
    old_run = next(os.path.dirname(a) for a in argv if a.endswith("/home") and "a3s-run-" in a)
    new_run = tempfile.mkdtemp(prefix="a3s-run-", dir=tmp)
    os.mkdir(f"{new_run}/home", 0o700)
    os.mkdir(f"{new_run}/maskdir", 0)
    os.close(os.open(f"{new_run}/mask", os.O_CREAT | os.O_WRONLY, 0))

    def fix(xs: list[str]) -> list[str]:
        return [x.replace(old_run, new_run) for x in xs]

    head, init_opts, env = fix(head), fix(init_opts), fix(env)
    status_r, status_w = os.pipe()
    life_r, life_w = os.pipe()
    os.set_blocking(status_r, False)

    def with_fds(opts: list[str]) -> list[str]:
        out = list(opts)
        out[out.index("--status-fd") + 1] = str(status_w)
        out[out.index("--lifeline-fd") + 1] = str(life_r)
        return out

    init_opts = with_fds(init_opts)
    home_roots = ("/home", "/root", os.environ.get("HOME", "/nonexistent"))
    wss = str(ws)

    def protected(k: str, src: str, dst: str) -> bool:
        return src == dst and os.path.dirname(src) == wss

    def toolchain(k: str, src: str, dst: str) -> bool:
        under_ws = dst == wss or dst.startswith(wss + "/")
        return k == "--ro-bind" and src == dst and src.startswith(home_roots) and not under_ws

    def procro(k: str, src: str, dst: str) -> bool:
        return k == "--ro-bind-try" and src.startswith("/proc/")

    def etc(k: str, src: str, dst: str) -> bool:
        return dst.startswith("/etc/")

    def everything(k: str, src: str, dst: str) -> bool:
        return (
            protected(k, src, dst)
            or toolchain(k, src, dst)
            or procro(k, src, dst)
            or etc(k, src, dst)
        )

    environ = dict(e.split("=", 1) for e in env)

    def run(h: list[str], tail: list[str]) -> Callable[[], None]:
        full = [*h, "--", *tail]

        def fn() -> None:
            subprocess.run(full, env=environ, check=True, pass_fds=(status_w, life_r))
            with contextlib.suppress(BlockingIOError):
                os.read(status_r, 4096)

        return fn

    init_cmd = [init_opts[0], *init_opts[1:], "--", *command]
    variants = {
        "replay: the sandbox's own command line": run(head, init_cmd),
        "  - 15 protected-name binds": run(_drop_triples(head, protected), init_cmd),
        "  - toolchain binds under the homes": run(_drop_triples(head, toolchain), init_cmd),
        "  - 5 /proc read-only binds": run(_drop_triples(head, procro), init_cmd),
        "  - 5 /etc credential masks": run(_drop_triples(head, etc), init_cmd),
        "  - all four groups": run(_drop_triples(head, everything), init_cmd),
        "  - --unshare-user --disable-userns": run(
            [a for a in head if a not in ("--unshare-user", "--disable-userns")], init_cmd
        ),
        "  init --no-landlock": run(head, [*init_opts, "--no-landlock", "--", *command]),
        "  init runs /bin/true (no bash)": run(head, [*init_opts, "--", "/bin/true"]),
        "  no init: bwrap runs bash -c true": run(head, command),
    }
    return {
        "variants": variants,
        "binds": {
            "protected": (len(head) - len(_drop_triples(head, protected))) // 3,
            "toolchain": (len(head) - len(_drop_triples(head, toolchain))) // 3,
            "proc": (len(head) - len(_drop_triples(head, procro))) // 3,
            "etc": (len(head) - len(_drop_triples(head, etc))) // 3,
        },
        "argv": [*head, "--", *init_cmd],
        "close": lambda: [os.close(fd) for fd in (status_r, status_w, life_r, life_w)],
    }


def report_replay(s: dict[str, Series], binds: dict[str, int]) -> dict[str, float]:
    own = s["replay: the sandbox's own command line"]
    rows = [
        [
            name,
            ms(x.median),
            ms(x.p90),
            ms(x.best),
            ms(x.cpu_mean),
            f"{paired_delta(x, own) * 1e3:+.2f}",
            f"{(x.cpu_mean - own.cpu_mean) * 1e3:+.2f}",
        ]
        for name, x in s.items()
    ]
    table(["bwrap command line", "median", "p90", "min", "cpu", "vs own", "cpu vs own"], rows)
    print(
        "  vs own: median over the rounds of (this - the own command line); cpu: user+sys of\n"
        "  bwrap, a3s-init and bash, mean per run. Binds in each group: "
        + ", ".join(f"{k} {v}" for k, v in binds.items())
        + ";\n  each bind is two mount calls, and bubblewrap re-reads /proc/self/mountinfo for"
        " every one of them."
    )
    d = {k: -paired_delta(v, own) * 1e3 for k, v in s.items()}
    c = {k: (own.cpu_mean - v.cpu_mean) * 1e3 for k, v in s.items()}
    keys = {
        "protected_binds": "  - 15 protected-name binds",
        "toolchain_binds": "  - toolchain binds under the homes",
        "proc_binds": "  - 5 /proc read-only binds",
        "etc_masks": "  - 5 /etc credential masks",
        "all_groups": "  - all four groups",
        "nested_userns": "  - --unshare-user --disable-userns",
        "landlock": "  init --no-landlock",
        "bash": "  init runs /bin/true (no bash)",
        "init": "  no init: bwrap runs bash -c true",
    }
    out = {"replay_ms": own.median * 1e3}
    for k, name in keys.items():
        out[f"{k}_ms"] = d[name]
        out[f"{k}_cpu_ms"] = c[name]
    return out


# --------------------------------------------------------------------------
# 4. single operations
# --------------------------------------------------------------------------


def op_variants(reps: int, rounds: int, ws: Path, scratch: str) -> dict[str, Series]:
    true = shutil.which("true") or "/bin/true"

    def run_dir() -> None:
        d = tempfile.mkdtemp(prefix="a3s-run-", dir=scratch)
        os.mkdir(f"{d}/home", 0o700)
        os.mkdir(f"{d}/maskdir", 0)
        os.close(os.open(f"{d}/mask", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0))
        os.unlink(f"{d}/mask")
        os.rmdir(f"{d}/maskdir")
        os.rmdir(f"{d}/home")
        os.rmdir(d)

    def placeholders() -> None:
        for n in PROTECTED_DIRS:
            os.mkdir(ws / n, 0o555)
        for n in PROTECTED_FILES:
            os.close(os.open(ws / n, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o444))
        for n in PROTECTED_DIRS:
            os.rmdir(ws / n)
        for n in PROTECTED_FILES:
            os.unlink(ws / n)

    def fork_exec() -> None:
        pid = os.fork()
        if pid == 0:
            try:
                os.execv(true, [true])
            finally:
                os._exit(127)
        os.waitpid(pid, 0)

    def spawn() -> None:
        os.waitpid(os.posix_spawn(true, [true], os.environ), 0)

    return measure(
        {
            f"run dir: 3 mkdir + 1 file, then removed ({scratch})": run_dir,
            "15 placeholders made and removed (no mounts)": placeholders,
            "fork() + execv(true) + wait, from this process": fork_exec,
            "posix_spawn(true) + wait (vfork)": spawn,
        },
        reps,
        rounds,
    )


CLI_PARTS = r"""
import json, sys, time
t0 = time.perf_counter()
from codeward.cli import _main
t1 = time.perf_counter()
from codeward.sandbox import select_sandbox
sb = select_sandbox(sys.argv[1])
t2 = time.perf_counter()
out = sb.exec("true")
t3 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "select_sandbox": t2 - t1, "exec": t3 - t2, "ok": out.ok}))
"""


def cli_parts(reps: int, ws: Path) -> dict[str, float]:
    parts: dict[str, list[float]] = {"total": [], "import": [], "select_sandbox": [], "exec": []}
    for _ in range(reps):
        t = time.perf_counter()
        r = subprocess.run(
            [sys.executable, "-c", CLI_PARTS, str(ws)], capture_output=True, text=True, check=True
        )
        parts["total"].append(time.perf_counter() - t)
        d = json.loads(r.stdout)
        for k in ("import", "select_sandbox", "exec"):
            parts[k].append(d[k])
    med = {k: statistics.median(v) for k, v in parts.items()}
    med["interpreter"] = med["total"] - med["import"] - med["select_sandbox"] - med["exec"]
    return med


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------


RSS_FORK = r"""
import json, shutil, statistics, subprocess, sys, time
from codeward.sandbox import NativeBashSandbox
ws, n = sys.argv[1], int(sys.argv[2])
sb = NativeBashSandbox(ws, reuse=False)
true = shutil.which("true") or "/bin/true"
def med(fn):
    fn()
    xs = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        xs.append(time.perf_counter() - t0)
    return statistics.median(xs)
def rss_mib():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
res = {}
ballast = None
for label in ("as started", "+1 GiB touched"):
    if ballast is None and label != "as started":
        ballast = bytearray(1 << 30)
        ballast[::4096] = b"" * (len(ballast) // 4096)
    res[label] = {
        "rss_mib": rss_mib(),
        "sb.exec('true')": med(lambda: sb.exec("true")),
        "fork+exec (subprocess, preexec_fn)": med(
            lambda: subprocess.run([true], preexec_fn=lambda: None)
        ),
        "vfork+exec (subprocess)": med(lambda: subprocess.run([true])),
    }
print(json.dumps(res))
"""


def rss_fork(reps: int, ws: Path) -> dict[str, dict[str, float]]:
    """sb.exec and fork/vfork+exec in a fresh process, before and after it grows by 1 GiB."""
    r = subprocess.run(
        [sys.executable, "-c", RSS_FORK, str(ws), str(reps)],
        capture_output=True,
        text=True,
        check=True,
    )
    res: dict[str, dict[str, float]] = json.loads(r.stdout)
    return res


def flood_hosts(nbytes: int, reps: int, ws: Path) -> dict[str, Series]:
    """The same flood through the sandbox and through the process host (same capture loop)."""
    sb, host = NativeBashSandbox(ws, reuse=False), ProcessHostBashSandbox(ws)
    cmd = f"head -c {nbytes} /dev/zero"
    return measure_paired(
        {
            "sandbox (bwrap, seccomp, Landlock)": lambda: sb.exec(cmd),
            "process host (a3s-init + bash, same capture loop)": lambda: host.exec(cmd),
        },
        reps,
    )


def run(quick: bool, tmp: Path, large: dict[str, Any] | None = None) -> dict[str, Any]:
    reps, rounds = (10, 2) if quick else (30, 3)
    n_trace = 5 if quick else 15
    out: dict[str, Any] = {}
    ws_empty = workspace.small_workspace(tmp / "bd-empty")
    ws_full = full_workspace(tmp / "bd-full")

    section("Profile 1. Timeline of exec('true') from syscall tracepoints (perf)")
    why = timeline.perf_usable()
    views: dict[str, dict[str, Any]] = {}
    if why:
        print(f"  perf unavailable ({why}); the strace view below is the only timeline")
    else:
        views["15 placeholders"] = timeline.trace_perf(str(ws_empty), n_trace, tmp)
        views["all present"] = timeline.trace_perf(str(ws_full), n_trace, tmp)
        if large:
            views["100k files"] = timeline.trace_perf(large["path"], max(3, n_trace // 3), tmp)
        report_timeline(views, "perf record of tracepoints: ~µs per event")
    out["perf"] = views

    section("Profile 2. The same under strace -f -ttt -T (inflated; for the structure)")
    st = timeline.trace_strace(str(ws_empty), 3, tmp)
    if "error" in st:
        print(f"  SKIPPED: {st['error']}")
    else:
        report_timeline({"strace, 15 placeholders": st}, "strace stops every syscall: slower")
        print()
        report_calls(st)
    st.pop("trace_file", None)
    out["strace"] = st

    section("Profile 3. Variants through the API (one run of each per round, paired)")
    api = api_variants(reps, ws_empty, ws_full)
    out["api"] = plain(api)
    out["api_deltas"] = report_api(api)

    section("Profile 4. The sandbox's bwrap command line replayed, minus one group at a time")
    argv, env = capture_bwrap(NativeBashSandbox(ws_full, reuse=False))
    rep = replay_variants(argv, env, ws_full, tmp)
    try:
        rs = measure_paired(rep["variants"], reps)
    finally:
        rep["close"]()
    out["replay"] = {"series": plain(rs), "binds": rep["binds"], "argv": rep["argv"]}
    out["replay_deltas"] = report_replay(rs, rep["binds"])
    print(f"  the command line: {len(argv)} arguments")

    section("Profile 5. Single operations")
    ops = op_variants(reps, rounds, ws_empty, tempfile.gettempdir())
    table(
        ["operation", "median ms", "p90 ms"],
        [[k, ms(v.median), ms(v.p90)] for k, v in ops.items()],
    )
    out["ops"] = plain(ops)
    cli = cli_parts(3 if quick else 10, ws_empty)
    print(
        "  the CLI's parts in a fresh process (median): interpreter start-up and exit"
        f" {ms(cli['interpreter'])} ms, imports {ms(cli['import'])} ms, select_sandbox"
        f" (bwrap --version + the probe run) {ms(cli['select_sandbox'])} ms, exec"
        f" {ms(cli['exec'])} ms; total {ms(cli['total'])} ms"
    )
    out["cli_parts_s"] = cli

    rf = rss_fork(5 if quick else 15, ws_empty)
    print("\n  a host process that grows by 1 GiB (fresh process; median ms):")
    cols = [k for k in next(iter(rf.values())) if k != "rss_mib"]
    table(
        ["process", "RSS MiB", *cols],
        [[k, f"{v['rss_mib']:.0f}", *(ms(v[c]) for c in cols)] for k, v in rf.items()],
    )
    out["rss_fork"] = rf

    nbytes = (64 if quick else 256) << 20
    fl = flood_hosts(nbytes, 3, ws_empty)
    print(f"\n  {nbytes >> 20} MiB of output through exec (median of 3, paired):")
    table(
        ["runner", "median ms", "MB/s"],
        [[k, ms(v.median), f"{nbytes / 1e6 / v.median:.0f}"] for k, v in fl.items()],
    )
    out["flood_hosts"] = plain(fl)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", metavar="OUT")
    opts = ap.parse_args()
    if NativeBashSandbox.probe():
        print(f"the sandbox cannot run here: {NativeBashSandbox.probe()}")
        return 0
    with tempfile.TemporaryDirectory(prefix="a3s-bench-breakdown-") as tmp:
        res = run(opts.quick, Path(tmp))
    if opts.json:
        Path(opts.json).write_text(json.dumps(res, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
