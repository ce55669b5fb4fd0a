"""Timing helpers shared by bench/sandbox/run.py and breakdown.py (printing: bench/report.py)."""

from __future__ import annotations

import gc
import resource
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


def cpu_now() -> float:
    """CPU seconds of this process plus its reaped children (and theirs)."""
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


@dataclass
class Series:
    """Wall times of N runs of one thing, and the CPU they used."""

    wall: list[float] = field(default_factory=list)
    cpu: float = 0.0  # total over all runs

    @property
    def n(self) -> int:
        return len(self.wall)

    @property
    def median(self) -> float:
        return statistics.median(self.wall)

    @property
    def p90(self) -> float:
        if len(self.wall) < 2:
            return self.wall[0]
        return statistics.quantiles(self.wall, n=10, method="inclusive")[8]

    @property
    def best(self) -> float:
        return min(self.wall)

    @property
    def cpu_mean(self) -> float:
        return self.cpu / len(self.wall)

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "median_s": self.median,
            "p90_s": self.p90,
            "min_s": self.best,
            "cpu_mean_s": self.cpu_mean,
            "wall_s": self.wall,
        }


def measure(fns: dict[str, Callable[[], Any]], reps: int, rounds: int) -> dict[str, Series]:
    """`reps` timed runs of each fn: `rounds` rounds, each one block per fn (after
    one untimed warm-up run), so that every fn sees the same machine load."""
    out = {k: Series() for k in fns}
    rounds = max(1, min(rounds, reps))
    sizes = [reps // rounds + (1 if r < reps % rounds else 0) for r in range(rounds)]
    enabled = gc.isenabled()
    gc.disable()
    try:
        for size in sizes:
            for name, fn in fns.items():
                fn()  # warm-up: also pays the previous block's leftovers
                c0 = cpu_now()
                for _ in range(size):
                    t0 = time.perf_counter()
                    fn()
                    out[name].wall.append(time.perf_counter() - t0)
                out[name].cpu += cpu_now() - c0
    finally:
        if enabled:
            gc.enable()
    return out


def measure_paired(fns: dict[str, Callable[[], Any]], reps: int) -> dict[str, Series]:
    """`reps` rounds of one run of each fn in turn (after one warm-up round): run i
    of every fn shares the machine's state of round i, so the difference of two
    fns can be taken round by round (see paired_delta)."""
    out = {k: Series() for k in fns}
    enabled = gc.isenabled()
    gc.disable()
    try:
        for fn in fns.values():
            fn()
        for _ in range(reps):
            for name, fn in fns.items():
                c0 = cpu_now()
                t0 = time.perf_counter()
                fn()
                out[name].wall.append(time.perf_counter() - t0)
                out[name].cpu += cpu_now() - c0
    finally:
        if enabled:
            gc.enable()
    return out


def paired_delta(x: Series, ref: Series) -> float:
    """Median over the rounds of (x - ref): robust to load that drifts between rounds."""
    return statistics.median(a - b for a, b in zip(x.wall, ref.wall, strict=True))


def ms(x: float) -> str:
    return f"{x * 1e3:.2f}"


def ratio(a: float, b: float) -> float:
    return a / b if b else float("nan")


def plain(x: Any) -> Any:
    if isinstance(x, Series):
        return x.as_dict()
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [plain(v) for v in x]
    return x
