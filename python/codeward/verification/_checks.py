"""Which checks verify a workspace: detected from its build files, or configured by the host.

Detection looks at the workspace root only (a monorepo's sub-projects need
host-configured commands) and reads files in the host process by
descriptor, never through a symlink, with a size cap; a build file it
cannot read as a regular file counts as absent, so nothing is detected and
the report cannot pass (fail closed).

- ``pytest`` (``python3 -B -m pytest -q -p no:cacheprovider``): ``pyproject.toml``
  with a ``[tool.pytest...]`` table, ``pytest.ini``, ``setup.cfg`` with
  ``[tool:pytest]``, ``tox.ini`` with ``[pytest]``, or a ``test_*.py`` /
  ``*_test.py`` file under ``tests/`` or ``test/``;
- ``npm-test`` (``npm test --silent``): ``package.json`` whose ``scripts.test``
  is not npm's placeholder (``echo "Error: no test specified" && exit 1``);
- ``cargo-test`` (``cargo test --offline``, declared output ``target``):
  ``Cargo.toml``;
- ``go-test`` (``go test ./...``): ``go.mod``.

pytest runs with ``-B`` and without its cache plugin so that verifying does
not itself write ``__pycache__`` or ``.pytest_cache`` into the workspace.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

from .._platform import DIR_FLAGS
from .._untrusted import read_small_file
from ._errors import CheckSpecError
from ._grammar import path_problem

__all__ = ["MAX_BUILD_FILE_BYTES", "CheckSpec", "detect_checks"]

MAX_BUILD_FILE_BYTES = 1 << 20
_TEST_DIRS = ("tests", "test")
_TEST_SEARCH_ENTRIES = 20_000
_TEST_SEARCH_DEPTH = 8
_CHECK_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:/@+-]{0,127}")
_NPM_PLACEHOLDER = "no test specified"
_PYPROJECT_PYTEST = re.compile(r"^[ \t]*\[[ \t]*tool[ \t]*\.[ \t]*pytest[ \t]*[.\]]", re.M)
_SETUP_CFG_PYTEST = re.compile(r"^[ \t]*\[[ \t]*tool:pytest[ \t]*\]", re.M)
_TOX_PYTEST = re.compile(r"^[ \t]*\[[ \t]*pytest[ \t]*\]", re.M)
_DIR_FLAGS = DIR_FLAGS

PYTEST_COMMAND = "python3 -B -m pytest -q -p no:cacheprovider"
NPM_COMMAND = "npm test --silent"
CARGO_COMMAND = "cargo test --offline"
GO_COMMAND = "go test ./..."


@dataclass(frozen=True)
class CheckSpec:
    """A check to run: a bash command run through the session's sandbox.

    ``required`` checks decide the report. ``timeout_ms`` overrides the
    run's default. ``outputs`` are workspace-relative directories the command
    is expected to write (``target`` for cargo): changes there do not fail
    the workspace-integrity check, and are named as a residual risk instead.
    """

    id: str
    kind: str
    command: str
    required: bool = True
    timeout_ms: int | None = None
    outputs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not _CHECK_ID.fullmatch(self.id):
            raise CheckSpecError(
                f"check id {self.id!r} refused: use 1 to 128 letters, digits or '_.:/@+-'"
            )
        if not isinstance(self.kind, str) or not self.kind.strip() or len(self.kind) > 64:
            raise CheckSpecError(f"check {self.id}: kind must be a non-blank string")
        if not isinstance(self.command, str) or not self.command.strip():
            raise CheckSpecError(f"check {self.id}: command must be a non-blank string")
        if "\0" in self.command:
            raise CheckSpecError(f"check {self.id}: the command contains a NUL byte")
        if not isinstance(self.required, bool):
            raise CheckSpecError(f"check {self.id}: required must be True or False")
        timeout = self.timeout_ms
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int) or timeout < 1
        ):
            raise CheckSpecError(f"check {self.id}: timeout_ms must be a positive integer")
        if isinstance(self.outputs, str):
            raise CheckSpecError(f"check {self.id}: outputs must be a sequence of paths")
        outputs = tuple(self.outputs)
        for out in outputs:
            problem = path_problem(out)
            if problem is not None or out == ".":
                raise CheckSpecError(
                    f"check {self.id}: output directory {out!r} refused: it "
                    f"{problem or 'is the whole workspace'}"
                )
        object.__setattr__(self, "outputs", outputs)

    def owns(self, path: str) -> bool:
        """True when ``path`` is one of ``outputs`` or lies under one."""
        return any(path == out or path.startswith(out + "/") for out in self.outputs)


def detect_checks(
    root: str | os.PathLike[str],
    *,
    configured: Iterable[CheckSpec] = (),
    auto: bool = True,
) -> list[CheckSpec]:
    """The checks for the workspace at ``root``.

    Detected checks (unless ``auto`` is False) come first, in the order of
    the module's table; ``configured`` ones (the host's) follow, and one with
    the id of a detected check replaces it. Two configured checks with one id
    raise :class:`CheckSpecError`.
    """
    specs: dict[str, CheckSpec] = {}
    if auto:
        for spec in _detect(os.path.abspath(os.fspath(root))):
            specs[spec.id] = spec
    host_ids: set[str] = set()
    for spec in configured:
        if not isinstance(spec, CheckSpec):
            raise CheckSpecError(f"configured checks must be CheckSpec, not {type(spec).__name__}")
        if spec.id in host_ids:
            raise CheckSpecError(f"two configured checks have the id {spec.id!r}")
        host_ids.add(spec.id)
        specs.pop(spec.id, None)
        specs[spec.id] = spec
    return list(specs.values())


def _detect(root: str) -> list[CheckSpec]:
    try:
        root_fd = os.open(root, _DIR_FLAGS)
    except OSError:
        return []
    try:
        found = []
        if _has_pytest(root_fd):
            found.append(CheckSpec("pytest", "pytest", PYTEST_COMMAND))
        if _has_npm_test(root_fd):
            found.append(CheckSpec("npm-test", "npm", NPM_COMMAND))
        if _read(root_fd, "Cargo.toml") is not None:
            found.append(CheckSpec("cargo-test", "cargo", CARGO_COMMAND, outputs=("target",)))
        if _read(root_fd, "go.mod") is not None:
            found.append(CheckSpec("go-test", "go", GO_COMMAND))
        return found
    finally:
        os.close(root_fd)


def _read(dirfd: int, name: str) -> str | None:
    """The text of regular file ``name`` in ``dirfd``, or None (absent, a symlink, too big ...)."""
    data = read_small_file(dirfd, name, MAX_BUILD_FILE_BYTES)
    return None if data is None else data.decode("utf-8", "replace")


def _has_pytest(root_fd: int) -> bool:
    if _read(root_fd, "pytest.ini") is not None:
        return True
    for name, pattern in (
        ("pyproject.toml", _PYPROJECT_PYTEST),
        ("setup.cfg", _SETUP_CFG_PYTEST),
        ("tox.ini", _TOX_PYTEST),
    ):
        text = _read(root_fd, name)
        if text is not None and pattern.search(text):
            return True
    return any(_has_test_files(root_fd, d) for d in _TEST_DIRS)


def _has_npm_test(root_fd: int) -> bool:
    text = _read(root_fd, "package.json")
    if text is None:
        return False
    try:
        manifest = json.loads(text)
    except ValueError:
        return False
    scripts = manifest.get("scripts") if isinstance(manifest, dict) else None
    test = scripts.get("test") if isinstance(scripts, dict) else None
    return isinstance(test, str) and bool(test.strip()) and _NPM_PLACEHOLDER not in test


def _is_test_module(name: str) -> bool:
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def _has_test_files(root_fd: int, dirname: str) -> bool:
    """Whether ``dirname`` holds a pytest module, searched by descriptor with bounds."""
    budget = [_TEST_SEARCH_ENTRIES]

    def search(parent: int, name: str, depth: int) -> bool:
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
        except OSError:
            return False
        try:
            subdirs = []
            with os.scandir(fd) as entries:
                for entry in entries:
                    budget[0] -= 1
                    if budget[0] < 0:
                        return False
                    if entry.is_dir(follow_symlinks=False):
                        subdirs.append(entry.name)
                    elif _is_test_module(entry.name) and entry.is_file(follow_symlinks=False):
                        return True
            return depth < _TEST_SEARCH_DEPTH and any(search(fd, sub, depth + 1) for sub in subdirs)
        except OSError:
            return False
        finally:
            os.close(fd)

    return search(root_fd, dirname, 0)
