"""Kernel knobs stay read-only inside, and only the expected mounts are writable.

As root, a writable /proc/sys would let a command set kernel.core_pattern and
run code as host root. No test here ever writes a changed value to a real
knob: writability is probed with access(2), the mount flags, and by writing
back the exact bytes just read, so even a failing test changes nothing.
"""

from __future__ import annotations

import os
import shlex
import textwrap
from pathlib import Path

import pytest

PY = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else "python3"
KNOB_TREES = ["/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs"]
# Non-namespaced sysctls: a write that got through would reach the host kernel.
WRITE_BACK_KNOBS = [
    "kernel/core_pattern",
    "vm/swappiness",
    "kernel/sysrq",
    "fs/protected_symlinks",
    "kernel/randomize_va_space",
]


@pytest.fixture
def ws(fs_host_dir: Path) -> Path:
    path = fs_host_dir / "ws"
    path.mkdir()
    return path


def _mounts(mountinfo: str) -> list[tuple[str, set[str]]]:
    """(mount point, per-mount options) of each line of /proc/self/mountinfo."""
    out = []
    for line in mountinfo.splitlines():
        fields = line.split()
        if len(fields) > 6:
            point = fields[4].replace("\\040", " ")
            out.append((point, set(fields[5].split(","))))
    return out


_WRITE_BACK = textwrap.dedent(
    """
    import os, sys
    for knob in sys.argv[1:]:
        path = "/proc/sys/" + knob
        try:
            with open(path, "rb") as f:
                current = f.read()
        except OSError as e:
            print("UNREADABLE", knob, e.errno)
            continue
        try:
            fd = os.open(path, os.O_WRONLY)
        except OSError as e:
            print("REFUSED", knob, e.errno)
            continue
        try:
            os.write(fd, current)  # the exact current value: a no-op even if it lands
            print("WROTE", knob)
        except OSError as e:
            print("REFUSED-WRITE", knob, e.errno)
        finally:
            os.close(fd)
    """
)


def test_proc_sys_is_read_only_and_writing_back_a_value_fails(ws, fs, fs_sandbox):
    present = [k for k in WRITE_BACK_KNOBS if os.path.exists(f"/proc/sys/{k}")]
    assert present, "no sysctl to probe on this kernel"
    host_before = {k: Path(f"/proc/sys/{k}").read_bytes() for k in present}
    out = fs.run(
        fs_sandbox(ws),
        f"{PY} -I -S -c {shlex.quote(_WRITE_BACK)} {' '.join(present)}; cat /proc/self/mountinfo",
    )
    assert "WROTE" not in out.stdout, out
    assert out.stdout.count("REFUSED") == len(present), out
    assert {k: Path(f"/proc/sys/{k}").read_bytes() for k in present} == host_before
    sys_mounts = [opts for point, opts in _mounts(out.stdout) if point == "/proc/sys"]
    assert sys_mounts and "ro" in sys_mounts[-1], out


_ACCESS_WALK = textwrap.dedent(
    """
    import os, sys
    for top in sys.argv[1:]:
        if not os.path.lexists(top):
            print("ABSENT", top)
            continue
        if os.path.isfile(top):
            print("WRITABLE" if os.access(top, os.W_OK) else "RO", top)
            continue
        for root, dirs, files in os.walk(top):
            for name in files:
                p = os.path.join(root, name)
                if os.access(p, os.W_OK):
                    print("WRITABLE", p)
        print("WALKED", top)
    """
)


def test_kernel_knob_trees_have_no_writable_file(ws, fs, fs_sandbox):
    """access(W_OK) over /proc/sys, /proc/sysrq-trigger, /proc/irq, /proc/bus, /proc/fs:
    never a write, so /proc/sysrq-trigger is probed without being triggered."""
    out = fs.run(
        fs_sandbox(ws),
        f"{PY} -I -S -c {shlex.quote(_ACCESS_WALK)} {' '.join(KNOB_TREES)}; "
        "cat /proc/self/mountinfo",
    )
    writable = [line for line in out.stdout.splitlines() if line.startswith("WRITABLE")]
    assert writable == [], out
    assert "WALKED /proc/sys" in out.stdout, out
    mounts = dict(_mounts(out.stdout))
    for tree in KNOB_TREES:
        if f"ABSENT {tree}" not in out.stdout and tree in mounts:
            assert "ro" in mounts[tree], f"{tree} is mounted {mounts[tree]}"


def test_sysrq_trigger_if_present_is_read_only(ws, fs, fs_sandbox):
    out = fs.run(
        fs_sandbox(ws),
        "if [ -e /proc/sysrq-trigger ]; then "
        "  [ -w /proc/sysrq-trigger ] && echo WRITABLE || echo RO; "
        "  grep ' /proc/sysrq-trigger ' /proc/self/mountinfo; "
        "else echo ABSENT; fi",
    )
    if "ABSENT" in out.stdout:
        pytest.skip("this kernel has no /proc/sysrq-trigger")
    assert "RO" in out.stdout and "WRITABLE" not in out.stdout, out
    assert " ro," in out.stdout or " ro " in out.stdout, out


def test_only_expected_mounts_are_writable(ws, fs, fs_sandbox):
    """Every read-write mount inside is one the design names: the workspace, the scratch
    HOME, the private tmpfs trees (/tmp, /var/tmp, /run, the homes), /dev and the private
    /proc root. Anything else (the root, /sys, a host bind) must be read-only."""
    out = fs.run(fs_sandbox(ws), 'echo "HOME=$HOME"; cat /proc/self/mountinfo')
    home = out.stdout.split("HOME=", 1)[1].split("\n", 1)[0]
    allowed = {str(ws), home, "/tmp", "/var/tmp", "/run", "/home", "/root", "/proc"}
    allowed.add(os.path.realpath(os.path.expanduser("~")))
    writable = [
        point
        for point, opts in _mounts(out.stdout)
        if "rw" in opts
        and point not in allowed
        and point != "/dev"
        and not point.startswith("/dev/")
    ]
    assert writable == [], out
    mounts = dict(_mounts(out.stdout))
    assert "ro" in mounts["/"], out
    sys_mounts = [opts for point, opts in _mounts(out.stdout) if point.startswith("/sys")]
    assert all("ro" in opts for opts in sys_mounts), out
