"""``codeward mcp serve``: the session's tools over MCP on stdio (docs/integrations.md)."""

from __future__ import annotations

import argparse
import os
from typing import Any

EPILOG = """\
Claude Code (.mcp.json in the project, or: claude mcp add codeward -- codeward mcp serve
--workspace .):
  {
    "mcpServers": {
      "codeward": {
        "command": "codeward",
        "args": ["mcp", "serve", "--workspace", ".", "--policy", "policy.yaml"]
      }
    }
  }

Codex (~/.codex/config.toml):
  [mcp_servers.codeward]
  command = "codeward"
  args = ["mcp", "serve", "--workspace", "/path/to/repo"]

Cursor: the same JSON as Claude Code, in .cursor/mcp.json. See docs/integrations.md."""


def register(sub: Any) -> None:
    """Adds ``serve`` to the ``mcp`` subcommands."""
    p = sub.add_parser(
        "serve",
        help="serve a session's tools (bash, read, write ...) to an MCP client over stdio",
        description=_wrap(
            "Serve the tools of one codeward session over DIR to an MCP client on stdin and "
            "stdout: bash, read, write, edit, patch, search, ls, git, download, verify and "
            "complete_turn. Every call is decided and run by the kernel (guardrails, mode, "
            "policy, confirmation) as session.invoke does, bash in one long-lived sandbox. "
            "Confirmations are asked through MCP elicitation when the client supports it; "
            "otherwise an ask is refused, and the result names the rule that asked. When the "
            "client closes stdin or exits, every call is cancelled and the sandbox ends."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--workspace", metavar="DIR", required=True, help="the workspace")
    p.add_argument("--policy", metavar="FILE", help="a permission policy (YAML or JSON)")
    p.add_argument(
        "--mode", choices=("default", "plan", "auto"), default="default", help="default: default"
    )
    p.add_argument(
        "--confirm-timeout-ms",
        type=int,
        metavar="N",
        help="how long a confirmation waits for the client's answer (default 30000)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    # imported here: the other commands do not pay for the server
    from ..mcpserver import serve
    from ..policy import PermissionPolicy

    policy = PermissionPolicy.from_file(args.policy) if args.policy else None
    return serve(
        os.path.realpath(args.workspace),
        policy=policy,
        mode=args.mode,
        confirm_timeout_ms=args.confirm_timeout_ms,
    )


def _wrap(text: str) -> str:
    """The description as argparse's raw formatter shows it: wrapped by hand."""
    import textwrap

    return textwrap.fill(text, width=78)
