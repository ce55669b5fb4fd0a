"""A host-mode server is owned for real: the hostile server of issue 23 against it.

The server (servers/hostile.py, mode ``escape``) ignores SIGTERM and end of
input, starts a setsid double-forked daemon, SIGKILLs its own supervisor,
and then reads every /proc/<pid>/environ it can reach, its ancestors' first,
looking for a secret the host application holds in its environment. Each
case runs a real host application (a subprocess with the secret in its
environment) as root and as ``nobody``: the server runs in a pid namespace
of its own with its own /proc, so it finds nothing, and nothing of it is
alive right after close() returns. The unowned mode (no namespaces, allowed
by the host) is run as a control: there the same server escapes and reads
the secret, which shows the checks can fail.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from mcpkit import HERE, hostile_config, new_marker, without_cgroups

from codeward import _native
from codeward.mcp import McpClient, McpUnownedError, _process
from codeward.sandbox._locate import find_bwrap

NOBODY = 65534
SECRET = "CODEWARD_TEST_HOST_SECRET"

HOST = textwrap.dedent(
    """
    import json, os, sys
    sys.path.insert(0, {here!r})
    from mcpkit import SERVERS, sleeping, wait_for
    from codeward.mcp import McpClient, McpServerConfig, _process
    marker, mode = sys.argv[1], sys.argv[2]
    if mode == "unowned":  # the control: as where no namespace can be made
        _process.find_bwrap = lambda *a, **k: None
    args = (str(SERVERS / "hostile.py"), "escape", marker)
    # the system's python: a developer's interpreter may sit in a home others cannot enter
    config = McpServerConfig("thief", {python!r}, args, allow_unowned=mode == "unowned")
    client = McpClient(config)
    started = wait_for(lambda: len(sleeping(marker)) == 1)
    found = json.loads(client.call_tool("work", {{"secret": {secret!r}}}).content[0]["text"])
    owned = client.owned
    client.close()
    left = sleeping(marker)  # at once: no waiting
    print(json.dumps({{"started": started, "found": found, "left": left, "host": os.getpid(),
                      "owned": owned}}), flush=True)
    """
)


def _run_host(mode: str, user: int | None) -> dict:  # type: ignore[type-arg]
    marker = new_marker()
    where = Path(tempfile.mkdtemp(prefix="codeward-owned-"))  # /tmp: nobody reads it too
    script = where / "host.py"
    python = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
    script.write_text(HOST.format(here=str(HERE), secret=SECRET, python=python))
    os.chmod(where, 0o755)
    os.chmod(script, 0o644)
    argv = [sys.executable, str(script), marker, mode]
    if user is not None:
        argv = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *argv]
    if mode == "unowned":
        argv = without_cgroups(argv)
    env = dict(os.environ, **{SECRET: "s3cr3t-of-the-host"})
    try:
        done = subprocess.run(argv, env=env, capture_output=True, timeout=120, cwd="/")
    finally:
        shutil.rmtree(where)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    return json.loads(done.stdout.decode().strip().splitlines()[-1])  # type: ignore[no-any-return]


def _users() -> list[int | None]:
    return [None, NOBODY] if os.geteuid() == 0 else [None]


def _require_owned() -> None:
    features = _native.features()
    if find_bwrap() is None or not (features["user_namespaces"] and features["pid_namespaces"]):
        pytest.skip("no bubblewrap or no user and pid namespaces here: the refusal is tested")


@pytest.mark.parametrize("user", _users(), ids=lambda u: "nobody" if u else "caller")
def test_the_escaping_thief_is_contained_and_gone_when_close_returns(user) -> None:  # type: ignore[no-untyped-def]
    _require_owned()
    report = _run_host("owned", user)
    assert report["started"], "the daemon did not start"
    assert report["owned"] is True
    assert report["found"]["found"] == [], f"the server read the host's secret: {report}"
    assert report["found"]["ancestors"] == [1], report  # its init, as PID 1: nothing above
    assert report["left"] == [], f"alive after close(): {report['left']}"


@pytest.mark.parametrize("user", _users(), ids=lambda u: "nobody" if u else "caller")
def test_control_unowned_the_same_server_escapes_and_reads_the_secret(user) -> None:  # type: ignore[no-untyped-def]
    report = _run_host("unowned", user)
    try:
        assert report["owned"] is False
        assert report["host"] in report["found"]["found"], report
        assert report["left"], "the control did not escape: the owned test proves nothing"
    finally:  # what escaped is ours to end: the pids it reported and the daemon we saw
        for pid in [report["found"].get("pid"), *report["left"]]:
            if pid:
                with contextlib.suppress(OSError):
                    os.kill(pid, 9)


def test_without_a_pid_namespace_a_server_is_owned_by_a_cgroup_or_refused(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(_process, "find_bwrap", lambda *a, **k: None)
    try:  # the middle tier where this process may make a cgroup (test_mcp_owned_cgroup.py)
        with McpClient(hostile_config("well")) as client:
            assert client.owned and client.ownership == "cgroup"
    except McpUnownedError as exc:
        assert re.search(r"cannot be owned here.*no cgroup of its own.*allow_unowned", str(exc))
    with McpClient(hostile_config("well", allow_unowned=True)) as client:
        assert client.call_tool("work", {"a": 1}).content[0]["text"] == '{"a": 1}'


REFUSE = textwrap.dedent(
    """
    import json
    from codeward import _native
    from codeward.sandbox._locate import init_path
    try:
        _native.spawn_child("/bin/true", [], [], init=init_path(), init_sha256=_native.INIT_SHA256)
    except _native.NativeError as exc:
        print(json.dumps(list(exc.args[:3])))
    """
)


def test_the_c_core_refuses_an_unowned_spawn_with_its_typed_detail() -> None:
    # no bubblewrap, and no cgroup file system in this process's view
    done = subprocess.run(
        without_cgroups([sys.executable, "-c", REFUSE]), capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    status, message, detail = json.loads(done.stdout)
    assert (status, detail) == ("unsupported", 1) and "cannot be owned" in message
    assert "no cgroup of its own can be made" in message
