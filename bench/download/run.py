"""Download benchmark: ``codeward.download.download`` against ``curl -o`` on one loopback server.

    python bench/download/run.py                 # full run: 1 GiB, 3 rounds
    python bench/download/run.py --quick         # CI smoke run: 128 MiB, 3 rounds
    python bench/download/run.py --dir /dev/shm  # served file and workspace on tmpfs
    python bench/download/run.py --json out.json # also write every figure as JSON

One server process (``server.py``: ``sendfile``, strong ETag, byte ranges)
serves a file of random bytes; in each round, in rotating order, ``curl -o``
fetches it, then our tool with one connection and with four, each in a fresh
process (``fetch.py``) with ``expected_sha256`` set. Our figures are the
``download()`` call alone; curl's are its whole process (start-up is
milliseconds next to a transfer of this size). ``download()`` also fsyncs
the file before the rename: the ``curl + fsync`` row adds an fsync of curl's
output to show what that costs here.

Peak RSS (VmHWM) growth is measured across the big download in the fetch
process, and again for a 64 MiB download: the two must be
about equal, the memory being fixed-size buffers, not a function of the size.
Targets (printed, never enforced): one connection at least 0.8x curl's
throughput; RSS growth independent of the size. The script exits 0 whatever
the figures are, and says SKIPPED for curl when it is not installed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import resource
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
sys.path.insert(0, str(HERE.parent))  # bench/report.py

from report import loadavg, table  # noqa: E402

MIB = 1 << 20
TARGET_VS_CURL = 0.8
TARGET_RSS_DELTA_MIB = 8.0  # big-size growth minus small-size growth, at most


@dataclass(frozen=True)
class Config:
    size: int
    rounds: int
    small: int = 64 * MIB  # the size the RSS growth is compared with (4 parts of 16 MiB)


QUICK = Config(size=128 * MIB, rounds=3)
FULL = Config(size=1024 * MIB, rounds=3)


def make_file(path: Path, size: int, small: int) -> tuple[str, str]:
    """Random bytes (a 4 MiB random block repeated); returns the digests of all and of ``small``."""
    block = os.urandom(4 * MIB)
    whole, prefix = hashlib.sha256(), hashlib.sha256()
    with open(path, "wb") as f:
        written = 0
        while written < size:
            piece = block[: size - written]
            f.write(piece)
            whole.update(piece)
            if written < small:
                prefix.update(piece[: small - written])
            written += len(piece)
    return whole.hexdigest(), prefix.hexdigest()


def start_server(path: Path) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "server.py"), str(path)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    return proc, int(proc.stdout.readline())


def run_curl(curl: str, port: int, size: int, out: Path) -> dict[str, float]:
    url = f"http://127.0.0.1:{port}/bytes/{size}"
    c0 = _children_cpu()
    t0 = time.perf_counter()
    subprocess.run([curl, "-sS", "--fail", "-o", str(out), url], check=True)
    wall = time.perf_counter() - t0
    cpu = _children_cpu() - c0
    if out.stat().st_size != size:
        raise RuntimeError(f"curl wrote {out.stat().st_size} bytes, not {size}")
    t1 = time.perf_counter()
    fd = os.open(out, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync = time.perf_counter() - t1
    out.unlink()
    return {"wall_s": wall, "cpu_s": cpu, "fsync_s": fsync}


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_tool(ws: Path, port: int, connections: int, size: int, sha: str) -> dict[str, Any]:
    done = subprocess.run(
        [
            sys.executable,
            str(HERE / "fetch.py"),
            str(ws),
            str(port),
            str(connections),
            str(size),
            sha,
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    (ws / "big.bin").unlink()
    result: dict[str, Any] = json.loads(done.stdout)
    if not result["sha256_ok"] or result["bytes"] != size:
        raise RuntimeError(f"the tool's result is wrong: {result}")
    return result


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="128 MiB instead of 1 GiB (CI smoke)")
    ap.add_argument("--rounds", type=int, metavar="N", help="rounds of every variant")
    ap.add_argument("--dir", type=Path, help="where the served file and the workspace live")
    ap.add_argument("--json", metavar="OUT", help="also write every figure to OUT as JSON")
    opts = ap.parse_args(argv)
    cfg = QUICK if opts.quick else FULL
    if opts.rounds:
        cfg = Config(cfg.size, opts.rounds)
    small = cfg.small
    curl = shutil.which("curl")
    started = time.perf_counter()
    print("codeward download benchmark" + (" (--quick)" if opts.quick else ""))
    print(
        f"  python {platform.python_version()}, {platform.system()} {platform.release()}"
        f" {platform.machine()}, {os.cpu_count()} CPUs, load {loadavg()}"
    )
    if curl:
        version = subprocess.run([curl, "--version"], capture_output=True, text=True).stdout
        print(f"  {version.splitlines()[0]}")
    else:
        print("  curl: not installed (apt-get install curl): the curl rows are SKIPPED")
    doc: dict[str, Any] = {"quick": opts.quick, "config": asdict(cfg), "load_start": loadavg()}
    with tempfile.TemporaryDirectory(prefix="a3s-bench-download-", dir=opts.dir) as tmp_s:
        tmp = Path(tmp_s)
        ws = tmp / "ws"
        ws.mkdir()
        print(f"  {cfg.size // MIB} MiB of random bytes in {tmp}; {cfg.rounds} rounds, interleaved")
        sha, small_sha = make_file(tmp / "data.bin", cfg.size, small)
        server, port = start_server(tmp / "data.bin")
        try:
            variants = ["curl -o", "tool, 1 connection", "tool, 4 connections"]
            if not curl:
                variants = variants[1:]
            runs: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
            for r in range(cfg.rounds):
                order = variants[r % len(variants) :] + variants[: r % len(variants)]
                for v in order:
                    if v == "curl -o":
                        assert curl is not None
                        runs[v].append(run_curl(curl, port, cfg.size, ws / "curl.bin"))
                    else:
                        conns = 1 if "1 connection" in v else 4
                        runs[v].append(run_tool(ws, port, conns, cfg.size, sha))
            small_runs = {c: run_tool(ws, port, c, small, small_sha) for c in (1, 4)}
        finally:
            server.terminate()
            server.wait()

    def median(v: str, key: str = "wall_s") -> float:
        return statistics.median(x[key] for x in runs[v])

    def growth(run: dict[str, Any]) -> float:
        return float(run["hwm_after_kb"] - run["hwm_before_kb"]) / 1024

    def mbps(seconds: float) -> float:
        return cfg.size / 1e6 / seconds

    curl_s = median("curl -o") if curl else None
    rows, ratios = [], {}
    for v in variants:
        wall = median(v)
        best = min(x["wall_s"] for x in runs[v])
        ratio = "" if curl_s is None else f"{curl_s / wall:.2f}"
        rss = "" if v == "curl -o" else f"{statistics.median(growth(x) for x in runs[v]):.1f}"
        cpu = f"{median(v, 'cpu_s'):.2f}"
        rows.append([v, f"{wall:.2f}", f"{best:.2f}", f"{mbps(wall):.0f}", ratio, cpu, rss])
        if curl_s is not None and v != "curl -o":
            ratios[f"{v}_vs_curl"] = curl_s / wall
    if curl:
        with_fsync = statistics.median(x["wall_s"] + x["fsync_s"] for x in runs["curl -o"])
        rows.insert(
            1,
            ["curl -o, then fsync", f"{with_fsync:.2f}", "", f"{mbps(with_fsync):.0f}", "", "", ""],
        )
        ratios["tool_1_vs_curl_fsync"] = with_fsync / median("tool, 1 connection")
    print(f"\n  {cfg.size // MIB} MiB over loopback (median of {cfg.rounds}; MB = 10^6 bytes)")
    table(["variant", "median s", "best s", "MB/s", "x curl", "cpu s", "RSS +MiB"], rows)
    print("  x curl = curl's median time / this median time (> 1: faster than curl)")
    print("  cpu s: user + system CPU of the transfer (curl's process; our call, all threads)")
    print("  RSS +MiB: growth of the fetch process's VmHWM across the one download")

    print(
        f"\n  peak RSS growth by size (fresh process each; {small // MIB} vs {cfg.size // MIB} MiB)"
    )
    rss_rows, deltas = [], []
    for c in (1, 4):
        big = statistics.median(
            growth(x) for x in runs[f"tool, {c} connection{'s' if c > 1 else ''}"]
        )
        little = growth(small_runs[c])
        deltas.append(big - little)
        rss_rows.append(
            [f"{c} connection(s)", f"{little:.1f}", f"{big:.1f}", f"{big - little:+.1f}"]
        )
    table(["", f"{small // MIB} MiB", f"{cfg.size // MIB} MiB", "difference"], rss_rows)

    one = ratios.get("tool, 1 connection_vs_curl")
    print("\n  Targets (informational: the script never fails on them)")
    ok = None if one is None else one >= TARGET_VS_CURL
    verdict = "SKIP" if ok is None else ("PASS" if ok else "FAIL")
    shown = "n/a (no curl)" if one is None else f"{one:.2f}x"
    if opts.quick and ok is not None:
        # at 128 MiB a run lasts a few tenths of a second: start-up and noise decide it
        verdict, shown = "info", shown + " (quick run; the target is judged on the full 1 GiB run)"
    print(f"  {verdict}  one connection >= {TARGET_VS_CURL}x curl -o: {shown}")
    rss_ok = all(abs(d) <= TARGET_RSS_DELTA_MIB for d in deltas)
    print(
        f"  {'PASS' if rss_ok else 'FAIL'}  peak RSS independent of the size (growth differs by"
        f" at most {TARGET_RSS_DELTA_MIB:.0f} MiB): " + ", ".join(f"{d:+.1f} MiB" for d in deltas)
    )
    elapsed = time.perf_counter() - started
    print(f"\n  load {loadavg()} at the end; total time {elapsed:.1f} s")
    if opts.json:
        doc.update(
            {
                "runs": runs,
                "small_runs": small_runs,
                "ratios": ratios,
                "rss_deltas_mib": deltas,
                "targets": {"one_connection_vs_curl": ok, "rss_independent_of_size": rss_ok},
                "elapsed_s": elapsed,
                "load_end": loadavg(),
            }
        )
        Path(opts.json).write_text(json.dumps(doc, indent=2) + "\n")
        print(f"  wrote {opts.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
