"""The scripts the PID 1 checks run inside the sandbox (test_proc_init_reach.py and, as an
unprivileged caller, test_proc_unprivileged.py), and what they must find."""

from __future__ import annotations

import os
import shlex
import textwrap

PY = "/usr/bin/python3"

# What a command observes of itself and of PID 1; the init's limits come from
# /proc/1/limits because prlimit on PID 1, even to read, is refused.
STATE = r"""
import ctypes, json, os, resource
libc = ctypes.CDLL(None, use_errno=True)
IOPRIO_GET = {"x86_64": 252, "aarch64": 31}[os.uname().machine]
LIMITS = ("RLIMIT_NOFILE", "RLIMIT_FSIZE", "RLIMIT_AS", "RLIMIT_DATA", "RLIMIT_NPROC",
          "RLIMIT_CPU", "RLIMIT_STACK", "RLIMIT_CORE")
def of(pid):
    return {
        "nice": os.getpriority(os.PRIO_PROCESS, pid),
        "policy": os.sched_getscheduler(pid),
        "affinity": sorted(os.sched_getaffinity(pid)),
        "ioprio": libc.syscall(IOPRIO_GET, 1, pid),
        "oom_score_adj": int(open(f"/proc/{pid or 'self'}/oom_score_adj").read()),
        "coredump_filter": open(f"/proc/{pid or 'self'}/coredump_filter").read(),
    }
me = of(0)
me["limits"] = {n: list(resource.getrlimit(getattr(resource, n))) for n in LIMITS}
init = of(1)
init["limits"] = open("/proc/1/limits").read()
print(json.dumps({"self": me, "init": init}, sort_keys=True))
"""

# Every way the issue found to change PID 1, each reporting its errno (0: it worked).
HOSTILE = r"""
import ctypes, json, os, resource
libc = ctypes.CDLL(None, use_errno=True)
ARCH = os.uname().machine
IOPRIO_SET = {"x86_64": 251, "aarch64": 30}[ARCH]
SCHED_SETATTR = {"x86_64": 314, "aarch64": 274}[ARCH]
IDLE = 3 << 13
out = {}
def attempt(name, fn):
    try:
        fn()
        out[name] = 0
    except OSError as e:
        out[name] = e.errno
def raw(name, *args):
    ctypes.set_errno(0)
    rc = libc.syscall(*args)
    out[name] = ctypes.get_errno() if rc < 0 else 0
M = 1 << 20
attempt("setpriority(PRIO_PROCESS, 1, 19)", lambda: os.setpriority(os.PRIO_PROCESS, 1, 19))
attempt("setpriority(PRIO_PGRP, 1, 19)", lambda: os.setpriority(os.PRIO_PGRP, 1, 19))
attempt("setpriority(PRIO_USER, 0, 19)", lambda: os.setpriority(os.PRIO_USER, 0, 19))
attempt("sched_setscheduler(1, SCHED_IDLE)",
        lambda: os.sched_setscheduler(1, os.SCHED_IDLE, os.sched_param(0)))
attempt("sched_setparam(1)", lambda: os.sched_setparam(1, os.sched_param(0)))
attempt("sched_setaffinity(1, {0})", lambda: os.sched_setaffinity(1, {0}))
attr = ctypes.create_string_buffer(56)
ctypes.c_uint32.from_buffer(attr, 0).value = 48
ctypes.c_uint32.from_buffer(attr, 4).value = 5  # SCHED_IDLE
raw("sched_setattr(1, SCHED_IDLE)", SCHED_SETATTR, 1, attr, 0)
raw("ioprio_set(WHO_PROCESS, 1, IDLE)", IOPRIO_SET, 1, 1, IDLE)
raw("ioprio_set(WHO_PGRP, 1, IDLE)", IOPRIO_SET, 2, 1, IDLE)
raw("ioprio_set(WHO_USER, 0, IDLE)", IOPRIO_SET, 3, 0, IDLE)
for name, value in (("RLIMIT_NOFILE", 64), ("RLIMIT_FSIZE", M), ("RLIMIT_AS", M),
                    ("RLIMIT_NPROC", 1), ("RLIMIT_CPU", 1)):
    attempt(f"prlimit(1, {name})",
            lambda n=name, v=value: resource.prlimit(1, getattr(resource, n), (v, v)))
def oom():
    with open("/proc/1/oom_score_adj", "w") as f:
        f.write("1000")
attempt("write /proc/1/oom_score_adj", oom)
def dump():
    with open("/proc/1/coredump_filter", "w") as f:
        f.write("0x1ff")
attempt("write /proc/1/coredump_filter", dump)
print(json.dumps(out))
"""

REFUSED = {
    "setpriority(PRIO_PROCESS, 1, 19)",
    "setpriority(PRIO_PGRP, 1, 19)",
    "setpriority(PRIO_USER, 0, 19)",
    "sched_setscheduler(1, SCHED_IDLE)",
    "sched_setparam(1)",
    "sched_setaffinity(1, {0})",
    "sched_setattr(1, SCHED_IDLE)",
    "ioprio_set(WHO_PROCESS, 1, IDLE)",
    "ioprio_set(WHO_PGRP, 1, IDLE)",
    "ioprio_set(WHO_USER, 0, IDLE)",
    "prlimit(1, RLIMIT_NOFILE)",
    "prlimit(1, RLIMIT_FSIZE)",
    "prlimit(1, RLIMIT_AS)",
    "prlimit(1, RLIMIT_NPROC)",
    "prlimit(1, RLIMIT_CPU)",
}

# rt_sigqueueinfo(1, sig, {si_code = SI_QUEUE, si_pid = 0}): "from outside the namespace".
FORGE = r"""
import ctypes, os, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
NR = {"x86_64": 129, "aarch64": 138}[os.uname().machine]
for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
    info = ctypes.create_string_buffer(128)
    for off, value in ((0, sig), (8, -1), (16, 0), (20, 0)):  # signo, code, pid, uid
        ctypes.c_int32.from_buffer(info, off).value = value
    ctypes.set_errno(0)
    rc = libc.syscall(NR, 1, sig, info)
    print("queued" if rc == 0 else f"errno {ctypes.get_errno()}", sig.name)
    try:
        os.kill(1, sig)
        print("killed", sig.name)
    except OSError as e:
        print(f"kill errno {e.errno}", sig.name)
sys.stdout.flush()
"""


def py(script: str) -> str:
    return f"{PY} -c {shlex.quote(textwrap.dedent(script))}"


EXPECTED_DENIED = {
    "listen", "accept", "accept4", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "io_setup", "io_destroy", "io_getevents", "io_submit", "io_cancel", "io_pgetevents",
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "process_madvise",
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount",
    "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "add_key", "request_key",
    "keyctl", "bpf", "perf_event_open", "userfaultfd", "kexec_load", "kexec_file_load",
    "init_module", "finit_module", "delete_module", "reboot", "swapon", "swapoff", "acct",
    "syslog", "name_to_handle_at", "open_by_handle_at", "clone3", "openat2",
}  # fmt: skip
if os.uname().machine == "x86_64":
    EXPECTED_DENIED |= {"iopl", "ioperm", "modify_ldt"}
