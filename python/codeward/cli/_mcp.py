"""``codeward mcp list``: start each configured MCP server, list its tools and their decisions."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._parser import _Commands

MODES = ("default", "plan", "auto")


def register(commands: _Commands) -> None:
    p = commands.add_parser(
        "mcp",
        description=(
            "Inspect MCP stdio servers configured in a .mcp.json file, or serve a session's "
            "tools to an MCP client."
        ),
    )
    sub = p.add_subparsers(dest="mcp_command", metavar="SUBCOMMAND", parser_class=type(p))
    sub.required = True
    ls = sub.add_parser(
        "list",
        help="start each server, list its tools and the decision of each mode, stop it",
        description=(
            "Start every stdio server of the configuration (on the host, or in its own "
            'sandbox when its entry says "sandbox"), list its tools with their annotations '
            "and the decision the kernel would give a model's call in each mode (default, "
            "plan, auto), with --policy applied if given, then stop the server and everything "
            "it started. This runs the commands the file names: use it on files you trust. "
            "Exit status 0, or 1 when a server could not be started or listed."
        ),
        epilog=(
            "examples:\n"
            "  codeward mcp list\n"
            "  codeward mcp list --config ~/project/.mcp.json --policy policy.yaml\n"
            "  codeward mcp list --json | jq '.[].tools[].name'"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ls.add_argument(
        "--config", metavar="FILE", default=".mcp.json", help="the file (default: ./.mcp.json)"
    )
    ls.add_argument(
        "--workspace",
        metavar="DIR",
        help="the workspace sandboxed servers run over (default: the file's directory)",
    )
    ls.add_argument("--policy", metavar="FILE", help="a permission policy (YAML or JSON)")
    ls.add_argument("--json", action="store_true", help="print one JSON array")
    ls.set_defaults(run=run_list)
    from ._serve import register as register_serve

    register_serve(sub)


def run_list(args: argparse.Namespace) -> int:
    # imported here: the other commands do not pay for the MCP client
    from ..mcp import McpClient, McpError, load_mcp_config
    from ..mcp._text import one_line
    from ..policy import PermissionPolicy

    config = load_mcp_config(args.config)
    policy = PermissionPolicy.from_file(args.policy) if args.policy else None
    workspace = os.path.realpath(args.workspace or os.path.dirname(os.path.abspath(args.config)))
    report: list[dict[str, Any]] = []
    failed = False
    for server in config.servers:
        entry: dict[str, Any] = {"server": server.name, "sandboxed": server.sandbox is not None}
        try:
            with McpClient(server, workspace=workspace) as client:
                entry["server_info"] = {
                    k: one_line(v, 80)
                    for k, v in client.server_info.items()
                    if k in ("name", "version", "title")
                }
                entry["protocol_version"] = client.protocol_version
                entry["owned"] = client.owned  # in a pid namespace or a cgroup of its own
                entry["ownership"] = client.ownership
                entry["tools"] = _tools(client.list_tools(), server.name, workspace, policy)
        except McpError as exc:
            failed = True
            entry["error"] = str(exc)
        report.append(entry)
    for name, reason in config.skipped:
        report.append({"server": name, "skipped": reason})
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print(report)
    return 1 if failed else 0


def _tools(infos: list[Any], server: str, workspace: str, policy: Any) -> list[dict[str, Any]]:
    from ..mcp._text import one_line
    from ..mcp._tools import tool_name

    names = [tool_name(server, info.name) for info in infos]
    decisions = _decisions(
        [(n, i.annotations) for n, i in zip(names, infos, strict=True)], workspace, policy
    )
    return [
        {
            "name": name,
            "title": one_line(info.title, 80) if info.title else None,
            "annotations": {k: v for k, v in info.annotations.items() if k != "title"},
            "decisions": decisions[name],
        }
        for name, info in zip(names, infos, strict=True)
    ]


def _decisions(
    tools: list[tuple[str, Any]], workspace: str, policy: Any
) -> dict[str, dict[str, str]]:
    """What the real kernel decides for a model's call of each tool in each mode (a dry run:
    allowed calls go to stand-ins that do nothing, asks are answered no)."""
    from ..hitl import ConfirmationManager, ConfirmationPolicy
    from ..hooks import HookRegistry
    from ..kernel import (
        CallScope,
        ExternalTool,
        InvocationKernel,
        Mode,
        Origin,
        ToolAnnotations,
        ToolCall,
        ToolRegistry,
    )
    from ..sandbox import UnavailableBashSandbox
    from ..workspace import Workspace

    registry = ToolRegistry(
        ExternalTool(
            name, lambda _args: "", {"type": "object"}, ToolAnnotations.from_mapping(hints)
        )
        for name, hints in tools
    )
    boundary = UnavailableBashSandbox(workspace, "codeward mcp list runs no commands")
    kernel = InvocationKernel(
        session_id="mcp-list",
        workspace=Workspace(workspace),
        sandbox=boundary,
        registry=registry,
        hooks=HookRegistry(),
        confirmations=ConfirmationManager(ConfirmationPolicy()),
        recorder=None,
        host_sandbox_factory=lambda: boundary,
    )

    class _AnswersNo:
        def request(self, confirmation: Any) -> bool:
            return False

    out: dict[str, dict[str, str]] = {}
    for name, _ in tools:
        out[name] = {}
        for mode in MODES:
            scope = CallScope("mcp-list", Mode(mode), policy, _AnswersNo())
            outcome = kernel.invoke(ToolCall(f"list-{mode}", name, {}), Origin.MODEL, [scope])
            out[name][mode] = outcome.decision.value
    return out


def _hints(annotations: dict[str, Any]) -> str:
    from ..kernel import ToolAnnotations

    parsed = ToolAnnotations.from_mapping(annotations)
    kind = "side effects" if parsed.side_effecting else "read-only"
    shown = ", ".join(f"{k}={json.dumps(v)}" for k, v in sorted(annotations.items()))
    return f"{kind} ({shown or 'no annotations'})"


def _print(report: list[dict[str, Any]]) -> None:
    out = sys.stdout
    for entry in report:
        name = entry["server"]
        if "skipped" in entry:
            print(f"server {name}: skipped, {entry['skipped']}", file=out)
            continue
        if "error" in entry:
            print(f"server {name}: FAILED: {entry['error']}", file=out)
            continue
        info = entry["server_info"]
        where = "in a sandbox" if entry["sandboxed"] else "on the host"
        if not entry["sandboxed"]:
            where += (
                " (UNOWNED: it can escape close())"
                if not entry.get("owned")
                else " (owned by a cgroup: it can read the host's /proc)"
                if entry.get("ownership") == "cgroup"
                else " (owned)"
            )
        print(
            f"server {name}: {info.get('name', '?')} {info.get('version', '')}, protocol "
            f"{entry['protocol_version']}, {where}, {len(entry['tools'])} tools",
            file=out,
        )
        width = max([len(t["name"]) for t in entry["tools"]] + [4])
        print(f"  {'TOOL':<{width}}  DEFAULT PLAN    AUTO    ANNOTATIONS", file=out)
        for tool in entry["tools"]:
            d = tool["decisions"]
            print(
                f"  {tool['name']:<{width}}  {d['default']:<7} {d['plan']:<7} {d['auto']:<7} "
                f"{_hints(tool['annotations'])}",
                file=out,
            )
