"""The bash reader's corpus: adversarial lines of every class issue 21 names, and lines built
from them, that tests/vectors/bash_reader.json pins under a few policies for every binding and
tests/test_bash_reader_differential.py runs under real bash to check the reader against it.

Every line must be safe to run in the differential test's sandbox (programs that matter are
fakes there, nothing loops or sleeps) and must end in well under a second.

Regenerate the vectors after a deliberate change of the reader:
    python tests/bash_reader_corpus.py --write
and review the diff: a decision that becomes laxer needs a reason.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from pathlib import Path

VECTORS = Path(__file__).parent / "vectors" / "bash_reader.json"

POLICIES: dict[str, dict[str, object]] = {
    "no_push": {"deny": ["Bash(git push**)"], "default_decision": "allow"},
    "ask_push": {"ask": ["Bash(git push**)"], "default_decision": "allow"},
    "no_rm": {"deny": ["Bash(rm **)"], "allow": ["Bash(**)"], "default_decision": "ask"},
    "allow_list": {
        "allow": ["Bash(echo *)", "Bash(ls**)", "Bash(git status)", "Bash(cat *)"],
        "default_decision": "ask",
    },
}

# The classes of issue 21, as written there, and what the reader found besides.
ADVERSARIAL: list[str] = [
    # expansions the reader does not model
    "{git,push}",
    "{git,push} origin",
    "/tmp/fakebin/gi? push",
    "/tmp/fakebin/g[i]t push",
    "/tmp/fakebin/gi* push",
    "$'\\u0067it' push",
    "$'\\x67it' push",
    "$'\\147it' push",
    "$'\\U00000067it' push",
    "x='git push'; $x",
    "x='git  push'; $x",
    "IFS=,; x=git,push; $x",
    "x=gi; ${x}t push",
    "x='gi?'; $x push",
    "g{i,}t push",
    "git {push,status}",
    "git p{u,}sh",
    "{g,}it push",
    "git pus{h..h}",
    "echo {a..c}",
    "echo {1..3}",
    "echo {01..03}",
    # argument values it does not follow
    "git pu${x}sh",
    "git $(printf push)",
    "git `printf push`",
    'set -- push; git "$@"',
    "set -- push; git $1",
    "set -- push; git $*",
    "bash -c 'git $1' _ push",
    "sh -c 'git \"$@\"' _ push",
    "bash -c 'git $0' push",
    "git $(echo pu)sh",
    "x=$(printf push); git $x",
    "read x <<< push; git $x",
    "echo push | xargs git",
    "printf push | xargs -I{} git {}",
    "printf 'git push' | xargs -I{} sh -c '{}'",
    "touch push; find push -exec git {} \\;",
    "git ${x:-push}",
    "git ${x-push}",
    "git ${x:=push}",
    "git $((1)) push",
    # compound commands after time / coproc
    "time { git push; }",
    "time ! git push",
    "time -p git push",
    "coproc git push",
    "coproc NAME { git push; }",
    "coproc NAME (git push)",
    "! git push",
    "time git push",
    # code bash runs later
    "trap 'git push' EXIT",
    "trap -- 'git push' EXIT",
    "trap 'git push' EXIT; echo hi",
    "shopt -s expand_aliases; alias g='git push'\ng",
    "shopt -s expand_aliases\nalias g=git\ng push",
    "hash -p /tmp/fakebin/git g; g push",
    "mapfile -C 'git push' -c 1 x <<< a",
    "readarray -C 'git push' -c 1 x <<< a",
    "x='$(git push)'; echo ${x@P}",
    "x='a[$(git push)]'; echo $((x))",
    "a[$(git push)]=1",
    "x='a[$(git push)]'; declare -i y; y=x",
    "x='a[$(git push)]'; (( x ))",
    "x='a[$(git push)]'; [[ $x -eq 1 ]]",
    "x='a[$(git push)]'; let x",
    "x='a[$(git push)]'; echo ${!x}",
    "declare -n r='a[$(git push)]'; echo $r",
    "printf -v 'a[$(git push)]' x",
    "read 'a[$(git push)]' <<< x",
    "unset 'a[$(git push)]'",
    "test -v 'a[$(git push)]'",
    "x='b[$(git push)]'; a[x]=1",
    "x='a[$(git push)]'; echo $[x]",
    "compgen -C 'git push' x",
    "complete -C 'git push' x; compgen -C 'git push' -W y y",
    "f() { git push; }; compgen -F f x",
    "PS4='$(git push)'; set -x; true",
    "PROMPT_COMMAND='git push' bash -i -c true",
    "BASH_ENV=<(echo git push) bash -c true",
    "echo 'git push' > e.sh; BASH_ENV=e.sh bash -c true",
    "echo 'git push' > e.sh; ENV=e.sh sh -i -c true",
    "export BASH_ENV=e.sh; bash -c true",
    "f() { git push; }; f",
    "function f { git push; }; f",
    # lines the splitter read differently from bash
    "(( 1 << 2 ))\ngit push",
    "(( x = 1 << 2 ))\ngit push",
    ">/dev/null case x; git push",
    ">/dev/null if x; git push",
    "2>/dev/null while x; git push",
    "echo $((1+2))",
    "for ((i=0;i<3;i++)); do echo $i; done",
    "for ((i=0;i<1;i++)); do git push; done",
    "((1)) && git push",
    "echo $(( $(git push) ))",
    "((git push) )",
    "( (git push) )",
    # a shell reading code the line does not show
    "source <(echo git push)",
    ". <(echo git push)",
    "echo 'git push' > x.sh; bash x.sh",
    "echo 'git push' > x.sh; . ./x.sh",
    "echo 'git push' > x.sh; source x.sh",
    "echo 'git push' > x.sh; sh < x.sh",
    "bash /dev/stdin <<< 'git push'",
    "sh /dev/stdin <<< 'git push'",
    "/proc/self/exe -c 'git push'",
    "bash <(echo git push)",
    "echo git push | bash",
    "echo git push | sh -s",
    "printf 'git push\\n' | bash",
    "bash <<< 'git push'",
    "bash <<'EOF'\ngit push\nEOF",
    "eval 'git push'",
    "eval git push",
    "x='git push'; eval \"$x\"",
    "cat <<EOF\n$(git push)\nEOF",
    # wrappers and shells missing from the table
    "script -qc 'git push' /dev/null",
    "script -q -c 'git push' /dev/null",
    "script --command 'git push' -q /dev/null",
    "setpriv git push",
    "setpriv --reuid 0 git push",
    "setarch x86_64 git push",
    "setarch x86_64 -R git push",
    "linux64 git push",
    "su -c 'git push'",
    "su root -c 'git push'",
    "fish -c 'git push'",
    "dash -c 'git push'",
    "busybox sh -c 'git push'",
    "env git push",
    "env -i PATH=/tmp/fakebin git push",
    "env -S 'git push'",
    "env --split-string='git push'",
    "command git push",
    "builtin eval 'git push'",
    "exec git push",
    "exec -a x git push",
    "nice -n 1 git push",
    "nohup git push",
    "timeout 5 git push",
    "timeout -s KILL 5 git push",
    "stdbuf -o0 git push",
    "setsid git push",
    "flock /tmp/l git push",
    "flock /tmp/l -c 'git push'",
    "xargs git push < /dev/null",
    "prlimit --nofile=100 git push",
    "taskset 1 git push",
    "chrt 0 git push",
    "ionice -c 3 git push",
    "unshare -r git push",
    "/lib64/ld-linux-x86-64.so.2 /tmp/fakebin/git push",
    # git running push under another name
    "git -c alias.p=push p",
    "git -c help.autocorrect=1 psuh",
    "git --config-env=alias.p=X p",
    "/tmp/fakebin/git-push",
    "git-push origin",
    "git -C . push",
    "git --no-pager push",
    "git -c x=y push",
    "git --git-dir=.git push",
    "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.p GIT_CONFIG_VALUE_0=push git p",
    # spellings the reader already followed
    "git push",
    "\\git push",
    '"git" push',
    "'git' push",
    "g\\it push",
    "/tmp/fakebin/git push",
    "FOO=1 git push",
    "cd . && git push",
    "true; git push",
    "false || git push",
    "true | git push",
    "(git push)",
    "{ git push; }",
    "if true; then git push; fi",
    "while false; do :; done; git push",
    "case x in x) git push;; esac",
    "echo $(git push)",
    "echo `git push`",
    "cat <(git push)",
    "x=push; git $x",
    "for r in status push; do git $r; done",
    "git pu\\\nsh",
    "git push # comment",
    "$(which git) push",
    "$(command -v git) push",
    "echo hi > >(git push)",
    "ls $(git push)",
    "cat <<< $(git push)",
    "echo ${x:-$(git push)}",
    "ls -la `git push`",
    "exec 3< <(git push)",
    "echo hi | tee >(git push)",
    "declare -f f >/dev/null; f() { git push; }; f",
    "echo $( (git push) )",
    "cat <(cat <(git push))",
    'echo "$(echo "$(git push)")"',
    "case $(git push) in *) ;; esac",
    "[[ $(git push) ]]",
    "for x in $(git push); do :; done",
    "while git push; do break; done",
    "until git push; do :; done",
    "x=$(git push) true",
    "git push &>/dev/null &\nwait",
    "{ git push; } 2>&1 | cat",
    "ls; git push",
    "echo ok #; git push",
    "echo \\#; git push",
    "echo a\\;git push",
    "echo 'a'\"b\"; git push",
    'arr=(git push); "${arr[@]}"',
    "arr=(git push); ${arr[*]}",
    "printf -v x git; $x push",
    "read -r x <<< git; $x push",
    "x=git; y=push; $x $y",
    "x=g; y=it; $x$y push",
    "a=git; b=a; ${!b} push",
    "alias git=echo; git push",
    "git() { echo; }; git push",
    "command -p git push",
    "env -u X git push",
    "env --unset=X git push",
    "nice -5 git push",
    "nice --adjustment=5 git push",
    "timeout --signal=KILL 5 git push",
    "timeout -k 1 5 git push",
    "xargs -0 git push < /dev/null",
    "xargs -n1 git < <(echo push)",
    "echo push | xargs -n1 git",
    'x=push; git "$x"',
    'x=push; git "${x}"',
    'x=pu; git "${x}sh"',
    "git $'push'",
    "git pu$'s'h",
    'git "pu"sh',
    "git p\\ush",
    "git 'pu'\"sh\"",
    'g=git; "$g" push',
    'set -- git push; "$@"',
    "set -- git push; $@",
    "IFS=; x='git push'; $x",
    "x=$'git\\tpush'; $x",
    "x=$'git\\npush'; $x",
    "x='git push'; \"$x\"",
    # harmless controls: these must stay allowed where the policy allows them
    "git status",
    "git status ",
    " git status",
    "git  status",
    "git\tstatus",
    "echo hi",
    "echo git push",
    "echo 'git push'",
    "# git push",
    "printf 'git push\\n' > notes",
    "grep -r 'git push' .",
    "ls -la",
    "ls *",
    "ls [ab]*",
    "echo *",
    "cat notes",
    "echo $((1+2))",
    "echo $HOME",
    "x=1; echo $x",
    "test -f x && echo y",
    "[ -f x ] && echo y",
    "[[ -f x ]] && echo y",
    "echo a{b,c}d",
    "git log --grep=push",
    "FOO='git push' true",
    "echo push > git",
    "rm -rf build",
    "rm x",
    "\\rm -rf x",
    "command rm -rf x",
    "find . -name x -exec rm {} \\;",
    "echo x | xargs rm",
    "r{m,} -rf x",
]

_PROGRAMS = ["git push", "git status", "echo hi", "ls -la", "rm -rf x", "cat notes", "git push -f"]

# One level of spelling around a command `{p}` ({p0}: its program, {rest}: its arguments).
_TEMPLATES = [
    "{p}",
    "\\{p}",
    "'{p0}' {rest}",
    '"{p0}" {rest}',
    "/tmp/fakebin/{p}",
    "env {p}",
    "env -i PATH=/tmp/fakebin {p}",
    "command {p}",
    "exec {p}",
    "FOO=1 {p}",
    "timeout 5 {p}",
    "nice {p}",
    "nohup {p} 2>/dev/null",
    "setsid {p}",
    "xargs {p} < /dev/null",
    "echo | xargs {p}",
    "bash -c '{p}'",
    "sh -c '{p}'",
    'bash -c "{p}"',
    "eval '{p}'",
    "eval {p}",
    "echo $({p})",
    'echo "$({p})"',
    "echo `{p}`",
    "cat <({p})",
    "({p})",
    "{{ {p}; }}",
    "if true; then {p}; fi",
    "if {p}; then :; fi",
    "while ! true; do :; done; {p}",
    "for i in 1; do {p}; done",
    "case x in x) {p};; esac",
    "f() {{ {p}; }}; f",
    "true && {p}",
    "false || {p}",
    "true; {p}",
    "true\n{p}",
    "true | {p}",
    "{p} | cat",
    "{p} &\nwait",
    "time {p}",
    "! {p}",
    "x='{p}'; $x",
    "x='{p}'; eval \"$x\"",
    "x={p0}; $x {rest}",
    "x={rest}; {p0} $x",
    "{p} # note",
    "echo '{p}' | bash",
    "echo '{p}' | sh",
    "bash <<< '{p}'",
    "bash <<'EOF'\n{p}\nEOF",
    "{p} >/dev/null 2>&1",
    ">/dev/null {p}",
    "trap '{p}' EXIT",
    "{{{p0},}} {rest}",
    "$'{p0}' {rest}",
    "{p0} $(true) {rest}",
    '{p0} "" {rest}',
    "{p0}  {rest}",
    "{p} ",
]


def _fill(template: str, command: str) -> str:
    p0, _, rest = command.partition(" ")
    return template.format(p=command, p0=p0, rest=rest)


def _generated() -> list[str]:
    lines = [_fill(t, p) for t in _TEMPLATES for p in _PROGRAMS]
    inner = ["{p}", "env {p}", "bash -c '{p}'", "eval '{p}'", "x='{p}'; $x", "echo $({p})"]
    for outer in _TEMPLATES:
        for middle in inner[1:]:
            for p in ("git push", "git status", "echo hi"):
                command = _fill(middle, p)
                if "'" in command and "'" in outer:
                    continue  # quotes inside quotes: the nesting is not the point here
                lines.append(outer.format(p=command, p0=command, rest=""))
    rng = random.Random(21)
    words = ["git", "push", "status", "echo", "hi", "'git'", "\\git", "$x", "${x}", "g?t", "{a,b}"]
    words += ["x=push", "x=git", "x='git push'", "env", "command", "ls", "rm", "-rf", "bash", "-c"]
    seps = [" ", " ", " ", "; ", " && ", " || ", " | ", "\n"]
    for _ in range(600):
        n = rng.randint(1, 6)
        line = "".join(rng.choice(words) + rng.choice(seps) for _ in range(n - 1))
        lines.append(line + rng.choice(words))
    return lines


def lines() -> list[str]:
    """The corpus, each line once, in a stable order."""
    seen: dict[str, None] = {}
    for line in ADVERSARIAL + _generated():
        seen.setdefault(line, None)
    return list(seen)


def build() -> dict[str, object]:
    """The vector file, decided by this build's reader."""
    from codeward import PermissionPolicy

    policies = {name: PermissionPolicy.from_dict(p) for name, p in POLICIES.items()}
    cases = []
    for line in lines():
        key = hashlib.sha256(line.encode()).hexdigest()[:12]  # stable when lines are added
        for name, policy in policies.items():
            decision = policy.check("bash", {"command": line}).value
            cases.append(
                {
                    "name": f"reader_{key}_{name}",
                    "policy": name,
                    "tool": "bash",
                    "args": {"command": line},
                    "decision": decision,
                }
            )
    return {
        "schema": 1,
        "description": (
            "The bash reader's corpus (tests/bash_reader_corpus.py): adversarial lines of every "
            "class of issue 21 and lines built from them, decided under a few policies. The "
            "same format as bash_policy.json. tests/test_bash_reader_differential.py runs every "
            "line under real bash and checks that each program bash executes is among the "
            "simple commands the reader decided, or that the reader asked or denied."
        ),
        "policies": POLICIES,
        "cases": cases,
    }


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/bash_reader_corpus.py --write")
    data = build()
    cases = data.pop("cases")
    assert isinstance(cases, list)
    head = json.dumps(data, indent=1, ensure_ascii=False)[:-2]  # without the closing brace
    body = ",\n".join(json.dumps(c, ensure_ascii=False) for c in cases)  # one case a line
    VECTORS.write_text(f'{head},\n "cases": [\n{body}\n]\n}}\n', encoding="utf-8")
    print(f"wrote {VECTORS}")
