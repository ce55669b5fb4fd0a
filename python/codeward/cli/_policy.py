"""``codeward policy check`` and ``codeward policy lint``."""

from __future__ import annotations

import argparse
import json
from typing import Any

from .._errors import PolicyError
from ..policy import BashVerdict, CommandVerdict, PermissionPolicy, RuleView, argument_string


def register(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = commands.add_parser(
        "policy",
        help="check a call against a policy, or lint a policy",
        description="Try a permission policy on one call, or find its footguns.",
    )
    sub = p.add_subparsers(dest="policy_command", metavar="SUBCOMMAND", parser_class=type(p))
    sub.required = True

    check = sub.add_parser(
        "check",
        help="print the decision for one call and the rules that matched",
        description=(
            "Evaluate one tool call against a policy file and print the decision "
            "(allow, deny or ask), the argument string the patterns were matched "
            "against, and every rule that matched. A bash command is decided per simple "
            "command: each is listed with its own decision and the spelling a rule "
            "matched (git -c x=y push as 'git push'). With --workspace the call is first "
            "resolved as a session resolves it: every path made the workspace-relative "
            "path the tool opens, defaults filled in, symlink targets and each file of a "
            "patch decided on too, and paths the guardrails refuse reported (docs/policy.md, "
            "'What a rule decides on'). Without it the argument string is the lexical one "
            "every binding computes. Exit status 0 whatever the decision."
        ),
        epilog=(
            "examples:\n"
            '  codeward policy check --policy policy.yaml bash \'{"command": "git push"}\'\n'
            "  codeward policy check --policy policy.yaml --workspace . read "
            '\'{"file_path": "/repo/docs/../secrets/key"}\''
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    check.add_argument("--policy", required=True, metavar="FILE", help="YAML or JSON policy file")
    check.add_argument(
        "tool", metavar="TOOL", help="tool name, e.g. bash, read, mcp__github__create_issue"
    )
    check.add_argument(
        "args_json",
        metavar="ARGS_JSON",
        nargs="?",
        default="{}",
        help="the call's arguments as a JSON object",
    )
    check.add_argument(
        "--workspace",
        metavar="DIR",
        help="resolve the call against this workspace, exactly as a session decides on it",
    )
    check.add_argument("--json", action="store_true", help="print one JSON object")
    check.set_defaults(run=run_check)

    lint = sub.add_parser(
        "lint",
        help="report rules that do not do what they seem to",
        description=(
            "Report the footguns of a policy: an allow rule that shadows an ask rule, a "
            "'*' that stops at '/' where arguments contain one, a ':*' prefix that is not "
            "at a word boundary, rules that can never match or never take effect, and "
            "duplicates. Exit status 1 when there is any finding, 0 when there is none."
        ),
    )
    lint.add_argument("file", metavar="FILE", help="YAML or JSON policy file")
    lint.add_argument("--json", action="store_true", help="print one JSON object")
    lint.set_defaults(run=run_lint)


_ORDER = {"deny": "first", "allow": "after deny", "ask": "after deny and allow"}


def _parse_args_json(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PolicyError(f"ARGS_JSON is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise PolicyError(f"ARGS_JSON must be a JSON object, not {type(value).__name__}")
    return value


def run_check(args: argparse.Namespace) -> int:
    policy = PermissionPolicy.from_file(args.policy)
    call_args = _parse_args_json(args.args_json)
    if args.workspace is not None:
        return _check_resolved(args, policy, call_args)
    decision = policy.check(args.tool, call_args)
    tool, subject = argument_string(args.tool, call_args)
    matched = policy.matching_rules(args.tool, call_args)
    command = call_args.get("command")
    verdict = policy.bash_verdict(command) if tool == "bash" and isinstance(command, str) else None
    rules = policy.rules()
    if args.json:
        out: dict[str, Any] = {
            "decision": decision.value,
            "tool": tool,
            "argument_string": subject,
            "matched": matched,
            "enabled": policy.enabled,
            "default_decision": policy.default_decision.value,
        }
        if verdict is not None:
            out["commands"] = [
                {
                    "command": v.command,
                    "decision": v.decision.value,
                    "rule": None if v.rule is None else rules[v.rule].raw,
                    "matched_as": v.spelling,
                    "why": v.why,
                }
                for v in verdict.commands
            ]
        print(json.dumps(out, ensure_ascii=False))
        return 0
    print(f"decision: {decision.value}")
    print(f"argument string: {tool}({subject})")
    if not policy.enabled:
        print("reason: the policy is disabled (enabled: false), so every call is allowed")
    elif verdict is not None and verdict.commands:
        _print_bash_reason(verdict, rules, policy.default_decision.value)
    elif not any(matched.values()):
        print(f"reason: no rule matched; default_decision is {policy.default_decision.value}")
    else:
        deciding = next(n for n in ("deny", "allow", "ask") if matched[n])
        print(
            f"reason: {deciding} rule {matched[deciding][0]!r} matched "
            f"({deciding} is checked {_ORDER[deciding]})"
        )
    for list_name in ("deny", "allow", "ask"):
        for raw in matched[list_name]:
            print(f"matched {list_name}: {raw}")
    return 0


def _print_bash_reason(verdict: BashVerdict, rules: list[RuleView], default: str) -> None:
    """The reason of a bash decision: which simple command decided it, by which rule and on
    which spelling, then every simple command's own decision."""
    deciding = verdict.deciding
    if deciding is None:
        print("reason: a rule matching the whole line decides (it is stricter than its commands)")
    elif verdict.decision.value == "allow":
        print("reason: every simple command of the line is allowed")
    else:
        print(
            f"reason: {deciding.decision.value} on the simple command {deciding.command!r}: "
            f"{_because(deciding, rules, default)}"
        )
    print("simple commands (each decided on its own; the strictest decides the line):")
    for v in verdict.commands:
        print(f"  {v.command}  ->  {v.decision.value}: {_because(v, rules, default)}")


def _because(v: CommandVerdict, rules: list[RuleView], default: str = "") -> str:
    if v.rule is not None:
        how = f" as {v.spelling!r}" if v.spelling != v.command else ""
        return f"{rules[v.rule].list} rule {rules[v.rule].raw!r} matched{how}"
    if v.why == "dynamic program":
        return "its program is named by an expansion whose value is unknown"
    return f"no rule matched; default_decision is {default or v.decision.value}"


def run_lint(args: argparse.Namespace) -> int:
    policy = PermissionPolicy.from_file(args.file)
    findings = policy.lint()
    if args.json:
        print(json.dumps({"findings": [f.to_dict() for f in findings]}, ensure_ascii=False))
    elif not findings:
        print(f"{args.file}: no findings")
    else:
        for f in findings:
            print(f"{args.file}: {f}")
        print(f"{len(findings)} finding{'s' if len(findings) != 1 else ''}")
    return 1 if findings else 0


def _check_resolved(
    args: argparse.Namespace, policy: PermissionPolicy, call_args: dict[str, Any]
) -> int:
    """``policy check --workspace``: the call resolved and decided as a session does."""
    from ..kernel import PathRefused, policy_verdict, resolve_call
    from ..tools import ArgumentError, DownloadTool, builtin_tools, validate
    from ..workspace import Workspace

    workspace = Workspace(args.workspace)
    name = args.tool.lower() if args.tool.isascii() else args.tool
    tool = next((t for t in [*builtin_tools(), DownloadTool()] if t.name == name), None)
    if tool is not None:
        try:
            validate(tool.schema, call_args)
        except ArgumentError as exc:
            raise PolicyError(f"ARGS_JSON: invalid arguments for {name}: {exc}") from None
    try:
        resolution = resolve_call(tool, call_args, workspace)
    except PathRefused as refused:
        return _print_refusal(args, name, refused.hit.rule, refused.hit.message)
    verdict = policy_verdict(policy, args.tool, resolution)
    targets = [{"action": t.action, "path": t.path, "real": t.real} for t in resolution.targets]
    if args.json:
        print(
            json.dumps(
                {
                    "decision": verdict.decision.value,
                    "tool": name,
                    "argument_string": verdict.subjects[0] if verdict.subjects else "",
                    "argument_strings": list(verdict.subjects),
                    "targets": targets,
                    "args": dict(resolution.args),
                    "matched": dict(verdict.matched),
                    "enabled": policy.enabled,
                    "default_decision": policy.default_decision.value,
                    "workspace": workspace.root,
                },
                ensure_ascii=False,
            )
        )
        return 0
    print(f"decision: {verdict.decision.value}")
    for subject in verdict.subjects:
        print(f"argument string: {name}({subject})")
    for target in resolution.targets:
        print(f"target: {target.action} {target}")
    if not policy.enabled:
        print("reason: the policy is disabled (enabled: false), so every call is allowed")
    else:
        print(f"reason: {verdict.decision.value} by {verdict.reason}")
    for list_name in ("deny", "allow", "ask"):
        for raw in verdict.matched[list_name]:
            print(f"matched {list_name}: {raw}")
    return 0


def _print_refusal(args: argparse.Namespace, tool: str, rule: str, message: str) -> int:
    if args.json:
        print(
            json.dumps(
                {"decision": "deny", "tool": tool, "guardrail": rule, "reason": message},
                ensure_ascii=False,
            )
        )
        return 0
    print("decision: deny")
    print(f"reason: refused by the hard guardrail {rule}: {message}")
    return 0
