"""``codeward replay``: run a recorded agent transcript through the kernel (policy and mode)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from typing import Any, TextIO

from ..hitl import ConfirmationPolicy, ConfirmationRequest, TerminalConfirmationProvider
from ..kernel import InvocationOutcome, Origin, ToolCall
from ..policy import PermissionPolicy
from ..session import Agent, SessionOptions

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._parser import _Commands

EXIT_BAD_LINES = 1


def register(commands: _Commands) -> None:
    p = commands.add_parser(
        "replay",
        description=(
            'Feed TRANSCRIPT (JSON lines: one {"id", "name", "args"} object per model tool '
            "call) through the invocation kernel of a session over DIR, in the given mode and "
            "with the given policy. Each confirmation is asked on the terminal (answer y to "
            "approve; anything else, end of input or the timeout rejects) unless its id is "
            "listed with --yes-to. Allowed calls really run: bash in the sandbox, writes in "
            "DIR. Prints every decision with its trace and the result. Exit status: 0, or 1 "
            "when some lines were not valid calls (they are reported and skipped)."
        ),
        epilog=(
            "examples:\n"
            "  codeward replay calls.jsonl --workspace ./repo --mode plan\n"
            "  codeward replay calls.jsonl --workspace ./repo --mode default "
            "--policy policy.yaml --yes-to call_7\n"
            "  codeward replay calls.jsonl --workspace ./repo --mode auto --json | jq .decision"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "transcript",
        metavar="TRANSCRIPT.jsonl",
        help="the calls, one JSON object a line ('-': stdin)",
    )
    p.add_argument(
        "--workspace", metavar="DIR", required=True, help="the workspace the calls act on"
    )
    p.add_argument("--mode", choices=("default", "plan", "auto"), required=True)
    p.add_argument("--policy", metavar="FILE", help="a permission policy (YAML or JSON)")
    p.add_argument(
        "--yes-to",
        metavar="ID",
        nargs="+",
        action="extend",
        default=[],
        help="approve the confirmation of these call ids without asking",
    )
    p.add_argument(
        "--confirm-timeout-ms",
        type=int,
        default=60_000,
        metavar="N",
        help="how long a terminal confirmation waits before it rejects (default 60000)",
    )
    p.add_argument("--allow-process-host-sandbox", action="store_true", help="as for exec")
    p.add_argument("--json", action="store_true", help="print one JSON object per call")
    p.set_defaults(run=run)


class _ReplayProvider:
    """Approves the ids given with --yes-to and asks the terminal about the rest."""

    def __init__(
        self, yes_to: set[str], terminal: TerminalConfirmationProvider, out: TextIO
    ) -> None:
        self.yes_to = yes_to
        self.terminal = terminal
        self.out = out

    def request(self, confirmation: ConfirmationRequest) -> bool:
        if confirmation.id in self.yes_to:
            print(f"  confirmation {confirmation.id}: approved by --yes-to", file=self.out)
            return True
        return self.terminal.request(confirmation)


def run(args: argparse.Namespace) -> int:
    policy = PermissionPolicy.from_file(args.policy) if args.policy else None
    # Status and prompts go to stderr so that --json output stays clean JSON lines.
    terminal = TerminalConfirmationProvider(input_stream=sys.stdin, output_stream=sys.stderr)
    options = SessionOptions(
        mode=args.mode,
        permission_policy=policy,
        confirmation_policy=ConfirmationPolicy(
            default_timeout_ms=args.confirm_timeout_ms, timeout_action="reject"
        ),
        confirmation_provider=_ReplayProvider(set(args.yes_to), terminal, sys.stderr),
        allow_process_host_sandbox=args.allow_process_host_sandbox,
    )
    bad = 0
    with Agent().session(args.workspace, options) as session:
        if not args.json:
            print(
                f"replaying {args.transcript} in {session.workspace} (mode {args.mode}, "
                f"sandbox {session.sandbox.backend})"
            )
        for lineno, call, error in _calls(args.transcript):
            if error is not None:
                bad += 1
                _report_bad(lineno, error, args.json)
                continue
            assert call is not None
            outcome = session.invoke(call, Origin.MODEL)
            if args.json:
                print(json.dumps({"line": lineno, **outcome.to_dict()}), flush=True)
            else:
                _print_outcome(lineno, outcome)
    return EXIT_BAD_LINES if bad else 0


def _calls(path: str) -> Iterator[tuple[int, ToolCall | None, str | None]]:
    stream = sys.stdin if path == "-" else open(path, encoding="utf-8", errors="replace")  # noqa: SIM115
    try:
        for lineno, line in enumerate(stream, 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            try:
                data: Any = json.loads(text)
                if not isinstance(data, dict):
                    raise ValueError("a line must be a JSON object")
                yield lineno, ToolCall.from_dict(data), None
            except (ValueError, TypeError) as exc:
                yield lineno, None, str(exc)
    finally:
        if stream is not sys.stdin:
            stream.close()


def _report_bad(lineno: int, error: str, as_json: bool) -> None:
    if as_json:
        print(json.dumps({"line": lineno, "error": error}), flush=True)
    else:
        print(f"line {lineno}: not a tool call: {error}")


def _print_outcome(lineno: int, outcome: InvocationOutcome) -> None:
    verdict = outcome.decision.value
    if outcome.approved is not None:
        verdict += " -> " + ("approved" if outcome.approved else "rejected")
    print(f"\nline {lineno}  {outcome.call_id}  {outcome.tool}: {verdict}")
    for entry in outcome.trace:
        print(f"  {entry.stage:<26} {entry.verdict:<8} {entry.reason}")
    if outcome.result is not None:
        r = outcome.result
        status = (
            "ok" if r.success else f"failed ({r.error_kind.value if r.error_kind else 'error'})"
        )
        print(f"  result: {status}, exit {r.exit_code}")
        text = (
            r.output
            if len(r.output) <= 2000
            else r.output[:2000] + f"\n... ({len(r.output)} characters)"
        )
        for line in text.splitlines():
            print(f"    {line}")
    else:
        print(f"  not executed: {outcome.reason}")
