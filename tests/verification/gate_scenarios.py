"""Attacks on a verified turn (issue 22), each run against a real session and sandbox.

Each scenario verifies a workspace (a passing check), then changes it the way
an attacker would, and reports what ``complete_turn()`` decided and what the
ledger names. test_gate_sees_everything.py runs them in-process as root and,
through ``python gate_scenarios.py NAME WORKSPACE`` under setpriv, as the
unprivileged user ``nobody`` (the printed line is JSON).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from codeward import Agent, CheckSpec, Session, SessionOptions

APP = "answer = 42\n"
CHECK = CheckSpec("content", "custom", "grep -q 'answer = 42' src/app.py && ./run.sh")
MMAP_WRITE = (
    "python3 -c \"import mmap, os; fd = os.open('src/app.py', os.O_RDWR); "
    "m = mmap.mmap(fd, 0); os.close(fd); m[:6]; m[:6] = b'ANSWER'; m.close()\""
)


def prepare(root: Path) -> None:
    (root / "src").mkdir(mode=0o755)
    (root / "src" / "app.py").write_text(APP)
    (root / "src" / "app.py").chmod(0o644)
    (root / "run.sh").write_text("#!/bin/sh\nexit 0\n")
    (root / "run.sh").chmod(0o755)


def _session(root: Path, check: CheckSpec = CHECK) -> Session:
    return Agent().session(root, SessionOptions(verification_checks=(check,), detect_checks=False))


def _verified(session: Session) -> None:
    """Brings the workspace into the turn and verifies it: the turn can complete now."""
    session.bash("echo '# reviewed' >> src/app.py")
    report = session.verify()
    assert report.passed, report.to_dict()


def _outcome(session: Session, **extra: Any) -> dict[str, Any]:
    digest = session.effect_digest
    outcome = session.complete_turn("done")
    entries = {e.path: e.tool for e in session._ledger.entries()} if not outcome.completed else {}
    return {
        "completed": outcome.completed,
        "missing": list(outcome.missing),
        "paths": entries,
        "digest": digest,
        **extra,
    }


def mmap_after_verify(root: Path) -> dict[str, Any]:
    """A shared writable mapping written after the checks passed (tmpfs: no metadata moves)."""
    with _session(root) as s:
        _verified(s)
        before = os.stat(root / "src" / "app.py")
        s.bash(MMAP_WRITE)
        after = os.stat(root / "src" / "app.py")
        same = (before.st_size, before.st_mtime_ns, before.st_ctime_ns, before.st_ino) == (
            after.st_size,
            after.st_mtime_ns,
            after.st_ctime_ns,
            after.st_ino,
        )
        written = (root / "src" / "app.py").read_text().startswith("ANSWER")
        return _outcome(s, metadata_unchanged=same, written=written)


def mmap_during_verify(root: Path) -> dict[str, Any]:
    """A check that rewrites the code through a mapping and then passes."""
    check = CheckSpec("sneaky", "custom", f"{MMAP_WRITE} && exit 0")
    with _session(root, check) as s:
        s.bash("echo '# reviewed' >> src/app.py")
        report = s.verify()
        statuses = {c.id: c.status for c in report.checks}
        return _outcome(s, report_passed=report.passed, statuses=statuses)


def chmod_u_minus_x(root: Path) -> dict[str, Any]:
    with _session(root) as s:
        _verified(s)
        s.bash("chmod u-x run.sh")
        return _outcome(s)


def chmod_0200(root: Path) -> dict[str, Any]:
    with _session(root) as s:
        _verified(s)
        s.bash("chmod 0200 src/app.py")
        return _outcome(s)


def chmod_then_same_bytes(root: Path) -> dict[str, Any]:
    """chmod -x, then the write tool puts back the exact verified bytes."""
    with _session(root) as s:
        s.tool("write", {"file_path": "run.sh", "content": "#!/bin/sh\nexit 0\n"})
        s.bash("chmod +x run.sh")
        s.tool("write", {"file_path": "run.sh", "content": "#!/bin/sh\nexit 0\n"})
        assert s.verify().passed
        verified = s.effect_digest
        s.bash("chmod -x run.sh")
        s.tool("write", {"file_path": "run.sh", "content": "#!/bin/sh\nexit 0\n"})
        return _outcome(s, verified_digest=verified)


def host_tool(root: Path) -> dict[str, Any]:
    """A host-registered tool writes the workspace itself."""

    def handler(args: Any) -> str:
        (root / "src" / "app.py").write_text("answer = 41\n")
        return "ok"

    with _session(root) as s:
        _verified(s)
        s.register_tool("fixer", handler, {"type": "object", "properties": {}})
        result = s.tool("fixer", {})
        assert result.success, result.output
        return _outcome(s)


def timer(root: Path) -> dict[str, Any]:
    """A writer outside any call (a server's timer, an editor) after the checks passed."""
    with _session(root) as s:
        _verified(s)
        done = threading.Event()

        def later() -> None:
            (root / "src" / "app.py").write_text("answer = 41\n")
            done.set()

        threading.Timer(0.05, later).start()
        done.wait(30)
        return _outcome(s)


def root_unreadable(root: Path) -> dict[str, Any]:
    """A command writes, then makes the workspace directory unreadable (``chmod 000 .``),
    or, as root (who reads it anyway), the workspace is moved away: the snapshot fails."""
    with _session(root) as s:
        _verified(s)
        s.bash("echo EVIL >> src/app.py; chmod 000 .")
        away = root.with_name(root.name + ".away")
        if os.geteuid() == 0:
            root.rename(away)
        first = _outcome(s)
        if os.geteuid() == 0:
            away.rename(root)
        os.chmod(root, 0o755)
        return _outcome(s, first=first)


def dir_0300(root: Path) -> dict[str, Any]:
    """A command writes, then hides the directory: mode 0300 (listable by no one but root)."""
    with _session(root) as s:
        _verified(s)
        result = s.bash("echo EVIL >> src/app.py; chmod 0300 src")
        out = _outcome(s, uncertain=result.metadata.get("workspace_uncertain"))
        os.chmod(root / "src", 0o755)
        return out


def nothing_changed(root: Path) -> dict[str, Any]:
    """Commands that only read: the turn completes without any verification."""
    with _session(root) as s:
        first = s.bash("cat src/app.py; ls -la; ./run.sh")
        out = _outcome(s, detection=first.metadata.get("change_detection"))
        _verified(s)
        s.complete_turn("done")
        s.bash("grep -c answer src/app.py")
        out["after_verified_turn"] = _outcome(s)
        return out


SCENARIOS: dict[str, Callable[[Path], dict[str, Any]]] = {
    f.__name__: f
    for f in (
        mmap_after_verify,
        mmap_during_verify,
        chmod_u_minus_x,
        chmod_0200,
        chmod_then_same_bytes,
        host_tool,
        timer,
        root_unreadable,
        dir_0300,
        nothing_changed,
    )
}


if __name__ == "__main__":
    name, workspace = sys.argv[1], Path(sys.argv[2])
    prepare(workspace)
    print(json.dumps(SCENARIOS[name](workspace)))
