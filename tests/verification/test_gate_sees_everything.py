"""A verified turn means verified (issue 22): every attack of gate_scenarios.py makes
complete_turn() refuse with the changed path in the ledger, as root and as `nobody`, on an
ext4-like and a tmpfs workspace; commands that only read complete without verification."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import gate_scenarios  # noqa: E402

NOBODY = 65534
FILE_SYSTEMS = {"disk": "/var/tmp", "tmpfs": "/dev/shm"}


def _fs_type(path: str) -> str:
    out = subprocess.run(["stat", "-f", "-c", "%T", path], capture_output=True, text=True)
    return out.stdout.strip()


@pytest.fixture(params=sorted(FILE_SYSTEMS))
def base(request: pytest.FixtureRequest, fs_boundary_ready: None) -> Iterator[Path]:
    parent = FILE_SYSTEMS[request.param]
    kind = _fs_type(parent)
    if (request.param == "tmpfs") != (kind == "tmpfs"):
        pytest.skip(f"{parent} is {kind} here")
    made = Path(tempfile.mkdtemp(prefix="cw-gate-", dir=parent))
    made.chmod(0o755)
    try:
        yield made
    finally:
        for dirpath, dirnames, _ in os.walk(made):
            for d in dirnames:
                os.chmod(os.path.join(dirpath, d), 0o755)
        shutil.rmtree(made, ignore_errors=True)


@pytest.fixture
def fs_boundary_ready() -> None:
    from codeward.sandbox import NativeBashSandbox

    if not sys.platform.startswith("linux"):
        pytest.skip("the native sandbox is Linux-only")
    reason = NativeBashSandbox.probe()
    if reason is not None:
        pytest.fail(f"the native sandbox cannot run on this machine: {reason}")


def run(name: str, base: Path, user: str) -> dict[str, Any]:
    root = base / "ws"
    root.mkdir()
    root.chmod(0o755)
    if user == "root":
        if os.geteuid() != 0:
            pytest.skip("needs root")
        gate_scenarios.prepare(root)
        return gate_scenarios.SCENARIOS[name](root)
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("running as nobody needs root and setpriv")
    os.chown(base, NOBODY, NOBODY)
    os.chown(root, NOBODY, NOBODY)
    proc = subprocess.run(
        [
            "setpriv",
            f"--reuid={NOBODY}",
            f"--regid={NOBODY}",
            "--clear-groups",
            sys.executable,
            str(HERE / "gate_scenarios.py"),
            name,
            str(root),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(base)},
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


USERS = ["root", "nobody"]


def refused(result: dict[str, Any], *paths: str) -> None:
    assert not result["completed"], result
    assert result["missing"], result
    assert any(p in result["paths"] for p in paths), result


@pytest.mark.parametrize("user", USERS)
def test_a_shared_mapping_written_after_verification(base: Path, user: str) -> None:
    result = run("mmap_after_verify", base, user)
    assert result["written"], result
    refused(result, "src/app.py")
    assert result["paths"]["src/app.py"] == "bash"


@pytest.mark.parametrize("user", USERS)
def test_a_check_that_writes_through_a_mapping_fails_the_report(base: Path, user: str) -> None:
    result = run("mmap_during_verify", base, user)
    assert not result["report_passed"], result
    assert result["statuses"]["workspace-unchanged"] == "failed", result
    refused(result, "src/app.py")


@pytest.mark.parametrize("user", USERS)
@pytest.mark.parametrize("name", ["chmod_u_minus_x", "chmod_0200"])
def test_mode_only_changes(base: Path, user: str, name: str) -> None:
    result = run(name, base, user)
    refused(result, "run.sh", "src/app.py")


@pytest.mark.parametrize("user", USERS)
def test_the_same_bytes_after_a_chmod_do_not_restore_the_verified_digest(
    base: Path, user: str
) -> None:
    result = run("chmod_then_same_bytes", base, user)
    assert result["digest"] != result["verified_digest"], result
    refused(result, "run.sh")


@pytest.mark.parametrize("user", ["root"])  # the handler runs in this process
def test_a_host_tool_that_writes_is_booked_to_it(base: Path, user: str) -> None:
    result = run("host_tool", base, user)
    refused(result, "src/app.py")
    assert result["paths"]["src/app.py"] == "fixer"


@pytest.mark.parametrize("user", USERS)
def test_a_writer_outside_any_call_is_seen(base: Path, user: str) -> None:
    result = run("timer", base, user)
    refused(result, "src/app.py")
    assert result["paths"]["src/app.py"] == "external"


@pytest.mark.parametrize("user", USERS)
def test_a_snapshot_that_fails_fails_closed(base: Path, user: str) -> None:
    result = run("root_unreadable", base, user)
    first = result["first"]
    refused(first, ".")  # unknown where: the whole workspace
    # nobody: the command's own "after" failed; root reads the mode-0 directory, and the
    # snapshot fails later, when the host moved the workspace away
    assert first["paths"]["."] == ("bash" if user == "nobody" else "external"), first
    # readable again: the next snapshot walks and names what the command changed
    refused(result, "src/app.py")


@pytest.mark.parametrize("user", USERS)
def test_a_directory_hidden_by_mode_0300(base: Path, user: str) -> None:
    result = run("dir_0300", base, user)
    refused(result, "src", "src/app.py")
    if user == "nobody":
        assert result["paths"]["src"] == "bash" and result["uncertain"], result


@pytest.mark.parametrize("user", USERS)
def test_commands_that_only_read_complete_without_verification(base: Path, user: str) -> None:
    result = run("nothing_changed", base, user)
    assert result["completed"], result
    assert result["detection"]["uncertain"] == [], result
    assert result["after_verified_turn"]["completed"], result


def test_past_the_watch_budget_a_call_needs_evidence_and_a_waiver_holds(
    tmp_path: Path, fs_boundary_ready: None
) -> None:
    """Directories without a watch: a call that could write there counts as a change (a
    write through a mapping would name no file); between calls nothing is booked, so the
    host's waiver of the state after the call holds and completes the turn."""
    from codeward import Agent, SessionOptions
    from codeward.verification import SnapshotTracker, _inotify

    root = tmp_path / "ws"
    root.mkdir()
    for d in range(4):
        (root / f"d{d}").mkdir()
    with Agent().session(root, SessionOptions()) as session:
        tracker = SnapshotTracker(root, watch_hub=_inotify.WatchHub(budget=2))
        session._tracking._tracker = tracker  # the same tracker, with a tiny budget
        assert session.complete_turn("nothing yet").completed  # no call: nothing booked
        result = session.bash("cat d0/x 2>/dev/null; true")
        assert result.metadata["workspace_uncertain"], result.metadata
        assert "watch budget" in " ".join(result.metadata["workspace_uncertain"])
        outcome = session.complete_turn("done")
        assert not outcome.completed and session._ledger.get(".") is not None
        summary = session.verification_summary()
        session.waive(summary["effect_digest"], "reviewed", turn=summary["turn"])
        assert session.complete_turn("done").completed
