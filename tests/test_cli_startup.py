"""What a command-line call imports: only what its command needs (issue 16).

Start-up cost is measured in bench/scale/run.py; here we pin the cause of it,
the set of modules, which does not depend on how busy the machine is.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys

import pytest

import codeward
from codeward.cli import _exec, _main
from codeward.cli._parser import build_parser
from codeward.sandbox import ENV_OPT_IN

SUBSYSTEMS = (
    "codeward.hitl",
    "codeward.hooks",
    "codeward.kernel",
    "codeward.mcp",
    "codeward.policy",
    "codeward.session",
    "codeward.tools",
    "codeward.verification",
    "codeward.workspace",
)


def _modules_after(argv: list[str]) -> set[str]:
    script = (
        "import sys\n"
        "from codeward.cli import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "sys.stdout.flush()\n"
        "print('\\n' + repr(sorted(sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    return set(ast.literal_eval(out.strip().splitlines()[-1]))


@pytest.mark.parametrize("argv", [["version"], ["--help"]])
def test_version_and_help_import_no_subsystem(argv: list[str]) -> None:
    loaded = _modules_after(argv)
    assert not {m for m in loaded if m.startswith(SUBSYSTEMS)}, argv
    assert "codeward.sandbox" not in loaded
    # nor the heavier parts of the standard library a subsystem brings
    assert not loaded & {"dataclasses", "inspect", "typing", "subprocess", "uuid", "hashlib"}
    # nor argparse, whose import (re, enum, gettext, locale) costs more than the rest
    assert not loaded & {"argparse", "re", "enum", "gettext", "json"}, argv


def test_the_quick_help_is_argparse_s_at_every_width(monkeypatch, capsys) -> None:
    answered = 0
    for columns in range(1, 241):
        monkeypatch.setenv("COLUMNS", str(columns))
        quick = _main.top_help(_main.help_width())
        if quick is not None:
            answered += 1
            assert quick == build_parser(["--help"]).format_help(), columns
    assert _main.top_help(78) is not None  # no terminal: argparse's 80 columns, less 2
    assert answered > 150
    monkeypatch.setenv("COLUMNS", "30")  # too narrow: argparse lays it out
    with pytest.raises(SystemExit) as ended:
        _main.main(["--help"])
    assert ended.value.code == 0
    assert capsys.readouterr().out == build_parser(["--help"]).format_help()


def test_version_answered_at_once_prints_what_the_parsed_command_does(capsys) -> None:
    assert _main.main(["version", "--json"]) == 0
    quick = json.loads(capsys.readouterr().out)
    args = build_parser(["version"]).parse_args(["version", "--json"])
    assert args.run(args) == 0
    assert json.loads(capsys.readouterr().out) == quick
    assert quick["package"] == codeward.__version__


@pytest.mark.parametrize("help_only", [True, False])
def test_exec_imports_the_sandbox_and_no_other_subsystem(tmp_path, help_only: bool) -> None:
    argv = ["exec", "--help"] if help_only else ["exec", "--workspace", str(tmp_path), "--", "true"]
    loaded = _modules_after(argv)
    assert "codeward.sandbox" in loaded
    assert not {m for m in loaded if m.startswith(SUBSYSTEMS)}
    # once the probe's verdict is kept (the first run), neither the output dataclass nor
    # the probe's own tools
    loaded = _modules_after(argv)
    heavy = {"dataclasses", "typing", "tempfile", "shutil", "subprocess", "pathlib", "hashlib"}
    assert not loaded & heavy, loaded & heavy


def test_the_exec_help_names_the_real_opt_in_variable() -> None:
    assert _exec.ENV_OPT_IN == ENV_OPT_IN


def test_every_public_name_resolves_lazily() -> None:
    script = (
        "import sys, codeward\n"
        "assert 'codeward.session' not in sys.modules\n"
        "from codeward import Session, PermissionPolicy, ToolCall\n"
        "assert 'codeward.session' in sys.modules\n"
        "assert Session.__name__ == 'Session'\n"
        "print(sorted(set(codeward.__all__) - set(dir(codeward))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"
    for name in codeward.__all__:
        assert getattr(codeward, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        codeward.Nope  # type: ignore[attr-defined]  # noqa: B018


# `codeward exec` parses its plain form without argparse (_exec.quick_args); whatever it
# answers must be what argparse makes of the same words, and it must answer the usual forms.
_OPTION_WORDS = [
    "--workspace", "--work", "--timeout-ms", "--timeout", "--max-output-bytes", "--env",
    "--memory-max", "--max-processes", "--tmpfs-max", "--json", "--allow-process-host-sandbox",
    "--allow", "-h", "--help", "--json=1", "--timeout-ms=5", "--env=A=B", "--workspace=",
]  # fmt: skip
_VALUE_WORDS = ["5", "007", "-1", "+5", "1_0", " 5", "x", "", "A=B", "-x", "--", "dir", "\u0661"]
_COMMAND_WORDS = ["--", "true", "echo", "--json", "-x"]


def _argparse_exec(words: list[str]) -> dict[str, object] | None:
    try:
        args = build_parser(["exec", *words]).parse_args(["exec", *words])
    except SystemExit:
        return None
    return {k: v for k, v in vars(args).items() if k != "run"}


def _quick_exec(words: list[str]) -> dict[str, object] | None:
    args = _exec.quick_args(words)
    return None if args is None else {k: v for k, v in vars(args).items() if k != "run"}


@pytest.mark.parametrize(
    "words",
    [
        ["--", "true"],
        ["--", "make", "test"],
        ["--json", "--", "ls", "-la"],
        ["--workspace", "/src/app", "--timeout-ms", "60000", "--", "cargo build && cargo test"],
        ["--workspace=/w", "--env", "A=1", "--env=B=2", "--max-output-bytes", "10", "--", "x"],
        ["--memory-max", "1000000", "--max-processes", "64", "--tmpfs-max", "4096", "--", "x"],
        ["--allow-process-host-sandbox", "--", "echo", "--json"],
        ["--workspace", "", "--", "true"],
    ],
)
def test_exec_s_usual_forms_are_parsed_without_argparse(words: list[str]) -> None:
    quick = _quick_exec(words)
    assert quick is not None, words
    assert quick == _argparse_exec(words)
    assert quick["skip_teardown"] is True


def test_exec_s_quick_parse_agrees_with_argparse_or_leaves_it_to_argparse(capsys) -> None:
    import random

    rng = random.Random(16)
    vocabulary = _OPTION_WORDS + _VALUE_WORDS + _COMMAND_WORDS
    answered = 0
    for _ in range(3000):
        words = [rng.choice(vocabulary) for _ in range(rng.randint(0, 7))]
        quick = _quick_exec(words)
        if quick is not None:
            answered += 1
            assert quick == _argparse_exec(words), words
    capsys.readouterr()  # argparse's refusals
    assert answered > 100


def test_exec_does_not_import_argparse(tmp_path) -> None:
    loaded = _modules_after(["exec", "--workspace", str(tmp_path), "--", "true"])
    assert not loaded & {"argparse", "gettext", "locale"}


# `codeward exec`'s whole import path through the package. A module added to it must be
# added here too, on purpose: every import on this path is start-up time of every command
# (issue 16: the CLI at most half of `codex sandbox`'s time).
EXEC_PATH = frozenset(
    {
        "codeward",
        "codeward._errors",
        "codeward._native",
        "codeward._platform",
        "codeward._version",
        "codeward.cli",
        "codeward.cli._exec",
        "codeward.cli._main",
        "codeward.sandbox",
        "codeward.sandbox._args",
        "codeward.sandbox._base",
        "codeward.sandbox._locate",
        "codeward.sandbox._native_runner",
        "codeward.sandbox._probe_cache",
        "codeward.sandbox._select",
    }
)
# The standard modules the path imports itself; what they import in turn differs between
# Python versions, so it is read from the running interpreter (below).
EXEC_STDLIB = ("__future__", "atexit", "os", "signal", "stat", "sys", "threading", "time")
EXEC_STDLIB += ("types", "weakref", "zlib")
# Named here so that a failure says plainly what came back.
NEVER_ON_EXEC = (
    "codeward.verification",
    "codeward.mcp",
    "codeward.mcpserver",
    "codeward.download",
    "codeward.hitl",
    "codeward.session",
    "codeward.policy",
    "codeward.guardrail",
    "cryptography",
    "mcp",
    "yaml",
    "jsonschema",
    "json",
    "dataclasses",
    "typing",
    "importlib",
    "contextlib",
    "argparse",
    "re",
    "subprocess",
    "tempfile",
    "shutil",
    "hashlib",
    "pathlib",
    "inspect",
    "socket",
    "ssl",
    "asyncio",
)


def _modules_of(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint(repr(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    return set(ast.literal_eval(out.strip().splitlines()[-1]))


def test_exec_imports_its_own_path_and_nothing_more(tmp_path) -> None:
    argv = ["exec", "--workspace", str(tmp_path), "--", "true"]
    _modules_after(argv)  # the first run of this test run probes and keeps the pass
    loaded = _modules_after(argv)
    for name in NEVER_ON_EXEC:  # nor any submodule of them
        assert not {m for m in loaded if m == name or m.startswith(name + ".")}, name
    ours = {m for m in loaded if m.split(".")[0] == "codeward"}
    assert ours == EXEC_PATH, f"added: {sorted(ours - EXEC_PATH)}, gone: {EXEC_PATH - ours}"
    # beyond the interpreter's own start, only the standard modules above and theirs
    allowed = _modules_of("import " + ", ".join(EXEC_STDLIB))
    unexpected = sorted(loaded - ours - allowed - {"__main__"})
    assert not unexpected, f"codeward exec imports more than its path: {unexpected}"
