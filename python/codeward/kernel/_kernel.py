"""The invocation kernel: the one path every session-owned tool call takes.

Stages, in order; the first Deny ends the call and no later stage relaxes an
earlier one (docs/kernel.md):

1. skill restrictions, argument validation, hard guardrails
2. ``pre_tool_use`` hooks (modified arguments go through stage 1 again)
3. origin authority (a host-direct call stops deciding here)
4. mode matrix and permission policy, per scope (a delegated child is checked
   against every ancestor too)
5. tool-owned escalation (escalated bash, network grants, side-effecting
   external tools) turns an Allow into an Ask
6. confirmation availability: an Ask nobody can answer is a Deny, decided
   before any request is emitted; then ``permission_request`` hooks and the
   confirmation itself
7. execution, then ``post_tool_use`` (or ``on_error``) hooks
"""

from __future__ import annotations

import contextlib
import functools
import logging
import shlex
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import _native
from .._errors import SandboxError
from .._summary import grant_target
from ..guardrail import assess_risk, check_command, is_protected_path, protected_depth
from ..hitl import (
    ConfirmationManager,
    ConfirmationProvider,
    ConfirmationRequest,
    summarize_operation,
)
from ..hooks import HookContext, HookEvent, HookRegistry
from ..netgrant import Admission, NetworkGrant, NetworkGrantError, NetworkMediator
from ..policy import Decision, PermissionPolicy
from ..policy._decision import strictest
from ..sandbox import BashSandbox, ExecRules, UnavailableBashSandbox
from ..tools import (
    ArgumentError,
    CancelToken,
    ErrorKind,
    MutationRecorder,
    Tool,
    ToolContext,
    ToolKind,
    ToolResult,
    parse_sandbox_permissions,
    run_tool,
    validate,
)
from ..workspace import Workspace
from ._matrix import MatrixRow, cell
from ._registry import ExternalTool, ToolRegistry
from ._resolve import PathRefused, Resolution, policy_verdict, resolve_call
from ._types import InvocationOutcome, Mode, Origin, ToolCall, TraceEntry

__all__ = ["CallScope", "InvocationKernel", "strictest"]

log = logging.getLogger("codeward.kernel")

_BASH_TIMEOUT_DEFAULT_MS = 120_000


@dataclass(frozen=True)
class CallScope:
    """One level of authority a call is checked against: the session's, or a delegated child's.

    A call snapshots its scopes when it is admitted, so switching the mode of a
    live session never changes a call already in flight. ``inheritance`` says
    what a child does with an Ask that only it introduced.
    """

    name: str
    mode: Mode
    policy: PermissionPolicy | None
    provider: ConfirmationProvider | None
    inheritance: str = "root"  # "root" | "auto_approve" | "deny_on_ask" | "inherit_parent"


@dataclass
class _Call:
    """The mutable state of one call while it moves through the stages."""

    call: ToolCall
    origin: Origin
    scopes: tuple[CallScope, ...]
    skill: str | None
    tool: Tool | None
    args: Mapping[str, Any]
    trace: list[TraceEntry] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)  # why an Ask is needed
    escalated: bool = False  # approved require_escalated: run outside the sandbox
    network_grant: Mapping[str, Any] | None = None  # the request_network_grant as asked
    grant: NetworkGrant | None = None  # ... pinned to the sandbox policy the approver is shown
    caller: object | None = None  # the session that made the call
    cancel: CancelToken | None = None  # set: the running tool stops and the call says so
    resolution: Resolution | None = None  # set by stage 1: what every later stage decides on
    approved: bool = False  # the human approved this call's ask: its commands pass the exec check

    def note(self, stage: str, verdict: str, reason: str) -> None:
        self.trace.append(TraceEntry(stage, verdict, reason))

    @property
    def resolved(self) -> Resolution:
        return self.resolution if self.resolution is not None else Resolution(self.args)

    @property
    def paths(self) -> list[str]:
        """Every workspace path the call touches: each as the tool opens it and where it leads."""
        return self.resolved.paths


def _is_bash(s: _Call) -> bool:
    return s.tool is not None and s.tool.kind is ToolKind.BASH


def _exec_rules(s: _Call) -> ExecRules | None:
    """What the exec check holds a bash call to: every scope's bash deny and ask patterns and,
    when the human approved this call's ask, the simple commands of its line as approved."""
    deny: list[str] = []
    ask: list[str] = []
    approved: list[str] = []
    line = str(s.args.get("command", ""))
    for scope in s.scopes:
        if scope.policy is None or not scope.policy.enabled:
            continue
        d, a = scope.policy.exec_patterns()
        deny += d
        ask += a
        if s.approved and a:
            for verdict in scope.policy.bash_verdict(line).commands:
                approved += [verdict.command, verdict.spelling]
                with contextlib.suppress(ValueError):
                    approved.append(" ".join(shlex.split(verdict.command)))
    if not deny and not ask:
        return None
    return ExecRules(tuple(deny), tuple(ask), tuple(dict.fromkeys(approved)))


class _Denied(Exception):
    def __init__(self, reason: str, kind: ErrorKind = ErrorKind.PERMISSION_DENIED) -> None:
        super().__init__(reason)
        self.reason = reason
        self.kind = kind


# Kinds whose calls cannot change the workspace (read-only tools, read-only git).
_NO_WRITES = frozenset({ToolKind.READ, ToolKind.GIT})


class InvocationKernel:
    """Decides and runs the calls of one session. Sessions own one each; hosts never build it."""

    def __init__(
        self,
        *,
        session_id: str,
        workspace: Workspace,
        sandbox: BashSandbox,
        registry: ToolRegistry,
        hooks: HookRegistry,
        confirmations: ConfirmationManager,
        recorder: MutationRecorder | None,
        host_sandbox_factory: Callable[[], BashSandbox],
        bash_observer: Callable[[Callable[[], ToolResult], bool], ToolResult] | None = None,
        write_observer: Callable[[str, Callable[[], ToolResult]], ToolResult] | None = None,
        release_placeholders: Callable[[], None] | None = None,
        network_mediator: Callable[[], NetworkMediator] | None = None,
    ) -> None:
        self.session_id = session_id
        self.workspace = workspace
        self.sandbox = sandbox
        self.registry = registry
        self.hooks = hooks
        self.confirmations = confirmations
        self.recorder = recorder
        self.host_sandbox_factory = host_sandbox_factory
        self.bash_observer = bash_observer
        # every other call that may write (write tools, downloads, MCP and host tools,
        # launches) is snapshotted around too: the ledger books what it changed to it
        self.write_observer = write_observer
        self.release_placeholders = release_placeholders
        self.network_mediator = network_mediator

    # -- the pipeline -------------------------------------------------------------------

    def invoke(
        self,
        call: ToolCall,
        origin: Origin,
        scopes: Sequence[CallScope],
        *,
        skill: str | None = None,
        caller: object | None = None,
        cancel: CancelToken | None = None,
    ) -> InvocationOutcome:
        """Runs ``call`` through every stage; never raises for anything the call itself causes.

        ``caller`` is the session making the call; a launch tool (``task``)
        starts its delegated run from it. ``cancel`` (anything with
        ``is_set()``, such as a threading.Event) reaches the running tool:
        bash, download, the git tool, MCP calls and verification checks stop
        once it is set (a command's whole process tree is killed), and the
        outcome says ``cancelled``.
        """
        state = _Call(call, origin, tuple(scopes), skill, self.registry.get(call.name), call.args)
        state.caller = caller
        state.cancel = cancel
        try:
            self._admit(state)
            decision = self._decide(state)
            if state.origin is Origin.HOST_DIRECT:
                state.network_grant = _host_grant(state)
            if state.network_grant is not None:
                self._pin_grant(state)
        except _Denied as denied:
            state.note("decision", "deny", denied.reason)
            return self._outcome(state, Decision.DENY, None, None, denied.reason, denied.kind)
        if decision is Decision.ASK:
            approved, reason = self._confirm(state)
            if not approved:
                return self._outcome(
                    state, Decision.ASK, False, None, reason, ErrorKind.PERMISSION_DENIED
                )
            state.approved = True
            return self._outcome(state, Decision.ASK, True, self._execute(state), reason, None)
        return self._outcome(state, Decision.ALLOW, None, self._execute(state), "allowed", None)

    def _admit(self, s: _Call) -> None:
        """Stages 1 and 2; raises _Denied."""
        self._stage1(s)
        if s.origin is Origin.HOST_DIRECT:
            s.note("hooks", "skip", "a host-direct call runs no gating hooks")
            return
        outcome = self.hooks.run(
            HookEvent.PRE_TOOL_USE,
            self._hook_context(s, HookEvent.PRE_TOOL_USE),
            refresh=functools.partial(self._refresh, s),
        )
        for entry in outcome.trace:
            s.note("hooks", entry.action, f"hook {entry.id}: {entry.reason or entry.action}")
        if outcome.action == "block":
            raise _Denied(f"blocked by hook {outcome.blocked_by}: {outcome.reason}")
        if outcome.args is not None and dict(outcome.args) != dict(s.args):
            s.args = dict(outcome.args)
            s.note("hooks", "continue", "a hook modified the arguments: they are checked again")
            self._stage1(s)
        elif not outcome.trace:
            s.note("hooks", "continue", "no pre_tool_use hook matched")

    def _stage1(self, s: _Call) -> None:
        if s.origin is Origin.SKILL or s.skill is not None:
            skill = self.registry.skill(s.skill or "")
            if skill is None:
                raise _Denied(f"skill {s.skill!r} is not registered")
            if not _tool_allowed(s.call.name, skill.allowed_tools):
                raise _Denied(
                    f"skill {skill.name!r} may only call {', '.join(skill.allowed_tools)}; "
                    f"{s.call.name!r} is not among them"
                )
            s.note("skill", "allow", f"{s.call.name!r} is among the tools of skill {skill.name!r}")
        # the resolution refuses every path the path guardrail refuses (resolve_call)
        s.resolution = self._resolve(s.call.name, s.tool, s.args)
        s.args = s.resolution.args
        if s.tool is not None and s.tool.kind is ToolKind.BASH:
            hit = check_command(str(s.args.get("command", "")))
            if hit is not None:
                raise _Denied(f"guardrail {hit.rule}: {hit.message}")
        s.note("guardrail", "allow", "no hard guardrail applies")

    def _resolve(self, name: str, tool: Tool | None, args: Mapping[str, Any]) -> Resolution:
        """Validates ``args`` and resolves them (docs/policy.md, "What a rule decides on")."""
        if tool is not None:
            try:
                validate(tool.schema, args)
            except ArgumentError as exc:
                raise _Denied(
                    f"invalid arguments for {name}: {exc}", ErrorKind.INVALID_ARGUMENT
                ) from None
        try:
            return resolve_call(tool, args, self.workspace)
        except PathRefused as refused:
            raise _Denied(f"guardrail {refused.hit.rule}: {refused.hit.message}") from None
        except Exception as exc:  # a tool that cannot resolve its arguments: nothing to decide on
            raise _Denied(
                f"invalid arguments for {name}: they cannot be resolved "
                f"({type(exc).__name__}: {exc})",
                ErrorKind.INVALID_ARGUMENT,
            ) from None

    def _refresh(self, s: _Call, args: Mapping[str, Any]) -> tuple[Mapping[str, Any], list[str]]:
        """For the hooks: a rewritten call as it will run, and its paths (raises if refused)."""
        resolution = self._resolve(s.call.name, s.tool, args)
        return resolution.args, resolution.paths

    def _decide(self, s: _Call) -> Decision:
        """Stages 3 to 6: the verdict before execution (ALLOW or ASK); raises _Denied."""
        if s.origin is Origin.HOST_DIRECT:
            s.note("origin", "allow", "a privileged host call: no mode, policy or confirmation")
            return Decision.ALLOW
        s.note("origin", "continue", _origin_reason(s))
        row = self._row(s)
        per_scope = []
        for scope in s.scopes:
            decision = self._scope_decision(s, scope, row)
            per_scope.append(decision)
            if decision is Decision.DENY:
                raise _Denied(
                    f"denied in scope {scope.name!r} ({row.value}, mode {scope.mode.value})"
                )
        decision = self._route(s, row, per_scope)
        if decision is Decision.ASK:
            self._check_available(s)
        return decision

    def _row(self, s: _Call) -> MatrixRow:
        tool = s.tool
        if tool is None:
            return MatrixRow.UNKNOWN
        if tool.kind is ToolKind.READ:
            return MatrixRow.READ
        if tool.kind is ToolKind.GIT:
            return MatrixRow.GIT_READ
        if tool.kind is ToolKind.DOWNLOAD:
            return MatrixRow.DOWNLOAD
        if tool.kind is ToolKind.LAUNCH:
            return MatrixRow.LAUNCH
        if tool.kind is ToolKind.WRITE:
            protected = [p for p in s.paths if is_protected_path(self.workspace, p)]
            return MatrixRow.WRITE_PROTECTED if protected else MatrixRow.WRITE
        if tool.kind is ToolKind.BASH:
            try:
                perms = parse_sandbox_permissions(s.args)
            except (ArgumentError, ValueError) as exc:
                raise _Denied(
                    f"invalid sandbox_permissions: {exc}", ErrorKind.INVALID_ARGUMENT
                ) from None
            if perms.mode != "require_escalated" and isinstance(
                self.sandbox, UnavailableBashSandbox
            ):
                # Only an approved escalation runs elsewhere (on the process host); asking
                # for a call that can only fail would be a question with no real answer.
                raise _Denied(
                    f"bash cannot run in this session: no boundary is available "
                    f"({self.sandbox.cause}); the call is refused before anyone is asked",
                    ErrorKind.SANDBOX_UNAVAILABLE,
                )
            if perms.mode != "use_default":
                s.escalated = perms.mode == "require_escalated"
                s.network_grant = (
                    perms.network_grant if perms.mode == "request_network_grant" else None
                )
                return MatrixRow.BASH_ESCALATION
            return (
                MatrixRow.BASH_SANDBOXED if self.sandbox.sandboxed else MatrixRow.BASH_UNSANDBOXED
            )
        if isinstance(tool, ExternalTool) and not tool.annotations.side_effecting:
            return MatrixRow.MCP_READ_ONLY
        return MatrixRow.MCP_SIDE_EFFECT

    def _scope_decision(self, s: _Call, scope: CallScope, row: MatrixRow) -> Decision:
        """Stages 4 and 5 for one scope: strictest(mode cell, policy), then escalation."""
        mode_cell = cell(scope.mode, row)
        decision = mode_cell
        detail = f"mode {scope.mode.value}: {row.value} -> {mode_cell.value}"
        if scope.policy is not None:
            verdict = policy_verdict(scope.policy, s.call.name, s.resolved)
            explicit_allow = verdict.decision is Decision.ALLOW and verdict.allowed_by_rule
            unnamed = (
                self._unnamed_protected(scope.policy, s)
                if explicit_allow and row is MatrixRow.WRITE_PROTECTED
                else None
            )
            if unnamed is not None:
                detail += (
                    f"; allow {verdict.reason} does not lower it: no allow rule names the "
                    f"protected path {unnamed!r} without a wildcard in its protected part"
                )
            elif mode_cell is Decision.ASK and explicit_allow and scope.mode is Mode.DEFAULT:
                decision = Decision.ALLOW
                detail += f"; allow {verdict.reason} lowers the ask in default mode"
            else:
                decision = strictest(mode_cell, verdict.decision)
                why = verdict.reason + _bash_command_note(scope.policy, s.call.name, s.args)
                detail += f"; policy: {verdict.decision.value} ({why})"
        s.note("mode_policy", decision.value, f"scope {scope.name!r}: {detail}")
        if decision is Decision.ASK and scope is s.scopes[0]:
            s.reasons.append(detail)
        escalation = self._escalation(s, row)
        if escalation and decision is not Decision.DENY:
            s.note("escalation", "ask", escalation)
            decision = Decision.ASK
        return decision

    def _unnamed_protected(self, policy: PermissionPolicy, s: _Call) -> str | None:
        """The first protected path of a write that no allow rule names literally, or None.

        An allow rule lowers the protected-name ask only when it spells the protected
        part of each such path without a wildcard (``write(.mcp.json)``,
        ``write(.git/**)``): ``write(*)`` or ``write(**/*.json)`` were written for
        ordinary files and must not hand the agent its own configuration.
        """
        for path in s.paths:
            depth = protected_depth(self.workspace, path)
            if depth is not None and not policy.names_literally(s.call.name, path, depth):
                return path
        return None

    def _escalation(self, s: _Call, row: MatrixRow) -> str | None:
        if row is MatrixRow.BASH_ESCALATION:
            if s.escalated:
                return f"bash asks to run outside the sandbox: {s.args.get('justification', '')}"
            return f"bash asks for a network grant to {_grant_text(s.network_grant)}"
        if row is MatrixRow.MCP_SIDE_EFFECT and s.tool is not None:
            return f"{s.call.name} declares a side effect (or no annotations)"
        return None

    def _route(self, s: _Call, row: MatrixRow, per_scope: list[Decision]) -> Decision:
        """Combines the scopes' decisions: whether an Ask is needed, and that the root answers it.

        A scope's Ask is the child's own only when no scope above it asks; an
        Ask above already goes to the root's provider, which is asked once.
        """
        asked_above = per_scope[0] is Decision.ASK
        for scope, decision in zip(s.scopes[1:], per_scope[1:], strict=True):
            if decision is not Decision.ASK:
                continue
            if asked_above:
                s.note(
                    "delegation", "ask", f"scope {scope.name!r} asks too: one question covers both"
                )
            elif self._escalation(s, row):
                s.note("delegation", "ask", "a tool-owned escalation is answered by the parent")
                asked_above = True
            elif scope.inheritance == "deny_on_ask":
                raise _Denied(f"child scope {scope.name!r} asks, and its setting is deny_on_ask")
            elif scope.inheritance == "auto_approve":
                s.note(
                    "delegation",
                    "allow",
                    f"child scope {scope.name!r}: its own ask is auto-approved",
                )
            else:
                s.note(
                    "delegation",
                    "ask",
                    f"child scope {scope.name!r} inherits the parent's provider",
                )
                asked_above = True
        return Decision.ASK if asked_above else Decision.ALLOW

    def _check_available(self, s: _Call) -> None:
        """Stage 6: an Ask that nobody can answer is a Deny before any request is emitted."""
        root = s.scopes[0]
        auto = [sc.name for sc in s.scopes if sc.mode is Mode.AUTO]
        if auto:
            raise _Denied(
                f"confirmation unavailable: scope {auto[0]!r} is in auto mode, which never asks",
                ErrorKind.CONFIRMATION_UNAVAILABLE,
            )
        if not self.confirmations.policy.enabled:
            raise _Denied(
                "confirmation unavailable: confirmations are disabled for this session",
                ErrorKind.CONFIRMATION_UNAVAILABLE,
            )
        if root.provider is None:
            raise _Denied(
                "confirmation unavailable: no confirmation provider, so every ask fails closed",
                ErrorKind.CONFIRMATION_UNAVAILABLE,
            )
        available_for = getattr(root.provider, "available_for", None)
        if available_for is not None:
            try:  # the call as it will run: its resolved arguments
                available = available_for(ToolCall(s.call.id, s.call.name, s.args)) is True
            except Exception as exc:
                available = False
                log.warning("available_for raised %s: %s", type(exc).__name__, exc)
            if not available:
                raise _Denied(
                    "confirmation unavailable: the provider cannot answer this call",
                    ErrorKind.CONFIRMATION_UNAVAILABLE,
                )
        s.note("confirmation_availability", "ask", "a provider can answer")

    def _pin_grant(self, s: _Call) -> None:
        """Pins a network grant to the sandbox policy as it is now: the digest the prompt shows.

        The grant is applied against this digest only: if the policy differs
        when the command runs, nothing runs (docs/security.md, "Network grants").
        """
        request = s.network_grant
        assert request is not None
        backend = getattr(self.sandbox, "backend", "unknown")
        if not getattr(self.sandbox, "supports_network_grants", False) or (
            self.network_mediator is None
        ):
            raise _Denied(
                f"a network grant needs the native sandbox to mediate it; this session's "
                f"sandbox ({backend}) cannot, so nothing was granted",
                ErrorKind.SANDBOX_UNAVAILABLE,
            )
        try:
            digest = self.sandbox.policy().digest  # type: ignore[attr-defined]
            s.grant = NetworkGrant.make(request.get("host"), request.get("port"), digest)
        except SandboxError as exc:
            raise _Denied(
                f"the sandbox cannot state its policy, so no grant can be pinned to it: {exc}",
                ErrorKind.SANDBOX_UNAVAILABLE,
            ) from None
        except NetworkGrantError as exc:
            raise _Denied(f"invalid network_grant: {exc}", ErrorKind.INVALID_ARGUMENT) from None
        s.note(
            "network_grant",
            "pin",
            f"{s.grant.origin}, for this command only, against sandbox policy {digest}",
        )

    def _confirm(self, s: _Call) -> tuple[bool, str]:
        """permission_request hooks, then one request to the root provider."""
        request = self._request(s)
        hooks = self.hooks.run(
            HookEvent.PERMISSION_REQUEST, self._hook_context(s, HookEvent.PERMISSION_REQUEST)
        )
        for entry in hooks.trace:
            s.note(
                "hooks",
                entry.action,
                f"permission_request hook {entry.id}: {entry.reason or entry.action}",
            )
        if hooks.action == "block":
            reason = f"blocked by hook {hooks.blocked_by}: {hooks.reason}"
            s.note("confirmation", "deny", reason)
            return False, reason
        provider = s.scopes[0].provider
        assert provider is not None  # _check_available made sure
        answer = self.confirmations.ask(request, provider)
        verdict = "approved" if answer.approved else "rejected"
        reason = f"{verdict} ({answer.how})" + (f": {answer.reason}" if answer.reason else "")
        s.note("confirmation", "allow" if answer.approved else "deny", reason)
        return answer.approved, reason

    def _request(self, s: _Call) -> ConfirmationRequest:
        sandboxed = self.sandbox.sandboxed and not s.escalated
        kind = s.tool.kind.value if s.tool is not None else "unknown"
        timeout = self.confirmations.policy.default_timeout_ms
        inside, runs = self._where(s)
        targets = s.resolved.targets
        scope: dict[str, Any] = {
            "paths": [str(t) for t in targets],
            "sandboxed": inside,
            "runs": runs,
            "origin": s.origin.value,
        }
        if s.tool is not None and s.tool.kind is ToolKind.BASH:
            scope["timeout_ms"] = s.args.get("timeout", _BASH_TIMEOUT_DEFAULT_MS)
        if s.grant is not None:
            scope["host_port"] = s.grant.origin
            scope["policy_digest"] = s.grant.policy_digest
        reasons = list(s.reasons) + [
            t.reason for t in s.trace if t.stage in ("escalation", "delegation")
        ]
        reasons = list(dict.fromkeys(reasons))  # one line per reason, in order
        return ConfirmationRequest(
            id=s.call.id,
            tool=s.call.name,
            operation=summarize_operation(
                s.call.name, s.args, targets=[(t.action, str(t)) for t in targets]
            ),
            reason="; ".join(reasons) or "the policy asks",
            scope=scope,
            risk=assess_risk(
                s.call.name,
                s.args,
                kind=kind,
                sandboxed=sandboxed,
                paths=s.paths,
                annotations=s.tool.annotations if isinstance(s.tool, ExternalTool) else None,
                workspace=self.workspace,
            ),
            args=s.args,
            origin=s.origin.value,
            timeout_ms=timeout,
            created_at=time.time(),
            session_id=self.session_id,
        )

    # -- stage 7 ------------------------------------------------------------------------

    def _execute(self, s: _Call) -> ToolResult:
        if s.tool is None:
            result = ToolResult.failure(
                s.call.name, ErrorKind.NOT_FOUND, f"no tool named {s.call.name!r} is registered"
            )
            s.note("execution", "error", result.output)
            return result
        admission = None
        if s.grant is not None:
            refused = self._policy_changed(s.grant)
            if refused is None:
                assert self.network_mediator is not None  # _pin_grant made sure
                try:
                    admission = self.network_mediator().admit(s.grant)
                except NetworkGrantError as exc:
                    refused = ToolResult.failure(
                        "bash",
                        ErrorKind.SANDBOX_UNAVAILABLE,
                        f"the network grant cannot be served: {exc}; the command did not run",
                        network_grant=s.grant.to_dict(),
                    )
            if refused is not None:
                s.note("network_grant", "deny", refused.output)
                return self._finish(s, refused)
        try:
            result = self._run(s, admission)
        finally:
            if admission is not None:
                admission.close()  # the grant ends with the command
        if s.grant is not None:
            result = self._grant_outcome(s, result, admission)
        return self._finish(s, result)

    def _run(self, s: _Call, admission: Admission | None) -> ToolResult:
        assert s.tool is not None
        pins = {t.path: t.real for t in s.resolved.targets if t.action != "delete"}
        ctx = ToolContext(
            workspace=self.workspace.pinned(pins) if pins else self.workspace,
            sandbox=self.sandbox,
            recorder=self.recorder,
            cancel=s.cancel,
            escalated=s.escalated,
            host_sandbox_factory=self.host_sandbox_factory,
            caller=s.caller,
            read_denied=self._read_denial(s),
            network=admission,
            exec_rules=_exec_rules(s) if _is_bash(s) else None,
        )
        tool = s.tool
        if (
            tool.kind in (ToolKind.WRITE, ToolKind.DOWNLOAD)
            and self.release_placeholders is not None
            and any(is_protected_path(self.workspace, p) for p in s.paths)
        ):
            # A long-lived sandbox keeps empty directories at missing protected names;
            # the write needs the name free, and the next command rebuilds the sandbox.
            self.release_placeholders()

        def run() -> ToolResult:
            return run_tool(tool, s.args, ctx)

        try:
            if tool.kind is ToolKind.BASH and self.bash_observer is not None:
                result = self.bash_observer(run, s.escalated)
            elif tool.kind not in _NO_WRITES and self.write_observer is not None:
                result = self.write_observer(tool.name, run)
            else:
                result = run()
        except Exception as exc:  # run_tool maps everything; this is a last line of defence
            log.exception("tool %s raised", tool.name)
            result = ToolResult.failure(
                tool.name, ErrorKind.TOOL_FAILED, f"{type(exc).__name__}: {exc}"
            )
        stopped = result.metadata.get("exec_stopped") if result.metadata else None
        if stopped:
            s.note(
                "exec_check",
                stopped["decision"],
                f"stopped exec of `{stopped['command']}` by {stopped['rule']}",
            )
        elif ctx.exec_rules:
            s.note("exec_check", "allow", "every exec of the command passed the exec check")
        return result

    def _policy_changed(self, grant: NetworkGrant) -> ToolResult | None:
        """A refusal when the sandbox's policy is no longer the one the grant was approved on.

        The C core checks again, on the plan the command runs with, and
        refuses the same way (the result's ``policy_changed``).
        """
        try:
            now = self.sandbox.policy().digest  # type: ignore[attr-defined]
        except SandboxError as exc:
            now = f"unknown ({exc})"
        return None if now == grant.policy_digest else _policy_refusal(grant, now)

    def _grant_outcome(
        self, s: _Call, result: ToolResult, admission: Admission | None
    ) -> ToolResult:
        """The result with what the grant did: ``network_grant`` metadata, and a trace entry."""
        grant = s.grant
        assert grant is not None
        if result.metadata.get("policy_changed"):
            result = _policy_refusal(grant, "another one, by the time the command was to start")
        summary = admission.summary() if admission is not None else grant.to_dict()
        meta = dict(result.metadata)
        meta["network_grant"] = summary
        verdict = "deny" if result.metadata.get("policy_changed") else "allow"
        s.note(
            "network_grant",
            verdict,
            f"{grant.origin} against {grant.policy_digest}: "
            f"{summary.get('connections', 0)} connection(s) admitted, "
            f"{summary.get('refused', 0)} refused; ended with the command",
        )
        return ToolResult(
            result.name, result.output, result.exit_code, result.success, meta, result.error_kind
        )

    def _finish(self, s: _Call, result: ToolResult) -> ToolResult:
        """Notes the execution and runs the post_tool_use or on_error hooks."""
        verdict = "ok" if result.success else "cancelled" if result.cancelled else "error"
        s.note("execution", verdict, _result_reason(result))
        event = HookEvent.POST_TOOL_USE if result.success else HookEvent.ON_ERROR
        context = self._hook_context(
            s, event, result=result, error=None if result.success else result.output
        )
        self.hooks.run(event, context)
        return result

    # -- helpers ------------------------------------------------------------------------

    def _where(self, s: _Call) -> tuple[bool | None, str]:
        """Whether the call runs inside the sandbox, and where it does run, in words."""
        kind = s.tool.kind if s.tool is not None else None
        if kind is ToolKind.BASH:
            if s.escalated:
                return False, "runs on the host, outside the sandbox (require_escalated)"
            if self.sandbox.sandboxed:
                return True, "inside the sandbox"
            return False, "runs on the host without a sandbox, with the user's full rights"
        if kind in (ToolKind.READ, ToolKind.WRITE, ToolKind.DOWNLOAD):
            return False, (
                "runs in the host process, confined to the workspace by the credential "
                "boundary, not by the sandbox"
            )
        if kind is ToolKind.GIT:
            return False, "runs git in the host process, read-only, its configuration defanged"
        if kind is ToolKind.LAUNCH:
            return None, "starts nested calls, each decided on its own"
        if s.tool is not None:
            return False, "runs the host's handler for this tool, outside the sandbox"
        return None, "no tool of this name is registered"

    def _read_denial(self, s: _Call) -> Callable[[str], str | None] | None:
        """Why a scope's policy denies reading a path (None if none does), for the tools that
        show content the call did not name; None for a host-direct call, which no policy binds."""
        policies = [
            (scope.name, scope.policy)
            for scope in s.scopes
            if scope.policy is not None and scope.policy.enabled
        ]
        if s.origin is Origin.HOST_DIRECT or not policies:
            return None

        def denied(relpath: str) -> str | None:
            for name, policy in policies:
                if policy.check("read", {"file_path": relpath}) is Decision.DENY:
                    return f"the permission policy of scope {name!r} denies reading it"
            return None

        return denied

    def _hook_context(
        self, s: _Call, event: HookEvent, *, result: object | None = None, error: str | None = None
    ) -> HookContext:
        return HookContext(
            event=event,
            session_id=self.session_id,
            call_id=s.call.id,
            tool=s.call.name,
            args=s.args,
            paths=tuple(s.paths),
            origin=s.origin.value,
            result=result,
            error=error,
            extra={},
        )

    def _outcome(
        self,
        s: _Call,
        decision: Decision,
        approved: bool | None,
        result: ToolResult | None,
        reason: str,
        kind: ErrorKind | None,
    ) -> InvocationOutcome:
        return InvocationOutcome(
            call_id=s.call.id,
            tool=s.call.name,
            origin=s.origin,
            decision=decision,
            approved=approved,
            executed=result is not None,
            result=result,
            reason=reason,
            trace=tuple(s.trace),
            error_kind=kind if result is None else result.error_kind,
            cancelled=result is not None and result.cancelled,
        )


def _tool_allowed(name: str, allowed: Sequence[str]) -> bool:
    for pattern in allowed:
        if pattern == "*" or _tool_glob(pattern).match(name):
            return True
        if (
            pattern.startswith("mcp__")
            and pattern.count("__") == 1
            and name.startswith(pattern + "__")
        ):
            return True
    return False


@functools.lru_cache(maxsize=256)
def _tool_glob(pattern: str) -> _native.Glob:
    """A skill's tool pattern, compiled once rather than on every call of the skill."""
    return _native.Glob(pattern, tool_name=True)


def _origin_reason(s: _Call) -> str:
    if s.origin is Origin.DELEGATED:
        chain = " -> ".join(sc.name for sc in s.scopes)
        return f"a delegated call, checked against every scope: {chain}"
    if s.origin is Origin.SKILL:
        return f"a call of skill {s.skill!r}"
    return f"origin {s.origin.value}: the mode and the policy decide"


def _bash_command_note(policy: PermissionPolicy, tool: str, args: Mapping[str, Any]) -> str:
    """Which simple command of a bash line decided, when the line has more than one or the
    rule matched it in another spelling (``git -c x=y push`` as ``git push``)."""
    command = args.get("command")
    if tool.lower() != "bash" or not isinstance(command, str):
        return ""
    deciding = policy.bash_verdict(command).deciding
    if deciding is None or deciding.spelling == command:
        return ""
    shown = f" as {deciding.spelling!r}" if deciding.spelling != deciding.command else ""
    return f" on the simple command {deciding.command!r}{shown}"


def _grant_text(grant: Mapping[str, Any] | None) -> str:
    if not grant:
        return "?"
    return grant_target(grant.get("host"), grant.get("port"))


def _host_grant(s: _Call) -> Mapping[str, Any] | None:
    """A host-direct bash call's network grant: the host's own choice, applied without asking."""
    if s.tool is None or s.tool.kind is not ToolKind.BASH:
        return None
    try:
        perms = parse_sandbox_permissions(s.args)
    except (ArgumentError, ValueError) as exc:
        raise _Denied(f"invalid sandbox_permissions: {exc}", ErrorKind.INVALID_ARGUMENT) from None
    return perms.network_grant if perms.mode == "request_network_grant" else None


def _policy_refusal(grant: NetworkGrant, now: str) -> ToolResult:
    return ToolResult.failure(
        "bash",
        ErrorKind.PERMISSION_DENIED,
        f"refused: the sandbox policy changed since the network grant to {grant.origin} was "
        f"approved (approved against {grant.policy_digest}, the sandbox's is now {now}); "
        "re-approve against the current policy. Nothing ran and nothing was granted.",
        exit_code=125,
        policy_changed=True,
        network_grant=grant.to_dict(),
        sandboxed=True,
    )


def _result_reason(result: ToolResult) -> str:
    if result.success:
        return f"exit {result.exit_code}"
    kind = result.error_kind.value if result.error_kind else "error"
    first = result.output.splitlines()[0] if result.output else ""
    return f"{kind}: {first[:200]}"
