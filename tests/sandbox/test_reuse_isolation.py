"""The long-lived sandbox: one command leaves nothing for the next, except in the workspace.

Commands of one NativeBashSandbox run in the same sandbox, one after the
other. Each writes everywhere it can (scratch, /tmp, /var/tmp, /dev/shm,
/dev, /run, SysV IPC), starts processes that try to stay (background,
setsid, double fork, a stopped one, one that ignores every signal), changes
its environment and working directory; the next command must find none of
it, and the host must find no process left. All in one sandbox: the tests
check that no restart hid the leftovers.
"""

from __future__ import annotations

import os
import random
import re
from pathlib import Path

import pytest
from hostprocs import survivors

from codeward.sandbox import NativeBashSandbox
from codeward.sandbox._output import CommandOutput


@pytest.fixture
def sb(workspace: Path, fs_boundary_ready: None):
    with NativeBashSandbox(workspace, reuse=True) as box:
        yield box


def run(sb: NativeBashSandbox, command: str, **kw) -> CommandOutput:
    out = sb.exec(command, timeout_ms=kw.pop("timeout_ms", 20_000), **kw)
    assert out.setup_error is None, out
    return out


def starts(sb: NativeBashSandbox) -> int:
    return int(sb._handle.info()["starts"])


PLANT = r"""
set -e
echo secret > "$HOME/note"; mkdir -p "$HOME/.config/tool"; echo x > "$HOME/.config/tool/rc"
echo secret > /tmp/note; mkdir -p /tmp/d/e/f; echo x > /tmp/d/e/f/g; ln -s /etc /tmp/link
mkfifo /tmp/fifo; chmod 000 /tmp/d
echo secret > /var/tmp/note
echo secret > /dev/shm/note
touch /dev/planted; rm -f /dev/fd
mkdir -p /run/planted; touch /run/a3s/planted
chmod 700 /tmp /var/tmp /dev/shm
echo "$HOME"
"""

LOOK = r"""
echo "home=$HOME"
ls -A "$HOME"
cat /tmp/note /var/tmp/note /dev/shm/note 2>/dev/null && echo LEFTOVER
ls -A /tmp /var/tmp /dev/shm /run /run/a3s
ls -A /dev
stat -c '%n %a' /tmp /var/tmp /dev/shm
test -L /dev/fd && echo fd-back
"""


def test_files_left_in_writable_places_are_gone_for_the_next_command(sb, workspace) -> None:
    first = run(sb, PLANT)
    assert first.exit_code == 0, first
    old_home = first.stdout.strip()
    out = run(sb, LOOK + f"\ntest -e {old_home} && echo OLD-HOME; true")
    assert out.exit_code == 0, (out.stdout, out.stderr)
    assert "LEFTOVER" not in out.stdout and "OLD-HOME" not in out.stdout, out
    home = re.search(r"home=(\S+)", out.stdout).group(1)  # type: ignore[union-attr]
    assert home != old_home, "the scratch directory was reused"
    for name in ("note", "link", "fifo", "planted", ".config"):
        assert name not in out.stdout.split(), f"{name} survived: {out.stdout}"
    assert re.search(r"^/tmp (1777|755)$", out.stdout, re.M), out.stdout
    assert "fd-back" in out.stdout, "a symlink the command removed from /dev was not restored"
    assert starts(sb) == 1, "the sandbox was restarted, which would hide leftovers"


def test_the_workspace_is_shared_between_commands(sb, workspace) -> None:
    run(sb, "echo kept > result.txt; mkdir -p build && touch build/out.o")
    out = run(sb, "cat result.txt; ls build")
    assert out.stdout.split() == ["kept", "out.o"], out
    assert (workspace / "result.txt").read_text() == "kept\n"


def test_sysv_ipc_objects_do_not_survive_the_command(sb) -> None:
    first = run(sb, "ipcmk -M 4096 && ipcmk -Q && ipcmk -S 2 && ipcs | grep -c '^0x'")
    assert first.exit_code == 0 and first.stdout.strip().splitlines()[-1] == "3", first
    out = run(sb, "ipcs | grep -c '^0x'; true")
    assert out.stdout.strip() == "0", out
    assert starts(sb) == 1


MQ = (
    "/usr/bin/python3 -c \"import ctypes, os; rt = ctypes.CDLL('librt.so.1', use_errno=True); "
    "print(rt.mq_open(b'/a3s-leak', {flags}, 0o600, None))\""
)


def test_a_posix_message_queue_does_not_reach_the_next_command(sb) -> None:
    """mq_open is refused inside the sandbox on the kernels we know; if one day it is
    not, a queue made by one command must still not be there for the next."""
    run(sb, MQ.format(flags=os.O_CREAT | os.O_RDWR))
    out = run(sb, MQ.format(flags=os.O_RDWR))
    assert out.stdout.strip() == "-1", out
    assert starts(sb) == 1


def test_environment_directory_umask_and_limits_start_fresh(sb, workspace) -> None:
    run(
        sb,
        "export LEAKED=1; cd /; umask 077; ulimit -n 64; alias ll=ls; set -o noclobber",
        env={"PER_CALL": "first"},
    )
    out = run(sb, 'echo "[$LEAKED][$PER_CALL]"; pwd; umask; ulimit -n; alias; set -o | grep noclob')
    lines = out.stdout.splitlines()
    assert lines[0] == "[][]", out
    assert lines[1] == str(workspace), out
    assert lines[2] == "0022" and lines[3] != "64", out
    assert "noclobber" in lines[-1] and "off" in lines[-1], out


@pytest.mark.parametrize(
    "escape",
    [
        "{s} &",
        "setsid {s} &",
        "setsid -f {s}",
        "nohup {s} >/dev/null 2>&1 &",
        "( ( {s} & ) & )",
        "( trap '' TERM HUP INT; {s} ) &",
        "{s} & kill -STOP $!",
    ],
)
def test_no_process_of_a_command_is_alive_when_the_next_starts(sb, escape) -> None:
    m = f"425.{random.randint(100000, 999999)}"
    first = run(
        sb,
        escape.format(s=f"sleep {m}")
        + f"\nfor i in $(seq 300); do pgrep -f '^sleep {m}' >/dev/null && break; sleep 0.01; done"
        + "\necho started",
    )
    assert "started" in first.stdout, first
    assert survivors(m, within_s=0.0) == [], "a process outlived its command on the host"
    out = run(sb, f"pgrep -f '^sleep {m}' || echo none; ls /proc | grep -c '^[0-9]'")
    assert out.stdout.split()[0] == "none", out
    # init, bash, ls, grep (and maybe pgrep's subshell)
    assert int(out.stdout.split()[-1]) <= 5, out
    assert starts(sb) == 1


def test_signals_at_pid_1_do_not_end_the_sandbox(sb) -> None:
    out = run(sb, "for s in TERM INT HUP QUIT USR1 KILL STOP; do kill -$s 1; done; echo sent")
    assert out.exit_code == 0 and "sent" in out.stdout, out
    again = run(sb, "echo alive")
    assert again.stdout == "alive\n" and starts(sb) == 1, again


def test_a_command_that_wrecks_the_scratch_parent_does_not_break_the_next(sb) -> None:
    out = run(
        sb,
        "rm -rf /run/a3s/scratch; ln -s /tmp /run/a3s/scratch; "
        "mkdir -p /tmp/c99; chmod 000 /run/a3s; echo done",
    )
    assert "done" in out.stdout, out
    again = run(sb, 'echo "$HOME"; test -d "$HOME" && test ! -L /run/a3s/scratch && echo ok')
    assert again.exit_code == 0 and again.stdout.splitlines()[-1] == "ok", again


def test_a_tree_too_deep_to_clean_restarts_the_sandbox(sb) -> None:
    """The init cannot always put the trees back (here: 300 nested directories); it then
    ends the sandbox after reporting, and the next command gets a fresh one."""
    out = run(
        sb,
        "cd /tmp && for i in $(seq 300); do mkdir d && cd d || exit 1; done; echo deep > f; "
        "echo made",
    )
    assert out.exit_code == 0 and "made" in out.stdout, out
    again = run(sb, "ls -A /tmp; echo listed")
    assert again.stdout.strip().endswith("listed"), again
    assert "d" not in again.stdout.split(), again
    assert starts(sb) == 2, "the sandbox that could not be cleaned was kept"


METADATA_PLANT = r"""
python3 - <<'PY'
import os, struct
for d in ("/tmp", "/var/tmp", "/dev/shm", "/run"):
    os.setxattr(d, "user.leak", b"data for the next command")
# a default ACL granting nothing: the next command's new files in /tmp would be mode 000
acl = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", t, 0, 0xFFFFFFFF) for t in (1, 4, 0x20))
os.setxattr("/tmp", "system.posix_acl_default", acl)
PY
touch -d 2001-01-01 /tmp /var/tmp /dev/shm /run
"""

METADATA_LOOK = r"""
stat -c '%n %Y' /tmp /var/tmp /dev/shm /run
umask 022; touch /tmp/new; stat -c 'new %a' /tmp/new
python3 -c "
import os
for d in ('/tmp', '/var/tmp', '/dev/shm', '/run'):
    print(d, sorted(os.listxattr(d)))
"
"""


def test_restored_trees_get_their_metadata_back(sb) -> None:
    """Extended attributes, a default ACL and directory times set by one command do
    not reach the next (issue 11: they carried data, and made new files mode 000)."""
    before = run(sb, "stat -c '%n %Y' /tmp /var/tmp /dev/shm /run").stdout
    run(sb, METADATA_PLANT)
    after = run(sb, METADATA_LOOK).stdout.splitlines()
    assert "\n".join(after[:4]) + "\n" == before, after
    assert after[4] == "new 644", after
    assert after[5:] == [f"{d} []" for d in ("/tmp", "/var/tmp", "/dev/shm", "/run")], after
    assert starts(sb) == 1, "a restart hid what the cleanup left"
