"""A JSON-RPC client over bare blocking pipes, the floor of both MCP benchmarks.

One request at a time, no threads, no timeouts, no ownership: what any client must at least
spend (bench/mcp/run.py measures codeward's client against it, bench/mcp/serve.py codeward's
server through it).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from typing import Any


class PipeClient:
    """The program ``argv`` behind bare pipes, initialized as an MCP client named ``name``."""

    def __init__(self, argv: Sequence[str], name: str, *, quiet: bool = False) -> None:
        self.proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL if quiet else None,
        )
        self.ids = 0
        self.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": name, "version": "0"},
            },
        )
        self.write({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def write(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> Any:
        """Sends one request and reads until its answer; its result."""
        assert self.proc.stdout is not None
        self.ids += 1
        self.write({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params})
        while True:
            message = json.loads(self.proc.stdout.readline())
            if message.get("id") == self.ids:
                return message["result"]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()
