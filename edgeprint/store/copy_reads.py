"""Reads of copy rows: one copy, a job's copies, a printer's live copies and known job-ids."""

from __future__ import annotations

from edgeprint.copies import Copy, CopyState
from edgeprint.store.guards import LIVE_COPIES, in_list
from edgeprint.store.interface import Row, Store

_LIVE_SQL = in_list(LIVE_COPIES)
_COLUMNS = tuple(Copy.__dataclass_fields__)


def copy_from_row(row: Row) -> Copy:
    """The :class:`Copy` of a ``SELECT *`` / ``RETURNING *`` row of ``copies``."""
    d = {k: row[k] for k in _COLUMNS}
    d["state"] = CopyState(d["state"])
    return Copy(**d)


class CopyReads:
    """Reads of the ``copies`` table of one :class:`Store`."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def get(self, copy_id: int) -> Copy | None:
        rows = await self._store.read("SELECT * FROM copies WHERE id = ?", (copy_id,))
        return copy_from_row(rows[0]) if rows else None

    async def of_job(self, job_id: str) -> list[Copy]:
        """Every copy of the job, oldest first."""
        rows = await self._store.read(
            "SELECT * FROM copies WHERE job_id = ? ORDER BY id", (job_id,)
        )
        return [copy_from_row(r) for r in rows]

    async def open_on(self, printer: str) -> list[Copy]:
        """Live copies on ``printer`` (anything it may still hold), oldest first."""
        rows = await self._store.read(
            f"SELECT * FROM copies WHERE printer = ? AND state IN ({_LIVE_SQL}) ORDER BY id",
            (printer,),
        )
        return [copy_from_row(r) for r in rows]

    async def known_printer_jobs(
        self, printer: str, epoch: int | None = None
    ) -> set[tuple[int, int | None]]:
        """(job-id, time-at-creation) of the copies on ``printer`` whose job-id is known.

        A printer reuses job-ids after a restart, so a job is "known" by both
        (``None`` for a copy whose time-at-creation was never learnt); with ``epoch``,
        only copies made in that epoch (or before epochs were recorded) count.
        """
        if epoch is None:
            rows = await self._store.read(
                "SELECT printer_job_id, created_s FROM copies "
                "WHERE printer = ? AND printer_job_id IS NOT NULL",
                (printer,),
            )
        else:
            rows = await self._store.read(
                "SELECT printer_job_id, created_s FROM copies "
                "WHERE printer = ? AND printer_job_id IS NOT NULL "
                "AND (epoch = ? OR epoch IS NULL)",
                (printer, epoch),
            )
        return {(int(r[0]), None if r[1] is None else int(r[1])) for r in rows}
