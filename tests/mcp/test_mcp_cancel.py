"""Cancelling an MCP tool call (issue 26): the request ends at once, the server is told.

``call_tool(..., cancel=event)`` and, through the kernel, ``session.invoke(call,
cancel=event)``: once the event is set the caller stops waiting, the pending
request is freed and the server gets ``notifications/cancelled``; the call's
outcome says ``cancelled``. The server here never answers (hostile.py
never-answer), so only the cancel can end the wait before its long timeout.
"""

from __future__ import annotations

import sys
import threading
import time

import pytest
from mcpkit import SERVERS, NoBash, RecordingProvider, hostile_config, wait_for

from codeward import Agent, SessionOptions
from codeward.kernel import ToolCall
from codeward.mcp import McpClient, McpError
from codeward.mcp._errors import McpCancelled
from codeward.tools import ErrorKind

LONG_MS = 120_000  # the request's own timeout: a cancel ends it long before


def test_a_cancelled_call_ends_and_the_server_is_told() -> None:
    cancel = threading.Event()
    with McpClient(hostile_config("never-answer")) as client:
        threading.Timer(0.3, cancel.set).start()
        started = time.monotonic()
        with pytest.raises(McpCancelled) as caught:
            client.call_tool("work", {}, timeout_ms=LONG_MS, cancel=cancel)
        assert time.monotonic() - started < LONG_MS / 1000
        assert isinstance(caught.value, McpError) and caught.value.method == "tools/call"
        assert not client.transport._state.pending, "the pending entry was not freed"
        assert wait_for(lambda: "cancelled " in client.stderr_tail(), 5), client.stderr_tail()
        assert [t.name for t in client.list_tools()] == ["work"]  # still connected


def test_a_session_call_to_an_mcp_tool_is_cancelled(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ws = tmp_path / "ws"
    ws.mkdir()
    # the tool has no annotations (side effects): approved by the host's provider
    options = SessionOptions(confirmation_provider=RecordingProvider(True), sandbox_handle=NoBash())
    with Agent().session(ws, options) as session:
        args = [str(SERVERS / "hostile.py"), "never-answer"]
        names = session.add_mcp_server("h", sys.executable, args, request_timeout_ms=LONG_MS)
        cancel = threading.Event()
        threading.Timer(0.3, cancel.set).start()
        out = session.invoke(ToolCall("m1", names[0], {}), cancel=cancel)
        assert out.executed and out.cancelled
        assert out.result is not None and out.result.error_kind is ErrorKind.CANCELLED
