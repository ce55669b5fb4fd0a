"""The bash tool: a command through the session's sandbox, and the escalation fields it carries.

The tool never decides whether a command may leave the sandbox: the kernel
reads the request with :func:`parse_sandbox_permissions`, asks the host, and
sets ``ToolContext.escalated`` only for a confirmed ``require_escalated``
call. Only then does the command run on the process host.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from .._errors import SandboxUnavailable
from .._summary import DEFAULT_GRANT_PORTS, grant_target
from ..netgrant import NetworkGrantError, canonical_host
from ..sandbox import BashSandbox, CommandOutput
from ._base import ErrorKind, Tool, ToolContext, ToolKind, ToolResult
from ._failure import ToolError
from ._schema import ArgumentError

__all__ = ["BashTool", "NetworkGrantRequest", "SandboxRequest", "parse_sandbox_permissions"]

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
MAX_OUTPUT_BYTES = 102_400  # per stream, head and tail kept
MODES = ("use_default", "require_escalated", "request_network_grant")
_GRANT_FIELDS = ("host", "port", "reason")


@dataclass(frozen=True)
class NetworkGrantRequest(Mapping[str, Any]):
    """One host (and port) a bash call asks to reach; ``reason`` is the model's words.

    ``host`` is canonical (``codeward.netgrant.canonical_host``: one IDNA
    mapping). Without a port the grant covers HTTPS and HTTP (443 and 80),
    as the design says; ``ports`` lists what it covers and ``target`` says
    it in the words a confirmation shows. Also a read-only mapping
    (``grant["host"]``, ``grant.get("port")``), the shape of the
    ``network_grant`` argument it was parsed from.
    """

    host: str
    port: int | None = None
    reason: str = ""

    @property
    def ports(self) -> tuple[int, ...]:
        return DEFAULT_GRANT_PORTS if self.port is None else (self.port,)

    @property
    def target(self) -> str:
        return grant_target(self.host, self.port)

    def __getitem__(self, key: str) -> Any:
        if key not in _GRANT_FIELDS:
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(_GRANT_FIELDS)

    def __len__(self) -> int:
        return len(_GRANT_FIELDS)


@dataclass(frozen=True)
class SandboxRequest:
    """What a bash call asks of the sandbox, validated.

    ``mode`` is one of "use_default", "require_escalated" (run outside the
    sandbox, after the host confirms; ``justification`` says why) or
    "request_network_grant" (``network_grant`` says where to).
    """

    mode: str
    justification: str | None = None
    network_grant: NetworkGrantRequest | None = None

    @property
    def escalation(self) -> bool:
        return self.mode == "require_escalated"


def parse_sandbox_permissions(args: Mapping[str, Any]) -> SandboxRequest:
    """The sandbox request of a bash call; raises ArgumentError when it is malformed.

    require_escalated needs a non-blank justification; request_network_grant
    needs a network_grant with a valid host (and a valid port, when it names
    one; without, the grant covers 443 and 80); network_grant with any
    other mode, or any other mode name, is an error.
    """
    mode = args.get("sandbox_permissions", "use_default")
    if mode not in MODES:
        raise ArgumentError(
            f"sandbox_permissions must be one of {', '.join(map(repr, MODES))}, not {mode!r}"
        )
    justification = args.get("justification")
    if justification is not None and not isinstance(justification, str):
        raise ArgumentError("justification must be a string")
    grant = args.get("network_grant")
    if mode == "require_escalated" and not (justification and justification.strip()):
        raise ArgumentError(
            "sandbox_permissions='require_escalated' needs a justification: say why the "
            "command cannot run inside the sandbox"
        )
    if grant is not None and mode != "request_network_grant":
        raise ArgumentError(
            "network_grant is only valid with sandbox_permissions='request_network_grant'"
        )
    if mode == "request_network_grant":
        if not isinstance(grant, Mapping):
            raise ArgumentError(
                "sandbox_permissions='request_network_grant' needs network_grant: "
                "{host, port?, reason?}"
            )
        return SandboxRequest(mode, _clean(justification), _grant(grant))
    return SandboxRequest(mode, _clean(justification))


def _clean(text: str | None) -> str | None:
    return text.strip() if text and text.strip() else None


def _grant(grant: Mapping[str, Any]) -> NetworkGrantRequest:
    unknown = sorted(set(grant) - {"host", "port", "reason"})
    if unknown:
        raise ArgumentError(f"network_grant: unknown field(s) {', '.join(map(repr, unknown))}")
    host, port, reason = grant.get("host"), grant.get("port"), grant.get("reason", "")
    if port is not None and (
        not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535
    ):
        raise ArgumentError(f"network_grant.port must be an integer from 1 to 65535, not {port!r}")
    if not isinstance(reason, str):
        raise ArgumentError("network_grant.reason must be a string")
    return NetworkGrantRequest(_host(host), port, reason.strip())


def _host(host: Any) -> str:
    """The exact host, canonical (one IDNA mapping); wildcards, ports, paths, URLs refused."""
    try:
        return canonical_host(host, what="network_grant.host")[0]
    except NetworkGrantError as exc:
        raise ArgumentError(str(exc)) from None


class BashTool(Tool):
    name: ClassVar[str] = "bash"
    kind: ClassVar[ToolKind] = ToolKind.BASH
    description: ClassVar[str] = (
        "Run a bash command in the workspace, inside the session's sandbox: the workspace is "
        "writable, the rest of the machine read-only or hidden, credential files masked, no "
        "network. `timeout` is in milliseconds "
        f"(default {DEFAULT_TIMEOUT_MS}, at most {MAX_TIMEOUT_MS}). Output shows stdout, then "
        "stderr, then the exit code; long output keeps its head and tail. If a command truly "
        "cannot work in the sandbox, set sandbox_permissions='require_escalated' with a "
        "justification (a human must approve), or 'request_network_grant' with network_grant "
        "{host, port?, reason} to reach one host for this command only, through a proxy the "
        "command's tools find in HTTP(S)_PROXY/ALL_PROXY (without a port: 443 and 80)."
    )
    schema: ClassVar[Mapping[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "required": ["command"],
        "properties": {
            "command": {"type": "string", "minLength": 1, "maxLength": 100_000},
            "timeout": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_TIMEOUT_MS,
                "description": f"Milliseconds before the command is killed "
                f"(default {DEFAULT_TIMEOUT_MS}).",
            },
            "sandbox_permissions": {"type": "string", "enum": list(MODES)},
            "justification": {"type": "string", "maxLength": 2000},
            "network_grant": {
                "type": "object",
                "additionalProperties": False,
                "required": ["host"],
                "properties": {
                    "host": {"type": "string", "minLength": 1, "maxLength": 255},
                    "port": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": 65535,
                        "description": "Absent: the grant covers 443 and 80 (HTTPS and HTTP).",
                    },
                    "reason": {"type": "string", "maxLength": 2000},
                },
            },
        },
    }

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        parse_sandbox_permissions(args)  # malformed requests fail here too, not only in the kernel
        timeout_ms = args.get("timeout", DEFAULT_TIMEOUT_MS)
        sandbox = _sandbox_for(ctx)
        grant: dict[str, Any] = {}
        if ctx.network is not None:  # a confirmed network grant: this command's admission
            if not getattr(sandbox, "supports_network_grants", False):
                raise ToolError(
                    ErrorKind.SANDBOX_UNAVAILABLE,
                    f"the {getattr(sandbox, 'backend', 'unknown')} sandbox cannot mediate a "
                    "network grant; the command did not run",
                    sandboxed=getattr(sandbox, "sandboxed", False),
                )
            grant = {"grant_fd": ctx.network.fd, "policy_digest": ctx.network.grant.policy_digest}
        if ctx.exec_rules and getattr(sandbox, "supports_exec_check", False):
            grant["exec_rules"] = ctx.exec_rules  # every exec checked as it happens
        try:
            out = sandbox.exec(
                args["command"],
                timeout_ms=timeout_ms,
                max_output_bytes=MAX_OUTPUT_BYTES,
                cancel=ctx.cancel,
                **grant,
            )
        except SandboxUnavailable as exc:
            raise ToolError(
                ErrorKind.SANDBOX_UNAVAILABLE,
                f"{exc}",
                sandboxed=False,
                backend=getattr(sandbox, "backend", "unknown"),
            ) from None
        return result_of(self.name, out, timeout_ms, escalated=ctx.escalated)


def _sandbox_for(ctx: ToolContext) -> BashSandbox:
    if not ctx.escalated:
        return ctx.sandbox
    if ctx.host_sandbox_factory is None:
        raise ToolError(
            ErrorKind.SANDBOX_UNAVAILABLE,
            "the escalated command was approved, but this session has no process-host runner "
            "to run it outside the sandbox; it did not run",
            sandboxed=False,
        )
    return ctx.host_sandbox_factory()


def format_output(out: CommandOutput, timeout_ms: int) -> str:
    """stdout, stderr and the exit status as the model reads them."""
    parts = []
    if out.stdout:
        parts.append(out.stdout.rstrip("\n"))
    if out.stderr:
        parts.append("[stderr]\n" + out.stderr.rstrip("\n"))
    if out.setup_error:
        parts.append(f"[the sandbox could not start the command: {out.setup_error}]")
    if out.timed_out:
        parts.append(f"[timed out after {timeout_ms} ms; the command and its children were killed]")
    if out.cancelled:
        parts.append("[cancelled; the command and its children were killed]")
    if out.oom_killed:
        parts.append(
            "[killed: the sandbox reached its memory bound; use less memory (fewer parallel "
            "jobs, smaller inputs)]"
        )
    if out.exec_stopped is not None:
        stop = out.exec_stopped
        why = "denied by" if stop.decision == "deny" else "not approved for this call under"
        parts.append(f"[the exec check stopped `{stop.command}`: {why} {stop.rule}]")
    if out.truncated:
        parts.append(
            f"[output truncated: {out.total_bytes} bytes in total; the head and the tail of each "
            "stream are shown]"
        )
    parts.append(f"[exit code {out.exit_code}]")
    return "\n".join(parts)


def result_of(name: str, out: CommandOutput, timeout_ms: int, *, escalated: bool) -> ToolResult:
    """The ToolResult of one finished command."""
    metadata = {
        "exit_code": out.exit_code,
        "timed_out": out.timed_out,
        "truncated": out.truncated,
        "total_bytes": out.total_bytes,
        "sandboxed": out.sandboxed and not escalated,
        "backend": out.backend,
        "cancelled": out.cancelled,
        "duration_ms": out.duration_ms,
        "oom_killed": out.oom_killed,
        "hard_linked": out.hard_linked,
        "outlived": out.outlived,
    }
    if out.policy_changed:  # pinned to a policy digest that is no longer the sandbox's
        metadata["policy_changed"] = True
    if out.exec_stopped is not None:  # what the exec check stopped, and by which rule
        metadata["exec_stopped"] = {
            "decision": out.exec_stopped.decision,
            "rule": out.exec_stopped.rule,
            "command": out.exec_stopped.command,
        }
    text = format_output(out, timeout_ms)
    kind: ErrorKind | None = None
    if out.setup_error:
        kind = ErrorKind.SANDBOX_UNAVAILABLE
    elif out.timed_out:
        kind = ErrorKind.TIMEOUT
    elif out.cancelled:
        kind = ErrorKind.CANCELLED
    elif out.exit_code != 0:
        kind = ErrorKind.TOOL_FAILED
    return ToolResult(name, text, out.exit_code, kind is None, metadata, kind)
