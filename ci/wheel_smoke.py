"""What an installed wheel must do on the system it was built for (cibuildwheel's test-command).

Everywhere: ``import codeward`` from the wheel (not the source tree), the extension's version,
and a policy decision (a denied ``git push`` hidden behind ``cd x &&``). Then per system:

- Linux: a command runs in the native sandbox (bubblewrap, namespaces, seccomp, Landlock): its
  write inside the workspace lands, its write outside and its read of /etc/shadow fail.
- macOS: the same command in the Seatbelt sandbox (/usr/bin/sandbox-exec), and a session's
  write and read tools through the kernel.
- Windows: no sandbox exists, and selection says so with SandboxUnavailable naming Windows;
  the workspace (the in-process file tools) is refused by name as well.

Run: ``python ci/wheel_smoke.py`` with the wheel installed; it prints one line per check and
exits non-zero on the first failure.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import codeward
from codeward import PermissionPolicy
from codeward.sandbox import select_sandbox

COMMAND = "echo inside > made.txt && cat made.txt; echo x > {outside}/escaped.txt; cat /etc/shadow"


def check(what: str, ok: bool, detail: object = "") -> None:
    print(f"wheel_smoke: {'ok' if ok else 'FAILED'}: {what} {detail}".rstrip(), flush=True)
    if not ok:
        sys.exit(1)


def sandboxed(workspace: Path, outside: Path, backend: str) -> None:
    sandbox = select_sandbox(workspace)
    check(f"select_sandbox picks {backend}", sandbox.backend == backend, sandbox.backend)
    out = sandbox.exec(COMMAND.format(outside=outside), timeout_ms=60_000)
    check("the sandboxed command ran", "inside" in out.stdout, out)
    check("its write inside the workspace landed", (workspace / "made.txt").is_file())
    check("its write outside failed", not (outside / "escaped.txt").exists())
    check("it could not read /etc/shadow", out.exit_code != 0, out.exit_code)


def main() -> None:
    check("imported from the wheel", "site-packages" in Path(codeward.__file__).parts, codeward)
    check("version", bool(codeward.native_version()), codeward.native_version())
    policy = PermissionPolicy(deny=["bash(git push**)"], default_decision="allow")
    decision = policy.check("bash", {"command": "cd x && git push"})
    check("the policy denies a hidden git push", decision == "deny", decision)
    with tempfile.TemporaryDirectory() as tmp:
        workspace, outside = Path(tmp, "ws"), Path(tmp, "outside")
        workspace.mkdir()
        outside.mkdir()
        if sys.platform.startswith("linux"):
            sandboxed(workspace, outside, "bwrap")
        elif sys.platform == "darwin":
            sandboxed(workspace, outside, "seatbelt")
            tools(workspace)
        else:
            refused(workspace)
    print("wheel_smoke: ok", flush=True)


def tools(workspace: Path) -> None:
    from codeward import Origin, Session, SessionOptions, ToolCall

    options = SessionOptions(permission_policy=PermissionPolicy(default_decision="allow"))
    with Session(workspace, options) as session:
        wrote = session.invoke(ToolCall("w", "write", {"file_path": "t.txt", "content": "t\n"}))
        check("the write tool through the kernel", wrote.executed, wrote.reason)
        read = session.invoke(ToolCall("r", "read", {"file_path": "t.txt"}), Origin.MODEL)
        check("the read tool through the kernel", read.executed, read.reason)


def refused(workspace: Path) -> None:
    from codeward import SandboxUnavailable, Session, SessionOptions, WorkspaceError

    try:
        select_sandbox(workspace)
    except SandboxUnavailable as exc:
        check("select_sandbox refuses, naming Windows", "Windows" in str(exc), exc)
    else:
        check("select_sandbox refuses", False)
    try:
        Session(workspace, SessionOptions())
    except WorkspaceError as exc:
        check("the workspace is refused, naming Windows", "Windows" in str(exc), exc)
    else:
        check("the workspace is refused", False)
    check("nothing was written", not os.listdir(workspace))


if __name__ == "__main__":
    main()
