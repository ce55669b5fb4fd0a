"""The proc suite's sandboxes: the native boundary with or without Landlock, with limits.

Without Landlock the other layers must hold alone (the seccomp filter, the
init's own rules): the handle is made through the C core with
A3S_SANDBOX_NO_LANDLOCK, as NativeBashSandbox never does.
"""

from __future__ import annotations

import os
from pathlib import Path

from codeward import _native
from codeward.sandbox import NativeBashSandbox, SandboxLimits
from codeward.sandbox._locate import find_bwrap, init_path
from codeward.sandbox._native_runner import _CoreSandbox


def proc_sandbox(
    workspace: Path,
    *,
    reuse: bool = True,
    landlock: bool = True,
    limits: SandboxLimits | None = None,
) -> _CoreSandbox:
    limits = limits or SandboxLimits()
    if landlock:
        return NativeBashSandbox(workspace, reuse=reuse, limits=limits)
    handle = _native.Sandbox(
        os.fspath(workspace),
        init_path(),
        bwrap=find_bwrap(os.fspath(workspace)),
        no_landlock=True,
        reuse=reuse,
        **limits.native_kwargs(),
    )
    return _CoreSandbox(workspace, _handle=handle)
