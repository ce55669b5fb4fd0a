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
