"""The stored run clock (``store_clock``, issue 27 §3): the base an appliance's
:class:`edgeprint.clock.RunClock` starts from, and its regular advance.

The row only ever moves forward. On PostgreSQL every appliance on the store advances the
same row and adopts its value when it is ahead, so they agree within a tick and the clock
advances at the real rate while any of them runs.
"""

from __future__ import annotations

from edgeprint.store.interface import Dialect, Store

#: The latest run-clock reading the store holds: the row, or a job accepted or finished after
#: the last tick was written (a power cut may lose the last tick, never a committed job).
_EVERY_JOB = (
    "SELECT max(v) FROM (SELECT run_s AS v FROM store_clock WHERE id = 1 "
    "UNION ALL SELECT max(created_run) FROM jobs "
    "UNION ALL SELECT max(finished_run) FROM jobs "
    "UNION ALL SELECT max(released_run) FROM jobs) AS q"
)

#: Events read back by :data:`_RECENT_JOBS`: more than one group commit's statements.
RECENT_EVENTS = 1000

#: The same on SQLite without reading every job (a full scan of each column: ~100 ms of CPU at
#: 100,000 jobs, at every start). One appliance writes a SQLite store, and its run clock never
#: goes back (it starts from this base), so the latest stamps are on the jobs of the latest
#: events: every insert and state change writes one (the job_events triggers), and the stamps
#: are taken in the same statements. A batch's statements may carry stamps a few
#: milliseconds out of order: the window spans many batches.
_RECENT_JOBS = (
    "SELECT max(v) FROM (SELECT run_s AS v FROM store_clock WHERE id = 1 "
    "UNION ALL SELECT max(max(coalesce(created_run, 0), coalesce(finished_run, 0), "
    "coalesce(released_run, 0))) FROM jobs WHERE id IN "
    f"(SELECT job_id FROM job_events ORDER BY seq DESC LIMIT {RECENT_EVENTS})) AS q"
)

#: On PostgreSQL several appliances stamp jobs, each with its own clock: every job is read.
_BASE: dict[Dialect, str] = {"sqlite": _RECENT_JOBS, "postgresql": _EVERY_JOB}

_ADVANCE: dict[Dialect, str] = {
    "sqlite": "UPDATE store_clock SET run_s = max(run_s, ?) WHERE id = 1 RETURNING run_s",
    "postgresql": "UPDATE store_clock SET run_s = GREATEST(run_s, ?) WHERE id = 1 RETURNING run_s",
}


async def base(store: Store) -> float:
    """The run clock to start from. Raises errors.StoreError."""
    rows = await store.read(_BASE[store.dialect])
    value = rows[0][0] if rows else None
    if value is None:  # the migration seeds the row: only a store changed by hand lacks it
        raise ValueError("store_clock has no row: the store was not migrated")
    return float(value)


async def advance(store: Store, run_s: float) -> float:
    """Store ``run_s`` unless the row is ahead; the row's value after (adopt it when ahead).
    Raises errors.StoreError."""
    rows = await store.write(_ADVANCE[store.dialect], (run_s,))
    return float(rows[0][0]) if rows else run_s
