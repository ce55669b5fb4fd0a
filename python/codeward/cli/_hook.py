"""``codeward hook claude-code``: Claude Code's PreToolUse and PermissionRequest hooks."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._parser import _Commands

MAX_INPUT = 64 * 1024 * 1024  # bytes of hook input read; more is refused

EPILOG = """\
Claude Code settings (.claude/settings.json):
  {
    "hooks": {
      "PreToolUse": [
        {
          "matcher": "Bash|Read|Write|Edit|MultiEdit|Glob|Grep|WebFetch|NotebookEdit|mcp__.*",
          "hooks": [
            {"type": "command",
             "command": "codeward hook claude-code --policy policy.yaml --sandbox-bash"}
          ]
        }
      ]
    }
  }
See docs/integrations.md."""


def register(commands: _Commands) -> None:
    p = commands.add_parser(
        "hook",
        description="Answer an agent's permission hook with codeward's kernel.",
    )
    sub = p.add_subparsers(dest="hook_command", metavar="AGENT", parser_class=type(p))
    sub.required = True
    cc = sub.add_parser(
        "claude-code",
        help="Claude Code's PreToolUse and PermissionRequest hooks",
        description=_wrap(
            "Read one Claude Code hook input (PreToolUse or PermissionRequest) on stdin, map "
            "the tool call to codeward's tool (Bash to bash, Read to read, Write to write, "
            "Edit, MultiEdit and NotebookEdit to edit, Glob and Grep to search, WebFetch and "
            "mcp__* to side-effecting external tools), let the kernel decide it (guardrails, "
            "mode, --policy), and print the hook's answer: allow, deny or ask, with the "
            "kernel's reason. With --sandbox-bash an allowed or asked Bash command is "
            "rewritten to run through `codeward exec` in the workspace. Input that cannot "
            "be read, an unknown event or any error is answered deny. Exit status 0."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cc.add_argument(
        "--workspace",
        metavar="DIR",
        help="the workspace (default: $CLAUDE_PROJECT_DIR, else the input's cwd)",
    )
    cc.add_argument("--policy", metavar="FILE", help="a permission policy (YAML or JSON)")
    cc.add_argument(
        "--mode",
        choices=("default", "plan", "auto"),
        default="default",
        help="default: default (Claude Code's plan mode makes it plan)",
    )
    cc.add_argument(
        "--sandbox-bash",
        action="store_true",
        help="run Bash commands through `codeward exec` in the workspace's sandbox",
    )
    cc.set_defaults(run=run_claude_code)


def run_claude_code(args: argparse.Namespace) -> int:
    from ..agenthooks import deny_answer

    event = "PreToolUse"
    try:
        raw = sys.stdin.buffer.read(MAX_INPUT + 1)
        if len(raw) > MAX_INPUT:
            answer = deny_answer(event, f"the hook input is over {MAX_INPUT} bytes")
        else:
            payload = json.loads(raw)
            if not isinstance(payload, dict):
                answer = deny_answer(event, "the hook input is not a JSON object")
            else:
                if payload.get("hook_event_name") == "PermissionRequest":
                    event = "PermissionRequest"
                answer = _decide(payload, args)
    except Exception as exc:  # fail closed: anything unexpected is a deny
        answer = deny_answer(event, f"cannot decide ({type(exc).__name__}: {exc})")
    sys.stdout.write(json.dumps(answer.output) + "\n")
    sys.stdout.flush()
    return 0


def _decide(payload: dict[str, Any], args: argparse.Namespace) -> Any:
    from ..agenthooks import answer_claude_code
    from ..policy import PermissionPolicy

    policy = PermissionPolicy.from_file(args.policy) if args.policy else None
    return answer_claude_code(
        payload,
        workspace=args.workspace,
        policy=policy,
        mode=args.mode,
        sandbox_bash=args.sandbox_bash,
    )


def _wrap(text: str) -> str:
    """The description as argparse's raw formatter shows it: wrapped by hand."""
    import textwrap

    return textwrap.fill(text, width=78)
