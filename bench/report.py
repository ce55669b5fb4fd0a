"""Printing helpers every benchmark script shares: aligned tables, section rules, the load.

The scripts under bench/*/ put this directory on sys.path and import it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], align: str = "") -> None:
    """Prints rows under headers and a rule; ``align`` is one of l/r per column (l then r's)."""
    cells = [[str(c) for c in r] for r in rows]
    widths = [
        max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)
    ]
    align = align or "l" + "r" * (len(headers) - 1)

    def fmt(row: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(w) if a == "l" else c.rjust(w)
            for c, w, a in zip(row, widths, align, strict=False)
        )

    print("  " + fmt(headers))
    print("  " + "  ".join("-" * w for w in widths))
    for r in cells:
        print("  " + fmt(r))


def section(title: str) -> None:
    print(f"\n== {title} " + "=" * max(0, 74 - len(title)))


def loadavg() -> str:
    """The 1, 5 and 15 minute load averages, as the kernel prints them."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"
