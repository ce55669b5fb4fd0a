"""The sandbox's init is the one the package was built with, even when the package lies in the
workspace (a `.venv` in the project, the common setup) where a command can rewrite it.

A handle pins the init's bytes when it is made: a command that then rewrites the file, in place
(same inode) or by rename, changes nothing for the handle's next one-shot command, long-lived
sandbox, process-host command or sandboxed MCP server. An init changed before a handle is made
is refused, because it no longer has the digest the extension was compiled with; so is a
host-side MCP server's, which is read at every start.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from codeward import SandboxUnavailable, _native
from codeward.mcp import _process
from codeward.mcp._process import McpStartError
from codeward.sandbox import NativeBashSandbox, ProcessHostBashSandbox, _locate

GENUINE = _locate.init_path()
FAKE = """#!/bin/sh
echo pwned > {marker}
echo one-ok reuse-ok host-ok mcp-ok
"""
REWRITES = {
    "in place": "cat fake-init > {init} && echo rewritten",
    "by rename": "cp fake-init {init}.new && mv {init}.new {init} && echo rewritten",
}


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A workspace whose .venv holds the package's init, and the path of that init."""
    assert GENUINE and _native.INIT_SHA256, "a3s-init is not built"
    ws = tmp_path / "project"
    package = ws / ".venv" / "lib" / "codeward"
    (package / "_bin").mkdir(parents=True)
    init = package / "_bin" / "a3s-init"
    shutil.copy2(GENUINE, init)
    (ws / "fake-init").write_text(FAKE.format(marker=ws / "pwned"))
    (ws / "fake-init").chmod(0o755)
    monkeypatch.setattr(_locate, "_PACKAGE_DIR", str(package))
    return ws, init


@pytest.mark.parametrize("how", list(REWRITES))
def test_a_rewritten_init_never_runs(installed: tuple[Path, Path], how: str) -> None:
    ws, init = installed
    one = NativeBashSandbox(ws, reuse=False)
    reuse = NativeBashSandbox(ws, reuse=True)
    host = ProcessHostBashSandbox(ws)
    try:
        assert reuse.exec("echo before").stdout == "before\n"  # a long-lived sandbox runs
        rel = init.relative_to(ws)
        out = one.exec(REWRITES[how].format(init=rel))
        assert out.exit_code == 0 and out.stdout == "rewritten\n", out
        assert init.read_bytes() != Path(GENUINE).read_bytes()

        reuse.close()  # the next command starts a new long-lived sandbox
        for sb, word in ((one, "one-ok"), (reuse, "reuse-ok"), (host, "host-ok")):
            out = sb.exec(f"echo {word}")
            assert out.exit_code == 0 and out.stdout == f"{word}\n", (word, out)
        assert not (ws / "pwned").exists(), "the rewritten init ran"

        # a new handle, or a host-side MCP server (read at every start), is refused
        with pytest.raises(SandboxUnavailable, match="changed since the package was built"):
            NativeBashSandbox(ws, reuse=False)
        for spec in (None, _process.SandboxSpec(workspace=str(ws))):
            with pytest.raises(McpStartError, match="changed since the package was built"):
                _process.spawn("probe", "/bin/sh", ["-c", "true"], {}, str(ws), spec, 2000)
        assert not (ws / "pwned").exists(), "the rewritten init ran"
    finally:
        for sb in (one, reuse, host):
            sb.close()


def test_a_changed_init_is_refused_before_any_handle(installed: tuple[Path, Path]) -> None:
    ws, init = installed
    data = bytearray(init.read_bytes())
    data[-1] ^= 1  # one bit: still an executable, no longer the one built
    init.write_bytes(bytes(data))
    for make in (lambda: NativeBashSandbox(ws), lambda: ProcessHostBashSandbox(ws)):
        with pytest.raises(SandboxUnavailable) as err:
            make()
        assert str(init) in str(err.value) and "changed since the package was built" in str(
            err.value
        )
    assert not (ws / "pwned").exists()


def test_the_genuine_init_in_the_workspace_runs(installed: tuple[Path, Path]) -> None:
    """The digest is what makes an init inside the workspace acceptable (the C core refuses one
    there without it)."""
    ws, _ = installed
    with NativeBashSandbox(ws, reuse=False) as sb:
        assert sb.exec("echo ok").stdout == "ok\n"
    with pytest.raises(_native.NativeError, match="inside the workspace"):
        _native.Sandbox(str(ws), _locate.init_path(), process_host=True)
