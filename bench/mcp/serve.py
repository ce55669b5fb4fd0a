#!/usr/bin/env python3
"""`codeward mcp serve` benchmark: a `true` through the server against `session.invoke`.

    python bench/mcp/serve.py [--quick] [--calls N] [--json OUT]

Two sessions over two copies of the same workspace, measured in one run, one
call of each in turn so a busy neighbour slows both alike:

- in process: ``session.invoke(ToolCall(..., "bash", {"command": "true"}))``;
- through the server: ``codeward mcp serve`` behind bare blocking pipes (one
  request at a time), the client's write, the server's decision and command,
  and the read of the answer all counted.

Reported: the median and 99th percentile of each, the median of the
differences between the two calls of each pair (the target: at most 1 ms more
through the server), and the server's
RSS after the warm-up and after every 100 calls (the target: flat). 1,000
calls each by default, 100 with ``--quick``. Exits 0 whatever the figures.
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

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "bench"))
try:
    import codeward  # noqa: F401
except ImportError:  # a source tree with the extension built in place
    sys.path.insert(0, str(ROOT / "python"))

from pipeclient import PipeClient  # noqa: E402

from codeward import Agent, SessionOptions, ToolCall  # noqa: E402
from report import loadavg, section, table  # noqa: E402

WARMUP = 20


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Server(PipeClient):
    """The server behind bare pipes: what any client must at least spend."""

    def __init__(self, workspace: str) -> None:
        argv = [sys.executable, "-m", "codeward", "mcp", "serve", "--workspace", workspace]
        super().__init__(argv, "b")

    def true(self) -> None:
        got = self.request("tools/call", {"name": "bash", "arguments": {"command": "true"}})
        assert got["structuredContent"]["exit_code"] == 0, got


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "calls": len(samples),
        "p50_ms": statistics.median(samples),
        "p99_ms": ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CI smoke run: 100 calls each")
    parser.add_argument("--calls", type=int, help="calls per path")
    parser.add_argument("--json", type=Path, help="also write every figure to this file")
    args = parser.parse_args()
    calls = args.calls or (100 if args.quick else 1_000)
    print(
        f"mcp serve benchmark: {calls} `true` calls per path, python "
        f"{sys.version.split()[0]}, {os.cpu_count()} cpus, load {loadavg()}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("direct", "served"):
            os.mkdir(os.path.join(tmp, name))
            Path(tmp, name, "README").write_text("bench\n")
        session = Agent().session(os.path.join(tmp, "direct"), SessionOptions())
        server = Server(os.path.join(tmp, "served"))
        try:
            ids = iter(range(10**9))

            def direct() -> None:
                out = session.invoke(ToolCall(f"b{next(ids)}", "bash", {"command": "true"}))
                assert out.result is not None and out.result.exit_code == 0, out

            for _ in range(WARMUP):
                direct()
                server.true()
            rss = [rss_mb(server.proc.pid)]
            direct_ms: list[float] = []
            served_ms: list[float] = []
            for done in range(1, calls + 1):
                for run, samples in ((direct, direct_ms), (server.true, served_ms)):
                    start = time.perf_counter()
                    run()
                    samples.append((time.perf_counter() - start) * 1000)
                if done % 100 == 0 or done == calls:
                    rss.append(rss_mb(server.proc.pid))
        finally:
            server.close()
            session.close()
    ours, base = summary(served_ms), summary(direct_ms)
    section("bash `true`: session.invoke in process vs through codeward mcp serve")
    table(
        ["path", "calls", "p50 ms", "p99 ms"],
        [
            [name, s["calls"], f"{s['p50_ms']:.3f}", f"{s['p99_ms']:.3f}"]
            for name, s in (("session.invoke", base), ("mcp serve (pipes)", ours))
        ],
    )
    extra = statistics.median(s - d for s, d in zip(served_ms, direct_ms, strict=True))
    print(
        f"\n  through the server: {extra:+.3f} ms, the median of the pairs' differences "
        "(target <= +1.000 ms)"
    )
    growth = rss[-1] - rss[1] if len(rss) > 2 else rss[-1] - rss[0]
    print(
        f"  server RSS: {rss[0]:.1f} MiB after warm-up, {rss[-1]:.1f} MiB at the end "
        f"(every 100 calls: {', '.join(f'{r:.1f}' for r in rss)}); "
        f"{growth:+.2f} MiB after the first hundred (target: flat)"
    )
    if args.json:
        args.json.write_text(
            json.dumps({"direct": base, "served": ours, "extra_ms": extra, "rss_mb": rss})
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
