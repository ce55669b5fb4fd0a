"""Runs the shared sandbox vectors (tests/vectors/sandbox.json) against a real Python sandbox.

The Node (bindings/node/test/sandbox-vectors.test.js) and Go (bindings/go/vectors_sandbox_test.go)
bindings run the very same file, each with a real sandbox; the file's description states the
schema. Options that select_sandbox does not take (reuse, no_landlock) build the native sandbox
directly, once select_sandbox has chosen it.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import stat
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codeward import _native
from codeward._errors import SandboxArgumentError, SandboxUnavailable
from codeward.sandbox import ExecRules, NativeBashSandbox, SandboxLimits, _locate, select_sandbox
from codeward.sandbox._native_runner import _CoreSandbox

VECTORS = Path(__file__).parent / "vectors" / "sandbox.json"
DATA = json.loads(VECTORS.read_text(encoding="utf-8"))
CASES: list[dict[str, Any]] = DATA["cases"]

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the native sandbox is Linux-only"
)


def test_the_file_holds_enough_named_cases() -> None:
    assert DATA["schema"] == 1
    names = [c["name"] for c in CASES]
    assert len(names) >= DATA["min_cases"] >= 40
    assert len(set(names)) == len(names), "case names must be unique"


@pytest.fixture(scope="module")
def listener() -> Iterator[socket.socket]:
    """A TCP listener on the host's loopback that no sandboxed command may reach."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s


def _force_rmtree(path: str) -> None:
    def retry(func, p, _exc):  # type: ignore[no-untyped-def]
        os.chmod(os.path.dirname(p), 0o700)
        func(p)

    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=retry)
    else:
        shutil.rmtree(path, onerror=retry)


def _survivors(marker: str) -> list[str]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            shown = cmdline.replace(b"\0", b" ").decode(errors="replace")
            found.append(f"{pid}: {shown}")
    return found


def _make_files(files: dict[str, Any], ws: Path, outside: Path, sub) -> None:  # type: ignore[no-untyped-def]
    for rel, spec in files.items():
        path = ws / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(spec, str):
            path.write_text(sub(spec))
        elif spec.get("dir"):
            path.mkdir()
        elif "symlink" in spec:
            path.symlink_to(sub(spec["symlink"]))
        elif "hardlink" in spec:
            os.link(ws / spec["hardlink"], path)
        elif "hardlink_outside" in spec:
            target = outside / f"linked-{path.name}"
            target.write_text(sub(spec["hardlink_outside"]))
            os.link(target, path)
        else:
            raise AssertionError(f"unknown file spec {spec!r}")


def _select(case: dict[str, Any], workspace: str) -> Any:
    opts = dict(case.get("select", {}))
    limits = SandboxLimits(**opts.pop("limits", {}))
    reuse = opts.pop("reuse", None)
    no_landlock = opts.pop("no_landlock", False)
    sb = select_sandbox(workspace, limits=limits, **opts)
    if (reuse is not None or no_landlock) and isinstance(sb, NativeBashSandbox):
        sb.close()
        if not no_landlock:
            return NativeBashSandbox(workspace, reuse=reuse, limits=limits)
        handle = _native.Sandbox(
            workspace,
            _locate.init_path(),
            bwrap=_locate.find_bwrap(workspace),
            no_landlock=True,
            reuse=True if reuse is None else reuse,
            **limits.native_kwargs(),
        )
        return _CoreSandbox(workspace, _handle=handle)
    return sb


ERRORS = {"argument": SandboxArgumentError, "sandbox_unavailable": SandboxUnavailable}


def _check_streamed(out: bytes, err: bytes, expect: dict[str, Any], sub) -> None:  # type: ignore[no-untyped-def]
    if "streamed_stdout_bytes" in expect:
        assert len(out) == expect["streamed_stdout_bytes"]
    if "streamed_stdout_starts" in expect:
        assert out.startswith(sub(expect["streamed_stdout_starts"]).encode())
    if "streamed_stderr" in expect:
        assert err == sub(expect["streamed_stderr"]).encode()


def _check_output(out: Any, expect: dict[str, Any], sub) -> None:  # type: ignore[no-untyped-def]
    for key in ("exit_code", "timed_out", "truncated", "total_bytes", "sandboxed", "backend"):
        if key in expect:
            assert getattr(out, key) == expect[key], f"{key}: {out}"
    if "oom_killed" in expect:
        assert out.oom_killed == expect["oom_killed"], out
    if "neutralized_contains" in expect:
        part = sub(expect["neutralized_contains"])
        assert any(part in line for line in out.neutralized), out
    if "exec_stopped" in expect:
        want = expect["exec_stopped"]
        got = out.exec_stopped
        if want is None:
            assert got is None, out
        else:
            assert got is not None, out
            assert (got.decision, got.rule, got.command) == (
                want["decision"],
                sub(want["rule"]),
                sub(want["command"]),
            ), out
    if "setup_error_contains" in expect:
        assert out.setup_error and sub(expect["setup_error_contains"]) in out.setup_error, out
    else:
        assert out.setup_error is None, out
    for stream in ("stdout", "stderr"):
        text = getattr(out, stream)
        if stream in expect:
            assert text == sub(expect[stream]), out
        for part in expect.get(f"{stream}_contains", []):
            assert sub(part) in text, out
        for part in expect.get(f"{stream}_lacks", []):
            assert sub(part) not in text, out
        if f"{stream}_starts" in expect:
            assert text.startswith(sub(expect[f"{stream}_starts"])), out
        if f"{stream}_ends" in expect:
            assert text.endswith(sub(expect[f"{stream}_ends"])), out
        if f"{stream}_max_bytes" in expect:
            assert len(text.encode()) <= expect[f"{stream}_max_bytes"], out


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_vector(case: dict[str, Any], monkeypatch, listener) -> None:  # type: ignore[no-untyped-def]
    base = Path(tempfile.mkdtemp(prefix="cw-vec-")).resolve()
    ws, outside = base / "ws", base / "outside"
    ws.mkdir()
    outside.mkdir()
    marker = "cwmark" + secrets.token_hex(6)
    port = str(listener.getsockname()[1])

    def sub(text: str) -> str:
        return (
            text.replace("{ws}", str(ws))
            .replace("{outside}", str(outside))
            .replace("{marker}", marker)
            .replace("{port}", port)
        )

    def sub_all(value: Any) -> Any:
        if isinstance(value, str):
            return sub(value)
        if isinstance(value, dict):
            return {sub(k): sub_all(v) for k, v in value.items()}
        if isinstance(value, list):
            return [sub_all(v) for v in value]
        return value

    expect = case["expect"]
    sb = None
    try:
        for rel, content in case.get("outside_files", {}).items():
            (outside / rel).parent.mkdir(parents=True, exist_ok=True)
            (outside / rel).write_text(sub(content))
        _make_files(case.get("files", {}), ws, outside, sub)
        for name, value in case.get("host_env", {}).items():
            monkeypatch.setenv(name, value)
        if "A3S_CODE_ALLOW_PROCESS_HOST_SANDBOX" not in case.get("host_env", {}):
            monkeypatch.delenv("A3S_CODE_ALLOW_PROCESS_HOST_SANDBOX", raising=False)
        if case.get("native") == "unavailable":
            monkeypatch.setattr(_locate, "SYSTEM_BWRAP", ())
            real_which = _locate._which
            monkeypatch.setattr(
                _locate, "_which", lambda name: None if name == "bwrap" else real_which(name)
            )
            monkeypatch.setattr(NativeBashSandbox, "_probe_cache", {})
        error = expect.get("error")
        workspace = sub(case.get("workspace", "{ws}"))
        if error and error["at"] == "select":
            with pytest.raises(ERRORS[error["kind"]]) as info:
                sb = _select(case, workspace)
            for part in error.get("contains", []):
                assert sub(part) in str(info.value)
            return
        sb = _select(case, workspace)
        for key in ("backend", "sandboxed"):
            if key in expect:
                assert getattr(sb, key) == expect[key], sb
        run = sub_all(case["exec"])
        command = run.pop("command")
        if "exec_rules" in run:  # the exec check's lists, as the sandbox takes them
            run["exec_rules"] = ExecRules(**{k: tuple(v) for k, v in run["exec_rules"].items()})
        if "stdin" in run:
            run["stdin"] = run["stdin"].encode() * run.pop("stdin_repeat", 1)
        if error:
            with pytest.raises(ERRORS[error["kind"]]) as info:
                sb.exec(command, **run)
            for part in error.get("contains", []):
                assert sub(part) in str(info.value)
        else:
            stream = run.pop("stream", False)
            pieces: dict[int, list[bytes]] = {1: [], 2: []}
            if stream:
                run["on_output"] = lambda n, data: pieces[n].append(data)
            _check_output(sb.exec(command, **run), expect, sub)
            if stream:
                _check_streamed(b"".join(pieces[1]), b"".join(pieces[2]), expect, sub)
    finally:
        if sb is not None and hasattr(sb, "close"):
            sb.close()
        try:
            if expect.get("no_survivors"):
                deadline = time.monotonic() + 5
                while _survivors(marker) and time.monotonic() < deadline:
                    time.sleep(0.05)
                assert _survivors(marker) == []
            for rel, content in sub_all(expect.get("files", {})).items():
                path = Path(rel) if os.path.isabs(rel) else ws / rel
                if content is None:
                    assert not os.path.lexists(path), f"{path} exists"
                else:
                    assert stat.S_ISREG(path.lstat().st_mode), path
                    assert path.read_text() == content, path
        finally:
            _force_rmtree(str(base))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the native sandbox")
def test_an_on_output_error_is_raised_once_the_command_is_over(tmp_path: Path) -> None:
    def refuse(stream: int, data: bytes) -> None:
        raise OSError("disk full")

    with NativeBashSandbox(tmp_path) as sb, pytest.raises(OSError, match="disk full"):
        sb.exec("echo out; echo done > done", on_output=refuse)
    assert (tmp_path / "done").read_text() == "done\n"


def test_stdin_ends_with_a_cancel(tmp_path: Path) -> None:
    """Stdin a command never reads is bounded by the cancel, as the command is."""
    import threading

    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    with NativeBashSandbox(tmp_path) as sb:
        out = sb.exec("sleep 600", stdin=b"a" * (4 << 20), cancel=cancel, kill_grace_ms=200)
    assert out.cancelled and out.exit_code == 124, out


@pytest.mark.parametrize("reuse", [True, False])
def test_stdin_the_command_leaves_unread_raises_no_sigpipe(tmp_path: Path, reuse: bool) -> None:
    """A host whose SIGPIPE kills it (its default; Python ignores it) survives a command
    that exits before reading its stdin: the writer sees EPIPE, never the signal."""
    script = (
        "import signal, sys\n"
        "signal.signal(signal.SIGPIPE, signal.SIG_DFL)\n"
        "from codeward.sandbox import select_sandbox\n"
        f"sb = select_sandbox(sys.argv[1], reuse={reuse})\n"
        "for _ in range(3):\n"
        "    out = sb.exec('head -c 3', stdin=b'a' * (4 << 20))\n"
        "    assert out.stdout == 'aaa', out\n"
        "sb.close()\n"
        "print('survived')\n"
    )
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and done.stdout == "survived\n", done


def test_stdin_of_the_wrong_type_is_refused(tmp_path: Path) -> None:
    with NativeBashSandbox(tmp_path) as sb, pytest.raises(SandboxArgumentError, match="stdin"):
        sb.exec("cat", stdin=42)  # type: ignore[arg-type]
    with NativeBashSandbox(tmp_path) as sb:
        assert sb.exec("cat", stdin=bytearray(b"ok")).stdout == "ok"
