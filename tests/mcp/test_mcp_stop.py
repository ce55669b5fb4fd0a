"""Stopping an owned server is graceful: SIGTERM reaches it first, in every mode.

A sandbox's init is PID 1 of its pid namespace and takes no signal from
outside it, so a stop that signalled the init never reached a sandboxed
server: every close waited the whole grace and ended in SIGKILL (137). The
host now asks the init over the lifeline to send the signal. Each case
gives a grace far longer than the test could wait: a server whose TERM
handler writes a marker to the workspace and exits 0 returns 0 from
close(), which only its own handler can make it return; one that ignores
TERM is still killed after the grace, with everything it started.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from mcpkit import hostile_config, new_marker, sleeping, wait_for

from codeward import _native
from codeward.mcp import McpClient, McpSandbox, _process
from codeward.sandbox._locate import find_bwrap, init_path

LONG_GRACE_MS = 120_000  # what a stop that did not deliver TERM would wait

TRAPPING = """\
trap 'echo stopped > "$0.term"; exit 0' TERM
trap 'echo usr1 >> "$0.usr1"' USR1
trap 'exit 3' INT
echo ready
while :; do sleep 1; done
"""


def _boxed_script(workspace: Path, text: str) -> str:
    script = workspace / "server.sh"
    script.write_text(text)
    script.chmod(0o755)
    return str(script)


@pytest.mark.parametrize("where", ["sandbox", "host"])
def test_close_gives_the_server_term_first(tmp_path, where) -> None:  # type: ignore[no-untyped-def]
    marker = tmp_path / "term.txt"
    if where == "sandbox":
        config = hostile_config(
            "term-handler",
            str(marker),
            sandbox=McpSandbox(writable_workspace=True),
            workspace=tmp_path,
            kill_grace_ms=LONG_GRACE_MS,
        )
    else:
        config = hostile_config("term-handler", str(marker), kill_grace_ms=LONG_GRACE_MS)
    client = McpClient(config, workspace=tmp_path)
    assert client.sandboxed == (where == "sandbox")
    started = time.monotonic()
    code = client.close()
    # its own status, long before the grace: the TERM handler ran and exited 0
    assert code == 0, f"closed with {code}: TERM did not reach the server"
    assert time.monotonic() - started < LONG_GRACE_MS / 1000
    assert marker.read_text() == "terminated"


def test_a_sandboxed_server_ignoring_term_is_killed_with_its_tree(tmp_path) -> None:  # type: ignore[no-untyped-def]
    marker = new_marker()
    config = hostile_config(
        "stubborn", marker, sandbox=McpSandbox(), workspace=tmp_path, kill_grace_ms=300
    )
    client = McpClient(config, workspace=tmp_path)
    assert wait_for(lambda: len(sleeping(marker)) == 1)
    assert client.close() == 128 + signal.SIGKILL
    assert not sleeping(marker), "the setsid daemon outlived close()"


def _sandbox(workspace: Path, reuse: bool) -> _native.Sandbox:
    bwrap, init = find_bwrap(str(workspace)), init_path()
    if bwrap is None or init is None:
        pytest.fail("bubblewrap and the init are needed for the sandboxed cases")
    return _native.Sandbox(
        str(workspace), init, bwrap=bwrap, reuse=reuse, init_sha256=_native.INIT_SHA256
    )


def _start(workspace: Path, text: str, reuse: bool, grace_ms: int):  # type: ignore[no-untyped-def]
    handle = _sandbox(workspace, reuse)
    script = _boxed_script(workspace, text)
    child, stdin, stdout, stderr = handle.spawn("/bin/sh", [script], [], grace_ms=grace_ms)
    process = _process.OwnedProcess(child, stdin, stdout, stderr, handle)
    assert process.sandboxed
    assert os.read(process.stdout, 64) == b"ready\n"
    return process, script


def _close(process: _process.OwnedProcess) -> None:
    process.stop()
    for fd in (process.stdin, process.stdout, process.stderr):
        os.close(fd)


@pytest.mark.parametrize("reuse", [False, True], ids=["one-shot", "long-lived"])
def test_signals_reach_a_sandboxed_program(tmp_path, reuse) -> None:  # type: ignore[no-untyped-def]
    process, script = _start(tmp_path, TRAPPING, reuse, LONG_GRACE_MS)
    try:
        process.send_signal(signal.SIGUSR1)
        assert wait_for(lambda: Path(script + ".usr1").exists())
        assert process.running()  # a signal is not a stop
        process.terminate()
        assert process.wait(60_000) == 0
        assert Path(script + ".term").read_text() == "stopped\n"
        process.send_signal(signal.SIGTERM)  # ended: nothing to signal, no error
        assert process.stop() == 0
    finally:
        _close(process)


@pytest.mark.parametrize("reuse", [False, True], ids=["one-shot", "long-lived"])
def test_stop_returns_the_status_the_handler_gives(tmp_path, reuse) -> None:  # type: ignore[no-untyped-def]
    process, script = _start(tmp_path, TRAPPING, reuse, LONG_GRACE_MS)
    try:
        assert process.stop() == 0
        assert Path(script + ".term").read_text() == "stopped\n"
    finally:
        _close(process)
    process, _ = _start(tmp_path, TRAPPING, reuse, LONG_GRACE_MS)
    try:
        assert process.stop(signal.SIGINT) == 3  # the first signal chosen by the caller
    finally:
        _close(process)


def test_a_program_ignoring_term_is_killed_after_the_grace(tmp_path) -> None:  # type: ignore[no-untyped-def]
    marker = new_marker()
    text = (
        "trap '' TERM\n"
        f"setsid sh -c 'trap \"\" TERM; exec sleep {marker}' </dev/null >/dev/null 2>&1 &\n"
        f"echo ready\nsleep {marker}9\n"
    )
    process, _ = _start(tmp_path, text, False, 300)
    try:
        # the daemon's `sleep MARKER` and the program's `sleep MARKER9` (sleeping() matches both)
        assert wait_for(lambda: len(sleeping(marker)) == 2)
        started = time.monotonic()
        assert process.stop() == 128 + signal.SIGKILL
        assert time.monotonic() - started >= 0.25  # only after the grace
        assert not sleeping(marker), "the tree outlived stop()"
    finally:
        _close(process)


def test_what_is_no_signal_is_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    process, _ = _start(tmp_path, TRAPPING, False, LONG_GRACE_MS)
    try:
        for bad in (0, -1, 65, True, 1.5, "TERM"):
            with pytest.raises(ValueError, match="not a signal number"):
                process.send_signal(bad)  # type: ignore[arg-type]
            with pytest.raises(ValueError, match="not a signal number"):
                process.stop(bad)  # type: ignore[arg-type]
        assert process.running()
    finally:
        _close(process)


def test_a_host_server_gets_the_signals_a_client_sends(tmp_path) -> None:  # type: ignore[no-untyped-def]
    marker = tmp_path / "term.txt"
    config = hostile_config("term-handler", str(marker), kill_grace_ms=LONG_GRACE_MS)
    with McpClient(config) as client:
        client.send_signal(signal.SIGTERM)
        assert client.transport.process.wait(60_000) == 0
    assert marker.read_text() == "terminated"
