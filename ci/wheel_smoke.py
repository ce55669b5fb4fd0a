"""What an installed wheel must do on its platform (cibuildwheel's test-command on each runner).

On every system: the permission policy decides, the kernel runs a session whose file tools work
(write, read, search, edit), and the sandbox says exactly what it is. Where a boundary is expected
the command runs inside it and a write outside the workspace fails; where none is (Windows), the
selection fails closed: a strict selection raises SandboxUnavailable naming the platform, and the
session's bash tool refuses instead of running on the host.

    python ci/wheel_smoke.py      # prints one line per check; exit status 0 when all hold
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from codeward import Agent, Decision, PermissionPolicy, SandboxUnavailable, SessionOptions, ToolCall
from codeward.sandbox import select_sandbox

# what each system's sandbox is (docs/security.md): None means none runs there
EXPECTED_BACKEND = {"linux": "bwrap", "darwin": "seatbelt", "win32": None}


def check(what: str, ok: bool, detail: object = "") -> None:
    print(f"{'ok ' if ok else 'FAIL'} {what}{': ' if detail != '' else ''}{detail}")
    if not ok:
        raise SystemExit(1)


def main() -> None:
    platform = "linux" if sys.platform.startswith("linux") else sys.platform
    policy = PermissionPolicy(deny=["bash(rm -rf**)"], allow=["read(*)"], default_decision="ask")
    check("policy", policy.check("bash", {"command": "rm -rf /"}) == Decision.DENY)
    check("policy", policy.check("read", {"file_path": "a"}) == Decision.ALLOW)

    ws = Path(tempfile.mkdtemp())
    allow_files = PermissionPolicy(allow=["read(*)", "write(*)", "edit(*)", "search(*)"])
    options = SessionOptions(permission_policy=allow_files, detect_checks=False)
    with Agent().session(ws, options) as session:
        wrote = session.invoke(ToolCall("w", "write", {"file_path": "a.txt", "content": "hi\n"}))
        check("kernel: write", wrote.executed and wrote.result.success, wrote.reason)
        read = session.invoke(ToolCall("r", "read", {"file_path": "a.txt"}))
        check("kernel: read", read.executed and "hi" in read.result.output, read.reason)
        outside = session.invoke(ToolCall("o", "read", {"file_path": "../outside.txt"}))
        check("kernel: a path outside the workspace is refused", not outside.executed)

    expected = EXPECTED_BACKEND.get(platform)
    if expected is None:
        try:
            select_sandbox(ws, strict=True)
        except SandboxUnavailable as exc:
            check("sandbox: none on this platform, and it says so", platform in str(exc), exc)
        else:
            check("sandbox: a strict selection fails closed here", False)
        loose = select_sandbox(ws)
        check("sandbox: the error-only handle", loose.backend == "unavailable", loose)
        return
    sandbox = select_sandbox(ws, strict=True)
    check("sandbox: the expected boundary", sandbox.backend == expected, sandbox.backend)
    out = sandbox.exec("echo inside > in.txt; cat in.txt; echo x > /outside-the-workspace")
    check("sandbox: a command runs", "inside" in out.stdout and out.sandboxed, out)
    check("sandbox: a write outside the workspace fails", out.exit_code != 0, out.exit_code)
    close = getattr(sandbox, "close", None)
    if close:
        close()


if __name__ == "__main__":
    main()
