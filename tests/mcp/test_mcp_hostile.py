"""Hostile servers against the transport: floods, huge lines, daemons, deaf and dying servers.

Each server is a small script (servers/hostile.py) run as a real process
under the real owned-process primitive; memory is this process's RSS.
"""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from mcpkit import SERVERS, hostile_config, new_marker, rss_bytes, sleeping, wait_for

from codeward.mcp import (
    MAX_LINE,
    McpClient,
    McpConnectionError,
    McpProtocolError,
    McpStartError,
    McpTimeout,
)

MB = 1024 * 1024


def test_well_behaved_round_trip_and_pagination() -> None:
    with McpClient(hostile_config("paginate")) as client:
        assert client.protocol_version == "2025-06-18"
        names = [t.name for t in client.list_tools()]
        assert names == [f"tool_{p}_{i}" for p in range(3) for i in range(2)]
        result = client.call_tool("tool_0_0", {"x": [1, "two"]})
        assert result.content[0]["text"] == '{"x": [1, "two"]}'


def test_stderr_flood_keeps_the_protocol_flowing_and_memory_flat() -> None:
    with McpClient(hostile_config("stderr-flood", "100")) as client:
        base = rss_bytes()
        calls = 0
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert client.call_tool("work", {"n": calls}).content[0]["text"] == f'{{"n": {calls}}}'
            calls += 1
            if calls % 20 == 0 and client.stderr_tail().endswith("flood done\n"):
                break
        grown = rss_bytes() - base
        tail = client.stderr_tail()
    assert "flood done" in tail, "the 100 MB of stderr were not drained"
    assert calls > 0
    assert len(tail) <= 64 * 1024 + 1024  # the ring, escaped and clipped
    assert grown < 16 * MB, f"host RSS grew by {grown / MB:.1f} MB while draining 100 MB"


def test_a_100_mb_line_closes_with_a_clear_error_and_memory_flat() -> None:
    client = McpClient(hostile_config("long-line", "100"))
    base = rss_bytes()
    with pytest.raises(McpProtocolError, match="longer than 8388608 bytes"):
        client.call_tool("work", {})
    grown = rss_bytes() - base
    assert grown < MAX_LINE + 24 * MB, f"host RSS grew by {grown / MB:.1f} MB"
    assert client.closed
    with pytest.raises(McpProtocolError):  # requests on a closed transport fail at once
        client.call_tool("work", {})
    assert client.close() is not None  # the server was stopped: nothing read its output


def test_setsid_daemon_is_gone_after_close() -> None:
    marker = new_marker()
    client = McpClient(hostile_config("daemon", marker))
    assert wait_for(lambda: len(sleeping(marker)) == 1), "the daemon did not start"
    client.close()
    assert wait_for(lambda: not sleeping(marker), 3), f"daemon survived close(): {sleeping(marker)}"


def test_setsid_daemon_is_gone_after_garbage_collection() -> None:
    marker = new_marker()
    client = McpClient(hostile_config("daemon", marker))
    assert wait_for(lambda: len(sleeping(marker)) == 1)
    del client
    gc.collect()
    assert wait_for(lambda: not sleeping(marker), 5), "daemon survived the client's collection"


def test_setsid_daemon_is_gone_after_the_host_is_sigkilled(tmp_path) -> None:  # type: ignore[no-untyped-def]
    marker = new_marker()
    host = tmp_path / "host.py"
    host.write_text(
        textwrap.dedent(
            f"""
            import sys, time
            sys.path.insert(0, {str(SERVERS.parent)!r})
            from mcpkit import hostile_config
            from codeward.mcp import McpClient
            client = McpClient(hostile_config("daemon", {marker!r}))
            print("ready", flush=True)
            time.sleep(600)
            """
        )
    )
    proc = subprocess.Popen([sys.executable, str(host)], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        assert wait_for(lambda: len(sleeping(marker)) == 1)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert wait_for(lambda: not sleeping(marker), 3), "the daemon outlived its host's SIGKILL"


def test_a_server_ignoring_term_is_killed_after_the_grace() -> None:
    client = McpClient(hostile_config("ignore-term", kill_grace_ms=300))
    supervisor = client.pid
    started = time.monotonic()
    status = client.close()
    took = time.monotonic() - started
    assert status == 128 + signal.SIGKILL
    assert took >= 0.3, f"killed before the grace period: {took:.3f} s"
    assert not os.path.exists(f"/proc/{supervisor}")


def test_a_server_that_never_answers_times_out_and_is_cancelled() -> None:
    with McpClient(hostile_config("never-answer")) as client:
        with pytest.raises(McpTimeout) as caught:
            client.call_tool("work", {}, timeout_ms=300)
        assert caught.value.method == "tools/call" and caught.value.timeout_ms == 300
        assert not client.transport._state.pending, "the pending entry was not freed"
        assert wait_for(lambda: "cancelled " in client.stderr_tail(), 5), client.stderr_tail()
        assert [t.name for t in client.list_tools()] == ["work"]  # still connected


def test_a_server_exiting_mid_request_fails_every_pending_request_at_once() -> None:
    client = McpClient(hostile_config("exit-mid"))
    errors: list[BaseException] = []

    def call() -> None:
        try:
            client.call_tool("work", {}, timeout_ms=60_000)
        except BaseException as exc:
            errors.append(exc)

    started = time.monotonic()
    threads = [threading.Thread(target=call) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert time.monotonic() - started < 20  # not the 60 s timeout
    assert len(errors) == 3
    for exc in errors:
        assert isinstance(exc, McpConnectionError) and exc.exit_code == 3, exc
        assert "exited with status 3" in str(exc)
    started = time.monotonic()
    with pytest.raises(McpConnectionError):
        client.call_tool("work", {})
    assert time.monotonic() - started < 1
    client.close()


def test_malformed_lines_are_skipped_and_counted() -> None:
    with McpClient(hostile_config("malformed")) as client:
        for n in range(3):
            assert client.call_tool("work", {"n": n}).content[0]["text"] == f'{{"n": {n}}}'
        assert client.transport._state.malformed == 9


def test_a_garbage_flood_closes_the_transport() -> None:
    client = McpClient(hostile_config("garbage-flood"))
    with pytest.raises(McpProtocolError, match="malformed"):
        client.call_tool("work", {})
    client.close()


def test_a_notification_storm_neither_stalls_nor_grows_memory() -> None:
    with McpClient(hostile_config("storm", "50000")) as client:
        changes = []

        def refresh() -> None:  # what a session does: one tools/list per wake-up
            changes.append(1)
            client.list_tools()

        client.on_tools_changed(refresh)
        base = rss_bytes()
        assert (
            client.call_tool("work", {"a": 1}, timeout_ms=60_000).content[0]["text"] == '{"a": 1}'
        )
        grown = rss_bytes() - base
        assert client.transport.notifications_received >= 50_000
        assert wait_for(lambda: len(changes) >= 1, 5)
    assert len(changes) < 100, f"{len(changes)} refreshes: list_changed was not coalesced"
    assert grown < 16 * MB, f"host RSS grew by {grown / MB:.1f} MB"


def test_an_unsupported_protocol_version_refuses_the_server() -> None:
    with pytest.raises(McpStartError, match="1999-01-01"):
        McpClient(hostile_config("old-version"))


def test_the_server_may_ping_and_is_told_what_is_not_supported() -> None:
    with McpClient(hostile_config("asks-client")) as client:
        client.call_tool("work", {})
        assert wait_for(lambda: "client answered s2" in client.stderr_tail(), 5)
        tail = client.stderr_tail()
    assert '"id": "s1", "result": {}' in tail
    assert '"id": "s2", "error": {"code": -32601' in tail


def test_a_missing_command_is_a_start_error() -> None:
    from codeward.mcp import McpServerConfig

    with pytest.raises(McpStartError, match="not found"):
        McpClient(McpServerConfig("nope", "codeward-no-such-mcp-server"))
    with pytest.raises(McpStartError, match="execve"):
        McpClient(McpServerConfig("nope", "/nonexistent/mcp-server"))


def test_names_and_texts_a_human_sees_are_escaped() -> None:
    from codeward.mcp import McpTool

    with McpClient(hostile_config("evil-meta")) as client:
        assert client.instructions == "read me\\u202e\\x07"
        tools = client.list_tools()
        assert [t.name for t in tools] == ["work"]  # the Cyrillic look-alike name is left out
        tool = McpTool(client, tools[0])
        assert tool.description == "\\x1b[31mred\\u202eevil"
        assert tool.model_schema()["description"] == tool.description
