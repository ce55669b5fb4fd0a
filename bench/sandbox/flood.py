"""One output flood through the sandbox, in a fresh process (run.py starts it).

    python bench/sandbox/flood.py WORKSPACE BYTES [MODE]

MODE ``sandbox`` (default) runs ``head -c BYTES /dev/zero`` through
``NativeBashSandbox.exec`` with the default ``max_output_bytes``; MODE
``popen`` is a reference: the same command on the host with
``subprocess.Popen(stdout=PIPE)``, read and discarded in 64 KiB chunks from
Python. Prints one JSON object: wall time, bytes the command wrote, the
result flags, and this process's peak RSS (VmHWM) and RSS before and after.
A fresh process so that nothing allocated earlier (by the parent benchmark)
hides the growth; "before" is taken after the imports, the sandbox object and
one warm-up ``exec("true")``, so the growth is the flood's alone.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

try:
    import codeward  # noqa: F401
except ImportError:  # a source tree with the extension built in place
    sys.path.insert(0, str(ROOT / "python"))

from codeward.sandbox import NativeBashSandbox  # noqa: E402


def status_kb() -> dict[str, int]:
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmHWM", "VmRSS"):
                out[key] = int(value.split()[0])
    return out


def main() -> int:
    workspace, nbytes = sys.argv[1], int(sys.argv[2])
    mode = sys.argv[3] if len(sys.argv) > 3 else "sandbox"
    command = f"head -c {nbytes} /dev/zero"
    if mode == "sandbox":
        sb = NativeBashSandbox(workspace)
        sb.exec("true")
    before = status_kb()
    t0 = time.perf_counter()
    if mode == "sandbox":
        out = sb.exec(command)
        wall = time.perf_counter() - t0
        result = {
            "exit_code": out.exit_code,
            "total_bytes": out.total_bytes,
            "kept_chars": len(out.stdout),
            "truncated": out.truncated,
            "setup_error": out.setup_error,
            "duration_ms": out.duration_ms,
        }
    else:
        total = 0
        with subprocess.Popen(["bash", "-c", command], stdout=subprocess.PIPE) as p:
            assert p.stdout is not None
            while chunk := p.stdout.read1(65536):
                total += len(chunk)
        wall = time.perf_counter() - t0
        result = {"exit_code": p.returncode, "total_bytes": total}
    after = status_kb()
    result.update(
        {
            "mode": mode,
            "bytes": nbytes,
            "wall_s": wall,
            "hwm_before_kb": before["VmHWM"],
            "hwm_after_kb": after["VmHWM"],
            "rss_before_kb": before["VmRSS"],
            "rss_after_kb": after["VmRSS"],
        }
    )
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
