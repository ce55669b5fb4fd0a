#!/usr/bin/env python3
"""Scale benchmark: cost proportional to the change, many sessions per machine (issue 16).

    python bench/scale/run.py [--quick] [--sessions-only | --cli-only] [--json OUT] [--cache DIR]

One run measures, each against a reference timed in the same run:

1. a model's ``bash`` call through a session (``session.invoke(ToolCall(...,
   "bash", {"command": "echo hi > out.txt"}))``, mode auto, a policy that
   allows it) in a 100-file and in a 100,000-file workspace (bench/sandbox's
   tree: 10,000 directories at depth 1-6, ten files each), interleaved, and
   the session's bare ``sandbox.exec("true")`` alongside. The first call of a
   session (the one full walk) is shown apart. Target: large at most 1.5x small;
2. ``session.verify()`` with one trivial check (``true``) on both workspaces
   (the workspace snapshot before and after the checks). Same target;
3. the command line: ``codeward exec -- true`` against ``codex sandbox --
   true`` (the ``@openai/codex`` npm package pinned in bench/scale/package.json,
   installed with ``npm ci`` by ``nox -s bench``), interleaved, with
   ``codeward version``, ``codeward --help`` and ``python -c pass``. Codex's
   sandbox is checked first (seccomp and a read-only root inside it); if it
   cannot run here the section says so and what it measured instead.
   Targets: exec at most 0.5x codex; version and --help under 50 ms;
4. an idle long-lived sandbox: RSS and PSS of every process it is made of
   (``/proc/PID/smaps_rollup``: the init, what runs under it, and bubblewrap
   if it were still its parent) after a command, and whether any of them is
   left after the idle stop (``idle_stop_ms``). Target: RSS at most 2 MiB.
   For scale, a bare bubblewrap idling over ``sleep`` is measured alongside
   (bubblewrap is retired once our init is up);
5. many sessions: N sessions (one workspace each, one thread each) run
   ``bash`` calls concurrently for a fixed time; commands per second at 1, 10
   and 50 sessions, failures (target: 0), and what the process held at the
   peak (descriptors, inotify instances, run directories).

Times are medians of interleaved rounds (bench/sandbox/common.py), so a busy
neighbour slows every variant alike; CPU time is shown alongside. Targets are
printed as PASS/FAIL and never fail the script. ``--quick`` (CI) takes fewer
runs and shorter session runs; both generate the 100,000-file tree (about
10-30 s; ``--cache DIR`` keeps it between runs).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BENCH = HERE.parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))  # report.py
sys.path.insert(0, str(BENCH / "sandbox"))  # common.py, workspace.py (the 100k tree)

try:
    import codeward  # noqa: F401
except ImportError:  # a source tree with the extension built in place
    sys.path.insert(0, str(ROOT / "python"))


from common import Series, measure, ratio  # noqa: E402

import workspace as large_tree  # noqa: E402
from codeward import Agent, PermissionPolicy, SessionOptions, ToolCall  # noqa: E402
from codeward.sandbox import NativeBashSandbox, SandboxLimits  # noqa: E402
from codeward.verification import CheckSpec  # noqa: E402
from report import loadavg, section, table  # noqa: E402

TARGET_LARGE_VS_SMALL = 1.5
TARGET_CLI_VS_CODEX = 0.5
TARGET_VERSION_MS = 50.0
TARGET_IDLE_RSS_KIB = 2048
SMALL_FILES = 100
CODEX = HERE / "node_modules" / ".bin" / "codex"


@dataclass
class Config:
    quick: bool
    reps: int
    rounds: int
    cli_reps: int
    session_seconds: float
    counts: tuple[int, ...] = (1, 10, 50)


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f}"


def verdict(ok: bool | None) -> str:
    return "SKIPPED" if ok is None else ("PASS" if ok else "FAIL")


def small_workspace(base: Path) -> Path:
    root = base / "small"
    if not root.exists():
        for i in range(SMALL_FILES):
            d = root / f"d{i // 10}"
            d.mkdir(parents=True, exist_ok=True)
            (d / f"f{i}.txt").write_text("x\n")
    return root


def bash_session(root: Path, checks: tuple[CheckSpec, ...] = ()) -> Any:
    options = SessionOptions(
        mode="auto",
        permission_policy=PermissionPolicy(allow=["bash"]),
        verification_checks=checks,
        detect_checks=False,
    )
    return Agent().session(root, options)


def bash_call(session: Any, command: str = "echo hi > out.txt") -> Callable[[], Any]:
    counter = iter(range(1 << 62))

    def call() -> Any:
        out = session.invoke(ToolCall(f"c{next(counter)}", "bash", {"command": command}))
        if out.result is None or not out.result.success:
            raise RuntimeError(f"the bash call failed: {out.reason} {out.result}")
        return out.result

    return call


# --------------------------------------------------------------------------
# 1-2. the session's bash call and verify() on 100 and 100,000 files
# --------------------------------------------------------------------------


def bench_sessions(cfg: Config, small: Path, large: Path) -> dict[str, Any]:
    check = (CheckSpec("trivial", "custom", "true"),)
    sessions = {"small": bash_session(small, check), "large": bash_session(large, check)}
    first: dict[str, float] = {}
    detection: dict[str, Any] = {}
    try:
        for name, s in sessions.items():
            t0 = time.perf_counter()
            bash_call(s)()
            first[name] = time.perf_counter() - t0
        calls = {f"bash {n}": bash_call(s) for n, s in sessions.items()}
        # a call that changes nothing: the turn it is in still completes unverified
        calls.update(
            {
                f"bash(true) {n}": bash_call(s, "cat d0/f0.txt >/dev/null 2>&1; true")
                for n, s in sessions.items()
            }
        )
        exec_true = {f"exec(true) {n}": _exec_true(s) for n, s in sessions.items()}
        series = measure({**calls, **exec_true}, cfg.reps, cfg.rounds)
        for name, s in sessions.items():
            detection[name] = dict(bash_call(s)().metadata.get("change_detection", {}))
        verify = measure(
            {f"verify {n}": _verify(s) for n, s in sessions.items()}, cfg.reps, cfg.rounds
        )
    finally:
        for s in sessions.values():
            s.close()
    return {"first": first, "series": {**series, **verify}, "detection": detection}


def _exec_true(session: Any) -> Callable[[], Any]:
    return lambda: session.sandbox.exec("true")


def _verify(session: Any) -> Callable[[], Any]:
    def run() -> None:
        report = session.verify()
        if not report.passed:
            raise RuntimeError(f"verify did not pass: {report.to_dict()}")

    return run


def report_sessions(res: dict[str, Any]) -> dict[str, float]:
    s: dict[str, Series] = res["series"]
    rows = [[name, ms(x.median), ms(x.p90), ms(x.cpu_mean), x.n] for name, x in s.items()]
    table(["variant", "median ms", "p90 ms", "cpu ms", "n"], rows)
    print(
        f"  first bash call of a session (its one full walk): small {ms(res['first']['small'])} "
        f"ms, large {ms(res['first']['large'])} ms"
    )
    for name, d in res["detection"].items():
        print(f"  change detection ({name}): {d}")
    bash = ratio(s["bash large"].median, s["bash small"].median)
    unchanged = ratio(s["bash(true) large"].median, s["bash(true) small"].median)
    verify = ratio(s["verify large"].median, s["verify small"].median)
    print(
        f"  bash call, 100,000 / 100 files: {bash:.2f}x (target <= {TARGET_LARGE_VS_SMALL}x): "
        f"{verdict(bash <= TARGET_LARGE_VS_SMALL)}"
    )
    print(
        f"  bash call changing nothing, 100,000 / 100 files: {unchanged:.2f}x "
        f"(target <= {TARGET_LARGE_VS_SMALL}x): {verdict(unchanged <= TARGET_LARGE_VS_SMALL)}"
    )
    print(
        f"  verify(),  100,000 / 100 files: {verify:.2f}x (target <= {TARGET_LARGE_VS_SMALL}x): "
        f"{verdict(verify <= TARGET_LARGE_VS_SMALL)}"
    )
    return {
        "bash_large_vs_small": bash,
        "bash_unchanged_large_vs_small": unchanged,
        "verify_large_vs_small": verify,
    }


# --------------------------------------------------------------------------
# 3. the command line against codex
# --------------------------------------------------------------------------


def codeward_command() -> list[str]:
    script = Path(sys.executable).with_name("codeward")
    return [str(script)] if os.access(script, os.X_OK) else [sys.executable, "-m", "codeward"]


def codex_status(cwd: Path) -> tuple[bool, str]:
    """Whether ``codex sandbox`` really confines here: seccomp on, the root read-only."""
    if not os.access(CODEX, os.X_OK):
        return False, f"{CODEX} is missing: run `npm ci` in bench/scale (nox -s bench does)"
    probe = "grep -q '^Seccomp:[[:space:]]*2' /proc/self/status && ! touch /codex-bench-probe"
    try:
        out = subprocess.run(
            [str(CODEX), "sandbox", "--", "sh", "-c", probe],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"codex sandbox did not run: {exc}"
    if out.returncode != 0:
        detail = (out.stderr or out.stdout).strip().splitlines()[-1:] or ["(no output)"]
        return False, f"codex sandbox cannot confine here (exit {out.returncode}): {detail[0]}"
    return True, "codex sandbox runs here (seccomp filter on, root read-only)"


def run_ok(argv: Sequence[str], cwd: Path) -> Callable[[], None]:
    def fn() -> None:
        subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, check=True)

    return fn


def bench_cli(cfg: Config, small: Path) -> dict[str, Any]:
    cw = codeward_command()
    confined, why = codex_status(small)
    fns: dict[str, Callable[[], None]] = {
        "python -c pass": run_ok([sys.executable, "-c", "pass"], small),
        "codeward version": run_ok([*cw, "version"], small),
        "codeward --help": run_ok([*cw, "--help"], small),
        "codeward exec -- true": run_ok([*cw, "exec", "--", "true"], small),
    }
    if confined:
        fns["codex sandbox -- true"] = run_ok([str(CODEX), "sandbox", "--", "true"], small)
    elif os.access(CODEX, os.X_OK):
        fns["codex --version (no sandbox)"] = run_ok([str(CODEX), "--version"], small)
    return {"series": measure(fns, cfg.cli_reps, cfg.rounds), "codex": why, "confined": confined}


def report_cli(res: dict[str, Any]) -> dict[str, float]:
    s: dict[str, Series] = res["series"]
    print(f"  codex: {res['codex']}")
    table(
        ["command", "median ms", "p90 ms", "cpu ms", "n"],
        [[k, ms(v.median), ms(v.p90), ms(v.cpu_mean), v.n] for k, v in s.items()],
    )
    out: dict[str, float] = {}
    for name in ("codeward version", "codeward --help"):
        median_ms = s[name].median * 1e3
        out[name] = median_ms
        print(
            f"  {name}: {median_ms:.1f} ms (target < {TARGET_VERSION_MS:.0f} ms): "
            f"{verdict(median_ms < TARGET_VERSION_MS)}"
        )
    beyond = s["codeward version"].median - s["python -c pass"].median
    print(f"  codeward version beyond the interpreter's own start: {beyond * 1e3:.1f} ms")
    if res["confined"]:
        r = ratio(s["codeward exec -- true"].median, s["codex sandbox -- true"].median)
        out["exec_vs_codex"] = r
        print(
            f"  codeward exec / codex sandbox: {r:.2f}x (target <= {TARGET_CLI_VS_CODEX}x): "
            f"{verdict(r <= TARGET_CLI_VS_CODEX)}"
        )
    else:
        print("  codeward exec / codex sandbox: SKIPPED (codex cannot run its sandbox here)")
    return out


# --------------------------------------------------------------------------
# 4. an idle long-lived sandbox's memory
# --------------------------------------------------------------------------


def _descendants(pid: int) -> list[int]:
    out = [pid]
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                for child in f.read().split():
                    out += _descendants(int(child))
    except OSError:
        pass
    return out


def _alive(pid: int) -> bool:
    """Running, not a zombie: bubblewrap is started double-forked, so whoever reaps orphans
    here (PID 1, a subreaper) collects it, in its own time; a zombie holds no memory."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def _program(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return os.path.basename(f.read().split(b"\0")[0].decode())
    except OSError:
        return "?"


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rpartition(")")[2].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _memory(pid: int) -> dict[str, Any]:
    fields: dict[str, Any] = {"pid": pid, "program": _program(pid)}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("Rss", "Pss", "Private_Clean", "Private_Dirty"):
                    fields[key] = int(value.split()[0])
    except OSError:
        fields["program"] = "?"
    return fields


IDLE_STOP_MS = 1000


def bench_idle(small: Path) -> dict[str, Any]:
    sb = NativeBashSandbox(small, limits=SandboxLimits(idle_stop_ms=IDLE_STOP_MS))
    try:
        sb.exec("true")
        time.sleep(0.2)  # let the init settle into its wait
        info = sb._handle.info()
        pid = info.get("pid")
        pids = _descendants(pid) if pid else []
        up = _parent(pid) if pid else None
        if up and _program(up) == "bwrap":  # still there: it counts
            pids.insert(0, up)
        procs = [_memory(p) for p in pids]
        time.sleep(IDLE_STOP_MS / 1000 + 0.5)  # past the idle stop
        left = [p for p in pids if _alive(p)]
    finally:
        sb.close()
    return {
        "procs": procs,
        "running": bool(procs),
        "left_after_idle_stop": left,
        "bare_bwrap": _bare_bwrap_memory(small),
    }


def _bare_bwrap_memory(cwd: Path) -> dict[str, Any] | None:
    """The floor: a bubblewrap with the same namespaces and none of our mounts or arguments,
    idle while its child sleeps (RSS as for ours, after the same settling time)."""
    from codeward.sandbox._locate import find_bwrap

    bwrap = find_bwrap()
    if bwrap is None:
        return None
    argv = [
        bwrap, "--unshare-all", "--unshare-user", "--disable-userns", "--new-session",
        "--as-pid-1", "--cap-drop", "ALL", "--ro-bind", "/", "/", "--dev", "/dev",
        "--proc", "/proc", "sleep", "30",
    ]  # fmt: skip
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while len(_descendants(proc.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)
        return _memory(proc.pid)
    finally:
        proc.kill()
        proc.wait()


def report_idle(res: dict[str, Any]) -> dict[str, float]:
    procs = res["procs"]
    if not procs:
        print("  no long-lived sandbox came up: SKIPPED")
        return {}
    table(
        ["process", "pid", "RSS KiB", "PSS KiB", "private dirty KiB"],
        [
            [p.get("program"), p["pid"], p.get("Rss", "?"), p.get("Pss", "?"),
             p.get("Private_Dirty", "?")]
            for p in procs
        ],
    )  # fmt: skip
    rss = sum(p.get("Rss", 0) for p in procs)
    pss = sum(p.get("Pss", 0) for p in procs)
    print(
        f"  idle sandbox: RSS {rss} KiB, PSS {pss} KiB (target RSS <= {TARGET_IDLE_RSS_KIB} "
        f"KiB): {verdict(rss <= TARGET_IDLE_RSS_KIB)}"
    )
    bare = res.get("bare_bwrap")
    if bare and bare.get("Rss"):
        ours = "still there" if any(p.get("program") == "bwrap" for p in procs) else "gone"
        print(
            f"  for scale, a bare bubblewrap idling over sleep (same namespaces, none of our "
            f"mounts): RSS {bare['Rss']} KiB, PSS {bare.get('Pss', '?')} KiB (ours is retired "
            f"once the init is up: {ours})"
        )
    left = res["left_after_idle_stop"]
    print(
        f"  after the idle stop ({IDLE_STOP_MS} ms): {len(left)} of its processes left: "
        f"{verdict(not left)}"
    )
    return {
        "idle_rss_kib": rss,
        "idle_pss_kib": pss,
        "left_after_idle_stop": len(left),
        "bare_bwrap_rss_kib": (bare or {}).get("Rss", 0),
    }


# --------------------------------------------------------------------------
# 5. many sessions at once
# --------------------------------------------------------------------------


def _inotify_instances() -> int:
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:inotify":
                count += 1
        except OSError:
            pass
    return count


def _run_dirs() -> int:
    prefix = f"a3s-run-{os.getpid()}-"
    return sum(1 for name in os.listdir(tempfile.gettempdir()) if name.startswith(prefix))


def bench_many(cfg: Config, base: Path, count: int) -> dict[str, Any]:
    roots = []
    for i in range(count):
        root = base / f"many{count}" / f"ws{i}"
        root.mkdir(parents=True, exist_ok=True)
        (root / "README.md").write_text("x\n")
        roots.append(root)
    sessions = [bash_session(r) for r in roots]
    done = [0] * count
    failures: list[str] = []
    peak = {"fds": 0, "inotify": 0, "run_dirs": 0}
    start = threading.Barrier(count + 1)
    stop = threading.Event()

    def worker(i: int) -> None:
        call = bash_call(sessions[i], f"echo {i} > out.txt && cat out.txt > /dev/null")
        start.wait()
        while not stop.is_set():
            try:
                call()
                done[i] += 1
            except Exception as exc:  # counted and shown, never hidden
                failures.append(f"session {i}: {exc}")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    try:
        for s in sessions:  # the first call of each (its walk, its sandbox) before timing
            bash_call(s, "true")()
        start.wait()
        t0 = time.perf_counter()
        deadline = t0 + cfg.session_seconds
        while time.perf_counter() < deadline:
            peak["fds"] = max(peak["fds"], len(os.listdir("/proc/self/fd")))
            peak["inotify"] = max(peak["inotify"], _inotify_instances())
            peak["run_dirs"] = max(peak["run_dirs"], _run_dirs())
            time.sleep(0.1)
        stop.set()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - t0
    finally:
        stop.set()
        for s in sessions:
            s.close()
    return {
        "sessions": count,
        "commands": sum(done),
        "seconds": elapsed,
        "per_second": sum(done) / elapsed,
        "failures": failures,
        "peak": peak,
        "left_run_dirs": _run_dirs(),
    }


def report_many(results: list[dict[str, Any]]) -> dict[str, float]:
    table(
        ["sessions", "commands", "seconds", "cmd/s", "failures", "peak fds", "inotify", "run dirs"],
        [
            [r["sessions"], r["commands"], f"{r['seconds']:.1f}", f"{r['per_second']:.1f}",
             len(r["failures"]), r["peak"]["fds"], r["peak"]["inotify"], r["peak"]["run_dirs"]]
            for r in results
        ],
    )  # fmt: skip
    failures = sum(len(r["failures"]) for r in results)
    for r in results:
        for f in r["failures"][:3]:
            print(f"  failure: {f}")
    rates = [r["per_second"] for r in results]
    grows = all(b >= a * 0.9 for a, b in itertools.pairwise(rates))
    print(f"  failures: {failures} (target 0): {verdict(failures == 0)}")
    print(f"  throughput does not fall as sessions are added: {verdict(grows)}")
    return {f"cmd_per_s_{r['sessions']}": r["per_second"] for r in results} | {
        "failures": float(failures)
    }


def _all_sections(
    args: argparse.Namespace, cfg: Config, work: Path, small: Path, figures: dict[str, Any]
) -> None:
    large, made = large_tree.large_workspace(Path(args.cache) if args.cache else None, work)
    print(
        f"workspaces: {SMALL_FILES} files; {made['files']} files in {made['dirs']} "
        f"directories ({'reused' if made['reused'] else 'generated'})"
    )
    section("1-2. a session's bash call and verify(): 100 against 100,000 files")
    res = bench_sessions(cfg, small, large)
    figures["sessions"] = report_sessions(res)
    if not args.sessions_only:
        section("3. the command line: codeward exec -- true against codex sandbox -- true")
        figures["cli"] = report_cli(bench_cli(cfg, small))
        section("4. an idle long-lived sandbox: every process of it")
        figures["idle"] = report_idle(bench_idle(small))
        section("5. many sessions at once: bash calls per second, failures, resources")
        many = [bench_many(cfg, work, n) for n in cfg.counts]
        figures["many"] = report_many(many)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer runs (the CI smoke run)")
    ap.add_argument("--json", metavar="OUT", help="also write every figure to OUT as JSON")
    ap.add_argument("--cache", metavar="DIR", help="keep the 100,000-file tree here")
    ap.add_argument(
        "--sessions-only", action="store_true", help="only sections 1-2 (bash calls, verify)"
    )
    ap.add_argument(
        "--cli-only",
        action="store_true",
        help="only section 3 (codeward exec against codex sandbox; no 100,000-file tree)",
    )
    args = ap.parse_args(argv)
    cfg = (
        Config(True, reps=10, rounds=5, cli_reps=6, session_seconds=3.0)
        if args.quick
        else Config(False, reps=40, rounds=8, cli_reps=20, session_seconds=10.0)
    )
    reason = NativeBashSandbox.probe()
    print(f"bench/scale ({'quick' if cfg.quick else 'full'}), load {loadavg()}")
    if reason is not None:
        print(f"the sandbox cannot run here: {reason}; every section SKIPPED")
        return 0
    work = Path(tempfile.mkdtemp(prefix="codeward-bench-scale-"))
    figures: dict[str, Any] = {}
    try:
        small = small_workspace(work)
        if args.cli_only:
            section("3. the command line: codeward exec -- true against codex sandbox -- true")
            figures["cli"] = report_cli(bench_cli(cfg, small))
        else:
            _all_sections(args, cfg, work, small, figures)
        print(f"\nload at the end: {loadavg()}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
