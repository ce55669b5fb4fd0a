"""Fuzz: bash lines built from wrapper forms never lower a deny or ask, and an allow never
covers a line that runs a command it does not allow.

Each example takes one plain command ``u`` (``git push origin``, ``rm -rf build`` ...), wraps
it in one to four forms that still run it (assignments, ``env`` and its options, ``command``,
``builtin``, a backslash, quotes, git's global options, ``cd`` prefixes, ``;``/``&&``/``||``,
pipes, subshells, groups, ``$(...)``, backticks, ``bash -c``, ``eval``, loops, here-documents),
and checks the line against a random policy of deny, ask and allow rules written for plain
commands (patterns without quotes or backslashes):

* the line's decision is at least as strict as ``u``'s own (deny > ask > allow);
* when the line is allowed, ``u`` and every plain command the wrappers added are allowed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codeward.policy import Decision, PermissionPolicy

RANK = {Decision.ALLOW: 0, Decision.ASK: 1, Decision.DENY: 2}

COMMANDS = [
    "git push",
    "git push origin main",
    "git status",
    "git log -p",
    "rm -rf build",
    "rm notes.txt",
    "make test",
    "make",
    "ls -la",
    "curl -s https://example.com/x",
    "npm install left-pad",
    "python3 -m pytest",
]
PATTERNS = [
    "git push**",
    "git push*",
    "git:*",
    "git status",
    "git log*",
    "git *",
    "rm -rf**",
    "rm *",
    "rm:*",
    "make *",
    "make test",
    "make",
    "ls*",
    "curl**",
    "npm install*",
    "npm:*",
    "python3 -m pytest",
    "cd *",
    "cd:*",
    "true",
    "echo *",
    "cat",
    "bash -c *",
    "env *",
    "eval *",
    "**",
]
ADDED = ["cd .", "cd /tmp", "true", "echo hi", "cat"]
_PROGRAMS = frozenset(c.split()[0] for c in COMMANDS)


@dataclass
class Line:
    """A line under construction: its text, and the plain commands it runs besides ``u``."""

    text: str
    added: list[str] = field(default_factory=list)


Wrap = Callable[[Line, st.DataObject], Line]


def _prefix(text: str, *, takes_assignments: bool = False) -> Wrap:
    """A wrapper word before the command (``command git push``); only ``env`` and ``time``
    also run a command that starts with assignments."""

    def wrap(line: Line, data: st.DataObject) -> Line:
        head = line.text.split(" ", 1)[0]
        if head in _KEYWORDS or not (head[:1].isalnum() or head[:1] in "\\'\""):
            return line  # a wrapper runs a program, never `{ ...; }`, `( ... )` or `if ...`
        if "=" in head and not takes_assignments:
            return line
        return Line(text + line.text, line.added)

    return wrap


_KEYWORDS = frozenset({"if", "for", "while", "until", "case", "time", "coproc", "function"})


def _assign(text: str) -> Wrap:
    """Assignments count only before the command's first word: not after ``env`` or
    ``command`` (``command FOO=1 git`` runs a program named ``FOO=1``)."""

    def wrap(line: Line, data: st.DataObject) -> Line:
        head = line.text.split(" ", 1)[0]
        if "=" in head or head.strip("\\'\"") in {c.split()[0] for c in COMMANDS}:
            return Line(text + line.text, line.added)
        return line

    return wrap


def _cd(line: Line, data: st.DataObject) -> Line:
    cd = data.draw(st.sampled_from(["cd .", "cd /tmp"]))
    op = data.draw(st.sampled_from([" && ", "; ", "\n"]))
    return Line(cd + op + line.text, [*line.added, cd])


def _list(line: Line, data: st.DataObject) -> Line:
    other = data.draw(st.sampled_from(ADDED))
    form = data.draw(st.sampled_from(["{o} && {u}", "{u} || {o}", "{o}; {u}", "{u} | {o}"]))
    return Line(form.format(o=other, u=line.text), [*line.added, other])


def _pipe_in(line: Line, data: st.DataObject) -> Line:
    return Line("echo hi | " + line.text, [*line.added, "echo hi"])


def _group(line: Line, data: st.DataObject) -> Line:
    form = data.draw(st.sampled_from(["({u})", "{{ {u}; }}", "if true; then {u}; fi"]))
    added = [*line.added, "true"] if form.startswith("if") else line.added
    return Line(form.format(u=line.text), added)


def _loop(line: Line, data: st.DataObject) -> Line:
    return Line(f"for i in 1 2; do {line.text}; done", line.added)


def _substitution(line: Line, data: st.DataObject) -> Line:
    if "`" in line.text:
        return Line(f"echo hi $({line.text})", [*line.added, "echo hi"])
    form = data.draw(st.sampled_from(["echo hi $({u})", "echo hi `{u}`"]))
    return Line(form.format(u=line.text), [*line.added, "echo hi"])


def _shell_c(line: Line, data: st.DataObject) -> Line:
    if "'" in line.text or "\n" in line.text:
        return line
    return Line(f"bash -c '{line.text}'", line.added)


def _eval(line: Line, data: st.DataObject) -> Line:
    if "'" in line.text or "\n" in line.text:
        return line
    return Line(f"eval '{line.text}'", line.added)


def _heredoc(line: Line, data: st.DataObject) -> Line:
    return Line(f"bash <<'EOF'\n{line.text}\nEOF", line.added)


def _program_word(transform: Callable[[str], str]) -> Wrap:
    """Rewrites the first word of a line that starts with the plain command."""

    def wrap(line: Line, data: st.DataObject) -> Line:
        head, sep, rest = line.text.partition(" ")
        if head not in _PROGRAMS:  # only the program itself: `\time` is no longer the keyword
            return line
        return Line(transform(head) + sep + rest, line.added)

    return wrap


def _git_globals(line: Line, data: st.DataObject) -> Line:
    if not line.text.startswith("git "):
        return line
    option = data.draw(
        st.sampled_from(
            [
                "-c x=y",
                "-c core.pager=cat",
                "-C .",
                "--git-dir=.git",
                "--git-dir .git",
                "--work-tree .",
                "--no-pager",
                "-p",
                "--namespace ns",
                "--config-env=a=B",
            ]
        )
    )
    return Line("git " + option + line.text[3:], line.added)


WRAPS: list[Wrap] = [
    _assign("FOO=1 "),
    _assign("FOO=1 BAR='a b' "),
    _prefix("env ", takes_assignments=True),
    _prefix("env -i ", takes_assignments=True),
    _prefix("env -u HOME ", takes_assignments=True),
    _prefix("env -C /tmp ", takes_assignments=True),
    _prefix("env --chdir=/tmp FOO=1 ", takes_assignments=True),
    _prefix("command "),
    _prefix("command -p "),
    _prefix("builtin "),
    _prefix("exec "),
    _prefix("nice -n 5 "),
    _prefix("timeout 5 "),
    _prefix("time ", takes_assignments=True),
    _program_word(lambda w: "\\" + w),
    _program_word(lambda w: f"'{w}'"),
    _program_word(lambda w: f'"{w}"'),
    _program_word(lambda w: w[0] + "\\" + w[1:]),
    _git_globals,
    _cd,
    _list,
    _pipe_in,
    _group,
    _loop,
    _substitution,
    _shell_c,
    _eval,
    _heredoc,
]

policies = st.builds(
    lambda deny, ask, allow, default: PermissionPolicy(
        deny=[f"bash({p})" for p in deny],
        ask=[f"bash({p})" for p in ask],
        allow=[f"bash({p})" for p in allow],
        default_decision=default,
    ),
    st.lists(st.sampled_from(PATTERNS), max_size=3),
    st.lists(st.sampled_from(PATTERNS), max_size=3),
    st.lists(st.sampled_from(PATTERNS), max_size=4),
    st.sampled_from(["allow", "ask", "deny"]),
)


def decide(policy: PermissionPolicy, command: str) -> Decision:
    return policy.check("bash", {"command": command})


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    policy=policies,
    plain=st.sampled_from(COMMANDS),
    wraps=st.lists(st.sampled_from(WRAPS), min_size=1, max_size=4),
    data=st.data(),
)
def test_wrappers_never_lower_a_decision(policy, plain, wraps, data):
    line = Line(plain)
    for wrap in wraps:
        line = wrap(line, data)
    alone = decide(policy, plain)
    wrapped = decide(policy, line.text)
    assert RANK[wrapped] >= RANK[alone], (line.text, alone, wrapped, policy.bash_verdict(line.text))
    if wrapped is Decision.ALLOW:
        for command in [plain, *line.added]:
            assert decide(policy, command) is Decision.ALLOW, (line.text, command)
