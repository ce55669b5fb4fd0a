#!/usr/bin/env python3
"""Network grant benchmark: a transfer and connection set-up through the mediator, against direct.

    python bench/netgrant/run.py            # full run: 1 GiB, 5 rounds, 200 connections
    python bench/netgrant/run.py --quick    # CI smoke run: 128 MiB, 3 rounds, 40 connections
    python bench/netgrant/run.py --json out.json

One byte source (``source.py``, its own process) serves ``GET /bytes/N`` on
the host's loopback. The same client (``client.py``) runs twice per round, in
rotating order:

- direct: on the host, connecting to the source;
- granted: as the command of a long-lived sandbox holding a grant of
  ``127.0.0.1:PORT``, through the proxy on 127.0.0.1:3128 inside the
  sandbox, the session's mediator (``codeward.netgrant``) on the host, and
  its relay (``a3s_relay``: splice through bounded pipes) to the source.

It measures the throughput of one large transfer (the client times its own
read, so the sandbox's start is not counted) and the set-up time of one
connection (``connect()`` to the first byte of a 1-byte response; through
the proxy that includes ``CONNECT``, the mediator's admission and its
connection to the source). Targets (printed, never enforced): the granted
transfer at least 0.8x the direct throughput, and at most 2 ms added to a
connection's set-up at the median. The script exits 0 whatever the figures
are; a machine without the sandbox gets SKIPPED.
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
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))  # bench/report.py

try:
    import codeward  # noqa: F401
except ImportError:  # a source tree with the extension built in place
    sys.path.insert(0, str(ROOT / "python"))

from codeward.netgrant import NetworkGrant, NetworkMediator  # noqa: E402
from codeward.sandbox import NativeBashSandbox  # noqa: E402
from report import loadavg, section, table  # noqa: E402

MIB = 1 << 20
TARGET_THROUGHPUT = 0.8  # granted / direct
TARGET_ADDED_SETUP_MS = 2.0
CLIENT = HERE / "client.py"
PROXY = "127.0.0.1:3128"


@dataclass(frozen=True)
class Config:
    size: int
    rounds: int
    connections: int  # per round and path, for the set-up times


QUICK = Config(size=128 * MIB, rounds=3, connections=40)
FULL = Config(size=1024 * MIB, rounds=5, connections=200)


class Granted:
    """A long-lived sandbox and a mediator; runs the client with a grant of the source."""

    def __init__(self, workspace: Path, port: int) -> None:
        # The sandbox hides /tmp and homes, where a checkout or its venv may lie: the client (stdlib
        # only) runs from a copy in the workspace with the interpreter the venv was made from.
        self.client = workspace / CLIENT.name
        shutil.copyfile(CLIENT, self.client)
        self.python = getattr(sys, "_base_executable", sys.executable)
        self.sandbox = NativeBashSandbox(workspace, reuse=True)
        self.mediator = NetworkMediator()
        self.port = port

    def run(self, args: str) -> str:
        grant = NetworkGrant.make("127.0.0.1", self.port, self.sandbox.policy().digest)
        with self.mediator.admit(grant) as admission:
            out = self.sandbox.exec(
                f"{self.python} {self.client} {args} --proxy {PROXY}",
                timeout_ms=600_000,
                max_output_bytes=1 << 20,
                grant_fd=admission.fd,
                policy_digest=grant.policy_digest,
            )
        if out.exit_code != 0:
            raise RuntimeError(f"the granted client failed: {out}")
        return out.stdout

    def close(self) -> None:
        self.mediator.close()
        self.sandbox.close()


def direct(args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(CLIENT), *args.split()], check=True, capture_output=True, text=True
    )
    return done.stdout


def bulk(output: str, size: int) -> float:
    seconds, got = output.split()
    if int(got) != size:
        raise RuntimeError(f"the client read {got} bytes, not {size}")
    return size / float(seconds)


def setups(output: str) -> list[float]:
    return [float(line) for line in output.split()]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="128 MiB, 40 connections (CI smoke)")
    ap.add_argument("--full", action="store_true", help="the default: 1 GiB, 200 connections")
    ap.add_argument("--rounds", type=int, metavar="N", help="rounds of every variant")
    ap.add_argument("--json", metavar="OUT", help="also write every figure to OUT as JSON")
    opts = ap.parse_args(argv)
    cfg = QUICK if opts.quick else FULL
    if opts.rounds:
        cfg = Config(cfg.size, opts.rounds, cfg.connections)
    started = time.perf_counter()
    print("codeward network grant benchmark" + (" (--quick)" if opts.quick else ""))
    print(
        f"  python {platform.python_version()}, {platform.system()} {platform.release()}"
        f" {platform.machine()}, {os.cpu_count()} CPUs, load {loadavg()}"
    )
    reason = NativeBashSandbox.probe()
    if reason is not None:
        print(f"  SKIPPED: the native sandbox cannot run here: {reason}")
        return 0
    source = subprocess.Popen(
        [sys.executable, str(HERE / "source.py")], stdout=subprocess.PIPE, text=True
    )
    assert source.stdout is not None
    port = int(source.stdout.readline())
    doc: dict[str, Any] = {"quick": opts.quick, "config": asdict(cfg), "load_start": loadavg()}
    rates: dict[str, list[float]] = {"direct": [], "granted": []}
    setup: dict[str, list[float]] = {"direct": [], "granted": []}
    with tempfile.TemporaryDirectory(prefix="a3s-bench-netgrant-") as tmp:
        granted = Granted(Path(tmp), port)
        try:
            granted.run(f"setup {port} 3")  # warm-up: the long-lived sandbox starts here
            direct(f"setup {port} 3")
            for r in range(cfg.rounds):
                order = ("direct", "granted") if r % 2 == 0 else ("granted", "direct")
                for path in order:
                    run = granted.run if path == "granted" else direct
                    rates[path].append(bulk(run(f"bulk {port} {cfg.size}"), cfg.size))
                    setup[path].extend(setups(run(f"setup {port} {cfg.connections}")))
        finally:
            granted.close()
            source.terminate()
            source.wait()

    section(f"one transfer of {cfg.size // MIB} MiB over loopback ({cfg.rounds} rounds)")
    median_rate = {p: statistics.median(v) for p, v in rates.items()}
    rows = [
        [p, f"{median_rate[p] / 1e6:.0f}", f"{max(v) / 1e6:.0f}", f"{min(v) / 1e6:.0f}"]
        for p, v in rates.items()
    ]
    table(["path", "median MB/s", "best MB/s", "worst MB/s"], rows)
    ratio = median_rate["granted"] / median_rate["direct"]
    print(f"  granted / direct throughput: {ratio:.2f}x (MB = 10^6 bytes)")

    section(f"connection set-up, connect to first byte ({len(setup['direct'])} per path)")
    med = {p: statistics.median(v) * 1000 for p, v in setup.items()}
    p90 = {p: statistics.quantiles(v, n=10)[-1] * 1000 for p, v in setup.items()}
    table(
        ["path", "median ms", "p90 ms"],
        [[p, f"{med[p]:.3f}", f"{p90[p]:.3f}"] for p in setup],
    )
    added = med["granted"] - med["direct"]
    print(f"  added by the grant's path at the median: {added:.3f} ms")

    print("\n  Targets (informational: the script never fails on them)")
    ok_rate = ratio >= TARGET_THROUGHPUT
    note = " (quick run; judged on the full 1 GiB run)" if opts.quick else ""
    print(
        f"  {'PASS' if ok_rate else 'FAIL'}  granted throughput >= {TARGET_THROUGHPUT}x direct: "
        f"{ratio:.2f}x{note}"
    )
    ok_setup = added <= TARGET_ADDED_SETUP_MS
    print(
        f"  {'PASS' if ok_setup else 'FAIL'}  added set-up <= {TARGET_ADDED_SETUP_MS} ms at the "
        f"median: {added:.3f} ms"
    )
    elapsed = time.perf_counter() - started
    print(f"\n  load {loadavg()} at the end; total time {elapsed:.1f} s")
    if opts.json:
        doc.update(
            {
                "throughput_bytes_per_s": rates,
                "setup_s": setup,
                "ratio": ratio,
                "added_setup_ms": added,
                "targets": {"throughput": ok_rate, "setup": ok_setup},
                "elapsed_s": elapsed,
                "load_end": loadavg(),
            }
        )
        Path(opts.json).write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
