"""Rules for destructive programs: removal, ownership, moves, disks, the machine, privileges.

Each rule sees one :class:`Invocation` (the program after its wrappers, and
its argument words) with the simple command it came from and a
:class:`Context` (the variables and working directory set so far). A rule
returns a :class:`GuardrailHit` or None. Arguments of programs that are not
listed here are data: ``echo "rm -rf /"`` refuses nothing.
"""

from __future__ import annotations

from ._context import Context, Rule, refuse
from ._hit import GuardrailHit
from ._reading import Command, Invocation, Word, arg_texts, first, has_unknown
from ._targets import danger, device, join_cwd

__all__ = ["DESTRUCTIVE_RULES", "PRIVILEGE", "check_redirects", "mkfs", "mkfs_family", "rm_like"]

PRIVILEGE = {
    "sudo": "privilege.sudo",
    "sudoedit": "privilege.sudo",
    "su": "privilege.su",
    "doas": "privilege.doas",
    "pkexec": "privilege.pkexec",
    "run0": "privilege.run0",
}
_POWER = frozenset({"shutdown", "reboot", "halt", "poweroff", "telinit", "kexec"})
_POWER_VERBS = frozenset(
    {
        "poweroff",
        "reboot",
        "halt",
        "kexec",
        "soft-reboot",
        "emergency",
        "rescue",
        "suspend",
        "hibernate",
        "hybrid-sleep",
        "suspend-then-hibernate",
        "isolate",
    }
)
# Verbs that start (or restart) the units they name, and the targets that end the session.
_START_VERBS = frozenset(
    {
        "start",
        "restart",
        "try-restart",
        "reload-or-restart",
        "try-reload-or-restart",
        "condrestart",
        "force-reload",
        "enable",
        "reenable",
        "link",
        "set-default",
    }
)
_POWER_TARGETS = (_POWER_VERBS - {"isolate"}) | {
    "sleep",
    "ctrl-alt-del",
    "exit",
    "shutdown",
    "final",
    "umount",
}
_RUNLEVELS = frozenset({"0", "1", "2", "3", "4", "5", "6", "s", "S", "single", "emergency"})
_MKFS = frozenset(
    {"mkfs", "mke2fs", "mkswap", "mkdosfs", "mkntfs", "mkexfatfs", "newfs", "mformat"}
)
_WIPE = frozenset({"wipefs", "blkdiscard"})
_PARTITION = frozenset({"fdisk", "sfdisk", "cfdisk", "parted", "gdisk", "sgdisk", "cgdisk"})
_DISKUTIL_ERASE = frozenset(
    {
        "erasedisk",
        "erasevolume",
        "partitiondisk",
        "zerodisk",
        "randomdisk",
        "secureerase",
        "reformat",
    }
)
_OUTPUT_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})


def check_redirects(cmd: Command, ctx: Context) -> GuardrailHit | None:
    """``> /dev/sda``, ``>> /dev/nvme0n1``, ``> /proc/sysrq-trigger``: writes to a device."""
    for r in cmd.redirects:
        if r.op not in _OUTPUT_REDIRECTS or r.target is None:
            continue
        for t in r.target.values:
            if r.op == ">&" and (t.isdigit() or t == "-"):
                continue
            dev = device(t)
            if dev is not None:
                return refuse(
                    "catastrophic.device_write",
                    ctx,
                    f"{r.fd}{r.op} {r.target.shown}",
                    f"it writes straight to {dev}, destroying what the device holds",
                )
    return None


# -- privileges ----------------------------------------------------------------------------


def privilege(inv: Invocation, cmd: Command, ctx: Context) -> GuardrailHit | None:
    """sudo, su, doas, pkexec, run0: whatever they run, they run it with other privileges."""
    return refuse(
        PRIVILEGE[inv.name],
        ctx,
        inv.fragment(),
        f"{inv.name} runs a command with other (usually root) privileges; "
        "the agent never escalates",
    )


# -- removal, ownership, moves -------------------------------------------------------------


def rm_like(inv: Invocation, cmd: Command, ctx: Context) -> GuardrailHit | None:
    """rm with -r/-R/--recursive (any spelling, options anywhere) on /, a home, a system tree.

    Also applied to a program whose name is unknown (``$RM -rf /``).
    """
    recursive = no_preserve = False
    targets: list[str] = []
    options_done = False
    for t in arg_texts(inv.args):
        if not options_done:
            if t == "--":
                options_done = True
                continue
            if t.startswith("--"):
                name = t[2:].split("=", 1)[0]
                if name and "recursive".startswith(name):
                    recursive = True
                elif len(name) >= 2 and "no-preserve-root".startswith(name):
                    no_preserve = True
                continue
            if t.startswith("-") and len(t) > 1:
                recursive = recursive or "r" in t or "R" in t
                continue
        targets.append(t)
    if no_preserve:
        return refuse(
            "catastrophic.rm_root",
            ctx,
            inv.fragment(),
            "--no-preserve-root exists only to delete the root directory",
        )
    recursive = recursive or has_unknown(inv.args)
    for t in targets:
        d = danger(join_cwd(ctx.cwd, t))
        if d is not None and (recursive or d.root_glob):
            return refuse("catastrophic.rm_root", ctx, inv.fragment(), f"it deletes {d.what} ({t})")
    return None


def _find(inv: Invocation, cmd: Command, ctx: Context) -> GuardrailHit | None:
    """``find / -delete`` or ``find ~ -exec rm ...``: recursive deletion by another name."""
    texts = [first(w) for w in inv.args]
    starts: list[str] = []
    for t in texts:
        if t in ("-H", "-L", "-P") or t.startswith(("-O", "-D")):
            continue
        if t.startswith(("-", "(", "!", ")")):
            break
        starts.append(t)
    deletes = "-delete" in texts or any(
        t in ("-exec", "-execdir", "-ok", "-okdir")
        and i + 1 < len(texts)
        and texts[i + 1].rsplit("/", 1)[-1] in ("rm", "shred", "unlink", "rmdir")
        for i, t in enumerate(texts)
    )
    if not deletes:
        return None
    for s in starts or ["."]:
        d = danger(join_cwd(ctx.cwd, s))
        if d is not None:
            return refuse("catastrophic.rm_root", ctx, inv.fragment(), f"it deletes {d.what} ({s})")
    return None


def _ownership(rule: str, verb: str) -> Rule:
    def check(inv: Invocation, cmd: Command, ctx: Context) -> GuardrailHit | None:
        """chmod/chown/chgrp -R on /, a home or a system tree."""
        recursive = False
        operands: list[str] = []
        for t in arg_texts(inv.args):
            if t == "--recursive" or (t.startswith("-") and not t.startswith("--") and "R" in t):
                recursive = True
            elif not t.startswith("-"):
                operands.append(t)
        if not recursive:
            return None
        for t in operands:
            d = danger(join_cwd(ctx.cwd, t), any_top_level=False)
            if d is not None:
                return refuse(rule, ctx, inv.fragment(), f"it {verb} {d.what} recursively ({t})")
        return None

    return check


def _mv(inv: Invocation, cmd: Command, ctx: Context) -> GuardrailHit | None:
    """``mv / x``, ``mv ~ /tmp``: moving the root, a home or a system tree away."""
    operands, target_dir = _operands(inv.args, takes=("-t", "-S", "--suffix"))
    if target_dir is not None:
        sources, dest = operands, target_dir
    elif len(operands) >= 2:
        sources, dest = operands[:-1], operands[-1]
    else:
        return None
    for t in sources:
        d = danger(join_cwd(ctx.cwd, t), any_top_level=False)
        if d is not None:
            return refuse("catastrophic.mv_root", ctx, inv.fragment(), f"it moves {d.what} ({t})")
    return _device_dest(inv, ctx, dest)


def _copy(inv: Invocation, cmd: Command, ctx: Context) -> GuardrailHit | None:
    """``cp image.iso /dev/sda``: a copy onto a device."""
    operands, target_dir = _operands(inv.args, takes=("-t", "-S", "--suffix", "-m"))
    dest = target_dir if target_dir is not None else (operands[-1] if len(operands) > 1 else None)
    return _device_dest(inv, ctx, dest) if dest is not None else None


def _rsync(inv: Invocation, cmd: Command, ctx: Context) -> GuardrailHit | None:
    """``rsync -a --delete empty/ /``: a sync that deletes everything the source lacks."""
    texts = arg_texts(inv.args)
    if not any(t.startswith(("--delete", "--del", "--remove-source")) for t in texts):
        return None
    operands = [t for t in texts if not t.startswith("-")]
    if len(operands) < 2:
        return None
    d = danger(join_cwd(ctx.cwd, operands[-1]))
    if d is None:
        return None
    why = f"it deletes what {d.what} holds ({operands[-1]})"
    return refuse("catastrophic.rm_root", ctx, inv.fragment(), why)


def _tee(inv: Invocation, cmd: Command, ctx: Context) -> GuardrailHit | None:
    """tee and truncate: any operand that is a device."""
    for t in arg_texts(inv.args):
        if not t.startswith("-"):
            hit = _device_dest(inv, ctx, t)
            if hit is not None:
                return hit
    return None


def _device_dest(inv: Invocation, ctx: Context, dest: str) -> GuardrailHit | None:
    dev = device(dest)
    if dev is None:
        return None
    return refuse(
        "catastrophic.device_write",
        ctx,
        inv.fragment(),
        f"it writes straight to {dev}, destroying what the device holds",
    )


def _operands(args: list[Word], *, takes: tuple[str, ...]) -> tuple[list[str], str | None]:
    """Non-option arguments, and the ``-t DIR`` / ``--target-directory=DIR`` if given."""
    operands: list[str] = []
    target: str | None = None
    texts = arg_texts(args)
    i = 0
    options_done = False
    while i < len(texts):
        t = texts[i]
        if not options_done and t == "--":
            options_done = True
        elif not options_done and t.startswith("--target-directory="):
            target = t.split("=", 1)[1]
        elif not options_done and t in ("-t", "--target-directory") and i + 1 < len(texts):
            target = texts[i + 1]
            i += 1
        elif not options_done and t in takes:
            i += 1
        elif not options_done and t.startswith("-") and len(t) > 1:
            pass
        else:
            operands.append(t)
        i += 1
    return operands, target


# -- disks -----------------------------------------------------------------------------------


def mkfs(inv: Invocation, cmd: Command, ctx: Context) -> GuardrailHit | None:
    return refuse(
        "catastrophic.mkfs",
        ctx,
        inv.fragment(),
        f"{inv.name} creates a file system, erasing whatever the target held",
    )


def _wipe(inv: Invocation, cmd: Command, ctx: Context) -> GuardrailHit | None:
    return refuse(
        "catastrophic.wipefs",
        ctx,
        inv.fragment(),
        f"{inv.name} erases file-system signatures or discards a device's blocks",
    )


def _partition(inv: Invocation, cmd: Command, ctx: Context) -> GuardrailHit | None:
    for t in arg_texts(inv.args):
        dev = device(t.split("=", 1)[-1])
        if dev is not None:
            return refuse(
                "catastrophic.partition",
                ctx,
                inv.fragment(),
                f"{inv.name} edits the partition table of {dev}",
            )
    return None


def _diskutil(inv: Invocation, cmd: Command, ctx: Context) -> GuardrailHit | None:
    for t in arg_texts(inv.args):
        if t.casefold() in _DISKUTIL_ERASE:
            return refuse("catastrophic.mkfs", ctx, inv.fragment(), f"diskutil {t} erases a disk")
    return None


def _dd(inv: Invocation, cmd: Command, ctx: Context) -> GuardrailHit | None:
    for t in arg_texts(inv.args):
        if t.startswith("of="):
            dev = device(t[3:])
            if dev is not None:
                return refuse(
                    "catastrophic.dd_device",
                    ctx,
                    inv.fragment(),
                    f"dd writes raw blocks to {dev}, destroying what the device holds",
                )
    return None


def _shred(inv: Invocation, cmd: Command, ctx: Context) -> GuardrailHit | None:
    for t in arg_texts(inv.args):
        dev = device(t)
        if dev is not None:
            return refuse(
                "catastrophic.shred_device", ctx, inv.fragment(), f"shred overwrites {dev}"
            )
    return None


# -- the machine -----------------------------------------------------------------------------


def _power(inv: Invocation, cmd: Command, ctx: Context) -> GuardrailHit | None:
    return refuse(
        "catastrophic.shutdown", ctx, inv.fragment(), f"{inv.name} stops or restarts the machine"
    )


def _init(inv: Invocation, cmd: Command, ctx: Context) -> GuardrailHit | None:
    texts = arg_texts(inv.args)
    if any(t in _RUNLEVELS for t in texts):
        return refuse(
            "catastrophic.shutdown", ctx, inv.fragment(), "init changes the runlevel (halt, reboot)"
        )
    return None


def _service_manager(inv: Invocation, cmd: Command, ctx: Context) -> GuardrailHit | None:
    """``systemctl poweroff|reboot|halt|...``, ``loginctl reboot``, ``launchctl reboot``, and
    ``systemctl start reboot.target`` (a verb that starts a unit, on a power target)."""
    takes = {"-H", "-M", "-t", "-p", "-s", "-n", "-o", "--host", "--machine", "--type"}
    texts = arg_texts(inv.args)
    i = 0
    while i < len(texts):
        t = texts[i]
        if t in takes:
            i += 2
            continue
        if t.startswith("-"):
            i += 1
            continue
        if t in _POWER_VERBS:
            return refuse(
                "catastrophic.shutdown",
                ctx,
                inv.fragment(),
                f"{inv.name} {t} stops, restarts or isolates the machine",
            )
        if t in _START_VERBS:
            unit = next((u for u in texts[i + 1 :] if _power_target(u)), None)
            if unit is not None:
                return refuse(
                    "catastrophic.shutdown",
                    ctx,
                    inv.fragment(),
                    f"{inv.name} {t} {unit} stops, restarts or suspends the machine",
                )
        return None
    return None


def _power_target(unit: str) -> bool:
    """``reboot.target``, ``poweroff.target`` ... (case-folded, an instance or escape aside)."""
    name = unit.casefold().split("@", 1)[0]
    return name.endswith(".target") and name[: -len(".target")] in _POWER_TARGETS


def _kill(inv: Invocation, cmd: Command, ctx: Context) -> GuardrailHit | None:
    """``kill -9 -1`` (and ``kill -1``): a signal to every process the user can reach."""
    texts = arg_texts(inv.args)
    if texts and texts[0] in ("-l", "-L", "--list", "--table"):
        return None
    pids: list[str] = []
    i = 0
    signal_given = False
    while i < len(texts):
        t = texts[i]
        if t == "--":
            pids.extend(texts[i + 1 :])
            break
        if t in ("-s", "-n", "--signal"):
            i += 2
            signal_given = True
            continue
        if t.startswith("-") and not signal_given and i == 0 and len(texts) > 1:
            signal_given = True
            i += 1
            continue
        pids.append(t)
        i += 1
    if "-1" in pids:
        return refuse(
            "catastrophic.kill_all",
            ctx,
            inv.fragment(),
            "pid -1 sends the signal to every process the user may signal",
        )
    return None


def _killall5(inv: Invocation, cmd: Command, ctx: Context) -> GuardrailHit | None:
    return refuse("catastrophic.kill_all", ctx, inv.fragment(), "killall5 signals every process")


def mkfs_family(name: str) -> bool:
    return name in _MKFS or name.startswith(("mkfs.", "mkfs_", "newfs_"))


DESTRUCTIVE_RULES: dict[str, Rule] = {
    **dict.fromkeys(PRIVILEGE, privilege),
    "rm": rm_like,
    "find": _find,
    "chmod": _ownership("catastrophic.chmod_root", "changes the permissions of"),
    "chown": _ownership("catastrophic.chown_root", "changes the owner of"),
    "chgrp": _ownership("catastrophic.chown_root", "changes the group of"),
    "mv": _mv,
    "cp": _copy,
    "install": _copy,
    "tee": _tee,
    "truncate": _tee,
    "rsync": _rsync,
    "dd": _dd,
    "shred": _shred,
    "diskutil": _diskutil,
    "init": _init,
    "systemctl": _service_manager,
    "loginctl": _service_manager,
    "launchctl": _service_manager,
    "kill": _kill,
    "killall5": _killall5,
    **dict.fromkeys(_MKFS, mkfs),
    **dict.fromkeys(_WIPE, _wipe),
    **dict.fromkeys(_PARTITION, _partition),
    **dict.fromkeys(_POWER, _power),
}
