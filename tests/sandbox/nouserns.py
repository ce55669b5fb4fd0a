"""Runs a program under a seccomp filter that refuses new user namespaces, as Docker's default
profile does: ``python nouserns.py PROGRAM [ARG]...``.

unshare() and clone() with CLONE_NEWUSER fail with EPERM and clone3() with ENOSYS (so that the
C library falls back to clone, whose flags the filter can read). The filter is installed with
no-new-privs, as an unprivileged process must, and is inherited by everything PROGRAM starts.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct
import sys

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
CLONE_NEWUSER = 0x10000000
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
# (unshare, clone, clone3) per architecture, and the audit architecture the filter checks
SYSCALLS = {"x86_64": (272, 56, 435, 0xC000003E), "aarch64": (97, 220, 435, 0xC00000B7)}

# classic BPF: (code, jt, jf, k)
LD_W_ABS = 0x20
JEQ_K = 0x15
JSET_K = 0x45
RET_K = 0x06


def _filter() -> bytes:
    unshare, clone, clone3, arch = SYSCALLS[platform.machine()]
    prog = [
        (LD_W_ABS, 0, 0, 4),  # arch
        (JEQ_K, 1, 0, arch),
        (RET_K, 0, 0, SECCOMP_RET_ALLOW),  # another architecture: not this test's concern
        (LD_W_ABS, 0, 0, 0),  # nr
        (JEQ_K, 0, 1, clone3),
        (RET_K, 0, 0, SECCOMP_RET_ERRNO | errno.ENOSYS),
        (JEQ_K, 1, 0, unshare),
        (JEQ_K, 0, 3, clone),
        (LD_W_ABS, 0, 0, 16),  # args[0], low 32 bits (little endian)
        (JSET_K, 0, 1, CLONE_NEWUSER),
        (RET_K, 0, 0, SECCOMP_RET_ERRNO | errno.EPERM),
        (RET_K, 0, 0, SECCOMP_RET_ALLOW),
    ]
    return b"".join(struct.pack("HBBI", *insn) for insn in prog)


def main() -> None:
    code = _filter()
    buf = ctypes.create_string_buffer(code, len(code))
    # struct sock_fprog { unsigned short len; struct sock_filter *filter; }
    fprog = struct.pack("HxxxxxxP", len(code) // 8, ctypes.addressof(buf))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    fbuf = ctypes.create_string_buffer(fprog, len(fprog))
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fbuf), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")
    os.execv(sys.argv[1], sys.argv[1:])


if __name__ == "__main__":
    main()
