"""Agent and Session: the host's handle on a workspace, and the only way tools run in it.

A session binds its sandbox (``select_sandbox``) before any tool exists, and
every call it owns goes through its InvocationKernel: model calls, governed
host calls, skill and workflow calls, and the calls of delegated children.
Privileged host calls (``tool``, ``bash``) skip the mode, the policy and
confirmations, but still use the same sandbox handle and credential boundary.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import threading
import uuid
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._errors import CodewardError
from ..hitl import ConfirmationManager, ConfirmationRequest
from ..hooks import HookConfig, HookContext, HookEvent, HookMatcher, HookRegistry, HookResult
from ..kernel import (
    CallScope,
    ExternalTool,
    InvocationKernel,
    InvocationOutcome,
    Mode,
    Origin,
    Skill,
    ToolAnnotations,
    ToolCall,
    ToolRegistry,
)
from ..netgrant import NetworkGrantError, NetworkMediator
from ..policy import PermissionPolicy
from ..sandbox import BashSandbox, NativeBashSandbox, ProcessHostBashSandbox, select_sandbox
from ..tools import CancelToken, Tool, ToolResult, builtin_tools
from ..verification import (
    MutationLedger,
    SnapshotTracker,
    TurnOutcome,
    VerificationGate,
    VerificationReport,
    Waiver,
    WorkspaceSnapshot,
    detect_checks,
    record_bash_changes,
    run_checks,
)
from ..verification._changes import record_unknown_change
from ..verification._grammar import is_tool_name
from ..verification._run import VERIFY_TOOL
from ..workspace import Workspace
from ._observer import EXTERNAL_TOOL, Sync, WorkspaceObserver
from ._options import SessionOptions, SessionOptionsError
from ._task import TaskRunner, TaskTool

__all__ = ["Agent", "Session", "SessionClosed", "SkillSession"]

_INHERITANCE = ("auto_approve", "deny_on_ask", "inherit_parent")
# Why a bash call's "after" snapshot walks the whole workspace.
_HARD_LINKED = (
    "the command called link() or linkat(): a hard link, even one removed again, can change "
    "a file where no directory watch sees it"
)
_ENTRY_ORIGINS = (Origin.MODEL, Origin.WORKFLOW, Origin.HOST_GOVERNED)
# Why a call's "after" snapshot cannot vouch for the workspace: something of it may still run.
_OUTLIVED = (
    "something of the command may have run after its result (a process that could not be "
    "killed in time, or a sandbox killed by force): what it changed is not known for certain"
)


class SessionClosed(CodewardError, RuntimeError):
    """The session was closed; it runs no more calls."""


class Agent:
    """Creates sessions. Holds nothing but defaults today; one Agent may serve many sessions."""

    def session(
        self, workspace: str | os.PathLike[str], options: SessionOptions | None = None
    ) -> Session:
        """A new session over ``workspace``; its sandbox is bound before this returns."""
        return Session(workspace, options or SessionOptions())


class Session:
    """A workspace, its sandbox, its tools, and the kernel every call goes through.

    Turns (docs/verification.md, "Turns"): each call that may write is
    snapshotted around and books what it changed in the turn's ledger;
    ``verify()`` binds a report to the effect digest; ``complete_turn()``
    compares the workspace now with what was booked and completes only on an
    empty ledger, a passing report or a host ``waive()`` for exactly that
    digest, and a completed turn starts the next one (``turn`` + 1, an empty
    ledger, no reports or waivers). ``new_turn()`` ends a turn uncompleted;
    ``verification_summary()`` shows the host where the turn stands.
    """

    def __init__(self, workspace: str | os.PathLike[str], options: SessionOptions) -> None:
        if not isinstance(options, SessionOptions):
            raise SessionOptionsError(
                f"options must be SessionOptions, not {type(options).__name__}"
            )
        self.id = uuid.uuid4().hex
        self.options = options
        self._workspace = Workspace(workspace, credential_boundary=options.credential_boundary)
        # The boundary first: no tool exists before the sandbox is bound.
        self.sandbox: BashSandbox = select_sandbox(
            self._workspace.root,
            allow_process_host_sandbox=options.allow_process_host_sandbox,
            sandbox_handle=options.sandbox_handle,
            limits=options.sandbox_limits,
        )
        self._registry = ToolRegistry(_default_tools(self._workspace.root))
        self._hooks = HookRegistry()
        self._confirmations = ConfirmationManager(options.confirmation_policy)
        self._ledger = MutationLedger()
        self._gate = VerificationGate(self._ledger)
        self._tracking = _Tracking(self._workspace.root, self.sandbox)
        self._observer = WorkspaceObserver(
            self._workspace.root, self._ledger, self._tracking.tracker
        )
        self._lock = threading.Lock()
        self._scope = CallScope(
            "session",
            Mode.parse(options.mode),
            options.permission_policy,
            options.confirmation_provider,
        )
        self._parent: Session | None = None
        self._started = False
        self._closed = False
        self._ids = itertools.count(1)
        self._kernel = self._make_kernel()
        self._mcp: Any = None  # codeward.mcp.McpServers, made by the first add_mcp_server
        self._mediator: NetworkMediator | None = None  # made by the first network grant

    # -- identity -------------------------------------------------------------------------

    @property
    def workspace(self) -> str:
        """The workspace's real path."""
        return self._workspace.root

    @property
    def mode(self) -> Mode:
        return self._scope.mode

    def set_mode(self, mode: Mode | str) -> None:
        """Switches the mode; a call already admitted keeps the mode it was admitted with."""
        try:
            new = Mode.parse(mode)
        except ValueError as exc:
            raise SessionOptionsError(str(exc)) from None
        with self._lock:
            self._scope = CallScope(
                self._scope.name,
                new,
                self._scope.policy,
                self._scope.provider,
                self._scope.inheritance,
            )

    def __repr__(self) -> str:
        return (
            f"<Session {self.id[:8]} {self.workspace!r} mode={self.mode.value} "
            f"sandbox={self.sandbox.backend}>"
        )

    # -- calls -------------------------------------------------------------------------

    def invoke(
        self,
        call: ToolCall,
        origin: Origin | str = Origin.MODEL,
        *,
        cancel: CancelToken | None = None,
    ) -> InvocationOutcome:
        """Runs a model, workflow or governed host call through the kernel.

        ``cancel`` is anything with ``is_set()`` (a threading.Event): once
        set, the running tool stops (a command's whole process tree is
        killed) and the outcome's ``cancelled`` is True.
        """
        origin = Origin(origin)
        if origin not in _ENTRY_ORIGINS:
            entry = {
                Origin.HOST_DIRECT: "session.tool() or session.bash()",
                Origin.SKILL: "session.skill(name).invoke()",
                Origin.DELEGATED: "a child session from session.delegate()",
            }[origin]
            raise SessionOptionsError(
                f"origin {origin.value} is set by its own entry point: use {entry}"
            )
        return self._run(call, origin, cancel=cancel)

    def governed_tool(self, name: str, args: Mapping[str, Any] | None = None) -> InvocationOutcome:
        """A host call that asks for the whole kernel: mode, policy, hooks, confirmations."""
        return self._run(ToolCall(self._next_id("host"), name, args or {}), Origin.HOST_GOVERNED)

    def tool(self, name: str, args: Mapping[str, Any] | None = None) -> ToolResult:
        """A privileged host call: no policy or confirmation; the same sandbox and credential rules.

        Hard guardrails and argument validation still apply: a refused call
        returns a failed ToolResult saying why.
        """
        outcome = self._run(ToolCall(self._next_id("direct"), name, args or {}), Origin.HOST_DIRECT)
        if outcome.result is not None:
            return outcome.result
        from ..tools import ErrorKind

        return ToolResult.failure(
            name, outcome.error_kind or ErrorKind.PERMISSION_DENIED, outcome.reason
        )

    def bash(self, command: str, *, timeout_ms: int | None = None) -> ToolResult:
        """``session.tool("bash", ...)`` for the host: runs in the session's sandbox."""
        args: dict[str, Any] = {"command": command}
        if timeout_ms is not None:
            args["timeout"] = timeout_ms
        return self.tool("bash", args)

    def _run(
        self,
        call: ToolCall,
        origin: Origin,
        *,
        skill: str | None = None,
        cancel: CancelToken | None = None,
    ) -> InvocationOutcome:
        if not isinstance(call, ToolCall):
            raise TypeError(f"call must be a ToolCall, not {type(call).__name__}")
        self._ensure_open()
        self._start_once()
        if self._parent is not None and origin is not Origin.HOST_DIRECT:
            origin = Origin.DELEGATED
        return self._kernel.invoke(
            call, origin, self._scopes(), skill=skill, caller=self, cancel=cancel
        )

    def _scopes(self) -> tuple[CallScope, ...]:
        """The authority chain of this session, root first, snapshotted for one call."""
        chain = []
        node: Session | None = self
        while node is not None:
            with node._lock:
                chain.append(node._scope)
            node = node._parent
        return tuple(reversed(chain))

    def _next_id(self, prefix: str) -> str:
        return f"{prefix}-{self.id[:8]}-{next(self._ids)}"

    # -- tools, skills -----------------------------------------------------------------

    def register_tool(
        self,
        name: str,
        handler: Callable[[Mapping[str, Any]], Any],
        schema: Mapping[str, Any],
        annotations: Mapping[str, Any] | ToolAnnotations | None = None,
        *,
        description: str = "",
        launch: bool = False,
        replace: bool = False,
    ) -> None:
        """Registers an external (MCP-style) tool; missing or unsafe annotations mean side effects.

        ``launch=True`` marks a tool that starts a task or workflow whose own
        calls come back through the kernel one by one.
        """
        if not callable(handler):
            raise SessionOptionsError(f"tool {name!r}: the handler must be callable")
        tool = ExternalTool(
            name,
            handler,
            schema,
            ToolAnnotations.from_mapping(annotations),
            description,
            launch=launch,
        )
        self._registry.add(tool, replace=replace)

    def register_task_runner(
        self,
        runner: TaskRunner,
        *,
        permission_policy: PermissionPolicy | None = None,
        mode: Mode | str | None = None,
        confirmation_inheritance: str = "auto_approve",
        replace: bool = False,
    ) -> None:
        """Gives the model the ``task`` tool: ``runner(child, prompt)`` drives a sub-agent.

        A ``task`` call is a launch (Default allow, Plan deny, Auto allow);
        once admitted, the calling session delegates a child run with
        ``permission_policy``, ``mode`` and ``confirmation_inheritance`` (as
        :meth:`delegate` takes them) and passes it to ``runner``, whose
        return value (a string, a ToolResult or None) is the call's result.
        Without a runner there is no ``task`` tool.
        """
        if not callable(runner):
            raise SessionOptionsError("the task runner must be callable")
        _check_narrowing(permission_policy, confirmation_inheritance)
        try:
            parsed = None if mode is None else Mode.parse(mode).value
        except ValueError as exc:
            raise SessionOptionsError(str(exc)) from None
        task = TaskTool(
            runner,
            permission_policy=permission_policy,
            mode=parsed,
            confirmation_inheritance=confirmation_inheritance,
        )
        self._registry.add(task, replace=replace)

    def add_tool(self, tool: Tool, *, replace: bool = False) -> None:
        """Registers a Tool object (a host's own subclass of codeward.tools.Tool)."""
        self._registry.add(tool, replace=replace)

    def unregister_tool(self, name: str) -> bool:
        return self._registry.remove(name)

    def tool_names(self) -> list[str]:
        return self._registry.names()

    def tool_schemas(self) -> list[dict[str, Any]]:
        """The definitions to show a model: every tool the policy does not deny outright."""
        policy = self._scope.policy
        out = []
        for name in self._registry.names():
            tool = self._registry.get(name)
            if tool is not None and (policy is None or policy.exposes_to_model(name)):
                out.append(tool.model_schema())
        return out

    def register_skill(
        self,
        name: str,
        allowed_tools: Sequence[str],
        handler: Callable[..., Any] | None = None,
        *,
        description: str = "",
    ) -> None:
        """Registers a skill and the tools its calls may use (names or rule-style globs)."""
        self._registry.add_skill(Skill(name, tuple(allowed_tools), handler, description))

    def skill(self, name: str) -> SkillSession:
        """The entry point for calls made on behalf of skill ``name`` (origin SKILL)."""
        if self._registry.skill(name) is None:
            raise SessionOptionsError(f"no skill named {name!r} is registered")
        return SkillSession(self, name)

    # -- MCP servers -------------------------------------------------------------------

    def add_mcp_server(
        self,
        name: str,
        command: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        *,
        sandbox: Any = None,
        request_timeout_ms: int = 60_000,
        startup_timeout_ms: int = 60_000,
        allow_unowned: bool = False,
    ) -> list[str]:
        """Starts an MCP stdio server and registers its tools as ``mcp__<name>__<tool>``.

        The server runs on the host (a trusted extension) unless ``sandbox``
        is a ``codeward.mcp.McpSandbox`` (or True): then in a sandbox of its
        own over this workspace, read-only and without network unless the
        McpSandbox grants them. Every call of its tools goes through the
        kernel with the server's annotations (docs/mcp.md). Returns the
        registered tool names; the session's close() ends the server.
        On the host it runs in a pid namespace of its own; where that cannot
        be had it is refused (McpUnownedError) unless ``allow_unowned``.
        """
        from ..mcp import McpSandbox, McpServerConfig

        config = McpServerConfig(
            name=name,
            command=command,
            args=tuple(args),
            env=dict(env or {}),
            cwd=cwd,
            sandbox=McpSandbox() if sandbox is True else (sandbox or None),
            request_timeout_ms=request_timeout_ms,
            allow_unowned=allow_unowned,
            startup_timeout_ms=startup_timeout_ms,
        )
        return list(self._mcp_servers().add(config))

    def load_mcp_config(
        self, source: str | os.PathLike[str] | Mapping[str, Any]
    ) -> dict[str, list[str]]:
        """Starts every stdio server of a ``.mcp.json`` file (or its parsed ``mcpServers`` mapping).

        Returns server name -> registered tool names. A server that fails to
        start stops the loading: the servers started before it keep running
        (remove them with remove_mcp_server, or close the session).
        """
        from ..mcp import load_mcp_config

        config = load_mcp_config(source)
        servers = self._mcp_servers()
        return {server.name: servers.add(server) for server in config.servers}

    def mcp_servers(self) -> list[str]:
        """The names of the MCP servers this session runs."""
        root = self._root()
        return [] if root._mcp is None else root._mcp.names()

    def mcp_client(self, name: str) -> Any:
        """The ``codeward.mcp.McpClient`` of one server, or None."""
        root = self._root()
        return None if root._mcp is None else root._mcp.client(name)

    def remove_mcp_server(self, name: str) -> bool:
        """Unregisters the server's tools and ends its processes; False if there is none."""
        root = self._root()
        return False if root._mcp is None else bool(root._mcp.remove(name))

    def _root(self) -> Session:
        node = self
        while node._parent is not None:
            node = node._parent
        return node

    def _mcp_servers(self) -> Any:
        self._ensure_open()
        root = self._root()
        with root._lock:
            if root._mcp is None:
                from ..mcp import McpServers

                root._mcp = McpServers(root._registry, root.workspace)
            return root._mcp

    # -- delegation --------------------------------------------------------------------

    def delegate(
        self,
        name: str,
        permission_policy: PermissionPolicy | None = None,
        mode: Mode | str | None = None,
        confirmation_inheritance: str = "auto_approve",
    ) -> Session:
        """A child session on the same workspace and sandbox handle: it can narrow, never widen.

        Every child call is checked against this session's scope too: a parent
        Deny wins; a parent Ask is answered by the parent's provider only; an
        Ask only the child introduces follows ``confirmation_inheritance``.
        """
        _check_narrowing(permission_policy, confirmation_inheritance)
        if not isinstance(name, str) or not name.strip():
            raise SessionOptionsError("a delegated run needs a non-blank name")
        self._ensure_open()
        child = object.__new__(Session)
        child.id = uuid.uuid4().hex
        child.options = self.options
        child._workspace = self._workspace
        child.sandbox = self.sandbox  # the same handle: a child never replaces the boundary
        child._registry = self._registry
        child._hooks = self._hooks
        child._confirmations = self._confirmations
        child._ledger = self._ledger  # a child's changes are the parent's turn's changes
        child._tracking = self._tracking
        child._observer = self._observer
        child._gate = self._gate
        child._lock = threading.Lock()
        child._scope = CallScope(
            name,
            self.mode if mode is None else Mode.parse(mode),
            permission_policy,
            None,  # a child has no provider of its own: asks go to the root's
            confirmation_inheritance,
        )
        child._parent = self
        child._started = True
        child._closed = False
        child._ids = itertools.count(1)
        child._kernel = self._kernel
        return child

    @property
    def parent(self) -> Session | None:
        return self._parent

    # -- confirmations -----------------------------------------------------------------

    def pending_confirmations(self) -> list[ConfirmationRequest]:
        return self._confirmations.pending()

    def confirm_tool_use(self, call_id: str, approved: bool, reason: str | None = None) -> bool:
        """Answers the pending confirmation of exactly ``call_id``; False if none is pending."""
        return self._confirmations.confirm(call_id, approved, reason)

    def cancel_confirmations(self) -> int:
        """Rejects every pending confirmation; returns how many there were."""
        return self._confirmations.cancel_all()

    # -- hooks -------------------------------------------------------------------------

    def register_hook(
        self,
        id: str,
        event: HookEvent | str,
        matcher: HookMatcher | Mapping[str, Any] | None,
        config: HookConfig | Mapping[str, Any] | None,
        handler: Callable[[HookContext], HookResult | None],
    ) -> None:
        if isinstance(matcher, Mapping):
            matcher = HookMatcher(**matcher)
        if isinstance(config, Mapping):
            config = HookConfig(**config)
        self._hooks.register(id, event, matcher, config, handler)

    def unregister_hook(self, id: str) -> bool:
        return self._hooks.unregister(id)

    def hook_count(self) -> int:
        return self._hooks.count()

    # -- verification ------------------------------------------------------------------
    #
    # The turn lifecycle (docs/verification.md, "Turns"): a turn starts with an empty
    # ledger; every call that may write is snapshotted around and books what it changed;
    # changes between calls are booked to ``external``; verify() binds a report to the
    # effect digest of the workspace as it is; complete_turn() brings the ledger up to date
    # with the workspace and completes only on an empty ledger, a passing report or a host
    # waiver for exactly that digest, and a completed turn starts the next one.

    @property
    def turn(self) -> int:
        """The current turn's number: 1 for the first, one more after each completed turn
        or ``new_turn()``. Reports and waivers belong to the turn they were made in."""
        return self._gate.turn

    @property
    def effect_digest(self) -> str:
        """The digest of everything the current turn changed, the workspace as it is now
        (changes made outside any call are booked first; see docs/verification.md)."""
        self._observer.sync(EXTERNAL_TOOL, may_write=False)
        return self._ledger.effect_digest()

    def verify(
        self, *, timeout_ms: int = 600_000, cancel: CancelToken | None = None
    ) -> VerificationReport:
        """Runs the workspace's checks in the sandbox; the report is bound to the current digest.

        ``cancel`` (``is_set()``) stops the running check and fails the rest.
        The ledger is brought up to date with the workspace first, so the
        digest is the workspace's as the checks see it. A report whose turn
        ended while the checks ran is returned but not kept: it vouches for a
        turn that is over.
        """
        self._ensure_open()
        turn = self._gate.turn
        self._observer.sync(EXTERNAL_TOOL, may_write=False)
        specs = detect_checks(
            self.workspace,
            configured=self.options.verification_checks,
            auto=self.options.detect_checks,
        )
        report = run_checks(
            self.sandbox,
            specs,
            self._ledger.effect_digest(),
            timeout_ms,
            workspace_root=self.workspace,
            ledger=self._ledger,
            tracker=self._tracking.tracker(),
            cancel=cancel,
        )
        # the checks' own changes are booked by run_checks (to "verify"), their declared
        # outputs (cargo's target/) by no one: the baseline moves past both
        self._observer.sync(VERIFY_TOOL, ignore=lambda path: any(spec.owns(path) for spec in specs))
        self._gate.add_report(report, turn=turn)
        return report

    def complete_turn(self, text: str = "") -> TurnOutcome:
        """Completes the turn only if nothing changed, or the change is verified or waived.

        The workspace is compared with the state last booked first (through
        the incremental snapshot), so a change by any writer since the report
        or the waiver moves the digest and the turn needs new evidence. A
        completed turn starts the next one: an empty ledger, no reports, no
        waivers (``TurnOutcome.turn`` is the turn completed).
        """
        self._observer.sync(EXTERNAL_TOOL, may_write=False)
        return self._gate.complete_turn(text)

    def waive(self, effect_digest: str, reason: str, *, turn: int | None = None) -> Waiver:
        """Host only: accept exactly this effect digest, in this turn, without a passing report.

        It binds to that digest alone: a later change needs a new waiver, and
        the next turn starts without it. ``turn`` (as ``verification_summary()``
        showed it) refuses the waiver if that turn has ended meanwhile. The
        waiver does not complete the turn: ``complete_turn()`` does, if the
        workspace is still exactly what was waived.
        """
        return self._gate.waive(effect_digest, reason, turn=turn)

    def verification_reports(self) -> list[VerificationReport]:
        """This turn's reports, oldest first (stale ones included)."""
        return list(self._gate.reports())

    def verification_summary(self) -> dict[str, Any]:
        """A JSON-ready view for the host: the turn number, the ledger as the workspace is
        now, this turn's reports and waivers, and what ``complete_turn`` would decide."""
        self._observer.sync(EXTERNAL_TOOL, may_write=False)
        return self._gate.summary()

    def new_turn(self) -> list[VerificationReport]:
        """Ends the turn without completing it and starts the next: an empty ledger; returns
        the ended turn's reports. What changed up to now belongs to the ended turn."""
        self._observer.sync(EXTERNAL_TOOL, may_write=False)
        return list(self._gate.new_turn())

    def _observe_bash(self, run: Callable[[], ToolResult], escalated: bool) -> ToolResult:
        """Runs a bash call between two syncs of the workspace and books what it changed.

        With a tracker the workspace is synced first (what changed since the
        last call is booked to ``external``, not to this command); without
        one, a walk per call is what it costs, so the last sync stands for the
        "before" and a change made meanwhile is booked to the command. A
        command that called link() makes the "after" a walk; one whose
        sandbox was killed by force, or a call that raised, counts as an
        unknown change and makes the next snapshot a walk too. An escalated
        call (outside the sandbox) can touch the protected names, so it is
        also compared by walks that include them. The result's metadata
        (``change_detection``) says how the "after" snapshot was taken and
        why, if so, it could not vouch for the workspace.
        """
        if self._observer.tracked:
            self._observer.sync(EXTERNAL_TOOL, may_write=False)
        wide = _wide_snapshot(self.workspace) if escalated else None
        result: ToolResult | None = None
        try:
            result = run()
        finally:
            linked = result is None or result.metadata.get("hard_linked", False) is not False
            sync = self._observer.sync(
                "bash",
                walk=_HARD_LINKED if linked else None,
                uncertain=_uncertainty(result),
            )
            if escalated:
                _record_wide(self._ledger, wide, self.workspace)
        assert result is not None
        return _with_detection(result, sync)

    def _observe_write(self, name: str, run: Callable[[], ToolResult]) -> ToolResult:
        """Runs a call that may write (a write tool, a download, an MCP or host tool, a
        launch) between two syncs: what the workspace shows changed is booked to it, with
        every permission bit, whatever the tool itself reported."""
        tool = name if is_tool_name(name) else "tool"
        if self._observer.tracked:
            self._observer.sync(EXTERNAL_TOOL, may_write=False)
        result: ToolResult | None = None
        try:
            result = run()
        finally:
            sync = self._observer.sync(tool, uncertain=_uncertainty(result))
        assert result is not None
        return _with_detection(result, sync)

    # -- life cycle --------------------------------------------------------------------

    def start(self) -> None:
        """Emits ``session_start`` (done by the first call if the host does not call this)."""
        self._ensure_open()
        self._start_once()

    def close(self) -> None:
        """Ends the MCP servers, rejects pending confirmations, emits ``session_end``; later calls
        raise SessionClosed."""
        if self._closed:
            return
        self._closed = True
        if self._parent is None:
            try:
                if self._mcp is not None:
                    self._mcp.close()  # every process of every server ends
            finally:
                with self._lock:
                    mediator, self._mediator = self._mediator, None
                if mediator is not None:
                    mediator.close()  # every granted command's connections end
                self._confirmations.cancel_all()
                self._tracking.close()  # its inotify watches, one per directory
                if self._started:
                    self._hooks.run(
                        HookEvent.SESSION_END, self._lifecycle_context(HookEvent.SESSION_END)
                    )
                close = getattr(self.sandbox, "close", None)
                if callable(close) and self.options.sandbox_handle is None:
                    close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _ensure_open(self) -> None:
        if self._closed:
            raise SessionClosed(f"session {self.id[:8]} is closed")

    def _start_once(self) -> None:
        with self._lock:
            if self._started:
                return
            self._started = True
        self._hooks.run(HookEvent.SESSION_START, self._lifecycle_context(HookEvent.SESSION_START))

    def _lifecycle_context(self, event: HookEvent) -> HookContext:
        return HookContext(
            event=event,
            session_id=self.id,
            call_id=None,
            tool=None,
            args={},
            paths=(),
            origin=None,
            result=None,
            error=None,
            extra={"workspace": self.workspace, "mode": self.mode.value},
        )

    def _make_kernel(self) -> InvocationKernel:
        root = self._workspace.root
        # The kernel reaches back into the session through weak references only: a
        # session the host drops (without close()) is then freed at once by reference
        # counting, and with it its sandbox handle, watches and threads, instead of
        # waiting in a reference cycle for the garbage collector (issue 26).
        me = weakref.ref(self)

        def observe(run: Callable[[], ToolResult], escalated: bool) -> ToolResult:
            return _alive(me)._observe_bash(run, escalated)

        return InvocationKernel(
            session_id=self.id,
            workspace=self._workspace,
            sandbox=self.sandbox,
            registry=self._registry,
            hooks=self._hooks,
            confirmations=self._confirmations,
            recorder=_ToolRecorder(self),
            host_sandbox_factory=lambda: ProcessHostBashSandbox(root),
            bash_observer=observe,
            write_observer=lambda name, run: _alive(me)._observe_write(name, run),
            release_placeholders=lambda: _alive(me)._release_placeholders(),
            network_mediator=lambda: _alive(me)._network_mediator(),
        )

    def _network_mediator(self) -> NetworkMediator:
        """The session's one mediator of network grants, made on first use (root session's)."""
        root = self._root()
        with root._lock:
            if root._closed:
                raise NetworkGrantError("the session is closed")
            if root._mediator is None:
                root._mediator = NetworkMediator(
                    resolver=root.options.network_resolver, dialer=root.options.network_dialer
                )
            return root._mediator

    def _release_placeholders(self) -> None:
        """Stops the session's own long-lived sandbox so its placeholders leave the workspace."""
        close = getattr(self.sandbox, "close", None)
        if callable(close) and self.options.sandbox_handle is None:
            close()


class _Tracking:
    """The session's change tracker, made on first use, only where it can vouch for a command.

    A command confined by the native sandbox can change the workspace only
    through names inside it (every other name it sees is on a read-only or
    separate mount), which is what directory watches see, except through a
    hard link, and the sandbox reports every command that called link()
    (``hard_linked``): that call's snapshot is a walk. Any other sandbox (the
    process host, a host's own handle, an escalated call) is not known to
    confine or to report links: its snapshots are walks of the whole tree.
    """

    def __init__(self, root: str, sandbox: BashSandbox) -> None:
        self._root = root
        # only the native sandbox reports the hard links its commands make (hard_linked)
        self._confined = isinstance(sandbox, NativeBashSandbox)
        self._lock = threading.Lock()
        self._tracker: SnapshotTracker | None = None
        self._closed = False

    def tracker(self) -> SnapshotTracker | None:
        if not self._confined:
            return None
        with self._lock:
            if self._closed:
                return None  # the session is closed: a call still running walks
            if self._tracker is None:
                self._tracker = SnapshotTracker(self._root)
            return self._tracker

    def close(self) -> None:
        """Releases the tracker's watches; snapshots from here on are walks."""
        with self._lock:
            self._closed = True
            tracker, self._tracker = self._tracker, None
        if tracker is not None:
            tracker.close()


def _alive(ref: weakref.ref[Session]) -> Session:
    """The session behind a weak reference of its kernel; a freed one is a closed one."""
    session = ref()
    if session is None:
        raise SessionClosed("the session was freed")
    return session


class _ToolRecorder:
    """Books a tool's change in the ledger (holding the session weakly: Session._make_kernel).

    A tool reports the bytes it wrote; the call's "after" sync (every call
    that may write is observed) then records the path as change detection
    sees it, under the same tool: type, every permission bit, bytes. So a
    tool's rewrite with the verified bytes of a file whose mode changed does
    not bring back the verified digest.
    """

    def __init__(self, session: Session) -> None:
        self._session = weakref.ref(session)

    def record(self, tool: str, path: str, content_digest: str) -> None:
        _alive(self._session)._ledger.record(tool, path, content_digest)


def _uncertainty(result: ToolResult | None) -> str | None:
    """Why a call's result cannot vouch that nothing of it still runs or wrote unseen."""
    if result is None:
        return "the call raised before it returned a result: what it changed is unknown"
    if result.metadata.get("outlived"):
        return _OUTLIVED
    return None


def _with_detection(result: ToolResult, sync: Sync) -> ToolResult:
    meta = dict(result.metadata)
    meta["change_detection"] = sync.to_dict()
    if sync.uncertain:
        meta["workspace_uncertain"] = list(sync.uncertain)
    return dataclasses.replace(result, metadata=meta)


def _wide_snapshot(root: str) -> WorkspaceSnapshot | None:
    """A walk including the protected names (for an escalated call), or None if it fails."""
    try:
        return WorkspaceSnapshot.take(root, skip_top=())
    except CodewardError:
        return None


def _record_wide(ledger: MutationLedger, before: WorkspaceSnapshot | None, root: str) -> None:
    after = _wide_snapshot(root)
    if before is None or after is None:
        record_unknown_change(ledger)
        return
    record_bash_changes(ledger, before, after, root)


class SkillSession:
    """Calls made on behalf of one skill: origin SKILL, limited to the skill's tools."""

    def __init__(self, session: Session, name: str) -> None:
        self._session = session
        self.name = name

    def invoke(self, call: ToolCall) -> InvocationOutcome:
        return self._session._run(call, Origin.SKILL, skill=self.name)


def _check_narrowing(policy: object, inheritance: str) -> None:
    """What a delegated run (or a task runner's) may be given: a policy and an inheritance."""
    if inheritance not in _INHERITANCE:
        raise SessionOptionsError(
            f"confirmation_inheritance must be one of {', '.join(_INHERITANCE)}, "
            f"not {inheritance!r}"
        )
    if policy is not None and not isinstance(policy, PermissionPolicy):
        raise SessionOptionsError("permission_policy must be a PermissionPolicy or None")


def _default_tools(root: str) -> list[Tool]:
    tools = builtin_tools()
    if os.access(root, os.W_OK):  # download is a workspace mutation: only where one can happen
        from ..tools import DownloadTool

        tools.append(DownloadTool())
    return tools
