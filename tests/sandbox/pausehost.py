"""A host that stops for good at one system call of a sandbox start (issue 26).

``python pausehost.py WORKSPACE SYSCALL``: the main thread installs a seccomp
filter (on itself only) that turns SYSCALL into a user notification nobody
answers, prints ``armed``, and runs a command in a long-lived sandbox. The
start blocks in that call, at that exact point, until the host is killed: a
test sees what a host killed there leaves, or what a live owner looks like to
another process's sweep. make_run_dir (native/src/sandbox_linux.c) calls
``linkat`` once the lock file and the directory exist, and ``renameat2`` once
the lock is linked into the directory; nothing else of a start uses either.
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct
import sys

# (audit arch, {name: number}, seccomp's own number)
ARCHES = {
    "x86_64": (0xC000003E, {"linkat": 265, "renameat2": 316}, 317),
    "aarch64": (0xC00000B7, {"linkat": 37, "renameat2": 276}, 277),
}
RET_ALLOW = 0x7FFF0000
RET_USER_NOTIF = 0x7FC00000
SET_MODE_FILTER = 1
FLAG_NEW_LISTENER = 1 << 3


def stop_at(name: str) -> int:
    """Installs the filter on the calling thread; the listener fd (kept open, never read)."""
    arch, numbers, nr_seccomp = ARCHES[platform.machine()]

    def ins(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
        return struct.pack("HBBI", code, jt, jf, k)

    prog = b"".join(
        [
            ins(0x20, 4),  # ld arch
            ins(0x15, arch, 0, 3),  # jeq arch, else allow
            ins(0x20, 0),  # ld nr
            ins(0x15, numbers[name], 0, 1),  # jeq nr
            ins(0x06, RET_USER_NOTIF),
            ins(0x06, RET_ALLOW),
        ]
    )
    buf = ctypes.create_string_buffer(prog)
    fprog = struct.pack("HxxxxxxQ", len(prog) // 8, ctypes.addressof(buf))
    fbuf = ctypes.create_string_buffer(fprog)
    libc = ctypes.CDLL(None, use_errno=True)
    if os.geteuid() != 0 and libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    fd = libc.syscall(nr_seccomp, SET_MODE_FILTER, FLAG_NEW_LISTENER, fbuf)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "seccomp(SECCOMP_FILTER_FLAG_NEW_LISTENER)")
    return int(fd)


def main() -> int:
    ws, name = sys.argv[1], sys.argv[2]
    from codeward.sandbox import NativeBashSandbox

    sb = NativeBashSandbox(ws, reuse=True)
    listener = stop_at(name)
    print("armed", listener, flush=True)
    out = sb.exec("echo ran", timeout_ms=600_000)
    print("not stopped:", out, flush=True)  # the test fails on this line
    return 1


if __name__ == "__main__":
    sys.exit(main())
