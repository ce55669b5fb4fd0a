"""The command guardrail's speed: ``check_command`` over a mixed workload of lines.

The workload is every line of the guardrail's tests (catastrophic and harmless, short and
nested), the bash reader's adversarial corpus, and a few long lines (a 64 KiB command,
a 1,000-command script, a large here-document); each is checked in turn, and the run
reports calls per second over the mixed lines and the time of each long one.

Usage: ``python bench/guardrail/run.py [--quick] [--json out.json]``. To compare with
another checkout, run it with that checkout's ``python`` directory first on PYTHONPATH
(``--label`` names the run in the output). Times are the process's CPU time, which a
loaded machine disturbs less than the wall clock.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "guardrail"))

from test_guardrail_commands import ALLOWED, REFUSED  # noqa: E402

from bash_reader_corpus import ADVERSARIAL  # noqa: E402
from codeward.guardrail import check_command  # noqa: E402

LONG = {
    "64KiB words": "ls " + "abc " * (1 << 14),
    "1000 commands": "; ".join(f"echo {i} && test -f f{i}" for i in range(1000)),
    "256KiB heredoc": "cat <<'EOF'\n" + ("x" * 79 + "\n") * 3276 + "EOF\n",
}


def mixed() -> list[str]:
    return [c for c, _r in REFUSED] + list(ALLOWED) + list(ADVERSARIAL)


def rate(lines: list[str], seconds: float) -> float:
    calls = 0
    start = time.process_time()
    while True:
        for line in lines:
            check_command(line)
        calls += len(lines)
        elapsed = time.process_time() - start
        if elapsed >= seconds:
            return calls / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json")
    parser.add_argument("--label", default="this checkout")
    args = parser.parse_args()
    lines = mixed()
    seconds = 1.0 if args.quick else 5.0
    rate(lines, 0.2)  # warm up
    figures: dict[str, float] = {"mixed_calls_per_s": rate(lines, seconds)}
    for name, line in LONG.items():
        start = time.process_time()
        check_command(line)
        figures[f"{name}_ms"] = 1000 * (time.process_time() - start)
    print(f"guardrail ({args.label}): {len(lines)} mixed lines")
    print(f"  check_command: {figures['mixed_calls_per_s']:,.0f} calls/s")
    for name in LONG:
        print(f"  {name}: {figures[name + '_ms']:.1f} ms")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
