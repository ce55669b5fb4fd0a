"""Writes outside the workspace: every route a command could take must leave the host unchanged.

Each attack writes files named after a per-test sentinel and tampers with a
canary directory the test owns. After the run the host is inspected: no
sentinel anywhere, the canaries (next to the workspace, and in the host /tmp)
identical to their snapshot, the workspace still the same directory.

Two layouts: a workspace on the host's root file system (its parent and the
canary are visible inside, read-only) and one in the host /tmp (covered inside
by a private tmpfs, so writes may succeed there but must not reach the host).
Each runs with the full boundary and with Landlock off: the mounts alone must
hold.
"""

from __future__ import annotations

import contextlib
import os
import stat
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

PY = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else "python3"


@dataclass
class Scene:
    parent: Path  # the workspace's parent, owned by the test
    ws: Path
    canary: Path  # next to the workspace
    tmp_canary: Path  # in the host /tmp
    home: Path  # the host HOME
    sentinel: str

    def names(self) -> dict[str, str]:
        return {
            "S": self.sentinel,
            "ws": str(self.ws),
            "parent": str(self.parent),
            "canary": str(self.canary),
            "tmpc": str(self.tmp_canary),
            "home": str(self.home),
            "py": PY,
        }


def _fill_canary(d: Path) -> None:
    d.mkdir()
    (d / "keep.txt").write_text("canary content\n")
    (d / "sub").mkdir()
    (d / "sub" / "deep.txt").write_text("deep canary\n")
    os.symlink("keep.txt", d / "link")


@pytest.fixture(params=["rootfs", "tmp"])
def scene(request, fs_host_dir, fs_tmp_dir) -> Scene:
    parent = fs_host_dir if request.param == "rootfs" else fs_tmp_dir
    ws = parent / "ws"
    ws.mkdir()
    (ws / "README").write_text("workspace\n")
    canary = parent / "canary"
    _fill_canary(canary)
    tmp_canary = fs_tmp_dir / "tmp-canary"
    if not tmp_canary.exists():
        _fill_canary(tmp_canary)
    return Scene(
        parent=parent,
        ws=ws,
        canary=canary,
        tmp_canary=tmp_canary,
        home=Path(os.path.expanduser("~")),
        sentinel=f"a3s-fs-pwned-{uuid.uuid4().hex[:12]}",
    )


@pytest.fixture(params=["landlock", "no-landlock"])
def layer(request) -> bool:
    return request.param == "landlock"


# Each attack ends by printing ATTEMPTED, so a test cannot pass because nothing ran.
ATTACKS = {
    "direct-etc": "echo x > /etc/{S}; mkdir /etc/{S}.d; cp /etc/hostname /etc/{S}.cp",
    "direct-usr": "echo x > /usr/{S}; echo x > /usr/bin/{S}; echo x > /usr/local/bin/{S}",
    "direct-root-dir": "echo x > /{S}; mkdir /{S}.d",
    "direct-host-home": "echo x > {home}/{S}; echo x > {home}/.bashrc.{S}; mkdir {home}/{S}.d",
    "direct-host-tmp": (
        "echo x > /tmp/{S}; echo x > /var/tmp/{S}; echo x > {tmpc}/{S}; "
        "echo x >> {tmpc}/keep.txt; rm -rf {tmpc}/sub; chmod 777 {tmpc}"
    ),
    "direct-parent": (
        "echo x > ../{S}; echo x > {parent}/{S}; mkdir {parent}/{S}.d; "
        "rm -rf {parent}/canary; mv {parent}/canary {parent}/{S}.mv"
    ),
    "direct-canary": (
        "echo x > {canary}/{S}; echo x >> {canary}/keep.txt; : > {canary}/keep.txt; "
        "rm -f {canary}/keep.txt; rm -rf {canary}/sub; chmod 777 {canary}; "
        "touch -d 2001-01-01 {canary}/keep.txt; ln -s /etc {canary}/{S}.lnk; "
        "ln -sf /etc/passwd {canary}/link"
    ),
    "dotdot-traversal": (
        "mkdir -p deep/er && cd deep/er && echo x > ../../../canary/{S}; "
        "echo x > ../../../{S}; echo x > ../../../../../../../../../../../etc/{S}; "
        "echo x > {ws}/../canary/{S}; echo x > {ws}/./../{S}; cd {ws}/../canary && echo x > {S}"
    ),
    "symlink-made-before-run": (
        "echo x > out/{S}; echo x >> keep; echo x > up/{S}; echo x > etc/{S}; "
        "rm -rf out/sub; cp README out/keep.txt; echo x > tmpout/{S}; mkdir out/{S}.d"
    ),
    "symlink-made-during-run": (
        "ln -s {canary} esc && echo x > esc/{S}; ln -s /etc e && echo x > e/{S}; "
        "ln -s {canary}/keep.txt k && echo x >> k; ln -s .. up && echo x > up/{S}; "
        "mkdir d && ln -s ../.. d/up2 && echo x > d/up2/{S}; "
        "ln -s {tmpc} t && echo x > t/{S}; rm -rf esc/sub"
    ),
    "proc-self-root": (
        "echo x > /proc/self/root/etc/{S}; echo x > /proc/self/root{canary}/{S}; "
        "echo x > /proc/self/root{parent}/{S}; echo x > /proc/$$/root{canary}/{S}; "
        "echo x > /proc/self/cwd/../{S}; echo x >> /proc/self/root{canary}/keep.txt"
    ),
    "proc-1-root": (
        "echo x > /proc/1/root/etc/{S}; echo x > /proc/1/root{canary}/{S}; "
        "echo x > /proc/1/root{parent}/{S}; echo x > /proc/1/cwd/../{S}; "
        "ls /proc/1/root/ >/dev/null"
    ),
    "open-dir-fd": (
        "exec 3<{canary}; echo x > /proc/self/fd/3/{S}; "
        "{py} -c \"import os; fd = os.open('{canary}', os.O_RDONLY); "
        "os.open('{S}', os.O_CREAT | os.O_WRONLY, dir_fd=fd)\""
    ),
    "rename-workspace-or-parent": (
        "mv {ws} {parent}/{S}; mv {parent} {parent}-{S}; "
        "{py} -c \"import os; os.rename('{ws}', '{parent}/{S}.py')\"; "
        "cd .. && mv ws {S}.rel; cd {ws} && mv . ../{S}.dot"
    ),
    "mount-and-unshare": (
        "unshare -m true; unshare -Ur true; "
        "unshare -Urm sh -c 'mount -t tmpfs none {canary} && echo x > {canary}/{S}'; "
        "mount -t tmpfs none {canary}; mount --bind . {canary}; mount -o remount,rw /; "
        "mount -o remount,rw,bind {parent}; umount -l {parent}; umount -l /; "
        "echo x > {canary}/{S}; chroot / true; "
        "{py} -c 'import ctypes; print(ctypes.CDLL(None).unshare(0x30000))'"
    ),
}


def _setup_before(scene: Scene) -> None:
    os.symlink(scene.canary, scene.ws / "out")
    os.symlink(scene.parent, scene.ws / "up")
    os.symlink("/etc", scene.ws / "etc")
    os.symlink(scene.canary / "keep.txt", scene.ws / "keep")
    os.symlink(scene.tmp_canary, scene.ws / "tmpout")


def _parent_snapshot(fs, scene: Scene) -> dict:
    """The workspace's parent without the workspace's contents (those may change)."""
    snap = fs.snapshot(scene.parent)
    ws_entry = snap.get("ws")
    snap = {k: v for k, v in snap.items() if k != "ws" and not k.startswith("ws/")}
    return {"ws-inode": ws_entry[2] if ws_entry else None, **snap}


def _sentinel_hits(scene: Scene) -> list[str]:
    dirs = [
        Path("/"),
        Path("/etc"),
        Path("/usr"),
        Path("/usr/bin"),
        Path("/usr/local/bin"),
        Path("/tmp"),
        Path("/var/tmp"),
        scene.home,
        scene.parent.parent,
        scene.parent,
        scene.canary,
        scene.tmp_canary,
    ]
    hits = []
    for d in dirs:
        with contextlib.suppress(OSError):
            hits += [str(d / n) for n in os.listdir(d) if scene.sentinel in n]
    return hits


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_write_outside_workspace_leaves_host_unchanged(attack, scene, layer, fs, fs_sandbox):
    if attack == "symlink-made-before-run":
        _setup_before(scene)
    ws_inode = os.stat(scene.ws).st_ino
    canary_before = fs.snapshot(scene.canary)
    tmp_canary_before = fs.snapshot(scene.tmp_canary)
    parent_before = _parent_snapshot(fs, scene)

    command = ATTACKS[attack].format(**scene.names()) + "; echo ATTEMPTED"
    out = fs.run(fs_sandbox(scene.ws, landlock=layer), command)
    assert "ATTEMPTED" in out.stdout, out

    assert _sentinel_hits(scene) == [], out
    assert fs.diff(canary_before, fs.snapshot(scene.canary)) == [], out
    assert fs.diff(tmp_canary_before, fs.snapshot(scene.tmp_canary)) == [], out
    assert _parent_snapshot(fs, scene) == parent_before, out
    assert scene.ws.is_dir() and not scene.ws.is_symlink()
    assert os.stat(scene.ws).st_ino == ws_inode, "the workspace was replaced"
    assert (scene.ws / "README").read_text() == "workspace\n"


def test_no_setuid_or_setgid_file_made_inside_is_left_on_the_host(fs_host_dir, fs, fs_sandbox):
    """Inside, the caller's uid is root when the caller is root: a set-id executable the
    command leaves in the workspace would be a root-owned set-id binary on the host."""
    ws = fs_host_dir / "ws"
    ws.mkdir()
    out = fs.run(
        fs_sandbox(ws),
        "cp /bin/true u1 && chmod 4755 u1; cp /bin/true g1 && chmod 2755 g1; "
        "cp /bin/true ug && chmod u+s,g+s ug; install -m 6755 /bin/true inst; "
        f'{PY} -I -S -c \'import shutil, os; shutil.copy("/bin/true", "py"); '
        'os.chmod("py", 0o4755)\'; mkdir -p bin && cp /bin/true bin/t && chmod 4711 bin/t; '
        "echo ATTEMPTED",
    )
    assert "ATTEMPTED" in out.stdout
    set_id = []
    for root, _dirs, files in os.walk(ws):
        for name in files:
            mode = os.lstat(os.path.join(root, name)).st_mode
            if mode & (stat.S_ISUID | stat.S_ISGID):
                set_id.append(f"{name}:{oct(stat.S_IMODE(mode))}")
    assert set_id == [], f"set-id files left on the host: {set_id}"
