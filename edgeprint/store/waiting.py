"""Released jobs waiting for stock: grouped by target and page size, and marked with why.

``waiting_reason`` is a note on a RELEASED job (no state change): set while no printer of
its target has stock its pages fit, cleared when it is claimed (the claim sets it NULL)
or when stock that fits is seen. A job that begins to wait is put in the webhook outbox
as ``job.waiting`` (when anyone subscribed).
"""

from __future__ import annotations

from dataclasses import dataclass

from edgeprint.states import JobState
from edgeprint.stock import PageSizes
from edgeprint.store.interface import Store

_WAITING = f"'{JobState.RELEASED.value}'"
_SAME_GROUP = (
    "printer IS NOT DISTINCT FROM ? AND pool IS NOT DISTINCT FROM ? "
    "AND page_short_min = ? AND page_short_max = ? AND page_long_min = ? AND page_long_max = ? "
    "AND coalesce(page_landscape, 0) = ?"
)


@dataclass(frozen=True, slots=True)
class Group:
    """Released jobs of one target and one size, and the reason stored on them (the most
    recent one of the group when they differ)."""

    printer: str | None
    pool: str | None
    sizes: PageSizes
    jobs: int
    reason: str | None


class Waiting:
    """Queries on released jobs' page sizes and waiting reasons."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def groups(self) -> list[Group]:
        """Released jobs with known sizes, by (printer, pool, sizes)."""
        rows = await self._store.read(
            "SELECT printer, pool, page_short_min, page_short_max, page_long_min, "
            "page_long_max, count(*), max(waiting_reason), "
            "count(DISTINCT coalesce(waiting_reason, '')), coalesce(page_landscape, 0) FROM jobs "
            f"WHERE state = {_WAITING} AND page_short_min IS NOT NULL "
            "GROUP BY printer, pool, page_short_min, page_short_max, page_long_min, page_long_max, "
            "coalesce(page_landscape, 0)"
        )
        out = []
        for r in rows:
            # jobs of one group with different reasons (some marked, some not yet): the
            # group is marked again
            reason = r[7] if int(r[8]) == 1 else "\0mixed"
            sizes = PageSizes(int(r[2]), int(r[3]), int(r[4]), int(r[5]), bool(r[9]))
            out.append(Group(r[0], r[1], sizes, int(r[6]), reason))
        return out

    async def mark(
        self,
        printer: str | None,
        pool: str | None,
        sizes: PageSizes,
        reason: str | None,
        *,
        now: float,
    ) -> list[str]:
        """Set the group's waiting reason (None clears it); the ids of jobs that had none
        and now have one (they begin to wait)."""
        key = (
            printer,
            pool,
            sizes.short_min,
            sizes.short_max,
            sizes.long_min,
            sizes.long_max,
            int(sizes.landscape),
        )
        began: list[str] = []
        if reason is not None:
            rows = await self._store.write(
                f"UPDATE jobs SET waiting_reason = ?, updated_at = ? WHERE state = {_WAITING} "
                f"AND waiting_reason IS NULL AND {_SAME_GROUP} RETURNING id",
                (reason, now, *key),
            )
            began = [str(r[0]) for r in rows]
        await self._store.write(
            f"UPDATE jobs SET waiting_reason = ?, updated_at = ? WHERE state = {_WAITING} "
            f"AND waiting_reason IS NOT NULL AND waiting_reason IS DISTINCT FROM ? "
            f"AND {_SAME_GROUP}",
            (reason, now, reason, *key),
        )
        return began

    async def webhook(
        self, event_id: str, job_id: str, printer: str | None, at: float, data: str
    ) -> bool:
        """A ``job.waiting`` event in the webhook outbox, if anyone subscribed to it."""
        rows = await self._store.write(
            "INSERT INTO webhook_outbox (id, type, at, job_id, printer, data) "
            "SELECT ?, 'job.waiting', ?, ?, ?, ? WHERE EXISTS "
            "(SELECT 1 FROM webhook_subscriptions WHERE event = 'job.waiting') RETURNING seq",
            (event_id, at, job_id, printer, data),
        )
        return bool(rows)
