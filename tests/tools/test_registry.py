"""The registry and run_tool: fresh tools, strict schemas, and no exception ever escaping."""

from __future__ import annotations

import errno
from typing import Any, ClassVar

import pytest
from toolkit import call

from codeward._errors import DestinationExists, HardLinkRefused, PathOutsideWorkspace
from codeward.tools import (
    ErrorKind,
    Tool,
    ToolContext,
    ToolKind,
    ToolResult,
    builtin_tools,
    run_tool,
)
from codeward.workspace._atomic import FileChanged


def test_builtin_tools_are_fresh_and_complete():
    first, second = builtin_tools(), builtin_tools()
    names = [t.name for t in first]
    assert names == ["read", "write", "edit", "patch", "search", "ls", "git", "bash"]
    assert all(a is not b for a, b in zip(first, second, strict=True))
    kinds = {t.name: t.kind for t in first}
    assert kinds["write"] is ToolKind.WRITE and kinds["git"] is ToolKind.GIT
    assert kinds["search"] is ToolKind.READ and kinds["bash"] is ToolKind.BASH


def _objects(schema: Any, where: str = "$"):
    if isinstance(schema, dict):
        if schema.get("type") == "object":
            yield where, schema
        for key, sub in schema.items():
            yield from _objects(sub, f"{where}.{key}")


@pytest.mark.parametrize("tool", builtin_tools(), ids=lambda t: t.name)
def test_every_object_level_forbids_extra_properties(tool):
    objects = list(_objects(dict(tool.schema)))
    assert objects
    for where, obj in objects:
        assert obj.get("additionalProperties") is False, where
    model = tool.model_schema()
    assert model["name"] == tool.name and model["description"] and model["parameters"]


@pytest.mark.parametrize("tool", builtin_tools(), ids=lambda t: t.name)
def test_garbage_arguments_never_raise(tool, ctx):
    garbage: list[Any] = [{"unknown": 1}, {"file_path": 3}, {"command": None}, [], "x", None]
    if tool.schema.get("required") or tool.name == "read":
        garbage.append({})
    for args in garbage:
        r = run_tool(tool, args, ctx)  # type: ignore[arg-type]
        assert not r.success and r.error_kind is ErrorKind.INVALID_ARGUMENT


class Raising(Tool):
    name: ClassVar[str] = "raising"
    kind: ClassVar[ToolKind] = ToolKind.READ
    description: ClassVar[str] = "raises what it is told"
    schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "properties": {"file_path": {"type": "string"}},
    }

    def __init__(self, exc: Exception) -> None:
        self.exc = exc

    def paths(self, args):
        return [args["file_path"]] if "file_path" in args else []

    def run(self, args, ctx) -> ToolResult:
        raise self.exc


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (PathOutsideWorkspace("out", path="../x"), ErrorKind.PERMISSION_DENIED),
        (HardLinkRefused("links", path="x"), ErrorKind.PERMISSION_DENIED),
        (DestinationExists("exists", path="x"), ErrorKind.CONFLICT),
        (FileChanged("changed", path="x"), ErrorKind.CONFLICT),
        (FileNotFoundError(errno.ENOENT, "No such file"), ErrorKind.NOT_FOUND),
        (IsADirectoryError(errno.EISDIR, "Is a directory"), ErrorKind.INVALID_ARGUMENT),
        (NotADirectoryError(errno.ENOTDIR, "Not a directory"), ErrorKind.INVALID_ARGUMENT),
        (PermissionError(errno.EACCES, "Permission denied"), ErrorKind.PERMISSION_DENIED),
        (OSError(errno.EIO, "I/O error"), ErrorKind.IO_ERROR),
        (RuntimeError("bug"), ErrorKind.TOOL_FAILED),
    ],
)
def test_exceptions_become_typed_failures(ctx, exc, kind):
    r = call(Raising(exc), ctx, file_path="src/x.py")
    assert r.error_kind is kind and r.output.startswith("raising: ")
    if isinstance(exc, OSError):
        assert "'src/x.py'" in r.output and r.metadata["path"] == "src/x.py"


def test_a_cancelled_call_does_not_start(ctx):
    class Cancelled:
        def is_set(self) -> bool:
            return True

    started = []

    class Recording(Raising):
        def run(self, args, ctx):
            started.append(1)
            return ToolResult(self.name, "ran")

    ctx2 = ToolContext(ctx.workspace, ctx.sandbox, cancel=Cancelled())
    r = call(Recording(RuntimeError()), ctx2)
    assert r.error_kind is ErrorKind.CANCELLED and started == []
