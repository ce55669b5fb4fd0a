"""close() releases everything at once; a dropped Session is freed without the cyclic GC (issue 26).

A host that opens and closes sessions all day must not run out of inotify
watches, descriptors or threads. Each case runs in a fresh interpreter (the
counts of this test process depend on whatever ran before) with the garbage
collector disabled, and compares the process's descriptors (/proc/self/fd),
threads (/proc/self/task) and inotify watches (/proc/self/fdinfo) after N
cycles with the counts after the first one (the baseline: imports, caches and
the one-time probe are in place by then).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hostprocs import cgroups_made_by

# The start of both scripts: the process's inotify watches, and the workspace (argv[1])
# filled with 50 directories, each with a subdirectory, for the credential scan to watch.
PRELUDE = textwrap.dedent(
    """
    import gc, json, os, sys, threading, time
    from pathlib import Path

    def watches():
        n = 0
        for fd in os.listdir("/proc/self/fdinfo"):
            try:
                n += Path(f"/proc/self/fdinfo/{fd}").read_text().count("inotify wd:")
            except OSError:
                pass
        return n

    def scanned_workspace():
        ws = Path(sys.argv[1])
        for i in range(50):
            (ws / f"d{i}" / "sub").mkdir(parents=True)
        return ws
    """
)


def run_script(tmp_path: Path, body: str, *args: object) -> dict:
    """PRELUDE and body, run in a fresh interpreter over a new workspace: what it prints last."""
    ws = tmp_path / "ws"
    ws.mkdir()
    proc = subprocess.run(
        [sys.executable, "-c", PRELUDE + body, str(ws), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


COUNTS = textwrap.dedent(
    """
    from codeward import Agent, SessionOptions
    from codeward.sandbox import NativeBashSandbox

    def counts():
        return {"fds": len(os.listdir("/proc/self/fd")), "threads": threading.active_count(),
                "tasks": len(os.listdir("/proc/self/task")), "watches": watches()}

    ws = scanned_workspace()
    gc.disable()
    case = sys.argv[2]

    def cycle():
        if case == "session-close":
            s = Agent().session(ws, SessionOptions())
            assert s.bash("echo hi").output.startswith("hi")
            s.close()
        elif case == "session-drop":
            s = Agent().session(ws, SessionOptions())
            assert s.bash("echo hi").output.startswith("hi")
            del s  # no close(): reference counting alone must free it
        elif case == "sandbox-close":
            sb = NativeBashSandbox(ws, reuse=True)
            assert sb.exec("echo hi", timeout_ms=60_000).stdout == "hi\\n"
            sb.close()
        elif case == "close-while-running":
            sb = NativeBashSandbox(ws, reuse=True)
            out = []
            run = lambda: out.append(sb.exec("sleep 600", timeout_ms=600_000))  # noqa: E731
            t = threading.Thread(target=run)
            t.start()
            while not sb._handle.info()["running"]:
                time.sleep(0.01)
            time.sleep(0.2)
            sb.close()
            t.join()
            assert out[0].cancelled, out
            del sb

    cycle()
    base = counts()
    for _ in range(int(sys.argv[3])):
        cycle()
    print(json.dumps({"base": base, "after": counts(), "collected": gc.get_count(),
                      "pid": os.getpid()}))
    """
)


@pytest.mark.parametrize(
    "case,cycles",
    [("session-close", 6), ("session-drop", 6), ("sandbox-close", 6), ("close-while-running", 3)],
)
def test_resources_return_to_the_baseline(tmp_path, case: str, cycles: int) -> None:
    got = run_script(tmp_path, COUNTS, case, cycles)
    assert cgroups_made_by([got["pid"]]) == [], "a closed handle left its cgroups"
    assert got["after"] == got["base"], got
    assert got["base"]["watches"] == 0, "a closed handle still holds watches"


IDLE = textwrap.dedent(
    """
    from codeward.sandbox import NativeBashSandbox, SandboxLimits

    def cgroups():  # codeward-<pid>-* (native/src/cgroup_linux.c) in every hierarchy
        n = 0
        for line in open("/proc/self/mountinfo"):
            f = line.split()
            if f[f.index("-") + 1] in ("cgroup", "cgroup2"):
                for _, dirs, _ in os.walk(f[4]):
                    n += sum(d.startswith(f"codeward-{os.getpid()}-") for d in dirs)
        return n

    def counts():
        return {"fds": len(os.listdir("/proc/self/fd")),
                "tasks": len(os.listdir("/proc/self/task")), "watches": watches(),
                "cgroups": cgroups()}

    ws = scanned_workspace()
    gc.disable()
    with NativeBashSandbox(ws, reuse=True) as warm:  # imports, the probe, caches
        warm.exec("true", timeout_ms=60_000)
    sb = NativeBashSandbox(ws, reuse=True, limits=SandboxLimits(idle_stop_ms=300))
    base = counts()
    seen = []
    for _ in range(int(sys.argv[2])):
        assert sb.exec("echo hi", timeout_ms=60_000).stdout == "hi\\n"
        busy = counts()
        deadline = time.monotonic() + 60  # only tells "never" from "done"
        def stopped():  # the scan's release is the idle stop's last step
            now = counts()
            return now["watches"] == now["cgroups"] == 0 and now["tasks"] == base["tasks"]
        while (sb._handle.info()["running"] or not stopped()) and time.monotonic() < deadline:
            time.sleep(0.05)
        seen.append({"busy": busy, "idle": counts(), "starts": sb._handle.info()["starts"]})
    print(json.dumps({"base": base, "seen": seen}))
    sb.close()
    """
)


def test_an_idle_stop_releases_what_close_does(tmp_path) -> None:
    """The automatic idle stop (not close()) gives back the credential scan's watches, the
    idle thread and the sandbox's descriptors; the next command sets them up again."""
    got = run_script(tmp_path, IDLE, 3)
    before, first = got["base"], got["seen"][0]["idle"]
    # a fresh handle holds an empty inotify instance, which a stop closes like the rest
    assert first["tasks"] == before["tasks"] and first["fds"] <= before["fds"], got
    for i, cycle in enumerate(got["seen"]):
        assert cycle["starts"] == i + 1, got  # each command started a new sandbox
        assert cycle["busy"]["watches"] > 50, got  # what the idle stop must give back
        assert cycle["busy"]["tasks"] > before["tasks"], got
        assert cycle["idle"] == first and first["watches"] == first["cgroups"] == 0, got
