"""One download through the library, in a fresh process (run.py starts it).

    python bench/download/fetch.py WORKSPACE PORT CONNECTIONS BYTES SHA256

Fetches ``http://bench.example.com/bytes/BYTES`` into
``WORKSPACE/big.bin`` with ``download()``: the resolver seam answers a public
address for the name and the dialer seam connects it to the loopback server
on PORT, so the real address checks run. ``expected_sha256`` is set, so the
digest is computed and compared. Prints one JSON object: wall time of the
call, its CPU time (all threads), the result, and this process's peak RSS (VmHWM) and RSS before and
after. "Before" is taken after the imports and one warm-up download of 1 MiB
with the same settings, so the growth is the big download's alone.
"""

from __future__ import annotations

import json
import os
import resource
import socket
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
try:
    import codeward  # noqa: F401
except ImportError:  # a source tree with the extension built in place
    sys.path.insert(0, str(ROOT / "python"))

from codeward.download import download  # noqa: E402

PUBLIC = "93.184.215.14"  # a public unicast address, never contacted: the dialer maps it


def status_kb() -> dict[str, int]:
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmHWM", "VmRSS"):
                out[key] = int(value.split()[0])
    return out


def cpu_s() -> float:
    """User + system CPU seconds of this process, all threads."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> int:
    workspace, port, connections = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    nbytes, sha = int(sys.argv[4]), sys.argv[5]

    def resolver(host: str, p: int) -> list[str]:
        return [PUBLIC]

    def dialer(ip: str, p: int, timeout: float) -> socket.socket:
        assert ip == PUBLIC
        return socket.create_connection(("127.0.0.1", port), timeout=timeout)

    common = {
        "workspace": workspace,
        "connections": connections,
        "resolver": resolver,
        "dialer": dialer,
        "max_bytes": 8 << 30,
        "timeout_s": 3600,
    }
    download(f"http://bench.example.com/bytes/{1 << 20}", "warm.bin", **common)  # type: ignore[arg-type]
    os.unlink(os.path.join(workspace, "warm.bin"))
    before = status_kb()
    cpu0 = cpu_s()
    t0 = time.perf_counter()
    result = download(
        f"http://bench.example.com/bytes/{nbytes}",
        "big.bin",
        expected_sha256=sha,
        **common,  # type: ignore[arg-type]
    )
    wall = time.perf_counter() - t0
    cpu = cpu_s() - cpu0
    after = status_kb()
    print(
        json.dumps(
            {
                "wall_s": wall,
                "cpu_s": cpu,
                "bytes": result.bytes,
                "sha256_ok": result.sha256 == sha,
                "strategy": result.strategy,
                "connections": result.connections,
                "hwm_before_kb": before["VmHWM"],
                "hwm_after_kb": after["VmHWM"],
                "rss_before_kb": before["VmRSS"],
                "rss_after_kb": after["VmRSS"],
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
