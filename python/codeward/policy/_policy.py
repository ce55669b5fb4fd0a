"""PermissionPolicy: deny, allow and ask rule lists compiled once into the C rule set."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from .. import _native
from .._errors import NativeCoreError, PolicyError, PolicyFileError
from ._bash import BashVerdict, verdict_from_native
from ._decision import Decision
from ._subject import (
    SEARCH_MODE_TOOLS,
    Subject,
    canonical_json,
    canonical_tool,
    decision_subjects,
    named_argument_string,
    search_texts,
)

__all__ = ["Decision", "Evaluation", "PermissionPolicy", "RuleView"]

LISTS = ("deny", "allow", "ask")
_LIST_CODES = {"deny": _native.LIST_DENY, "allow": _native.LIST_ALLOW, "ask": _native.LIST_ASK}
_FILE_KEYS = ("deny", "allow", "ask", "default_decision", "enabled")
_CAMEL_HINTS = {"defaultDecision": "default_decision"}


_BY_LIST_CODE = {
    _native.LIST_DENY: Decision.DENY,
    _native.LIST_ALLOW: Decision.ALLOW,
    _native.LIST_ASK: Decision.ASK,
}


_STRICTNESS = (Decision.DENY, Decision.ASK, Decision.ALLOW)
# A glob character of the rule dialect (an escape counts too: it fails closed).
_WILDCARD = re.compile(r"[*?\[\]{}\\]")


@dataclass(frozen=True)
class Evaluation:
    """A policy's answer for one call, with what it was decided on.

    ``subjects`` are the argument strings (one per file of a multi-file
    read, or per path the call touches when the paths were given) and
    ``decisions`` the answer for each; ``decision`` is the strictest of them.
    ``matched`` lists the raw rules that matched any subject, per list, in
    policy order. ``allowed_by_rule`` is True when every subject was allowed
    by an allow rule (not by the default): only then may an allow rule lower
    a mode's ask (docs/kernel.md).
    """

    tool: str
    subjects: tuple[str, ...]
    decisions: tuple[Decision, ...]
    decision: Decision
    matched: Mapping[str, list[str]]
    allowed_by_rule: bool


class RuleView:
    """One compiled rule: where it came from and its canonical form."""

    __slots__ = ("flags", "index", "list", "pattern", "raw", "tool")

    def __init__(self, index: int, list_name: str, raw: str, tool: str, pattern: str, flags: int):
        self.index = index
        self.list = list_name
        self.raw = raw
        self.tool = tool
        self.pattern = pattern
        self.flags = flags

    @property
    def any_args(self) -> bool:
        return bool(self.flags & _native.RULE_ANY_ARGS)

    @property
    def tool_glob(self) -> bool:
        return bool(self.flags & _native.RULE_TOOL_GLOB)

    @property
    def mcp_server(self) -> bool:
        return bool(self.flags & _native.RULE_MCP_SERVER)

    @property
    def prefix(self) -> bool:
        return bool(self.flags & _native.RULE_PREFIX)

    @property
    def rewritten(self) -> bool:
        return bool(self.flags & _native.RULE_REWRITTEN)

    def covers_tool(self, tool: str) -> bool:
        """Whether this rule's tool part names `tool` (already canonical)."""
        if self.tool_glob:
            return bool(_native.Glob(self.tool, tool_name=True).match(tool))
        if self.mcp_server:
            return tool == self.tool or tool.startswith(self.tool + "__")
        return tool == self.tool

    def __repr__(self) -> str:
        return f"RuleView({self.list}: {self.raw!r} -> {self.tool}({self.pattern}))"


def _bash_line(args: Mapping[str, Any] | None) -> str | None:
    """The command line of a bash call, when it is one (a string); None otherwise."""
    if args is None or not isinstance(args, Mapping):
        return None
    command = args.get("command")
    return command if isinstance(command, str) else None


def _rule_text(entry: Any, list_name: str, position: int) -> str:
    if isinstance(entry, str):
        return entry
    if isinstance(entry, Mapping):
        extra = set(entry) - {"rule"}
        if extra:
            raise PolicyError(
                f"{list_name}[{position}]: unknown key(s) {sorted(map(str, extra))} in a rule "
                "object; only 'rule' is allowed"
            )
        if "rule" not in entry:
            raise PolicyError(f"{list_name}[{position}]: a rule object needs a 'rule' key")
        if not isinstance(entry["rule"], str):
            raise PolicyError(f"{list_name}[{position}]: 'rule' must be a string")
        return str(entry["rule"])
    raise PolicyError(
        f"{list_name}[{position}]: a rule is a string or {{'rule': ...}}, "
        f"not {type(entry).__name__}"
    )


def _rule_list(value: Any, list_name: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise PolicyError(
            f"{list_name} must be a list of rules, not {type(value).__name__} "
            f"(write {list_name}=[{value!r}] for one rule)"
        )
    return [_rule_text(entry, list_name, i) for i, entry in enumerate(value)]


def _decision(value: Any) -> Decision:
    if isinstance(value, Decision):
        return value
    if isinstance(value, str):
        try:
            return Decision(value)
        except ValueError:
            pass
    raise PolicyError(f"default_decision must be 'allow', 'deny' or 'ask', not {value!r}")


_CHECK_DOC = """check(tool, args=None) -> Decision: the decision for one call: DENY, ALLOW or ASK.

A multi-file read is decided per file: denied if any file is denied, asked if any
is asked or falls to an ask default, allowed only if all are. A search is decided
on its parts (see :class:`~._subject.Subject`). A bash command is decided per
simple command (see :meth:`bash_verdict`). The common call shapes are decided in
one C call (Ruleset.decide); the others by the Python path (_check_slow).
"""


class _Check(Protocol):
    def __call__(self, tool: str, args: Mapping[str, Any] | None = None) -> Decision: ...


def _allow_all(tool: str, args: Mapping[str, Any] | None = None) -> Decision:
    """check() of a disabled policy."""
    return Decision.ALLOW


class PermissionPolicy:
    """Deny, allow and ask rules; evaluation is deny, then allow, then ask, then the default.

    ``enabled=False`` allows everything. Rules are parsed and compiled when the
    policy is built; a malformed rule raises :class:`PolicyError` naming it.
    """

    __slots__ = {
        "_decide": None,
        "_default": None,
        "_enabled": None,
        "_lists": None,
        "_rules": None,
        "_ruleset": None,
        "_views": None,
        "check": _CHECK_DOC,
    }

    # The hot path: a C callable bound per policy (the rule set's call(), or _allow_all when
    # the policy is disabled), so that a common call runs no Python frame.
    check: _Check

    def __init__(
        self,
        deny: Iterable[str | Mapping[str, str]] | None = None,
        allow: Iterable[str | Mapping[str, str]] | None = None,
        ask: Iterable[str | Mapping[str, str]] | None = None,
        default_decision: Decision | str = Decision.ASK,
        enabled: bool = True,
    ) -> None:
        if not isinstance(enabled, bool):
            raise PolicyError(f"enabled must be True or False, not {enabled!r}")
        self._enabled = enabled
        self._default = _decision(default_decision)
        self._lists = {
            "deny": _rule_list(deny, "deny"),
            "allow": _rule_list(allow, "allow"),
            "ask": _rule_list(ask, "ask"),
        }
        self._ruleset = _native.Ruleset()
        self._rules: list[tuple[str, str]] = []
        for list_name in LISTS:
            for raw in self._lists[list_name]:
                self._add(list_name, raw)
        self._ruleset.set_default(_LIST_CODES[self._default.value])
        self._ruleset.set_outcomes((self._default, Decision.DENY, Decision.ALLOW, Decision.ASK))
        # check()'s C path for the common call shapes; it remembers the last bash lines
        # (at most 2048 of at most 1 KiB: the decision depends on the line and this
        # immutable policy only) and answers None for the shapes left to _check_slow,
        # which the rule set's call() then asks (a cycle through the rule set, which the
        # collector follows).
        self._decide = self._ruleset.decide
        self._ruleset.set_fallback(self._check_slow)
        self.check = self._ruleset.call if enabled else _allow_all
        self._views: list[RuleView] | None = None

    def _add(self, list_name: str, raw: str) -> None:
        index = len(self._rules)
        try:
            self._ruleset.add(_LIST_CODES[list_name], raw, index)
        except _native.NativeError as exc:
            status, message = exc.args[0], exc.args[1]
            if status in ("syntax", "too_large"):
                raise PolicyError(f"{list_name} rule {raw!r}: {message}", rule=raw) from None
            raise NativeCoreError(message, status=status, errno=exc.args[3]) from None
        self._rules.append((list_name, raw))

    # -- evaluation ---------------------------------------------------------

    def _check_slow(self, tool: str, args: Mapping[str, Any] | None) -> Decision:
        """check() for the call shapes Ruleset.decide leaves to Python (and its specification)."""
        name = canonical_tool(tool)
        if (name == "search" or name in SEARCH_MODE_TOOLS) and isinstance(args, Mapping):
            # As evaluate() decides it: deny and ask rules match either form of the
            # subject, allow rules the strict one; the strictest list wins.
            hit = self._ruleset.check_search(*search_texts(name, args))
            return _BY_LIST_CODE[hit] if hit else self._default
        name, subject = named_argument_string(name, args)
        if name == "search":
            return self.evaluate(tool, args).decision
        if (name == "read" and "\n" in subject) or name == "git":
            # Each file of a multi-file read, each spelling of a git REV:path target:
            # decided one by one as the Node and Go bindings do, the strictest wins.
            each = decision_subjects(tool, args)[1] if name == "read" or ":" in subject else ()
            if len(each) > 1 or name == "read":
                return self._strictest(name, [s.text for s in each])
        hit = self._ruleset.check(name, subject)
        return _BY_LIST_CODE[hit] if hit else self._default

    def _strictest(self, name: str, subjects: Sequence[str]) -> Decision:
        """Deny if any subject is denied, ask if any is asked (or falls to an ask default),
        else allow."""
        asked = False
        for subject in subjects:
            hit = self._ruleset.check(name, subject)
            decision = _BY_LIST_CODE[hit] if hit else self._default
            if decision is Decision.DENY:
                return decision
            asked = asked or decision is Decision.ASK
        return Decision.ASK if asked else Decision.ALLOW

    def evaluate(
        self,
        tool: str,
        args: Mapping[str, Any] | None = None,
        *,
        paths: Sequence[str] | None = None,
    ) -> Evaluation:
        """The decision for one call with every subject it was decided on.

        ``paths``: the paths the call will touch, when the caller knows them
        (a session resolves them against its workspace: each path as the
        tool opens it and its symlink target, each file of a patch). For
        read, write, edit, download, ls, search and patch the call is then
        decided once per path, strictest first; other tools ignore them.
        """
        name, each = decision_subjects(tool, args, None if paths is None else list(paths))
        line = _bash_line(args) if name == "bash" else None
        if line is not None and self._enabled:
            return self._evaluate_bash(line)
        decisions: list[Decision] = []
        matched: set[int] = set()
        by_rule = True
        for subject in each:
            lists, indices = self._lists_matching(name, subject)
            matched.update(indices)
            if not self._enabled:
                decisions.append(Decision.ALLOW)
                by_rule = False
                continue
            for candidate in _STRICTNESS:
                if candidate.value in lists:
                    decisions.append(candidate)
                    break
            else:
                decisions.append(self._default)
            by_rule = by_rule and decisions[-1] is Decision.ALLOW and "allow" in lists
        decision = next((d for d in _STRICTNESS if d in decisions), self._default)
        if not self._enabled:
            decision = Decision.ALLOW
        return Evaluation(
            tool=name,
            subjects=tuple(s.text for s in each),
            decisions=tuple(decisions),
            decision=decision,
            matched=self._raw_rules(matched),
            allowed_by_rule=by_rule and bool(each),
        )

    def _evaluate_bash(self, line: str) -> Evaluation:
        """A bash line's evaluation: one subject per simple command (see :meth:`bash_verdict`)."""
        verdict = self.bash_verdict(line)
        return Evaluation(
            tool="bash",
            subjects=tuple(v.command for v in verdict.commands) or (line,),
            decisions=tuple(v.decision for v in verdict.commands) or (verdict.decision,),
            decision=verdict.decision,
            matched=self._raw_rules(verdict.matched),
            allowed_by_rule=verdict.explicit,
        )

    def _lists_matching(self, name: str, subject: Subject) -> tuple[set[str], list[int]]:
        """The lists with a rule matching ``subject``, and those rules' indices.

        For a search, deny and ask rules match either form of the subject and
        allow rules only its strict form.
        """
        indices = list(self._ruleset.matches(name, subject.text))
        if subject.strict is not None:
            strict = set(self._ruleset.matches(name, subject.strict))
            indices = [i for i in indices if self._rules[i][0] != "allow" or i in strict]
            indices += [i for i in sorted(strict) if i not in indices]
        return {self._rules[i][0] for i in indices}, indices

    def _raw_rules(self, indices: Iterable[int]) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {"deny": [], "allow": [], "ask": []}
        for index in sorted(set(indices)):
            list_name, raw = self._rules[index]
            found[list_name].append(raw)
        return found

    def names_literally(self, tool: str, subject: str, depth: int) -> bool:
        """Whether an allow rule matching the path ``subject`` spells its first ``depth``
        components without a wildcard, as ``subject`` does.

        What lowers the ask for a protected name (the kernel): ``write(.mcp.json)`` and
        ``write(.git/**)`` name the protected component, ``write(*)``, ``write(**/*.json)``,
        ``write(.*)``, a rule for any arguments or a prefix rule do not.
        """
        if not self._enabled or depth <= 0:
            return False
        name = canonical_tool(tool)
        wanted = subject.split("/")[:depth]
        if len(wanted) < depth:
            return False
        views = self.rules()
        for index in self._ruleset.matches(name, subject):
            view = views[index]
            if view.list != "allow" or view.any_args or view.prefix:
                continue
            spelled = view.pattern.split("/")[:depth]
            if spelled == wanted and not any(_WILDCARD.search(c) for c in spelled):
                return True
        return False

    def matching_rules(
        self, tool: str, args: Mapping[str, Any] | None = None
    ) -> dict[str, list[str]]:
        """The raw rule strings that match this call, per list (in policy order)."""
        return dict(self.evaluate(tool, args).matched)

    def bash_verdict(self, command: str) -> BashVerdict:
        """How the bash command line ``command`` is decided, simple command by simple command.

        A deny or ask rule applies when it matches any simple command of the
        line in any spelling (after assignments, ``env`` and its options,
        ``command``, ``builtin``, backslashes, git's global options ... are
        removed), or the whole line; an allow rule covers the line only when
        every simple command is allowed. ``commands`` says which command and
        which spelling decided; docs/policy.md has the dialect.
        """
        if not self._enabled:
            return BashVerdict(Decision.ALLOW, (), frozenset(), False)
        return verdict_from_native(self._ruleset.check_bash(command))

    def exec_patterns(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The (deny, ask) patterns the exec check holds a bash command's programs to.

        Those of every deny and ask rule that covers bash, as the rule set
        canonicalised them (docs/policy.md, "The exec check"). A bare deny of
        bash is "*" (every program); a bare ask is left out: it asks for the
        line, and the line is what the human approves.
        """
        if not self._enabled:
            return (), ()
        deny: list[str] = []
        ask: list[str] = []
        for view in self.rules():
            if view.list not in ("deny", "ask") or not view.covers_tool("bash"):
                continue
            if view.any_args:
                if view.list == "deny":
                    deny.append("*")
                continue
            (deny if view.list == "deny" else ask).append(view.pattern)
        return tuple(deny), tuple(ask)

    def allowed_by_rule(self, tool: str, args: Mapping[str, Any] | None = None) -> bool:
        """Whether the call is allowed by allow rules, not by the default: for a bash line every
        simple command, for a multi-file read every file (see :meth:`evaluate`)."""
        return self.evaluate(tool, args).allowed_by_rule

    def exposes_to_model(self, tool: str) -> bool:
        """False only if every call of `tool` is denied before its arguments are known.

        That is a whole-tool deny (a bare rule or ``Tool(*)``), or a default
        of deny with no allow or ask rule for the tool.
        """
        if not self._enabled:
            return True
        name = canonical_tool(tool)
        if name in ("grep", "glob", "bm25"):
            name = "search"
        views = self.rules()
        if any(v.list == "deny" and v.any_args and v.covers_tool(name) for v in views):
            return False
        if self._default is Decision.DENY:
            return any(v.list != "deny" and v.covers_tool(name) for v in views)
        return True

    # -- introspection --------------------------------------------------------

    @property
    def enabled(self) -> bool:
        return self._enabled

    @property
    def default_decision(self) -> Decision:
        return self._default

    @property
    def deny(self) -> list[str]:
        return list(self._lists["deny"])

    @property
    def allow(self) -> list[str]:
        return list(self._lists["allow"])

    @property
    def ask(self) -> list[str]:
        return list(self._lists["ask"])

    def rules(self) -> list[RuleView]:
        """Every rule in evaluation order with its canonical (rewritten) form."""
        if self._views is None:
            views = []
            for index, (list_name, raw) in enumerate(self._rules):
                _list, _id, flags, tool, pattern = self._ruleset.rule(index)
                views.append(
                    RuleView(
                        index, list_name, raw, tool, pattern.decode("utf-8", "surrogatepass"), flags
                    )
                )
            self._views = views
        return list(self._views)

    def to_dict(self) -> dict[str, Any]:
        """The policy in the file format accepted by :meth:`from_dict`."""
        return {
            "deny": self.deny,
            "allow": self.allow,
            "ask": self.ask,
            "default_decision": self._default.value,
            "enabled": self._enabled,
        }

    @property
    def digest(self) -> str:
        """sha256 of the canonical JSON of :meth:`to_dict`: a stable name for this policy."""
        return hashlib.sha256(canonical_json(self.to_dict()).encode("utf-8")).hexdigest()

    def lint(self) -> list[Any]:
        """Footguns in this policy; see :func:`codeward.policy.lint_policy`."""
        from ._lint import lint_policy

        return list(lint_policy(self))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PermissionPolicy) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(self.digest)

    def __repr__(self) -> str:
        counts = ", ".join(f"{n}={len(self._lists[n])}" for n in LISTS)
        return (
            f"PermissionPolicy({counts}, default_decision={self._default.value!r}, "
            f"enabled={self._enabled})"
        )

    # -- construction from data ---------------------------------------------

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "policy") -> PermissionPolicy:
        """Builds a policy from ``{deny, allow, ask, default_decision, enabled}``."""
        if not isinstance(data, Mapping):
            raise PolicyError(f"{source}: a policy is a mapping, not {type(data).__name__}")
        unknown = [k for k in data if k not in _FILE_KEYS]
        if unknown:
            hints = [
                f"{k!r} (did you mean {_CAMEL_HINTS[k]!r}?)" if k in _CAMEL_HINTS else repr(k)
                for k in unknown
            ]
            raise PolicyError(
                f"{source}: unknown key(s) {', '.join(hints)}; allowed: {', '.join(_FILE_KEYS)}"
            )
        return cls(
            deny=data.get("deny"),
            allow=data.get("allow"),
            ask=data.get("ask"),
            default_decision=data.get("default_decision", Decision.ASK),
            enabled=data.get("enabled", True),
        )

    @classmethod
    def from_file(cls, path: str | Path) -> PermissionPolicy:
        """Reads a YAML or JSON policy file (JSON is valid YAML, so both parse)."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise PolicyFileError(
                f"cannot read policy file {path}: {exc}", path=str(path)
            ) from None
        try:
            if path.suffix.lower() == ".json":
                data = json.loads(text)
            else:
                import yaml

                data = yaml.safe_load(text)
        except Exception as exc:  # parser errors have no common base class
            raise PolicyFileError(
                f"policy file {path} does not parse: {exc}", path=str(path)
            ) from None
        if data is None:
            data = {}
        try:
            return cls.from_dict(data, source=str(path))
        except PolicyError as exc:
            err = PolicyFileError(f"{path}: {exc}", path=str(path))
            err.rule = exc.rule
            raise err from None
