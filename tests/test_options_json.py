"""native/abi/options.json is the canonical option list: the C header and Python follow it.

Each entry names the option once, with its C field, its default and its
spelling in Python, Node (camelCase) and Go (PascalCase). The Node and Go
bindings check their own spellings against this file in both directions
(bindings/node/test/options.test.js, bindings/go/options_test.go); here, the
casing rule and the C and Python side.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
import sys
from pathlib import Path

import pytest

from codeward import SessionOptions
from codeward.sandbox import NativeBashSandbox, SandboxLimits, select_sandbox
from codeward.sandbox._native_runner import _CoreSandbox

ROOT = Path(__file__).resolve().parents[1]
OPTIONS = json.loads((ROOT / "native" / "abi" / "options.json").read_text())["options"]
HEADER = (ROOT / "native" / "include" / "a3s" / "a3s.h").read_text()
STUB = (ROOT / "python" / "codeward" / "_native.pyi").read_text()


def _struct_fields(name: str) -> set[str]:
    pattern = "typedef struct " + name + r" \{(.*?)\} " + name + ";"
    body = re.search(pattern, HEADER, re.S)
    assert body, f"struct {name} not in a3s.h"
    return set(re.findall(r"\b(\w+);", body.group(1)))


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.capitalize() for w in rest)


def test_every_option_is_named_once_with_every_spelling() -> None:
    names = [o["name"] for o in OPTIONS]
    assert len(names) == len(set(names))
    for o in OPTIONS:
        assert {"name", "c", "default", "doc", "python", "node", "go"} <= set(o), o
        if o.get("idiom"):  # each language's own way (an Event, an AbortSignal, a context)
            continue
        if o["node"] is None and o["go"] is None:  # an option of the Python binding only
            continue
        # null: not (yet) an option of that binding
        assert o["node"] is None or o["node"].split(".")[-1] == _camel(o["name"]), o
        if o["go"] is None:
            continue
        pascal = _camel(o["name"])[0].upper() + _camel(o["name"])[1:]
        form = o.get("go_form", "")
        if form.startswith("duration"):  # a time.Duration: the unit leaves the name
            assert pascal.endswith("Ms") and o["go"].split(".")[-1] == pascal[:-2], o
        elif form.startswith("os/exec"):  # named as os/exec.Cmd names it
            assert o["go"] in ("Dir", "Stdin"), o
        elif form.startswith("writers"):  # io.Writer fields, one per stream
            assert all(f in ("Stdout", "Stderr") for f in o["go"].split(", ")), o
        elif form.startswith("inverted"):  # a plain bool whose zero is the default
            assert o["default"] != False and o["go"].split(".")[-1] != pascal, o  # noqa: E712
        else:
            assert o["go"].split(".")[-1] == pascal, o


@pytest.mark.parametrize("option", OPTIONS, ids=[o["name"] for o in OPTIONS])
def test_the_c_field_exists(option: dict) -> None:
    c = option["c"]
    if c is None:  # an option of the bindings only
        return
    if " & " in c:
        field, flag = c.split(" & ")
        assert re.search(rf"#define {flag}\b", HEADER), flag
        c = field
    struct, field = c.split(".")
    assert field in _struct_fields(struct), c
    if option.get("unlimited"):
        assert re.search(rf"#define {option['unlimited']}\b", HEADER)


@pytest.mark.parametrize("option", OPTIONS, ids=[o["name"] for o in OPTIONS])
def test_the_python_spelling_exists(option: dict) -> None:
    for spelling in option["python"].split(", "):
        owner, _, rest = spelling.partition("(") if "(" in spelling else spelling.partition(".")
        name = rest.rstrip("=)")
        if owner == "SandboxLimits":
            assert name in {f.name for f in dataclasses.fields(SandboxLimits)}, spelling
        elif owner == "McpServerConfig":
            from codeward.mcp import McpServerConfig

            assert name in {f.name for f in dataclasses.fields(McpServerConfig)}, spelling
        elif owner == "add_mcp_server":
            from codeward.session import Session

            assert name in inspect.signature(Session.add_mcp_server).parameters, spelling
        elif owner == "SessionOptions":
            assert name in {f.name for f in dataclasses.fields(SessionOptions)}, spelling
        elif owner == "exec":
            assert name in inspect.signature(_CoreSandbox.exec).parameters, spelling
        elif owner == "NativeBashSandbox":
            assert name in inspect.signature(NativeBashSandbox).parameters, spelling
        elif owner == "select_sandbox":
            assert name in inspect.signature(select_sandbox).parameters, spelling
        elif owner == "_native.Sandbox":
            assert re.search(rf"\b{name}: ", STUB), spelling
        else:
            pytest.fail(f"unknown Python owner in {spelling}")


def test_every_sandbox_limit_is_listed() -> None:
    listed = {o["python"] for o in OPTIONS}
    for f in dataclasses.fields(SandboxLimits):
        assert f"SandboxLimits.{f.name}" in listed, f.name


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the native sandbox")
@pytest.mark.parametrize("option", [o for o in OPTIONS if "minimum" in o], ids=lambda o: o["name"])
def test_the_minimum_is_the_core_s(option: dict, tmp_path: Path) -> None:
    name = option["c"].split(".")[1]
    NativeBashSandbox(tmp_path, limits=SandboxLimits(**{name: option["minimum"]})).close()
    if option["minimum"] > 1:
        with pytest.raises(Exception, match="below the least"):
            NativeBashSandbox(tmp_path, limits=SandboxLimits(**{name: option["minimum"] - 1}))
