"""The event's mode (issue 23): live or rehearsal, in the one-row ``event_mode`` table.

Each change is one conditional write (``WHERE mode = …``): of two concurrent
go-lives exactly one wins, and a miss is a normal outcome the service names.
Going live and cancelling the rehearsal's waiting jobs are one transaction: the
cancel is guarded on the mode having just changed (its ``since``), so a go-live
that lost the race cancels nothing. Jobs take their ``rehearsal`` flag from this
table inside their own INSERT (``edgeprint.store.jobs``), so a job is made in
exactly the mode in force when it committed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from edgeprint.states import Action, JobState, sources
from edgeprint.store.guards import ON_PRINTER, in_list
from edgeprint.store.interface import Row, Store

Mode = Literal["live", "rehearsal"]

#: What go-live cancels at once: every source of a cancel but a printer's (PRINTING jobs
#: finish as what they were made as).
CANCELLED_AT_GO_LIVE = tuple(s for s in sources(Action.CANCEL) if s not in ON_PRINTER)
#: The reason a go-live writes on the jobs it cancels (their event rows say it).
GO_LIVE_REASON = "rehearsal_ended"

_SET_MODE = (
    "UPDATE event_mode SET mode = ?, since = ?, actor = ? WHERE id = 1 AND mode = ? "
    "RETURNING mode, since, actor"
)
_CANCEL_REHEARSAL = (
    f"UPDATE jobs SET state = '{JobState.CANCELLED.value}', updated_at = ?, finished_at = ?, "
    f"finished_run = ?, actor = ?, reason = '{GO_LIVE_REASON}', last_error = ? "
    f"WHERE rehearsal = 1 AND state IN ({in_list(CANCELLED_AT_GO_LIVE)}) "
    "AND EXISTS (SELECT 1 FROM event_mode WHERE id = 1 AND mode = 'live' AND since = ?) "
    "RETURNING id"
)


@dataclass(frozen=True)
class EventMode:
    """The event's mode, since when (unix seconds; None: since the store began), and who."""

    mode: Mode
    since: float | None
    actor: str


@dataclass(frozen=True)
class WentLive:
    """A go-live: the new mode, and the rehearsal jobs it cancelled."""

    mode: EventMode
    cancelled: list[str]


class EventModes:
    """Queries on ``event_mode`` (and the go-live's cancel on ``jobs``) of one :class:`Store`."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def current(self) -> EventMode:
        rows = await self._store.read("SELECT mode, since, actor FROM event_mode WHERE id = 1")
        return _mode(rows[0])

    async def start_rehearsal(self, *, now: float, actor: str) -> EventMode | None:
        """live → rehearsal; None when the event is not live (already in a rehearsal)."""
        rows = await self._store.write(_SET_MODE, ("rehearsal", now, actor, "live"))
        return _mode(rows[0]) if rows else None

    async def go_live(
        self, *, now: float, actor: str, why: str, run: float | None = None
    ) -> WentLive | None:
        """rehearsal → live, and the rehearsal's HELD, RELEASED and DEAD jobs → CANCELLED
        (``why`` as their last_error), in one transaction; None when not in rehearsal."""
        changed, cancelled = await self._store.write_many(
            [
                (_SET_MODE, ("live", now, actor, "rehearsal")),
                (_CANCEL_REHEARSAL, (now, now, now if run is None else run, actor, why, now)),
            ]
        )
        if not changed:
            return None
        return WentLive(_mode(changed[0]), [str(r[0]) for r in cancelled])

    async def config_mode(self) -> str | None:
        """The ``[event] mode`` applied at the last start that changed it (None: never)."""
        rows = await self._store.read("SELECT config_mode FROM event_mode WHERE id = 1")
        return None if rows[0][0] is None else str(rows[0][0])

    async def note_config_mode(self, mode: Mode) -> None:
        await self._store.write("UPDATE event_mode SET config_mode = ? WHERE id = 1", (mode,))


def _mode(row: Row) -> EventMode:
    mode: Mode = "rehearsal" if row[0] == "rehearsal" else "live"
    since = None if row[1] is None else float(row[1])
    return EventMode(mode=mode, since=since, actor=str(row[2]))
