"""The state lists the store's SQL names, each derived from a transition table.

No state is spelled out in a query: a query that means "waiting for a printer"
says :data:`WAITING`, which is whatever ``states.TRANSITIONS`` lets a claim take.
Values are enum members (fixed identifiers), never client input, so they are
written into the SQL text as literals.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

from edgeprint.copies import LIVE_COPY_STATES, CopyAction, CopyState, copy_targets
from edgeprint.states import TERMINAL_STATES, Action, JobState, sources, target


def in_list(states: Iterable[StrEnum]) -> str:
    """``'A', 'B'`` for ``state IN (…)`` (sorted: stable SQL text, one cached statement)."""
    return ", ".join(f"'{s.value}'" for s in sorted(states, key=lambda s: s.value))


def one(states: tuple[JobState, ...]) -> str:
    """The single state of a list as a literal; raises if the tables give several."""
    if len(states) != 1:  # pragma: no cover - tests/test_states.py pins the table
        raise AssertionError(f"expected one state, the tables give {states}")
    return f"'{states[0].value}'"


#: Waiting for a printer: what a claim may take.
WAITING = sources(Action.CLAIM)
#: Held by a printer's worker: what a printer's outcome may settle.
ON_PRINTER = sources(Action.COMPLETE)
#: What a claim makes of a waiting job.
CLAIMED = target(Action.CLAIM)
#: Waiting for a release (and its PIN).
HELD = sources(Action.RELEASE)
#: What the hold TTL expires, and into what.
EXPIRABLE = sources(Action.EXPIRE)
EXPIRED = target(Action.EXPIRE)
#: Parked in the dead-letter queue: what a replay takes.
DEAD = sources(Action.REPLAY)
#: Finished for good (no transition leaves them): documents may be deleted after retention.
FINISHED: frozenset[JobState] = TERMINAL_STATES

#: Copies a printer may still hold.
LIVE_COPIES: frozenset[CopyState] = LIVE_COPY_STATES
#: What a cancel makes of a live copy.
(CANCELLING,) = set(copy_targets(CopyAction.CANCEL).values())
#: A copy not yet requested at the printer (its format may still change).
UNREQUESTED: tuple[CopyState, ...] = tuple(
    src for src, dst in copy_targets(CopyAction.CREATED).items() if dst is not src
)


def leased(printer: str) -> str:
    """The fence of a printer's write: this appliance holds ``printer``'s lease in its epoch.

    ``printer`` is a column (``jobs.printed_on``) or ``?``; the guard's own two marks are
    (owner, epoch). A stale owner's write (its lease taken over, the epoch moved on) then
    matches no row: it changes nothing (DESIGN §10).
    """
    return (
        "EXISTS (SELECT 1 FROM printer_leases l "
        f"WHERE l.printer = {printer} AND l.owner = ? AND l.epoch = ?)"
    )


#: Fence of a write on a job held by a printer (``jobs.printed_on``).
LEASED_JOB = leased("jobs.printed_on")
#: Fence of a write on a copy (``copies.printer``).
LEASED_COPY = leased("copies.printer")
#: Fence of a claim for the printer bound first (one ``?`` for the printer's name).
LEASED_PRINTER = leased("?")


def fenced(sql: str, guard: str) -> str:
    """``sql`` (a conditional write whose marks all precede ``RETURNING``) with ``AND guard``
    at the end of its WHERE, so the guard's marks are bound last."""
    head, sep, tail = sql.rpartition("RETURNING")
    if not sep:  # pragma: no cover - every fenced statement returns its row
        raise AssertionError(f"cannot fence a statement without RETURNING: {sql!r}")
    return f"{head.rstrip()} AND {guard} RETURNING{tail}"
