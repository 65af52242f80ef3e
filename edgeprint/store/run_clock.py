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
_BASE = (
    "SELECT max(v) FROM (SELECT run_s AS v FROM store_clock WHERE id = 1 "
    "UNION ALL SELECT max(created_run) FROM jobs "
    "UNION ALL SELECT max(finished_run) FROM jobs "
    "UNION ALL SELECT max(released_run) FROM jobs) AS q"
)

_ADVANCE: dict[Dialect, str] = {
    "sqlite": "UPDATE store_clock SET run_s = max(run_s, ?) WHERE id = 1 RETURNING run_s",
    "postgresql": "UPDATE store_clock SET run_s = GREATEST(run_s, ?) WHERE id = 1 RETURNING run_s",
}


async def base(store: Store) -> float:
    """The run clock to start from. Raises errors.StoreError."""
    rows = await store.read(_BASE)
    value = rows[0][0] if rows else None
    if value is None:  # the migration seeds the row: only a store changed by hand lacks it
        raise ValueError("store_clock has no row: the store was not migrated")
    return float(value)


async def advance(store: Store, run_s: float) -> float:
    """Store ``run_s`` unless the row is ahead; the row's value after (adopt it when ahead).
    Raises errors.StoreError."""
    rows = await store.write(_ADVANCE[store.dialect], (run_s,))
    return float(rows[0][0]) if rows else run_s
