"""Keeping a session's ledger in step with its workspace, whoever writes to it.

The session does not trust any writer to report itself. It keeps the
snapshot the ledger was last brought up to date with (the *baseline*) and
brings it up to date again (``sync``): before and after every call that may
write (bash, the write tools, downloads, MCP and host-registered tools,
launches), before the checks run, and when the turn is to complete. Each
sync compares the workspace now with the baseline (through the session's
incremental tracker where there is one), records every difference under the
name of whoever it is booked to, and becomes the new baseline. A change
between calls (the host, an editor, an MCP server's timer, a process that
outlived its command) is booked to ``external``.

Lost certainty fails closed: a snapshot that fails, a snapshot that lost
events or covers directories no watch sees, a call whose processes may have
outlived its result, a directory that cannot be listed after a call: each
records a change no other state shares (so the turn needs a verification
or a waiver), forces the next snapshot to walk the whole tree, and says why
(``Sync.uncertain``). No error path records "nothing changed".
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from .._errors import CodewardError
from ..verification import MutationLedger, SnapshotTracker, WorkspaceSnapshot
from ..verification._changes import record_changes, record_unknown_change, unknown_digest
from ..verification._snapshot import Change

__all__ = ["EXTERNAL_TOOL", "Sync", "WorkspaceObserver"]

# The ledger's name for changes made between the session's calls, by no call of its own.
EXTERNAL_TOOL = "external"


@dataclass(frozen=True)
class Sync:
    """What one sync saw: the changes it booked, how the snapshot was taken, and why (if so)
    it could not vouch for the result (then the workspace counts as changed)."""

    changes: tuple[Change, ...] = ()
    incremental: bool = False
    directories_read: int = 0
    fallback: str | None = None
    uncertain: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, object]:
        return {
            "incremental": self.incremental,
            "directories_read": self.directories_read,
            "fallback": self.fallback,
            "uncertain": list(self.uncertain),
            "changed": len(self.changes),
        }


class WorkspaceObserver:
    """The baseline snapshot of one session's workspace and the syncs that move it."""

    def __init__(
        self,
        root: str,
        ledger: MutationLedger,
        tracker: object,  # a callable returning the session's SnapshotTracker or None
    ) -> None:
        self._root = root
        self._ledger = ledger
        self._tracker = tracker
        self._lock = threading.Lock()
        self._baseline: WorkspaceSnapshot | None = None
        # who was running when a snapshot failed: what the next one finds is booked to it
        self._lost_by: str | None = None

    @property
    def tracked(self) -> bool:
        """Whether snapshots are incremental (a tracker exists): a sync is then cheap."""
        return self._current_tracker() is not None

    def _current_tracker(self) -> SnapshotTracker | None:
        tracker = self._tracker()  # type: ignore[operator]
        return tracker if isinstance(tracker, SnapshotTracker) else None

    def sync(
        self,
        tool: str,
        *,
        walk: str | None = None,
        uncertain: str | None = None,
        may_write: bool = True,
        ignore: Callable[[str], bool] | None = None,
    ) -> Sync:
        """Books every difference between the baseline and the workspace now to ``tool``.

        ``walk`` asks for a walk of the whole tree (the caller knows something
        events cannot show). ``uncertain`` says the caller itself lost
        certainty (a forced kill, a process that outlived its command): the
        change is booked as unknown, and the next snapshot walks too.
        ``may_write`` is False for a sync where no call ran since the last one
        (a directory that stays unreadable is then not booked again).
        ``ignore`` leaves out paths someone else accounts for (a check's
        declared outputs).
        """
        with self._lock:
            reasons: list[str] = []
            if uncertain is not None:
                reasons.append(uncertain)
            tracker = self._current_tracker()
            try:
                if tracker is not None:
                    after = tracker.snapshot(walk=walk or uncertain)
                else:
                    after = WorkspaceSnapshot.take(self._root)
            except (CodewardError, OSError) as exc:
                why = f"the workspace snapshot failed: {exc}"
                self._lost_by = self._lost_by or tool
                record_unknown_change(self._ledger, tool=self._lost_by)
                if tracker is not None:
                    tracker.force_walk(why)
                # the baseline stays: the next snapshot that succeeds is compared with it,
                # so what changed meanwhile is named then
                return Sync((Change(".", "modified", "directory"),), uncertain=(*reasons, why))
            if after.uncertain is not None and (may_write or not after.uncertainty_is_standing):
                reasons.append(after.uncertain)
            before, self._baseline = self._baseline, after
            tool, self._lost_by = self._lost_by or tool, None
            changes: list[Change] = []
            if before is not None:
                if before.complete and after.complete:
                    changes = before.diff(after)
                    if ignore is not None:
                        changes = [c for c in changes if not ignore(c.path)]
                    record_changes(self._ledger, self._root, changes, tool=tool)
                elif may_write or before.complete != after.complete:
                    # a standing condition: it counts after a call that could write
                    reasons.append("the snapshot is incomplete (too many entries or too deep)")
            blind = self._blind(before, after, tool, may_write)
            changes.extend(c for c, _ in blind)
            if reasons:
                if not any(c.path == "." for c in changes):
                    changes.append(record_unknown_change(self._ledger, tool=tool))
                if tracker is not None and uncertain is not None:
                    tracker.force_walk(uncertain)
            return Sync(
                tuple(changes),
                after.incremental,
                after.directories_read,
                after.fallback,
                tuple(dict.fromkeys([*reasons, *(why for _, why in blind)])),
            )

    def _blind(
        self,
        before: WorkspaceSnapshot | None,
        after: WorkspaceSnapshot,
        tool: str,
        may_write: bool,
    ) -> list[tuple[Change, str]]:
        """Directories that cannot be listed: what is inside them is unknown. One that became
        unreadable, or changed, or stayed unreadable while a call could write into it by name,
        is booked with a digest no other state shares."""
        booked: list[tuple[Change, str]] = []
        for path in sorted(after.unreadable):
            was_blind = before is not None and path in before.unreadable
            same = before is not None and before.state(path) == after.state(path)
            if was_blind and same and not may_write:
                continue
            self._ledger.record(tool, path, unknown_digest())
            why = f"{path} cannot be listed: what is inside it is unknown"
            booked.append((Change(path, "modified", "directory"), why))
        return booked

    def reset(self) -> None:
        """Forgets the baseline (the next sync only takes one)."""
        with self._lock:
            self._baseline = None
