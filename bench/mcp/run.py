#!/usr/bin/env python3
"""MCP benchmark: tools/call round trips through codeward's client and through the SDK's own.

(Then bench/mcp/serve.py: codeward as the server, a `true` against session.invoke.)

    python bench/mcp/run.py [--quick] [--calls N] [--json OUT]

One server written with the official Python SDK (tests/mcp/servers/sdk_server.py)
is started three times: under codeward's owned-process transport
(``codeward.mcp.McpClient``, synchronous, worker threads), under the SDK's
``stdio_client`` + ``ClientSession`` (anyio), and behind bare blocking pipes
(the floor: no threads, no timeouts, no ownership). All answer the same
``echo`` call; the calls are made in blocks of 250 alternating between the
clients inside one process, so a busy neighbour slows them alike.

Reported: the wall time of all calls per client, calls/s, the median and
99th-percentile latency, the ratio codeward/SDK (below 1.00 means codeward
is faster; the target is at most 1.00), and this process's RSS after the
warm-up, at the end and at its peak (the target: flat). 10,000 calls per
client by default, 1,000 with ``--quick``. The script exits 0 whatever the
figures are.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "bench"))
try:
    import codeward  # noqa: F401
except ImportError:  # a source tree with the extension built in place
    sys.path.insert(0, str(ROOT / "python"))

from pipeclient import PipeClient  # noqa: E402

from codeward.mcp import McpClient, McpServerConfig  # noqa: E402
from report import loadavg, section, table  # noqa: E402

SERVER = ROOT / "tests" / "mcp" / "servers" / "sdk_server.py"
BLOCK = 250
WARMUP = 50


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def raw_pipes() -> PipeClient:
    """The floor: the same server behind bare blocking pipes, one request at a time, no
    threads, no timeouts, no ownership (what any client must at least spend)."""
    return PipeClient([sys.executable, str(SERVER)], "raw", quiet=True)


async def run(calls: int) -> dict[str, Any]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    ours_ms: list[float] = []
    sdk_ms: list[float] = []
    raw_ms: list[float] = []
    raw = raw_pipes()
    rss: list[float] = []
    params = StdioServerParameters(command=sys.executable, args=[str(SERVER)])
    config = McpServerConfig("bench", sys.executable, (str(SERVER),))
    with McpClient(config) as ours:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as sdk:
            await sdk.initialize()
            for i in range(WARMUP):  # imports, caches, JIT-free but warm
                ours.call_tool("echo", {"text": f"warm {i}"})
                await sdk.call_tool("echo", {"text": f"warm {i}"})
            rss.append(rss_mb())
            done = 0
            while done < calls:
                n = min(BLOCK, calls - done)
                for i in range(n):
                    text = f"call {done + i}"
                    start = time.perf_counter()
                    result = ours.call_tool("echo", {"text": text})
                    ours_ms.append((time.perf_counter() - start) * 1000)
                    assert result.content[0]["text"] == text
                for i in range(n):
                    text = f"call {done + i}"
                    start = time.perf_counter()
                    got = raw.request("tools/call", {"name": "echo", "arguments": {"text": text}})
                    raw_ms.append((time.perf_counter() - start) * 1000)
                    assert got["content"][0]["text"] == text
                for i in range(n):
                    text = f"call {done + i}"
                    start = time.perf_counter()
                    answer = await sdk.call_tool("echo", {"text": text})
                    sdk_ms.append((time.perf_counter() - start) * 1000)
                    assert answer.content[0].text == text  # type: ignore[union-attr]
                done += n
                rss.append(rss_mb())
    raw.close()
    return {"ours_ms": ours_ms, "sdk_ms": sdk_ms, "raw_ms": raw_ms, "rss_mb": rss}


def summary(samples: list[float]) -> dict[str, float]:
    total = sum(samples)
    return {
        "calls": len(samples),
        "total_s": total / 1000,
        "calls_per_s": len(samples) / (total / 1000),
        "p50_ms": statistics.median(samples),
        "p99_ms": percentile(samples, 0.99),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CI smoke run: 1,000 calls each")
    parser.add_argument("--full", action="store_true", help="the default: 10,000 calls each")
    parser.add_argument("--calls", type=int, help="calls per client")
    parser.add_argument("--json", type=Path, help="also write every figure to this file")
    args = parser.parse_args()
    calls = args.calls or (1_000 if args.quick else 10_000)
    try:
        import anyio

        import mcp  # noqa: F401
    except ImportError:
        print("mcp benchmark: the MCP Python SDK is not installed (pip install mcp); SKIPPED")
        return 0
    print(
        f"mcp benchmark: {calls} tools/call round trips per client, python "
        f"{sys.version.split()[0]}, {os.cpu_count()} cpus, load {loadavg()}"
    )
    raw = anyio.run(run, calls)
    ours, sdk, floor = summary(raw["ours_ms"]), summary(raw["sdk_ms"]), summary(raw["raw_ms"])
    section("tools/call round trips (echo), interleaved in blocks of 250")
    table(
        ["client", "calls", "total s", "calls/s", "p50 ms", "p99 ms"],
        [
            [
                name,
                s["calls"],
                f"{s['total_s']:.2f}",
                f"{s['calls_per_s']:.0f}",
                f"{s['p50_ms']:.3f}",
                f"{s['p99_ms']:.3f}",
            ]
            for name, s in (
                ("codeward.mcp.McpClient", ours),
                ("mcp SDK ClientSession", sdk),
                ("bare pipes (floor)", floor),
            )
        ],
    )
    ratio = ours["total_s"] / sdk["total_s"]
    print(f"\n  ratio codeward/SDK: {ratio:.2f}x the SDK's time (target <= 1.00)")
    print(
        f"  ratio codeward/floor: {ours['total_s'] / floor['total_s']:.2f}x, "
        f"SDK/floor: {sdk['total_s'] / floor['total_s']:.2f}x (all three include the server's time)"
    )
    rss = raw["rss_mb"]
    growth = rss[-1] - rss[0]
    print(
        f"  host RSS: {rss[0]:.1f} MB after warm-up, {rss[-1]:.1f} MB at the end, peak "
        f"{max(rss):.1f} MB ({growth:+.1f} MB; target: flat)"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "calls": calls,
                    "ours": ours,
                    "sdk": sdk,
                    "floor": floor,
                    "ratio": ratio,
                    "rss_mb": rss,
                }
            )
        )
    # the other direction: codeward as the server (bench/mcp/serve.py)
    serve = [sys.executable, str(Path(__file__).with_name("serve.py"))]
    subprocess.run(serve + (["--quick"] if args.quick else []), check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
