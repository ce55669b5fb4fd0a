"""The sandbox policy's canonical text and digest: read off the plan, stable, and complete.

Stable: the same policy gives the same text whatever order things were
found or given in, one-shot or long-lived. Complete: any change of content
(a new credential file, a bound, a layer turned off) changes it.
"""

from __future__ import annotations

import difflib
import hashlib
import os

import pytest

from codeward import SandboxUnavailable, _native
from codeward.sandbox import NativeBashSandbox, SandboxLimits
from codeward.sandbox._locate import find_bwrap, init_path


def _policy(ws, **kwargs):
    handle = _native.Sandbox(str(ws), init_path(), bwrap=find_bwrap(str(ws)), **kwargs)
    try:
        return handle.policy()
    finally:
        handle.stop()


@pytest.fixture
def ws(tmp_path, boundary_ready):
    root = tmp_path / "ws"
    root.mkdir()
    return root


def test_the_text_is_canonical_and_its_digest_is_its_sha256(ws):
    (ws / ".env").write_text("A=1\n")
    text, digest = _policy(ws)
    assert digest == "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    header, *lines = text.splitlines()
    assert header == "codeward sandbox policy 1"
    assert lines == sorted(lines) and len(lines) == len(set(lines))
    keys = {line.split(" ", 1)[0] for line in lines}
    assert {"core", "boundary", "workspace", "network", "limit", "landlock-abi", "seccomp",
            "mount", "writable", "program", "bwrap"} <= keys  # fmt: skip
    assert f"workspace {ws} read-write" in lines
    assert "network loopback-only" in lines
    assert f"mount {ws}/.env ro-bind mask-file" in lines
    # a missing protected name: kept missing by the init (Linux 5.14), or a placeholder's bind
    assert (
        f"protected {ws}/.git missing" in lines
        if _native.features().get("names_emulated")
        and os.environ.get("A3S_CODE_PROTECT_NAMES") != "placeholders"
        else f"mount {ws}/.git ro-bind =" in lines
    ), lines
    assert f"writable {ws}" in lines and "bwrap --unshare-all" in lines
    # nothing of a run: no run directory, fd, timeout or command
    assert "a3s-run-" not in text and "a3s-describe" not in text
    assert not any(line.startswith(("init-arg", "bwrap-arg")) for line in lines), text
    assert sorted(os.listdir(ws)) == [".env"]  # describing made no placeholder


def test_one_shot_and_long_lived_have_the_same_policy(ws):
    (ws / ".npmrc").write_text("//registry/:_authToken=x\n")
    one_shot = NativeBashSandbox(ws, reuse=False)
    long_lived = NativeBashSandbox(ws, reuse=True)
    try:
        before = long_lived.policy()
        assert long_lived.exec("true").exit_code == 0  # the long-lived sandbox now runs
        assert long_lived.policy() == before == one_shot.policy()
        # and both run a command pinned to that digest
        for sb in (one_shot, long_lived):
            out = sb.exec("echo ran", policy_digest=before.digest)
            assert out.stdout == "ran\n" and not out.policy_changed
    finally:
        long_lived.close()
        one_shot.close()


def test_another_runs_placeholders_coming_and_going_do_not_change_it(ws):
    """Each protected name is bound exactly once, whenever another run over the same workspace
    makes or removes its placeholder (between the two passes over the names, a name that
    appeared was left unbound, one that went was bound twice: a grant approved then was
    refused, and a run planned then kept such a name writable)."""
    import threading

    describer = NativeBashSandbox(ws, reuse=False)
    runner = NativeBashSandbox(ws, reuse=False)
    expected = describer.policy()
    stop = threading.Event()
    seen: set[str] = set()

    def describe() -> None:
        while not stop.is_set():
            seen.add(describer.policy().text)

    watcher = threading.Thread(target=describe)
    watcher.start()
    try:
        for _ in range(12):  # each run makes 15 placeholders, then removes them
            assert runner.exec("true").exit_code == 0
    finally:
        stop.set()
        watcher.join()
        describer.close()
        runner.close()
    assert seen == {expected.text}, [
        line
        for text in seen - {expected.text}
        for line in difflib.unified_diff(expected.text.splitlines(), text.splitlines(), n=0)
    ]


def test_the_order_things_are_found_in_does_not_matter(ws, tmp_path):
    names = [".env", "a/.npmrc", "b/.pypirc", "c/.netrc"]
    for order in (names, list(reversed(names))):
        for name in order:
            (ws / name).parent.mkdir(exist_ok=True)
            (ws / name).write_text("x\n")
        digest = _policy(ws)[1]
        for name in names:
            (ws / name).unlink()
        if order is names:
            first = digest
    assert digest == first
    # the host environment in another order: the same toolchain roots, the same policy
    tool_a, tool_b = tmp_path / "home" / "tool_a", tmp_path / "home" / "tool_b"
    for t in (tool_a, tool_b):
        t.mkdir(parents=True)
    env = [f"HOME={tmp_path / 'home'}", f"CARGO_HOME={tool_a}", f"PATH=/usr/bin:{tool_b}"]
    assert _policy(ws, host_env=env) == _policy(ws, host_env=list(reversed(env)))


@pytest.mark.parametrize(
    "change",
    ["credential file", "memory bound", "process bound", "tmpfs bound", "no landlock",
     "read-only workspace", "host network", "nested credential dir"],
)  # fmt: skip
def test_any_change_of_content_changes_the_digest(ws, change):
    base = _policy(ws)[1]
    kwargs = {}
    if change == "credential file":
        (ws / ".env.local").write_text("x\n")
    elif change == "nested credential dir":
        (ws / "deep" / ".aws").mkdir(parents=True)
    elif change == "memory bound":
        kwargs = {"memory_max_bytes": 512 << 20}
    elif change == "process bound":
        kwargs = {"max_processes": 99}
    elif change == "tmpfs bound":
        kwargs = {"tmpfs_max_bytes": 64 << 20}
    elif change == "no landlock":
        kwargs = {"no_landlock": True}
    elif change == "read-only workspace":
        kwargs = {"readonly_workspace": True}
    elif change == "host network":
        kwargs = {"share_net": True}
    assert _policy(ws, **kwargs)[1] != base, change


def test_limits_read_the_same_however_they_are_given(ws):
    a = NativeBashSandbox(ws, reuse=False, limits=SandboxLimits(max_processes=64))
    b = NativeBashSandbox(
        ws, reuse=False, limits=SandboxLimits(max_processes=64, tmpfs_max_bytes=None)
    )
    assert a.policy() == b.policy()
    assert "limit max_processes 64" in a.policy().text.splitlines()


def test_a_workspace_the_sandbox_refuses_has_no_policy(ws):
    (ws / ".git").symlink_to("/etc")
    sb = NativeBashSandbox(ws, reuse=False)
    with pytest.raises(SandboxUnavailable, match="symlink"):
        sb.policy()


def test_odd_bytes_in_paths_stay_on_one_line(tmp_path, boundary_ready):
    ws = tmp_path / "odd ws\nname\\x"
    ws.mkdir()
    text, _ = _policy(ws)
    line = next(line for line in text.splitlines() if line.startswith("workspace "))
    assert line.endswith("odd\\x20ws\\x0aname\\x5cx read-write"), line
