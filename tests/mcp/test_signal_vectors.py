"""The shared owned-process signal vectors (tests/vectors/owned_signals.json) in Python.

Node (bindings/node/test/signal-vectors.test.js) and Go
(bindings/go/signal_vectors_test.go) run the same file: what each language
takes as a signal, the error kind of what it refuses, and how a stop whose
first signal is the caller's ends a real sandboxed program.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from mcpkit import wait_for

from codeward import _native
from codeward.mcp import _process
from codeward.sandbox._locate import find_bwrap, init_path

VECTORS = json.loads(
    (Path(__file__).resolve().parents[1] / "vectors" / "owned_signals.json").read_text()
)
ERRORS = {"argument": ValueError}


def _expect(case: dict[str, Any]) -> Any:
    return case.get("python", case["expect"])


def _spawn(workspace: Path, args: list[str], grace_ms: int) -> _process.OwnedProcess:
    bwrap, init = find_bwrap(str(workspace)), init_path()
    if bwrap is None or init is None:
        pytest.fail("bubblewrap and the init are needed for the signal vectors")
    handle = _native.Sandbox(str(workspace), init, bwrap=bwrap, init_sha256=_native.INIT_SHA256)
    child, stdin, stdout, stderr = handle.spawn("/bin/sh", args, [], grace_ms=grace_ms)
    return _process.OwnedProcess(child, stdin, stdout, stderr, handle)


def _close(process: _process.OwnedProcess) -> None:
    process.stop()
    for fd in (process.stdin, process.stdout, process.stderr):
        os.close(fd)


def _holding(text: str) -> list[int]:
    """Host pids whose command line holds ``text`` (the workspace is this test's own)."""
    needle = text.encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if needle in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(int(entry))
            except OSError:
                continue
    return found


def test_the_vectors_are_well_formed() -> None:
    names = [c["name"] for c in VECTORS["signals"] + VECTORS["behaviour"]]
    assert len(names) == len(set(names))
    assert len(VECTORS["signals"]) >= 12 and len(VECTORS["behaviour"]) >= 3


def test_what_each_signal_is(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # an ended program: an accepted signal sends nothing and a stop returns its status
    process = _spawn(tmp_path, ["-c", "exit 5"], 120_000)
    try:
        assert process.wait(60_000) == 5
        for case in VECTORS["signals"]:
            expect = _expect(case)
            if expect == "not_representable":
                continue
            sig = case["signal"]
            if "refused" in expect:
                error = ERRORS[expect["refused"]]
                with pytest.raises(error, match="not a signal number"):
                    process.send_signal(sig)
                with pytest.raises(error, match="not a signal number"):
                    process.stop(sig)
            else:
                assert sig == expect["number"], case["name"]
                process.send_signal(sig)
                assert process.stop(sig) == 5, case["name"]
    finally:
        _close(process)


@pytest.mark.parametrize("case", VECTORS["behaviour"], ids=lambda c: c["name"])
def test_how_a_stop_ends_a_program(tmp_path, case) -> None:  # type: ignore[no-untyped-def]
    script = tmp_path / (case["name"] + ".sh")
    script.write_text(case["script"])
    process = _spawn(tmp_path, [str(script)], case["kill_grace_ms"])
    try:
        assert os.read(process.stdout, 64) == b"ready\n"
        assert wait_for(lambda: len(_holding(str(script))) >= case["running"], 30.0)
        expect = case["expect"]
        started = time.monotonic()
        assert process.stop(getattr(signal, case["stop"])) == expect["status"]
        elapsed_ms = (time.monotonic() - started) * 1000
        if expect["before_grace"]:
            assert elapsed_ms < case["kill_grace_ms"], "the stop waited the grace"
        else:
            assert elapsed_ms >= case["kill_grace_ms"] - 50, "killed before the grace"
        marker = Path(str(script) + ".marker")
        if expect["marker"] is None:
            assert not marker.exists()
        else:
            assert marker.read_text() == expect["marker"]
        assert len(_holding(str(script))) == expect["left"]
    finally:
        _close(process)
