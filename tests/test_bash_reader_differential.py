"""The bash reader against bash itself (issue 21).

Every line of the corpus (tests/bash_reader_corpus.py) runs under real bash in a bubblewrap
sandbox (no network, a private /tmp, a scratch directory per line) while strace records every
execve. Each program bash (or a program it started) executed is decided on its argv, as the
exec check reads it: the executable's base name (`git-push` read as `git push`) and its
arguments. Wherever that program alone would be denied or asked about under a policy, the
reader must have answered deny or ask for the line. A line the reader allows never runs a
program the policy stops.

The programs a deny or ask rule names are fakes (links to `true`) on PATH, so nothing the corpus
spells does anything; wrappers, shells, coreutils and findutils are the real ones.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

import bash_reader_corpus as corpus
from codeward import PermissionPolicy
from reference_glob import reference_match

FAKES = ["git", "git-push", "rm", "make", "npm", "curl", "sudo", "doas", "su", "watch", "ssh"]

DRIVER = r"""
i=0
while IFS= read -r -d '' line; do
  d=/tmp/work/$i
  mkdir "$d" && cd "$d" || exit 90
  timeout -s KILL 5 strace -f -qq -xx -s 65535 -e trace=execve -o "/tmp/out/$i" \
    bash -c "$line" </dev/null >/dev/null 2>&1
  i=$((i + 1))
done < /tmp/in/lines
"""


def _sandbox_works() -> str | None:
    for tool in ("bwrap", "strace", "bash", "timeout"):
        if not shutil.which(tool):
            return f"{tool} is not installed"
    probe = subprocess.run(
        [
            "bwrap",
            "--unshare-all",
            "--die-with-parent",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "strace",
            "-qq",
            "-o",
            "/dev/null",
            "true",
        ],
        capture_output=True,
        check=False,
    )
    if probe.returncode != 0:
        return "bubblewrap cannot run strace here: " + probe.stderr.decode(errors="replace")[:200]
    return None


def _decode(hexed: str) -> str:
    """A string strace printed with -xx: every byte as \\xHH."""
    return bytes.fromhex(hexed.replace("\\x", "")).decode("utf-8", errors="surrogateescape")


def _execs(trace: Path) -> list[list[str]]:
    """The argv of every execve that succeeded, the name first (from the executable's path)."""
    pending: dict[str, tuple[str, list[str]]] = {}
    out: list[list[str]] = []

    def parse(call: str) -> tuple[str, list[str]] | None:
        # execve("\x2f...", ["\x67...", ...], ...
        if not call.startswith('execve("'):
            return None
        path_end = call.index('"', 8)
        path = _decode(call[8:path_end])
        start = call.index("[", path_end)
        end = call.index("]", start)
        args = [
            _decode(a.strip().strip('"')) for a in call[start + 1 : end].split(",") if a.strip()
        ]
        return path, args

    for raw in trace.read_text(encoding="ascii", errors="replace").splitlines():
        pid, _, rest = raw.partition(" ")
        rest = rest.lstrip()
        if rest.startswith("execve(") and "<unfinished ...>" in rest:
            parsed = parse(rest)
            if parsed:
                pending[pid] = parsed
            continue
        if rest.startswith("<... execve resumed>"):
            parsed = pending.pop(pid, None)
            if parsed and rest.rstrip().endswith("= 0"):
                out.append([parsed[0], *parsed[1][1:]])
            continue
        parsed = parse(rest)
        if parsed and rest.rstrip().endswith("= 0"):
            out.append([parsed[0], *parsed[1][1:]])
    return out[1:]  # the first is strace starting `bash -c LINE`


def _subject(argv: list[str]) -> str:
    name = os.path.basename(argv[0])
    if name.startswith("git-") and len(name) > 4:
        name = "git " + name[4:]
    return " ".join([name, *argv[1:]])


def _rules_verdict(policy: dict[str, object], subject: str) -> str:
    """How the policy decides one program run with this argv (deny, allow, ask, default)."""

    def hits(key: str) -> bool:
        patterns = policy.get(key, [])
        assert isinstance(patterns, list)
        for rule in patterns:
            assert rule.startswith("Bash(") and rule.endswith(")")
            if reference_match(rule[5:-1].encode(), subject.encode()):
                return True
        return False

    for key in ("deny", "allow", "ask"):
        if hits(key):
            return key
    return str(policy.get("default_decision", "ask"))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[list[str]]]:
    reason = _sandbox_works()
    if reason:
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("reader-diff")
    for name in ("in", "out", "work", "fakebin"):
        (root / name).mkdir()
    for fake in FAKES:
        (root / "fakebin" / fake).symlink_to(shutil.which("true") or "/bin/true")
    lines = corpus.lines()
    (root / "in" / "lines").write_bytes(b"".join(line.encode() + b"\0" for line in lines))
    (root / "in" / "driver.sh").write_text(DRIVER, encoding="utf-8")
    subprocess.run(
        [
            "bwrap",
            "--unshare-all",
            "--die-with-parent",
            "--new-session",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--tmpfs",
            "/tmp",
            "--ro-bind",
            str(root / "in"),
            "/tmp/in",
            "--bind",
            str(root / "out"),
            "/tmp/out",
            "--bind",
            str(root / "work"),
            "/tmp/work",
            "--ro-bind",
            str(root / "fakebin"),
            "/tmp/fakebin",
            "--setenv",
            "PATH",
            "/tmp/fakebin:/usr/bin:/bin",
            "--setenv",
            "HOME",
            "/tmp",
            "--chdir",
            "/tmp/work",
            "bash",
            "/tmp/in/driver.sh",
        ],
        check=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    out: dict[str, list[list[str]]] = {}
    for i, line in enumerate(lines):
        trace = root / "out" / str(i)
        out[line] = _execs(trace) if trace.exists() else []
    return out


def test_the_corpus_exercises_the_programs_the_rules_name(
    recorded: dict[str, list[list[str]]],
) -> None:
    """The test cannot pass vacuously: many lines really run git push, rm or git status."""
    subjects = [_subject(argv) for execs in recorded.values() for argv in execs]
    assert len(recorded) >= 1500
    assert sum(s.startswith("git push") for s in subjects) >= 200
    assert sum(s.startswith("rm ") for s in subjects) >= 50
    assert sum(s == "git status" for s in subjects) >= 50


@pytest.mark.parametrize("policy_name", sorted(corpus.POLICIES))
def test_every_exec_bash_makes_is_decided_by_the_reader(
    recorded: dict[str, list[list[str]]], policy_name: str
) -> None:
    spec = corpus.POLICIES[policy_name]
    policy = PermissionPolicy.from_dict(spec)
    missed = []
    for line, execs in recorded.items():
        stopped = [s for s in map(_subject, execs) if _rules_verdict(spec, s) in ("deny", "ask")]
        if not stopped:
            continue
        decision = policy.check("bash", {"command": line}).value
        if decision not in ("deny", "ask"):
            missed.append(f"{line!r}: reader {decision}, bash ran {stopped[0]!r}")
    assert not missed, f"{len(missed)} lines:\n" + "\n".join(missed[:40])
