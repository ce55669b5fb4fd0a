"""A cgroup that no process can join: the command still runs, without it, and says nothing is lost.

The cgroups are made without a trial join (that cost an RCU grace period per
command line run on cgroup v1); the process that starts the sandbox joins,
and when it cannot, the handle stops using cgroups and starts again without
them (the fallbacks carry the bounds). Here the refusal is real to the C
core: a preloaded shim makes every write of "0" to a cgroup.procs fail with
EACCES, as delegation rules or a cgroup namespace would, and leaves a mark
so the test knows the path was taken.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from codeward.sandbox import NativeBashSandbox

SHIM_C = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Called between fork and exec too: raw system calls only. */
ssize_t write(int fd, const void *buf, size_t n) {
    if (n == 1 && ((const char *)buf)[0] == '0') {
        char link[64], target[4096];
        int len = snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t t = len > 0 ? syscall(SYS_readlink, link, target, sizeof target - 1) : -1;
        static const char tail[] = "/cgroup.procs";
        if (t >= (ssize_t)sizeof tail - 1 &&
            !memcmp(target + t - (sizeof tail - 1), tail, sizeof tail - 1)) {
            const char *mark = getenv("SHIM_MARK");
            if (mark) {
                int m = (int)syscall(SYS_open, mark, O_WRONLY | O_CREAT | O_APPEND, 0600);
                if (m >= 0) {
                    syscall(SYS_write, m, "x", 1);
                    syscall(SYS_close, m);
                }
            }
            errno = EACCES;
            return -1;
        }
    }
    return syscall(SYS_write, fd, buf, n);
}
"""

CALLER = textwrap.dedent(
    """
    import sys
    from codeward.sandbox import NativeBashSandbox
    reuse = sys.argv[2] == "reuse"
    with NativeBashSandbox(sys.argv[1], reuse=reuse) as sb:
        for i in range(2):
            out = sb.exec(f"echo run{i}")
            print(out.exit_code, out.stdout.strip(), out.setup_error, flush=True)
        if reuse:
            info = sb._handle.info()
            print("cgroup", info["memory_cgroup"] or info["pids_cgroup"], flush=True)
    """
)


@pytest.fixture(scope="module")
def shim(tmp_path_factory) -> Path:
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler for the shim")
    where = tmp_path_factory.mktemp("shim")
    (where / "shim.c").write_text(SHIM_C)
    subprocess.run(
        [cc, "-shared", "-fPIC", "-O1", "-o", str(where / "shim.so"), str(where / "shim.c")],
        check=True,
    )
    return where / "shim.so"


def _cgroups_made_here(workspace: Path) -> bool:
    with NativeBashSandbox(workspace, reuse=True) as sb:
        sb.exec("true")
        info = sb._handle.info()
        return bool(info["memory_cgroup"] or info["pids_cgroup"])


@pytest.mark.parametrize("mode", ["one-shot", "reuse"])
def test_a_refused_join_runs_the_command_without_the_cgroup(
    workspace, tmp_path, shim, mode, fs_boundary_ready
) -> None:
    if not _cgroups_made_here(workspace):
        pytest.skip("this caller makes no cgroup here: there is nothing to refuse")
    mark = tmp_path / "refused"
    env = dict(os.environ, LD_PRELOAD=str(shim), SHIM_MARK=str(mark))
    done = subprocess.run(
        [sys.executable, "-c", CALLER, str(workspace), mode],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == ["0 run0 None", "0 run1 None"], done.stdout
    assert mark.exists(), "the shim never refused a join: the test proved nothing"
    # one refusal: the handle then stops trying, it does not pay a failed start per command
    assert len(mark.read_text()) == 1, mark.read_text()
    if mode == "reuse":
        assert lines[2] == "cgroup False", done.stdout
