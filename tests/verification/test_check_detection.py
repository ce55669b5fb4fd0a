"""Detecting a workspace's checks from its build files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from codeward.verification import CheckSpec, CheckSpecError, detect_checks


def ids(root: Path, **kwargs: object) -> list[str]:
    return [s.id for s in detect_checks(root, **kwargs)]  # type: ignore[arg-type]


def test_an_empty_workspace_has_no_checks(workspace: Path) -> None:
    assert detect_checks(workspace) == []


@pytest.mark.parametrize(
    ("name", "text", "found"),
    [
        ("pyproject.toml", "[tool.pytest.ini_options]\naddopts = '-q'\n", True),
        ("pyproject.toml", "[tool.pytest]\n", True),
        ("pyproject.toml", "  [ tool.pytest.ini_options ]\n", True),
        ("pyproject.toml", "[project]\nname = 'x'\n# [tool.pytest.ini_options]\n", False),
        ("pyproject.toml", "[tool.pytesting]\n", False),
        ("pytest.ini", "", True),
        ("setup.cfg", "[metadata]\nname = x\n[tool:pytest]\ntestpaths = t\n", True),
        ("setup.cfg", "[flake8]\n", False),
        ("tox.ini", "[tox]\n[pytest]\n", True),
        ("tox.ini", "[tox]\nenvlist = py3\n", False),
    ],
)
def test_pytest_configuration(workspace: Path, name: str, text: str, found: bool) -> None:
    (workspace / name).write_text(text)
    assert ids(workspace) == (["pytest"] if found else [])


@pytest.mark.parametrize(
    ("files", "found"),
    [
        (["tests/test_a.py"], True),
        (["tests/unit/deep/er/test_b.py"], True),
        (["test/a_test.py"], True),
        (["tests/helpers.py", "tests/conftest.py"], False),
        (["tests/test_a.txt"], False),
        (["src/test_a.py"], False),
    ],
)
def test_a_tests_directory(workspace: Path, files: list[str], found: bool) -> None:
    for name in files:
        path = workspace / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("def test(): pass\n")
    assert ids(workspace) == (["pytest"] if found else [])


def test_the_pytest_command_writes_no_cache(workspace: Path) -> None:
    (workspace / "pytest.ini").write_text("")
    (spec,) = detect_checks(workspace)
    assert spec == CheckSpec("pytest", "pytest", "python3 -B -m pytest -q -p no:cacheprovider")


@pytest.mark.parametrize(
    ("manifest", "found"),
    [
        ({"scripts": {"test": "jest"}}, True),
        ({"scripts": {"test": 'echo "Error: no test specified" && exit 1'}}, False),
        ({"scripts": {"test": "  "}}, False),
        ({"scripts": {"build": "tsc"}}, False),
        ({"scripts": ["test"]}, False),
        ({}, False),
        ([], False),
    ],
)
def test_npm(workspace: Path, manifest: object, found: bool) -> None:
    (workspace / "package.json").write_text(json.dumps(manifest))
    specs = detect_checks(workspace)
    if found:
        assert specs == [CheckSpec("npm-test", "npm", "npm test --silent")]
    else:
        assert specs == []


def test_a_broken_package_json_is_no_check(workspace: Path) -> None:
    (workspace / "package.json").write_text("{not json")
    assert detect_checks(workspace) == []


def test_cargo_and_go(workspace: Path) -> None:
    (workspace / "Cargo.toml").write_text("[package]\nname = 'x'\n")
    (workspace / "go.mod").write_text("module x\n")
    cargo, go = detect_checks(workspace)
    assert cargo == CheckSpec("cargo-test", "cargo", "cargo test --offline", outputs=("target",))
    assert go == CheckSpec("go-test", "go", "go test ./...")


def test_everything_at_once_in_a_stable_order(workspace: Path) -> None:
    (workspace / "go.mod").write_text("module x\n")
    (workspace / "Cargo.toml").write_text("")
    (workspace / "package.json").write_text('{"scripts": {"test": "vitest"}}')
    (workspace / "pytest.ini").write_text("")
    assert ids(workspace) == ["pytest", "npm-test", "cargo-test", "go-test"]


def test_build_files_behind_symlinks_or_oversized_are_ignored(
    workspace: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "package.json").write_text('{"scripts": {"test": "jest"}}')
    (elsewhere / "tests").mkdir()
    (elsewhere / "tests" / "test_x.py").write_text("")
    (workspace / "package.json").symlink_to(elsewhere / "package.json")
    (workspace / "tests").symlink_to(elsewhere / "tests")
    (workspace / "go.mod").mkdir()  # a directory, not a file
    (workspace / "pyproject.toml").write_text("[tool.pytest]\n" + "#" * (1 << 20))
    os.mkfifo(workspace / "Cargo.toml")  # must not block
    assert detect_checks(workspace) == []


def test_configured_checks(workspace: Path) -> None:
    (workspace / "pytest.ini").write_text("")
    mine = CheckSpec("pytest", "pytest", "python3 -m pytest -x tests/unit")
    lint = CheckSpec("lint", "command", "ruff check .", required=False)
    assert detect_checks(workspace, configured=[lint, mine]) == [lint, mine]
    assert detect_checks(workspace, configured=[lint], auto=False) == [lint]
    with pytest.raises(CheckSpecError):
        detect_checks(workspace, configured=[lint, lint])
    with pytest.raises(CheckSpecError):
        detect_checks(workspace, configured=["ruff check ."])  # type: ignore[list-item]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"id": ""},
        {"id": "with space"},
        {"command": "  "},
        {"command": "a\0b"},
        {"kind": ""},
        {"required": "yes"},
        {"timeout_ms": 0},
        {"timeout_ms": True},
        {"outputs": "target"},
        {"outputs": ("/abs",)},
        {"outputs": ("../up",)},
        {"outputs": (".",)},
    ],
)
def test_invalid_specs(kwargs: dict[str, object]) -> None:
    args: dict[str, object] = {"id": "x", "kind": "command", "command": "true"}
    args.update(kwargs)
    with pytest.raises(CheckSpecError):
        CheckSpec(**args)  # type: ignore[arg-type]


def test_outputs_ownership() -> None:
    spec = CheckSpec("cargo-test", "cargo", "cargo test", outputs=["target"])  # type: ignore[arg-type]
    assert spec.outputs == ("target",)
    assert spec.owns("target") and spec.owns("target/debug/x")
    assert not spec.owns("targets/x") and not spec.owns("src/target")
