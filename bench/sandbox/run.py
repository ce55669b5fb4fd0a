#!/usr/bin/env python3
"""Sandbox benchmark: start-up of one command, a 100,000-file workspace, an output flood.

    python bench/sandbox/run.py [--quick] [--json OUT] [--cache DIR] [--profile]

One run measures, each against baselines timed in the same run:

1. start-up of ``true``: directly (``subprocess.run``), under a plain
   ``bwrap --ro-bind / / --unshare-all`` (the target's baseline; also with
   ``--dev /dev --proc /proc``), through ``NativeBashSandbox.exec`` (the
   Python API) in a small workspace, both in the default long-lived sandbox
   (``reuse=True``: one sandbox per object, each command a fresh confined
   child of its init) and one-shot (``reuse=False``: one bubblewrap per
   command), both with the default resource bounds (docs/security.md,
   "Resource bounds": a cgroup where one can be made, else RLIMIT_NPROC and
   the init's memory watchdog; tmpfs sizes; the OOM score reset) and, to
   price them, with every bound UNLIMITED; and through the CLI
   ``codeward exec -- true`` (a fresh Python, the readiness probe and the
   command; reported apart, with its start-up references);
2. the same ``exec("true")`` in a 100,000-file workspace (10,000 directories
   of depth 1-6, ten files each, a few nested ``.env`` files; generated once,
   reused from ``--cache DIR``): the first run of a new sandbox (cold
   credential-scan cache) apart from the warm ones, and the ratio of the warm
   runs to the small workspace;
3. an output flood: ``head -c 1G /dev/zero`` through ``exec`` with the default
   ``max_output_bytes``, in a fresh process (bench/sandbox/flood.py) whose peak
   RSS (VmHWM) is read before and after; throughput against
   ``cat /dev/zero | head -c 1G > /dev/null`` and ``head -c 1G /dev/zero >
   /dev/null``.

Times are medians and 90th percentiles over N runs (50, or 10 with
``--quick``), taken in rounds of blocks: every variant runs a block of runs
in each round, after one untimed warm-up, so a slow spell of a shared machine
hits all variants alike, and each run pays for the asynchronous teardown of
the previous run of the same kind (as back-to-back commands do). CPU time
(this process and its reaped children, mean per run) is shown alongside: it
moves much less than the wall time when other work competes for the CPUs.

Targets are printed as PASS/FAIL lines; they never fail the script, which
exits 0 unless the benchmark itself breaks (a machine where the sandbox cannot
run gets SKIPPED sections). ``--quick`` is the CI smoke run (20-30 s,
mostly spent generating the 100k-file tree; pass ``--cache`` to keep it);
``--profile`` adds the breakdown of one ``exec("true")`` from
bench/sandbox/breakdown.py.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))  # bench/report.py

try:
    import codeward
except ImportError:  # a source tree with the extension built in place
    sys.path.insert(0, str(ROOT / "python"))
    import codeward

from common import Series, measure, ms, plain, ratio  # noqa: E402

import workspace  # noqa: E402
from codeward.sandbox import UNLIMITED, NativeBashSandbox, SandboxLimits  # noqa: E402
from codeward.sandbox._locate import bwrap_version, find_bwrap  # noqa: E402
from report import loadavg, section, table  # noqa: E402

TARGET_API_VS_BWRAP = 1.3
TARGET_BOUNDED_VS_BWRAP = 0.6  # the default, bounded, long-lived sandbox
TARGET_LARGE_VS_SMALL = 1.5
TARGET_FLOOD_VS_CAT = 0.5
TARGET_FLOOD_RSS_MIB = 16.0
GIB = 1 << 30
MIB = 1 << 20


@dataclass(frozen=True)
class Config:
    reps: int  # timed runs per variant
    rounds: int  # the runs are split into this many rounds of blocks
    cli_reps: int
    cold_runs: int  # first runs of fresh sandboxes over the 100k tree
    flood_bytes: int
    flood_reps: int


FULL = Config(reps=50, rounds=5, cli_reps=50, cold_runs=3, flood_bytes=GIB, flood_reps=3)
QUICK = Config(reps=10, rounds=2, cli_reps=10, cold_runs=1, flood_bytes=64 * MIB, flood_reps=2)


def git_state() -> str:
    """HEAD of the checkout the benchmark runs from, and whether sources differ from it."""
    try:
        head = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, timeout=10,
        ).stdout.strip()  # fmt: skip
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--", "native", "python"],
            capture_output=True, text=True, timeout=10,
        ).stdout.split("\n")  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    changed = [line[3:] for line in dirty if line.strip()]
    if not head:
        return "not a git checkout"
    pkg = Path(codeward.__file__).resolve().parent
    where = "" if pkg == ROOT / "python" / "codeward" else f", codeward imported from {pkg}"
    ext = next(pkg.glob("_native*.so"), None)
    if ext is not None:
        built = time.localtime(ext.stat().st_mtime)
        where += ", extension built " + time.strftime("%Y-%m-%d %H:%M", built)
    return head + (f" + {len(changed)} changed source files" if changed else "") + where


def run_ok(argv: Sequence[str], **kw: Any) -> Callable[[], None]:
    """A callable that runs argv and raises if it fails."""

    def fn() -> None:
        subprocess.run(argv, check=True, **kw)

    return fn


def sandbox_fn(sb: NativeBashSandbox, command: str = "true") -> Callable[[], None]:
    def fn() -> None:
        out = sb.exec(command)
        if not out.ok:
            raise RuntimeError(f"sandbox run failed: {out}")

    return fn


def cli_command(workspace_dir: Path) -> list[str]:
    script = Path(sys.executable).with_name("codeward")
    head = [str(script)] if os.access(script, os.X_OK) else [sys.executable, "-m", "codeward"]
    return [*head, "exec", "--workspace", str(workspace_dir), "--", "true"]


# --------------------------------------------------------------------------
# 1. start-up of `true`
# --------------------------------------------------------------------------


API = "sb.exec (reuse)"  # the default: the long-lived sandbox
API_ONE_SHOT = "sb.exec (one-shot)"
API_UNBOUNDED = "sb.exec (reuse, unbounded)"
API_ONE_SHOT_UNBOUNDED = "sb.exec (one-shot, unbounded)"
UNBOUNDED = SandboxLimits(
    memory_max_bytes=UNLIMITED,
    max_processes=UNLIMITED,
    tmpfs_max_bytes=UNLIMITED,
    inotify_watch_budget=UNLIMITED,
)


def bench_startup(
    cfg: Config,
    bwrap: str | None,
    sb: NativeBashSandbox | None,
    sb_one_shot: NativeBashSandbox | None,
    small: Path,
    unbounded: tuple[NativeBashSandbox, NativeBashSandbox] | None = None,
) -> dict[str, Any]:
    true = shutil.which("true") or "/bin/true"
    bash = shutil.which("bash") or "/bin/bash"
    fns: dict[str, Callable[[], Any]] = {
        "direct": run_ok([true]),
        "bash -c true": run_ok([bash, "-c", "true"]),
    }
    if bwrap:
        plain = [bwrap, "--ro-bind", "/", "/", "--unshare-all"]
        fns["plain bwrap"] = run_ok([*plain, true])
        fns["plain bwrap --dev --proc"] = run_ok([*plain, "--dev", "/dev", "--proc", "/proc", true])
    if sb is not None and sb_one_shot is not None:
        fns[API] = sandbox_fn(sb)
        fns[API_ONE_SHOT] = sandbox_fn(sb_one_shot)
    if unbounded is not None:
        fns[API_UNBOUNDED] = sandbox_fn(unbounded[0])
        fns[API_ONE_SHOT_UNBOUNDED] = sandbox_fn(unbounded[1])
    series = measure(fns, cfg.reps, cfg.rounds)

    cli: dict[str, Series] = {}
    if sb is not None:
        py = sys.executable
        cli = measure(
            {
                "codeward exec": run_ok(cli_command(small), stdout=subprocess.DEVNULL),
                "python -c pass": run_ok([py, "-c", "pass"]),
                "python -c 'import codeward.cli._main'": run_ok(
                    [py, "-c", "import codeward.cli._main"]
                ),
            },
            cfg.cli_reps,
            cfg.rounds,
        )
    return {"series": series, "cli": cli}


def report_startup(res: dict[str, Any]) -> dict[str, float]:
    s: dict[str, Series] = res["series"]
    base = s["direct"].median
    bw = s["plain bwrap"].median if "plain bwrap" in s else float("nan")
    rows = []
    for name, x in s.items():
        rows.append(
            [
                name,
                ms(x.median),
                ms(x.p90),
                ms(x.best),
                ms(x.cpu_mean),
                f"{ratio(x.median, base):.1f}",
                f"{ratio(x.median, bw):.2f}" if "plain bwrap" in s else "-",
            ]
        )
    table(["run `true`", "median ms", "p90 ms", "min ms", "cpu ms", "x direct", "x bwrap"], rows)
    print(
        "  direct: subprocess.run(['true']); plain bwrap: bwrap --ro-bind / / --unshare-all true\n"
        "  (the target's baseline), and the same with --dev /dev --proc /proc;\n"
        "  sb.exec (reuse): NativeBashSandbox(small workspace).exec('true'), the default: one\n"
        "  long-lived sandbox whose a3s-init runs each command as a fresh child (new session,\n"
        "  private scratch dir, Landlock + seccomp, bash -c true; then every process killed and\n"
        "  /tmp, /run, /dev put back), after checking the workspace did not change under it;\n"
        "  sb.exec (one-shot): reuse=False, one bubblewrap (namespaces, mounts, a3s-init) per\n"
        "  command; both with the default resource bounds, and 'unbounded' with every bound\n"
        "  UNLIMITED (no cgroup, no RLIMIT_NPROC, no watchdog, no tmpfs sizes) to price them;\n"
        "  cpu ms: user+sys of this process and its reaped children, mean per run\n"
        "  (the long-lived sandbox is not a child: its init's and bash's CPU is not counted)."
    )
    ratios: dict[str, float] = {}
    if "plain bwrap" in s:
        ratios["plain_bwrap_vs_direct"] = ratio(bw, base)
        ratios["plain_bwrap_dev_proc_vs_plain"] = ratio(s["plain bwrap --dev --proc"].median, bw)
    if API in s:
        api = s[API]
        one = s[API_ONE_SHOT]
        ratios["api_vs_direct"] = ratio(api.median, base)
        ratios["api_vs_plain_bwrap"] = ratio(api.median, bw)
        ratios["api_vs_plain_bwrap_p90"] = ratio(api.p90, s["plain bwrap"].p90)
        ratios["api_minus_plain_bwrap_ms"] = (api.median - bw) * 1e3
        ratios["api_one_shot_vs_plain_bwrap"] = ratio(one.median, bw)
        ratios["api_one_shot_vs_api"] = ratio(one.median, api.median)
    if API_UNBOUNDED in s and API in s:
        free, free_one = s[API_UNBOUNDED], s[API_ONE_SHOT_UNBOUNDED]
        ratios["api_unbounded_vs_plain_bwrap"] = ratio(free.median, bw)
        ratios["bounds_cost_ms"] = (s[API].median - free.median) * 1e3
        ratios["bounds_cost_one_shot_ms"] = (s[API_ONE_SHOT].median - free_one.median) * 1e3
        print(
            f"  the resource bounds cost {ratios['bounds_cost_ms']:+.2f} ms per command in the"
            f" long-lived sandbox ({ratio(s[API].median, bw):.2f}x vs"
            f" {ratios['api_unbounded_vs_plain_bwrap']:.2f}x plain bwrap unbounded) and"
            f" {ratios['bounds_cost_one_shot_ms']:+.2f} ms per one-shot run (its own cgroup)"
        )
    cli: dict[str, Series] = res["cli"]
    if cli:
        c = cli["codeward exec"]
        print("\n  the CLI, `codeward exec --workspace SMALL -- true` (a fresh process each time):")
        crow = []
        for name, x in cli.items():
            crow.append([name, ms(x.median), ms(x.p90), ms(x.best), ms(x.cpu_mean)])
        table(["command", "median ms", "p90 ms", "min ms", "cpu ms"], crow)
        ratios["cli_vs_direct"] = ratio(c.median, base)
        ratios["cli_vs_plain_bwrap"] = ratio(c.median, bw)
        ratios["cli_vs_api"] = ratio(c.median, s[API].median)
        imp = cli["python -c 'import codeward.cli._main'"].median
        ratios["cli_rest_ms"] = (c.median - imp) * 1e3
        print(
            f"  CLI = {ratios['cli_vs_direct']:.0f}x direct, {ratios['cli_vs_plain_bwrap']:.1f}x"
            f" plain bwrap, {ratios['cli_vs_api']:.1f}x the Python API; past the interpreter and"
            f" the imports\n  ({ms(imp)} ms) it spends {ratios['cli_rest_ms']:.1f} ms: the"
            " readiness probe (bwrap --version and a self-test run through the sandbox) plus"
            " the command."
        )
    return ratios


# --------------------------------------------------------------------------
# 2. the 100k-file workspace
# --------------------------------------------------------------------------


def mounts_inside(sb: NativeBashSandbox) -> int | None:
    out = sb.exec("wc -l < /proc/self/mountinfo")
    try:
        return int(out.stdout.strip())
    except ValueError:
        return None


def bench_large(
    cfg: Config, small_sb: NativeBashSandbox, cache: Path | None, tmp: Path
) -> dict[str, Any]:
    t0 = time.perf_counter()
    path, info = workspace.large_workspace(cache, tmp)
    prepare_s = time.perf_counter() - t0
    if path.parent != tmp:
        # compare with a small workspace on the same file system as the large one
        small_sb = NativeBashSandbox(workspace.small_workspace(path.parent / "ws-small"))
    # The credential scan trusts a directory only when it is more than 2 s older
    # than the scan ("racy" timestamps): let a just-made tree settle first.
    finished = float(info.get("finished_at", 0.0))
    settle = finished + 2.5 - time.time()
    if settle > 0:
        time.sleep(settle)
    cold: list[float] = []
    large_sb = None
    for _ in range(cfg.cold_runs):
        large_sb = NativeBashSandbox(path)
        t = time.perf_counter()
        out = large_sb.exec("true")
        cold.append(time.perf_counter() - t)
        if not out.ok:
            raise RuntimeError(f"sandbox run in the 100k workspace failed: {out}")
    assert large_sb is not None
    warm = measure(
        {"small": sandbox_fn(small_sb), "100k": sandbox_fn(large_sb)}, cfg.reps, cfg.rounds
    )
    env_files = sorted(p for p in path.rglob(".env*") if p.is_file())
    masked = None
    if env_files:
        probe = large_sb.exec(f"cat {env_files[0]} >/dev/null 2>&1 && echo readable || echo masked")
        masked = probe.stdout.strip()
    return {
        "path": str(path),
        "info": info,
        "prepare_s": prepare_s,
        "cold_s": cold,
        "warm": warm,
        "mounts_small": mounts_inside(small_sb),
        "mounts_large": mounts_inside(large_sb),
        "env_file_check": masked,
    }


def report_large(res: dict[str, Any]) -> dict[str, float]:
    info = res["info"]
    how = (
        "reused from the cache" if info.get("reused") else f"generated in {res['prepare_s']:.1f} s"
    )
    print(
        f"  workspace: {info['dirs']} directories, {info['files']} files"
        f" ({info['credential_files']} credential files), {how}\n  at {res['path']}"
    )
    w: dict[str, Series] = res["warm"]
    small, large = w["small"], w["100k"]
    cold = res["cold_s"]
    rows = [
        ["small workspace (warm)", ms(small.median), ms(small.p90), ms(small.best), "1.00"],
        [
            "100k files (warm)",
            ms(large.median),
            ms(large.p90),
            ms(large.best),
            f"{ratio(large.median, small.median):.2f}",
        ],
        [
            "100k files, first run of a new sandbox",
            ms(cold[0]),
            "-",
            ms(min(cold)),
            f"{ratio(cold[0], small.median):.2f}",
        ],
    ]
    table(["sb.exec('true')", "median ms", "p90 ms", "min ms", "x small"], rows)
    if len(cold) > 1:
        print(
            "  first runs of fresh sandboxes (cold scan cache): " + ", ".join(map(ms, cold)) + " ms"
        )
    print(
        f"  cpu ms per run: small {ms(small.cpu_mean)}, 100k {ms(large.cpu_mean)};"
        f" mounts inside the sandbox: small {res['mounts_small']}, 100k {res['mounts_large']};"
        f"\n  a nested .env file from inside: {res['env_file_check']}"
    )
    return {
        "large_vs_small": ratio(large.median, small.median),
        "large_vs_small_p90": ratio(large.p90, small.p90),
        "large_minus_small_ms": (large.median - small.median) * 1e3,
        "cold_first_vs_small": ratio(cold[0], small.median),
        "cold_first_ms": cold[0] * 1e3,
    }


# --------------------------------------------------------------------------
# 3. output flood
# --------------------------------------------------------------------------


def bench_flood(cfg: Config, small: Path, sandbox_ok: bool) -> dict[str, Any]:
    n = cfg.flood_bytes
    bash = shutil.which("bash") or "/bin/bash"
    walls: dict[str, list[float]] = {
        "cat /dev/zero | head -c N > /dev/null": [],
        "head -c N /dev/zero > /dev/null": [],
    }
    commands = {
        "cat /dev/zero | head -c N > /dev/null": f"cat /dev/zero | head -c {n} > /dev/null",
        "head -c N /dev/zero > /dev/null": f"head -c {n} /dev/zero > /dev/null",
    }
    runs: dict[str, list[dict[str, Any]]] = {"sandbox": [], "popen": []}
    flood = [sys.executable, str(HERE / "flood.py"), str(small), str(n)]
    for _ in range(cfg.flood_reps):
        for name, cmd in commands.items():
            t = time.perf_counter()
            subprocess.run([bash, "-c", cmd], check=True)
            walls[name].append(time.perf_counter() - t)
        for mode in ("sandbox", "popen") if sandbox_ok else ("popen",):
            out = subprocess.run([*flood, mode], capture_output=True, text=True, check=True)
            runs[mode].append(json.loads(out.stdout))
    return {"bytes": n, "baselines": walls, "runs": runs}


def report_flood(res: dict[str, Any], api_median: float | None) -> dict[str, float]:
    n = res["bytes"]

    def mbps(wall: float) -> float:
        return n / 1e6 / wall

    base: dict[str, list[float]] = res["baselines"]
    cat_name, head_name = list(base)
    cat_wall = statistics.median(base[cat_name])
    head_wall = statistics.median(base[head_name])
    rows = [
        [f"bash -c '{cat_name}'", ms(cat_wall), f"{mbps(cat_wall):.0f}", "1.00", "-"],
        [
            f"bash -c '{head_name}'",
            ms(head_wall),
            f"{mbps(head_wall):.0f}",
            f"{ratio(cat_wall, head_wall):.2f}",
            "-",
        ],
    ]
    out: dict[str, float] = {}
    for mode, label in (
        ("popen", "host: Popen(bash -c 'head -c N /dev/zero'), read in Python"),
        ("sandbox", "sb.exec('head -c N /dev/zero'), default max_output_bytes"),
    ):
        runs = res["runs"][mode]
        if not runs:
            continue
        wall = statistics.median(r["wall_s"] for r in runs)
        growth = max(r["hwm_after_kb"] - r["hwm_before_kb"] for r in runs) / 1024
        rows.append(
            [label, ms(wall), f"{mbps(wall):.0f}", f"{ratio(cat_wall, wall):.2f}", f"{growth:.2f}"]
        )
        out[f"{mode}_mb_s"] = mbps(wall)
        out[f"{mode}_vs_cat"] = ratio(cat_wall, wall)
        out[f"{mode}_vs_head"] = ratio(head_wall, wall)
        out[f"{mode}_rss_growth_mib"] = growth
        if mode == "sandbox":
            r0 = runs[0]
            ok = r0["total_bytes"] == n and r0["truncated"] and r0["exit_code"] == 0
            out["sandbox_result_ok"] = float(ok)
            if api_median:
                out["sandbox_mb_s_net_of_startup"] = n / 1e6 / max(wall - api_median, 1e-9)
    table(
        [f"{n >> 20} MiB of zeros", "median ms", "MB/s", "x cat", "RSS +MiB"],
        rows,
        align="lrrrr",
    )
    out["cat_mb_s"] = mbps(cat_wall)
    out["head_mb_s"] = mbps(head_wall)
    print(
        f"  median of {len(base[cat_name])} runs each, interleaved; MB = 10^6 bytes; x cat ="
        " throughput / the cat pipeline's.\n  RSS +MiB: growth of VmHWM (peak RSS) of a fresh"
        " Python process across the one flood (bench/sandbox/flood.py)."
    )
    if "sandbox_mb_s" in out and n < GIB:
        print(
            f"  with {n >> 20} MiB the sandbox's start-up is a large part of its time: the"
            " full run floods 1 GiB"
        )
    if "sandbox_mb_s" in out:
        r0 = res["runs"]["sandbox"][0]
        print(
            f"  sandbox result: exit {r0['exit_code']}, total_bytes {r0['total_bytes']},"
            f" truncated {r0['truncated']}, {r0['kept_chars']} characters kept;"
            f" VmHWM {r0['hwm_before_kb']} -> {r0['hwm_after_kb']} kB"
        )
        if "sandbox_mb_s_net_of_startup" in out:
            print(
                "  net of the sandbox start-up (median sb.exec('true') subtracted):"
                f" {out['sandbox_mb_s_net_of_startup']:.0f} MB/s"
            )
    return out


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="10 runs each, 64 MiB flood (CI smoke)")
    ap.add_argument("--json", metavar="OUT", help="also write every figure to OUT as JSON")
    ap.add_argument(
        "--cache",
        metavar="DIR",
        type=Path,
        help="keep the 100k-file workspace in DIR and reuse it (default: a temp dir, removed)",
    )
    ap.add_argument("--reps", type=int, metavar="N", help="timed runs per variant")
    ap.add_argument(
        "--profile",
        action="store_true",
        help="also break one exec('true') down (bench/sandbox/breakdown.py; uses perf/strace)",
    )
    opts = ap.parse_args(argv)
    cfg = QUICK if opts.quick else FULL
    if opts.reps:
        cfg = Config(**{**asdict(cfg), "reps": opts.reps, "cli_reps": opts.reps})
    started = time.perf_counter()
    marks: dict[str, float] = {}

    def mark(name: str) -> None:
        marks[name] = time.perf_counter() - started - sum(marks.values())

    bwrap = find_bwrap()
    bw_version = ".".join(map(str, bwrap_version(bwrap) or ())) if bwrap else "not installed"
    features = codeward.features()
    print("codeward sandbox benchmark" + (" (--quick)" if opts.quick else ""))
    print(
        f"  python {platform.python_version()}, {platform.system()} {platform.release()}"
        f" {platform.machine()}, {os.cpu_count()} CPUs, load {loadavg()};"
        f" codeward {codeward.__version__} (native {codeward.native_version()})"
    )
    print(
        f"  bubblewrap {bw_version} ({bwrap}); landlock ABI {features.get('landlock_abi')},"
        f" seccomp {features.get('seccomp_filter')}, pidfd {features.get('pidfd')};"
        f" uid {os.getuid()}; TMPDIR {tempfile.gettempdir()}; source {git_state()}"
    )
    print(f"  {cfg.reps} runs per variant in {cfg.rounds} rounds; times in ms")
    reason = NativeBashSandbox.probe() if sys.platform.startswith("linux") else "not Linux"
    if reason:
        print(f"  the sandbox cannot run here: {reason}\n  sandbox rows are SKIPPED")
    sandbox_ok = reason is None
    mark("probe")

    doc: dict[str, Any] = {
        "quick": opts.quick,
        "config": asdict(cfg),
        "environment": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "loadavg_start": loadavg(),
            "codeward": codeward.__version__,
            "native": codeward.native_version(),
            "bwrap": bwrap,
            "bwrap_version": bw_version,
            "features": features,
            "uid": os.getuid(),
            "sandbox_unavailable": reason,
            "source": git_state(),
        },
    }
    ratios: dict[str, float] = {}
    targets: dict[str, bool | None] = {}
    with tempfile.TemporaryDirectory(prefix="a3s-bench-sandbox-") as tmp_s:
        tmp = Path(tmp_s)
        small = workspace.small_workspace(tmp / "small")
        sb = NativeBashSandbox(small, reuse=True) if sandbox_ok else None
        sb_one_shot = NativeBashSandbox(small, reuse=False) if sandbox_ok else None
        unbounded = (
            (
                NativeBashSandbox(small, reuse=True, limits=UNBOUNDED),
                NativeBashSandbox(small, reuse=False, limits=UNBOUNDED),
            )
            if sandbox_ok
            else None
        )

        # ---- 1. start-up ---------------------------------------------------
        section("1. Start-up of `true`: direct, plain bwrap, the Python API, the CLI")
        st = bench_startup(cfg, bwrap, sb, sb_one_shot, small, unbounded)
        ratios.update(report_startup(st))
        doc["startup"] = plain(st)
        mark("startup")

        # ---- 2. 100k files -------------------------------------------------
        section("2. exec('true') in a 100,000-file workspace")
        large: dict[str, Any] | None = None
        if sb is None:
            print("  SKIPPED: the sandbox cannot run here")
        else:
            large = bench_large(cfg, sb, opts.cache, tmp)
            ratios.update(report_large(large))
            doc["large_workspace"] = plain(large)
        mark("large_workspace")

        # ---- 3. flood ------------------------------------------------------
        section(f"3. Output flood: {cfg.flood_bytes >> 20} MiB through exec")
        fl = bench_flood(cfg, small, sandbox_ok)
        api_median = st["series"][API].median if sb is not None else None
        ratios.update(report_flood(fl, api_median))
        doc["flood"] = fl
        mark("flood")

        # ---- targets -------------------------------------------------------
        section("Targets (informational: the script never fails on them)")

        def verdict(ok: bool | None) -> str:
            return "SKIP" if ok is None else ("PASS" if ok else "FAIL")

        api = ratios.get("api_vs_plain_bwrap")
        targets["api_within_1.3x_plain_bwrap"] = None if api is None else api <= TARGET_API_VS_BWRAP
        targets["bounded_within_0.6x_plain_bwrap"] = (
            None if api is None else api <= TARGET_BOUNDED_VS_BWRAP
        )
        lvs = ratios.get("large_vs_small")
        targets["large_within_1.5x_small"] = None if lvs is None else lvs <= TARGET_LARGE_VS_SMALL
        fvc = ratios.get("sandbox_vs_cat")
        rss = ratios.get("sandbox_rss_growth_mib")
        targets["flood_0.5x_cat_rss_under_16mib"] = (
            None
            if fvc is None or rss is None
            else (fvc >= TARGET_FLOOD_VS_CAT and rss < TARGET_FLOOD_RSS_MIB)
        )
        s = st["series"]
        print(
            f"  {verdict(targets['api_within_1.3x_plain_bwrap'])}  Python API exec('true') within"
            f" {TARGET_API_VS_BWRAP}x plain bwrap: "
            + (
                f"{api:.2f}x ({ms(s[API].median)} vs {ms(s['plain bwrap'].median)} ms"
                f" median; p90 {ratios['api_vs_plain_bwrap_p90']:.2f}x) in the default"
                " long-lived sandbox;\n        one-shot (reuse=False, not the target's path):"
                f" {ratios['api_one_shot_vs_plain_bwrap']:.2f}x ({ms(s[API_ONE_SHOT].median)} ms)"
                if api is not None
                else "n/a"
            )
        )
        print(
            f"  {verdict(targets['bounded_within_0.6x_plain_bwrap'])}  with the default resource"
            f" bounds and PID 1's resets, exec('true') within {TARGET_BOUNDED_VS_BWRAP}x plain"
            " bwrap: "
            + (
                f"{api:.2f}x (unbounded {ratios['api_unbounded_vs_plain_bwrap']:.2f}x; the bounds"
                f" cost {ratios['bounds_cost_ms']:+.2f} ms per command)"
                if api is not None and "bounds_cost_ms" in ratios
                else "n/a"
            )
        )
        print(
            f"  {verdict(targets['large_within_1.5x_small'])}  100k-file workspace within"
            f" {TARGET_LARGE_VS_SMALL}x the small one: "
            + (
                f"{lvs:.2f}x warm (+{ratios['large_minus_small_ms']:.1f} ms; first run of a new"
                f" sandbox {ratios['cold_first_vs_small']:.1f}x)"
                if lvs is not None
                else "n/a"
            )
        )
        print(
            f"  {verdict(targets['flood_0.5x_cat_rss_under_16mib'])}  flood >="
            f" {TARGET_FLOOD_VS_CAT}x the cat pipeline with peak-RSS growth <"
            f" {TARGET_FLOOD_RSS_MIB:.0f} MiB: "
            + (
                f"{fvc:.2f}x ({ratios['sandbox_mb_s']:.0f} vs {ratios['cat_mb_s']:.0f} MB/s),"
                f" +{rss:.2f} MiB"
                if fvc is not None and rss is not None
                else "n/a"
            )
        )

        prof: dict[str, Any] | None = None
        if opts.profile and sb is not None:
            import breakdown  # bench/sandbox/breakdown.py

            prof = breakdown.run(quick=opts.quick, tmp=tmp, large=large)
            doc["profile"] = prof
            mark("profile")

        if large is not None and opts.cache is None:
            t = time.perf_counter()
            workspace.remove(Path(large["path"]))
            marks["cleanup"] = time.perf_counter() - t

    elapsed = time.perf_counter() - started
    print(
        f"\n  load {loadavg()} at the end; total time {elapsed:.1f} s ("
        + ", ".join(f"{k} {v:.1f}" for k, v in marks.items())
        + ")"
    )
    if opts.json:
        doc.update(
            {
                "ratios": ratios,
                "targets": targets,
                "elapsed_s": elapsed,
                "section_s": marks,
                "loadavg_end": loadavg(),
            }
        )
        Path(opts.json).write_text(json.dumps(doc, indent=2, default=str) + "\n")
        print(f"  wrote {opts.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
