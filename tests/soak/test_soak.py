"""The soak in its CI form (tests/soak/run.py; the long form is ``--minutes 8``).

16 slots (10 threads here, 3 worker processes of 2) for 30 s, with host and
init kills: every invariant of run.py must hold (processes, descriptors,
threads, watches, data, placeholders, run directories, journals, cgroups), at
least two hosts must have been killed, and every action must have run (each
of the first ten slots begins with its own). Throughput is printed, not
asserted (a shared CI machine's load is not ours to bound); the bounds on
waits are generous and only tell "never" from "done".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

RUN = Path(__file__).with_name("run.py")
SECONDS = float(os.environ.get("CODEWARD_SOAK_SECONDS", "30"))


def test_soak_short_form(tmp_path) -> None:
    argv = [sys.executable, str(RUN), "--seconds", str(SECONDS), "--root", str(tmp_path)]
    argv += ["--threads", "10", "--procs", "3", "--proc-threads", "2"]
    proc = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=SECONDS + 900,  # only a hang reaches this
    )
    lines = proc.stdout.strip().splitlines()
    summary = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else {}
    print(json.dumps(summary, indent=1))
    assert proc.returncode == 0 and summary, (summary.get("violations"), proc.stderr[-3000:])
    assert summary["slots"] >= 16 and summary["violations"] == []
    # it did what it is for: hosts killed and replaced, and every action ran (each of the
    # first ten slots begins with its own), the two that need a command seen running included
    assert summary["hosts_killed"] >= 2, summary
    actions = summary["actions"]
    for action in ("quick", "write", "flood", "timeout", "daemon", "forks", "hog", "reopen"):
        assert actions.get(action, 0) >= 1, (action, actions)
    for action in ("close", "kill-init"):
        assert actions.get(action, 0) + actions.get(action + "-unobserved", 0) >= 1, actions
