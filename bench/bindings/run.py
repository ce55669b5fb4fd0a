#!/usr/bin/env python3
"""Bindings benchmark: a sandboxed ``true`` through Node and Go, against Python and bare bwrap.

    python bench/bindings/run.py [--quick] [--json OUT]

One run measures, interleaved in rounds so that a slow spell of a shared machine hits every
variant alike:

1. ``exec("true")`` in the default long-lived sandbox through the Python API (in this process),
   the Node binding (bench/bindings/node_helper.js, a Node process driven over stdin) and the Go
   binding (bench/bindings/gohelper, built against this checkout), each timed inside its own
   runtime around the call, and a plain ``bwrap --ro-bind / / --unshare-all true`` started from
   here; medians and 90th percentiles, and each binding's ratio to Python (target: at most 1.2)
   and to the bare bubblewrap;
2. the resident memory of each idle long-lived sandbox (its init, and its bubblewrap if one were
   still there: it is retired once the init is up; the init is the static a3s-init for Python and
   Node, the Go program itself for Go);
3. the Node process's resident memory across 1,000 commands (300 with ``--quick``), after a
   warm-up and a GC at both ends (target: growth under 8 MiB).

Targets are printed as PASS/FAIL lines and never fail the script; a runtime that is missing
(no Node, no built addon, no Go) gets a SKIPPED line. ``--quick`` is the CI smoke run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))  # bench/report.py

try:
    import codeward  # noqa: F401
except ImportError:  # a source tree with the extension built in place
    sys.path.insert(0, str(ROOT / "python"))

from codeward.sandbox import NativeBashSandbox, select_sandbox  # noqa: E402
from codeward.sandbox._locate import find_bwrap  # noqa: E402
from report import loadavg, section, table  # noqa: E402

TARGET_RATIO = 1.2
RSS_GROWTH_LIMIT = 8 << 20


class Helper:
    """A Node or Go process that runs exec("true") in its own sandbox when asked."""

    def __init__(self, name: str, argv: list[str]) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if line != "ready":
            self.proc.kill()
            raise RuntimeError(f"{name} helper did not start: {line!r}")

    def ask(self, line: str) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        if not answer:
            raise RuntimeError(f"the {self.name} helper died")
        return answer

    def run(self, n: int) -> list[float]:
        return [float(t) / 1000 for t in self.ask(f"run {n}").split()]

    def rss(self) -> int:
        return int(self.ask("rss"))

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
            self.proc.wait(timeout=30)


def sandbox_rss(workspace: str) -> int:
    """Resident memory of the processes of the long-lived sandbox over workspace (bubblewrap
    and the init: their command lines name the workspace), in bytes."""
    total = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        ours = cmdline[0].endswith(b"bwrap") or cmdline[0] == b"/run/a3s/init"
        if ours and workspace.encode() in cmdline:
            for line in status.splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) << 10
    return total


def node_helper(workspace: str) -> Helper | str:
    if not shutil.which("node"):
        return "node is not installed"
    try:
        subprocess.run(
            ["node", "-e", f"require({json.dumps(str(ROOT))})"], check=True, capture_output=True
        )
    except subprocess.CalledProcessError:
        return "the Node addon is not built (npm run build)"
    node = ["node", "--expose-gc", str(HERE / "node_helper.js"), workspace, str(ROOT)]
    return Helper("node", node)


def go_helper(workspace: str, out: Path) -> Helper | str:
    if not shutil.which("go"):
        return "go is not installed"
    env = {**os.environ, "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=mod", "CGO_ENABLED": "1"}
    build = subprocess.run(
        ["go", "build", "-o", str(out), "."],
        cwd=HERE / "gohelper",
        env=env,
        capture_output=True,
        text=True,
    )
    if build.returncode != 0:
        return f"the Go helper does not build: {build.stderr.strip()[:200]}"
    return Helper("go", [str(out), workspace])


def stats(times: list[float]) -> tuple[float, float]:
    p90 = statistics.quantiles(times, n=10, method="inclusive")[8] if len(times) > 1 else times[0]
    return statistics.median(times), p90


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the CI smoke run")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    rounds, block = (8, 5) if args.quick else (20, 10)
    rss_runs = 300 if args.quick else 1000

    print(f"bench/bindings: load {loadavg()}, {os.cpu_count()} CPUs")
    bwrap = find_bwrap()
    if not sys.platform.startswith("linux") or bwrap is None or NativeBashSandbox.probe():
        print("SKIPPED: the native sandbox cannot run here")
        return
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="cw-bench-bindings-") as tmp:
        base = Path(tmp)
        spaces = {name: str((base / name).resolve()) for name in ("python", "node", "go")}
        for path in spaces.values():
            os.mkdir(path)
        helpers: dict[str, Helper] = {}
        for name, made in (
            ("node", node_helper(spaces["node"])),
            ("go", go_helper(spaces["go"], base / "codeward-bench")),
        ):
            if isinstance(made, str):
                print(f"SKIPPED {name}: {made}")
            else:
                helpers[name] = made
        sb = select_sandbox(spaces["python"])
        assert isinstance(sb, NativeBashSandbox), sb
        plain = [bwrap, "--ro-bind", "/", "/", "--unshare-all", "true"]

        def python_runs(n: int) -> list[float]:
            times = []
            for _ in range(n):
                start = time.perf_counter()
                out = sb.exec("true")
                times.append(time.perf_counter() - start)
                assert out.exit_code == 0, out
            return times

        def bwrap_runs(n: int) -> list[float]:
            times = []
            for _ in range(n):
                start = time.perf_counter()
                subprocess.run(plain, check=True)
                times.append(time.perf_counter() - start)
            return times

        runners = {"python": python_runs, "bare bwrap": bwrap_runs}
        runners |= {name: h.run for name, h in helpers.items()}
        for run in runners.values():  # warm-up: each sandbox is up, caches are hot
            run(2)
        series: dict[str, list[float]] = {name: [] for name in runners}
        for _ in range(rounds):
            for name, run in runners.items():
                series[name] += run(block)

        section(f"exec('true') in the long-lived sandbox ({rounds} rounds of {block})")
        py_median = stats(series["python"])[0]
        bare_median = stats(series["bare bwrap"])[0]
        rows = []
        for name, times in series.items():
            median, p90 = stats(times)
            rows.append(
                [
                    name,
                    f"{median * 1000:.2f}",
                    f"{p90 * 1000:.2f}",
                    f"{median / py_median:.2f}x",
                    f"{median / bare_median:.2f}x",
                ]
            )
            results[name] = {"median_s": median, "p90_s": p90, "n": len(times)}
        table(["through", "median ms", "p90 ms", "vs python", "vs bare bwrap"], rows)
        for name in helpers:
            r = results[name]["median_s"] / py_median
            verdict = "PASS" if r <= TARGET_RATIO else "FAIL"
            print(f"  {verdict}: {name} within {TARGET_RATIO}x of Python ({r:.2f}x)")

        section("an idle long-lived sandbox (its init; bubblewrap is retired once the init is up)")
        rows = []
        for name, ws in spaces.items():
            if name == "python" or name in helpers:
                rss = sandbox_rss(ws)
                results[f"{name} sandbox rss"] = rss
                rows.append([name, f"{rss / (1 << 20):.1f} MiB"])
        table(["sandbox of", "resident"], rows)

        if "node" in helpers:
            section(f"the Node process across {rss_runs} commands")
            node = helpers["node"]
            node.run(50)
            before = node.rss()
            for _ in range(rss_runs // 100):
                node.run(100)
            after = node.rss()
            growth = after - before
            results["node rss growth"] = growth
            table(
                ["before", "after", "growth"],
                [[f"{before / (1 << 20):.1f} MiB", f"{after / (1 << 20):.1f} MiB",
                  f"{growth / (1 << 20):+.2f} MiB"]],
            )  # fmt: skip
            verdict = "PASS" if growth < RSS_GROWTH_LIMIT else "FAIL"
            print(f"  {verdict}: growth under 8 MiB over {rss_runs} commands")
        for h in helpers.values():
            h.close()
        sb.close()
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
