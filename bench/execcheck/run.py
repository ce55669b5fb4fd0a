#!/usr/bin/env python3
"""Exec check benchmark: an exec-heavy command with and without rules, in one run.

    python bench/execcheck/run.py [--quick] [--json OUT]

The exec check (docs/policy.md, "The exec check") stops each exec of a
command whose call carries bash deny or ask patterns for a decision. Its cost
is per exec, so the worst case is a command that does little else: a bash
loop of ``/bin/true`` (N short execs; 3,000, or 300 with ``--quick``; 12 pairs
each, ``--rounds``). The same command runs through ``NativeBashSandbox.exec``
without rules (no check: today's cost) and with a realistic rule set (deny
``git push**``, ``rm -rf /**``, ``curl **``; ask ``npm publish**``), in the
long-lived sandbox and one-shot, interleaved in back-to-back pairs (in ABBA
order) so a slow spell of a shared machine hits both alike; each in a sandbox
of its own, whose first command has its rules (as in a session: its policy's
rules come with every command). It prints the median time of each, the
per-exec overhead and the median of the pairs' ratios with / without rules
(target: at most 1.15), plus the CPU time of this process's reaped children
(one-shot only: a long-lived sandbox is not our child).

Targets are printed as PASS/FAIL lines; they never fail the script, which
exits 0 unless the benchmark itself breaks (SKIPPED where the native sandbox
cannot run).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))  # bench/report.py

try:
    import codeward  # noqa: F401
except ImportError:  # a source tree with the extension built in place
    sys.path.insert(0, str(ROOT / "python"))

from codeward.sandbox import ExecRules, NativeBashSandbox  # noqa: E402
from report import loadavg, section, table  # noqa: E402

TARGET = 1.15
RULES = ExecRules(deny=("git push**", "rm -rf /**", "curl **"), ask=("npm publish**",))


def children_cpu() -> float:
    t = os.times()
    return t.children_user + t.children_system


def run_once(sb: NativeBashSandbox, command: str, rules: ExecRules | None) -> tuple[float, float]:
    cpu = children_cpu()
    start = time.perf_counter()
    out = sb.exec(command, timeout_ms=600_000, exec_rules=rules)
    wall = time.perf_counter() - start
    if out.exit_code != 0 or out.exec_stopped is not None:
        raise SystemExit(f"the benchmark command failed: {out}")
    return wall, children_cpu() - cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="CI smoke run: 300 execs instead of 3000"
    )
    parser.add_argument("--json", type=Path, help="also write the figures as JSON")
    parser.add_argument("--rounds", type=int, help="pairs per sandbox mode (default 12)")
    args = parser.parse_args()
    execs, rounds = (300, 12) if args.quick else (3000, 12)
    rounds = args.rounds or rounds
    command = f"for i in $(seq 1 {execs}); do /bin/true; done"
    section(f"Exec check: {execs} execs of /bin/true, {rounds} rounds (load {loadavg()})")
    reason = NativeBashSandbox.probe()
    if reason is not None:
        print(f"SKIPPED: the native sandbox cannot run here: {reason}")
        return 0
    figures: dict[str, dict[str, float]] = {}
    rows = []
    with (
        tempfile.TemporaryDirectory(prefix="a3s-bench-exec-") as ws,
        tempfile.TemporaryDirectory(prefix="a3s-bench-exec-") as ws_rules,
    ):
        for mode, reuse in (("long-lived", True), ("one-shot", False)):
            # a sandbox each, as a session without and one with bash rules in its policy
            # have: a long-lived one checks execs at their notification once its first
            # command came with rules (its warm-up here), which a session without pays
            # nothing for
            sbs = {
                "without rules": NativeBashSandbox(ws, reuse=reuse),
                "with rules": NativeBashSandbox(ws_rules, reuse=reuse),
            }
            try:
                run_once(sbs["without rules"], "true", None)  # warm-up: the sandbox comes up
                run_once(sbs["with rules"], "true", RULES)
                times: dict[str, list[float]] = {"without rules": [], "with rules": []}
                cpus: dict[str, list[float]] = {"without rules": [], "with rules": []}
                pairs: list[float] = []
                for r in range(rounds):
                    order = [("without rules", None), ("with rules", RULES)]
                    if r % 2:
                        order.reverse()  # ABBA: a drifting machine load favours neither
                    walls = {}
                    for name, rules in order:
                        wall, cpu = run_once(sbs[name], command, rules)
                        times[name].append(wall)
                        cpus[name].append(cpu)
                        walls[name] = wall
                    pairs.append(walls["with rules"] / walls["without rules"])
            finally:
                for sb in sbs.values():
                    sb.close()
            base = statistics.median(times["without rules"])
            traced = statistics.median(times["with rules"])
            ratio = statistics.median(pairs)  # of back-to-back pairs: the least noisy figure
            q1, _, q3 = statistics.quantiles(pairs, n=4) if len(pairs) > 1 else (ratio,) * 3
            cpu_extra = statistics.median(cpus["with rules"]) - statistics.median(
                cpus["without rules"]
            )
            figures[mode] = {
                "without_rules_s": base,
                "with_rules_s": traced,
                "ratio": ratio,
                "ratio_q1": q1,
                "ratio_q3": q3,
                "per_exec_overhead_us": (traced - base) / execs * 1e6,
                "per_exec_cpu_us": cpu_extra / execs * 1e6,
            }
            for name in times:
                rows.append(
                    [
                        mode,
                        name,
                        f"{statistics.median(times[name]) * 1000:.0f} ms",
                        f"{statistics.median(times[name]) / execs * 1e6:.0f} us",
                        f"{statistics.mean(cpus[name]) * 1000:.0f} ms",
                    ]
                )
            rows.append([mode, "ratio (median of pairs)", f"{ratio:.3f}x", "", ""])
            rows.append([mode, "ratio, middle half of pairs", f"{q1:.3f}-{q3:.3f}x", "", ""])
            if not reuse:  # the init is our child only one-shot
                rows.append(
                    [
                        mode,
                        "CPU per exec, with - without",
                        "",
                        "",
                        f"{cpu_extra / execs * 1e6:.0f} us",
                    ]
                )
    table(["sandbox", "command", "median", "per exec", "children CPU"], rows, "llrrr")
    for mode, f in figures.items():
        verdict = "PASS" if f["ratio"] <= TARGET else "FAIL"
        print(f"{verdict} {mode}: with rules / without = {f['ratio']:.3f} (target <= {TARGET})")
    if args.json:
        args.json.write_text(json.dumps({"execs": execs, "rounds": rounds, **figures}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
