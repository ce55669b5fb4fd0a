"""What a call is decided on: its arguments as the tool will run them, and every path it touches.

A session resolves each call once, after its arguments are validated and
before anything decides on it. Every path argument becomes the
workspace-relative path the tool will open (an absolute path inside the
workspace made relative, ``.`` and ``..`` and doubled slashes gone; a
backslash refused), every default the tool would pick is filled in (a
search's and an ls's ``.``, a download's file name inferred from the URL),
and each path the call touches is listed with its action and its target
once symlinks inside the workspace are followed. The hard guardrails, the
protected-name rule, the hooks, the permission policy (of every scope), the
confirmation prompt and the tool itself then all see the same thing: the
tool runs with the resolved arguments.

:func:`policy_verdict` decides a resolved call against one policy: every
spelling and every target is a subject (strictest wins), a patch is decided
per file, and for each file of a patch the deny and ask rules of the write or
edit of that file apply too. ``codeward policy check --workspace`` uses the
same two functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._errors import PathOutsideWorkspace, WorkspaceError
from ..guardrail import GuardrailHit, check_path
from ..policy import Decision, PermissionPolicy
from ..tools import Tool
from ..workspace import Workspace

__all__ = ["PathRefused", "Resolution", "Target", "Verdict", "policy_verdict", "resolve_call"]

# A patch's change of a file is also that file's write or edit: their deny and ask rules apply.
_PATCH_AS = {"write": ("write",), "edit": ("edit",), "delete": ("write", "edit")}
_RANK = {Decision.ALLOW: 0, Decision.ASK: 1, Decision.DENY: 2}


@dataclass(frozen=True)
class Target:
    """One path a call touches: ``path`` as the tool opens it, ``real`` where that leads.

    Both are workspace-relative (``.`` for the root); ``real`` follows every
    symlink inside the workspace and equals ``path`` when there is none.
    """

    action: str  # read, list, search, write, edit, delete
    path: str
    real: str

    @property
    def names(self) -> tuple[str, ...]:
        return (self.path,) if self.real == self.path else (self.path, self.real)

    def __str__(self) -> str:
        return self.path if self.real == self.path else f"{self.path} -> {self.real}"


@dataclass(frozen=True)
class Resolution:
    """A call as it will run: the resolved arguments and the targets."""

    args: Mapping[str, Any]
    targets: tuple[Target, ...] = ()

    @property
    def paths(self) -> list[str]:
        """Every spelling and every target, once each, in order."""
        return list(dict.fromkeys(name for t in self.targets for name in t.names))


class PathRefused(Exception):
    """A path of the call is refused by a hard guardrail (outside, a backslash, a loop ...)."""

    def __init__(self, hit: GuardrailHit) -> None:
        super().__init__(hit.message)
        self.hit = hit


def resolve_call(tool: Tool | None, args: Mapping[str, Any], workspace: Workspace) -> Resolution:
    """``args`` as ``tool`` will run them in ``workspace``, and what they touch.

    Raises PathRefused when a path is refused by the path guardrail. Call it
    on validated arguments; a tool that cannot resolve them raises.
    """
    if tool is None:
        return Resolution(dict(args))

    def relpath(path: str) -> str:
        if not isinstance(path, str):
            shown = repr(path)[:200]
            raise PathRefused(
                GuardrailHit("path.invalid", f"refused the path {shown}: not a string", shown)
            )
        hit = check_path(workspace, path)
        if hit is not None:
            raise PathRefused(hit)
        return workspace.relpath(path)

    resolved, touched = tool.resolve(args, relpath)
    targets = tuple(
        Target(action, path, _real(workspace, path, action)) for action, path in touched
    )
    return Resolution(resolved, targets)


def _real(workspace: Workspace, path: str, action: str) -> str:
    try:
        parts = workspace.locate(path, follow_last=action != "delete")
    except PathOutsideWorkspace as exc:
        raise PathRefused(
            GuardrailHit("path.symlink_escape", f"refused the path {path!r}: {exc}", path)
        ) from None
    except WorkspaceError as exc:
        raise PathRefused(
            GuardrailHit("path.symlink_loop", f"refused the path {path!r}: {exc}", path)
        ) from None
    return "/".join(parts) or "."


@dataclass(frozen=True)
class Verdict:
    """One policy's answer for a resolved call, and what it was decided on."""

    decision: Decision
    subjects: tuple[str, ...]
    matched: Mapping[str, list[str]]
    allowed_by_rule: bool  # every subject allowed by an allow rule, nothing raised it
    raised_by: str | None = None  # the write/edit rule that raised a patch's decision

    @property
    def reason(self) -> str:
        if self.raised_by is not None:
            return f"rule {self.raised_by}"
        rules = self.matched.get(self.decision.value) or []
        return f"rule {rules[0]}" if rules else "the policy default"


def policy_verdict(policy: PermissionPolicy, name: str, resolution: Resolution) -> Verdict:
    """``policy``'s decision for the call ``name`` resolved as ``resolution``.

    The subjects are the resolved arguments' paths, spellings and targets
    alike (for the file tools, ls, search and patch), decided one by one,
    strictest first; other tools are decided on their argument string. A
    patch's file is also held to the deny and ask rules of the write or edit
    of that file.
    """
    paths = resolution.paths if resolution.targets else None
    evaluation = policy.evaluate(name, resolution.args, paths=paths)
    verdict = Verdict(
        evaluation.decision,
        evaluation.subjects,
        evaluation.matched,
        evaluation.allowed_by_rule,
    )
    if evaluation.tool == "patch" and policy.enabled:
        verdict = _patch_files(policy, resolution, verdict)
    return verdict


def _patch_files(policy: PermissionPolicy, resolution: Resolution, verdict: Verdict) -> Verdict:
    """Raises a patch's verdict by the deny and ask rules of each file's write or edit."""
    decision, raised_by = verdict.decision, None
    for target in resolution.targets:
        for tool in _PATCH_AS.get(target.action, ("write",)):
            for name in target.names:
                found = policy.matching_rules(tool, {"file_path": name})
                for level, list_name in ((Decision.DENY, "deny"), (Decision.ASK, "ask")):
                    if found[list_name] and _RANK[level] > _RANK[decision]:
                        decision, raised_by = level, found[list_name][0]
    if raised_by is None:
        return verdict
    return Verdict(decision, verdict.subjects, verdict.matched, False, raised_by)
