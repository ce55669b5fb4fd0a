"""``codeward doctor``: can this machine run the native Linux sandbox, and if not, why."""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict, dataclass

from .. import _native
from ..sandbox import NativeBashSandbox
from ..sandbox._locate import MIN_BWRAP, bwrap_version, find_bwrap

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._parser import _Commands


@dataclass
class Check:
    name: str
    ok: bool
    required: bool
    detail: str
    fix: str = ""


def register(commands: _Commands) -> None:
    p = commands.add_parser(
        "doctor",
        description=(
            "Check what this machine offers the native sandbox (bubblewrap, user "
            "namespaces, seccomp, Landlock, pidfd, cgroup kill) and give a verdict. "
            "Exit status 0 when the native sandbox can run here, 1 when it cannot."
        ),
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=run)


def collect() -> list[Check]:
    checks: list[Check] = []
    linux = sys.platform.startswith("linux")
    checks.append(
        Check(
            "platform", linux, True, sys.platform, "" if linux else "the native sandbox needs Linux"
        )
    )
    bwrap = find_bwrap()  # the sandbox's own lookup: only a root-owned bwrap counts
    version = bwrap_version(bwrap) if bwrap else None
    if not bwrap:
        checks.append(
            Check(
                "bubblewrap",
                False,
                True,
                "not found (or not owned by root in a directory only root can write)",
                "install it: apt-get install bubblewrap",
            )
        )
    elif version is None or version < MIN_BWRAP:
        shown = ".".join(map(str, version)) if version else "unknown"
        checks.append(
            Check(
                "bubblewrap",
                False,
                True,
                f"{bwrap} version {shown}",
                "bubblewrap 0.8 or newer is required",
            )
        )
    else:
        checks.append(Check("bubblewrap", True, True, f"{bwrap} {'.'.join(map(str, version))}"))
    feats = {k: bool(v) for k, v in _native.features().items() if k != "landlock_abi"}
    abi = int(_native.features()["landlock_abi"])
    checks.append(
        Check(
            "user namespaces",
            feats["user_namespaces"],
            True,
            "available" if feats["user_namespaces"] else "cannot create one",
            ""
            if feats["user_namespaces"]
            else "enable them: sysctl kernel.unprivileged_userns_clone=1 "
            "(and user.max_user_namespaces > 0), or allow them in your container runtime",
        )
    )
    checks.append(
        Check(
            "pid namespaces",
            feats["pid_namespaces"],
            True,
            "available" if feats["pid_namespaces"] else "unavailable",
        )
    )
    checks.append(
        Check(
            "seccomp filter",
            feats["seccomp_filter"],
            True,
            "available" if feats["seccomp_filter"] else "unavailable",
            ""
            if feats["seccomp_filter"]
            else "the kernel must be built with CONFIG_SECCOMP_FILTER",
        )
    )
    checks.append(
        Check(
            "landlock",
            bool(abi),
            False,
            f"ABI {abi}" if abi else "unavailable (optional: extra defence in depth)",
        )
    )
    checks.append(
        Check(
            "pidfd",
            feats["pidfd"],
            False,
            "available" if feats["pidfd"] else "unavailable (optional)",
        )
    )
    checks.append(
        Check(
            "cgroup kill",
            feats["cgroup_kill"],
            False,
            "available" if feats["cgroup_kill"] else "unavailable (optional)",
        )
    )
    emulated = feats.get("names_emulated", False)
    forced = os.environ.get("A3S_CODE_PROTECT_NAMES") == "placeholders"
    checks.append(
        Check(
            "protected names",
            True,
            False,
            "kept missing inside the sandbox (call emulation): nothing appears in the workspace"
            if emulated and not forced
            else "read-only placeholders in the workspace while a sandbox lives"
            + (
                " (forced by A3S_CODE_PROTECT_NAMES=placeholders)"
                if emulated
                else " (the kernel lacks SECCOMP_ADDFD_FLAG_SEND, Linux 5.14)"
            ),
        )
    )
    if all(c.ok for c in checks if c.required):
        cause = NativeBashSandbox.probe(fresh=True)  # a diagnosis never trusts a kept verdict
        checks.append(
            Check(
                "sandbox self-test",
                cause is None,
                True,
                "passed through the real boundary" if cause is None else cause,
                "" if cause is None else "see docs/security.md (readiness)",
            )
        )
    return checks


def run(args: argparse.Namespace) -> int:
    checks = collect()
    ready = all(c.ok for c in checks if c.required)
    if args.json:
        print(json.dumps({"ready": ready, "checks": [asdict(c) for c in checks]}))
        return 0 if ready else 1
    width = max(len(c.name) for c in checks)
    for c in checks:
        mark = "ok " if c.ok else ("MISSING" if c.required else "-  ")
        print(f"{c.name:<{width}}  {mark:<7}  {c.detail}")
        if not c.ok and c.fix:
            print(f"{'':<{width}}           fix: {c.fix}")
    if ready:
        print("\nverdict: ready - the native bubblewrap + seccomp sandbox can run on this machine")
    else:
        missing = ", ".join(c.name for c in checks if c.required and not c.ok)
        print(
            f"\nverdict: NOT ready - missing {missing}. Sandboxed bash fails closed here; "
            "fix the items above, or (only inside an outer container or VM) opt in to the "
            "process host with A3S_CODE_ALLOW_PROCESS_HOST_SANDBOX=1"
        )
    return 0 if ready else 1
