"""A host that starts, uses and closes long-lived sandboxes from many threads at once.

Run as a program by the concurrency tests (tests/sandbox/test_reuse_concurrent_starts.py):
``python starthost.py ROOT THREADS ROUNDS MARKER``. Thread i works on ROOT/ws<i>: each
round opens a handle (``reuse=True``), runs a command that writes and reads a file, a
command whose process carries MARKER (so a test finds what survives by it), and closes.
It prints ``round T R`` after each round and ``done`` at the end; ROUNDS 0 runs until
killed. An error in a thread is printed and makes the exit status 1.
"""

from __future__ import annotations

import sys
import threading
import traceback
from pathlib import Path

from codeward.sandbox import NativeBashSandbox

print_lock = threading.Lock()


def say(line: str) -> None:
    with print_lock:
        print(line, flush=True)


def worker(root: Path, index: int, rounds: int, marker: str, failures: list[str]) -> None:
    ws = root / f"ws{index}"
    ws.mkdir(exist_ok=True)
    r = 0
    try:
        while rounds == 0 or r < rounds:
            with NativeBashSandbox(ws, reuse=True) as sb:
                out = sb.exec(f"echo {index}-{r} > f && cat f", timeout_ms=60_000)
                assert out.stdout == f"{index}-{r}\n", out
                out = sb.exec(f"sleep 0.0{index % 10}{marker}; echo ok", timeout_ms=60_000)
                assert out.stdout == "ok\n", out
            say(f"round {index} {r}")
            r += 1
    except BaseException:
        failures.append(traceback.format_exc())
        say(f"failed {index}")


def main() -> int:
    root, threads, rounds = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    marker = sys.argv[4]  # digits only: it ends a sleep duration
    failures: list[str] = []
    pool = [
        threading.Thread(target=worker, args=(root, i, rounds, marker, failures))
        for i in range(threads)
    ]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    for f in failures:
        print(f, file=sys.stderr)
    say("done")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
