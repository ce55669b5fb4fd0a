"""CommandOutput: what one command produced, whichever sandbox ran it; SandboxPolicy."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ExecRules:
    """What the exec check holds a command to (docs/policy.md, "The exec check").

    ``deny`` and ``ask`` are the patterns of the policy's bash deny and ask
    rules (the text inside ``bash(...)``); ``approved`` the simple commands of
    a line whose ask the human approved for this call. With any deny or ask
    pattern, every program the command runs is checked at its exec, with the
    arguments it really runs, before its first instruction.
    """

    deny: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()
    approved: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.deny or self.ask)


@dataclass(frozen=True)
class ExecStop:
    """A program the exec check stopped: ``decision`` ("deny" or "ask"), the ``rule``
    ("bash(git push**)") and the ``command`` as it would have run ("git push origin")."""

    decision: str
    rule: str
    command: str


@dataclass(frozen=True)
class CommandOutput:
    """The outcome of one command.

    ``stdout``/``stderr`` are decoded as UTF-8 with replacement characters
    for invalid bytes; past ``max_output_bytes`` per stream only a head and a
    tail are kept around a marker, ``truncated`` is set and ``total_bytes``
    still counts everything the command wrote. ``exit_code`` is the
    command's status, 128+N when signal N ended it, 124 on timeout and 125
    when the sandbox refused or failed to start (``setup_error`` says why).
    ``oom_killed`` says the sandbox reached its memory bound and a process of
    the command was killed for it (``exit_code`` is then usually 137).
    ``hard_linked`` says the command called ``link()`` or ``linkat()`` (the
    native sandbox watches them): a hard link, even one removed again, can
    change a file where no directory watch sees it, so the session's change
    detection reads the whole workspace after such a command.
    ``outlived`` says something of the command may have run after this
    result: a process of it could not be reaped after SIGKILL (uninterruptible
    sleep), or the sandbox had to be killed by force. The result is not held
    back for it (it returns within the timeout, the kill grace and 0.5 s); the
    session counts the workspace as changed and reads it whole again.
    ``sandboxed`` is False only for the process host, which has no boundary.
    ``policy_changed`` says the command was pinned to a sandbox policy
    digest (a network grant) and the policy had changed: nothing ran
    (``exit_code`` 125).
    ``neutralized`` lists, one line each, what the sandbox found hostile in
    the workspace and did not follow or mount for this run (a credential
    name linked to the workspace itself, a ``.git`` pointer leading out of
    it ...): the command still ran with every protection in place.
    ``exec_stopped`` says what the exec check stopped (:class:`ExecStop`, the
    first program a deny or unapproved ask rule named; ``exit_code`` is then
    126), None when it stopped nothing or did not run.
    """

    stdout: str
    stderr: str
    exit_code: int
    timed_out: bool
    truncated: bool
    total_bytes: int
    sandboxed: bool
    backend: str
    setup_error: str | None = None
    cancelled: bool = False
    duration_ms: float = 0.0
    neutralized: tuple[str, ...] = ()
    oom_killed: bool = False
    hard_linked: bool = False
    policy_changed: bool = False
    exec_stopped: ExecStop | None = None
    outlived: bool = False

    @property
    def ok(self) -> bool:
        """True when the command ran and exited 0."""
        return self.exit_code == 0 and self.setup_error is None


@dataclass(frozen=True)
class SandboxPolicy:
    """The effective policy of a native sandbox as canonical text, and its digest.

    ``digest`` is ``"sha256:"`` and the hex SHA-256 of ``text``; a network
    grant is approved against it (docs/security.md, "Network grants").
    """

    text: str
    digest: str
