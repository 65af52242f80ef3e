"""Reads of job rows: one job, listings, counts, queues (each selects :data:`ROW`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from edgeprint.copies import ORIGIN_REQUESTED, CopyState
from edgeprint.records import JobRecord
from edgeprint.states import JobState
from edgeprint.store.guards import CANCELLING, DEAD, FINISHED, ON_PRINTER, WAITING, in_list
from edgeprint.store.interface import Store

#: What every read of a job selects (and every write returns): its columns, then the
#: facts computed from its copies (the last two fields of :class:`JobRecord`). The job's id
#: is CAST in the subqueries: SQLite (3.40) plans a RETURNING clause's correlated subquery
#: on a bare ``jobs.id`` as a scan of every copy (13 ms a write at 60,000 copies, found by
#: the soak); with the CAST it searches ``copies_by_job``.
_JOB_ID = "CAST(jobs.id AS TEXT)"
ROW = (
    f"*, (jobs.state IN ({in_list(ON_PRINTER)}) AND EXISTS (SELECT 1 FROM copies c "
    f"WHERE c.job_id = {_JOB_ID} AND c.claim = jobs.claims "
    f"AND c.state = '{CANCELLING.value}' "
    f"AND c.cancel_origin = '{ORIGIN_REQUESTED}')) AS cancel_requested, "
    f"(SELECT count(*) FROM copies c WHERE c.job_id = {_JOB_ID} "
    f"AND c.state = '{CopyState.INCOMPLETE.value}') AS truncated_copies"
)


@dataclass(frozen=True, slots=True)
class EventRecord:
    """One row of ``job_events``."""

    seq: int
    job_id: str
    at: float
    from_state: JobState | None
    to_state: JobState
    actor: str
    reason: str | None
    correlation_id: str | None


def like_escape(text: str) -> str:
    """``text`` as a LIKE pattern that matches itself (escape character ``\\``)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class JobReads:
    """Reads of the ``jobs`` and ``job_events`` tables of one :class:`Store`."""

    def __init__(self, store: Store) -> None:
        self._store = store

    @property
    def store(self) -> Store:
        """The store these queries run on (shared with :class:`~edgeprint.store.copies.Copies`)."""
        return self._store

    async def printing_on(self, printer: str) -> list[JobRecord]:
        """Jobs PRINTING on ``printer``, oldest claim first."""
        rows = await self._store.read(
            f"SELECT {ROW} FROM jobs WHERE state IN ({in_list(ON_PRINTER)}) AND printed_on = ? "
            "ORDER BY claimed_at",
            (printer,),
        )
        return [JobRecord.from_row(r) for r in rows]

    async def get(self, job_id: str) -> JobRecord | None:
        """The job with this id, or None. Raises errors.StoreUnavailable."""
        rows = await self._store.read(f"SELECT {ROW} FROM jobs WHERE id = ?", (job_id,))
        return JobRecord.from_row(rows[0]) if rows else None

    async def get_by_key(self, idempotency_key: str) -> JobRecord | None:
        """The job stored under this Idempotency-Key, or None."""
        rows = await self._store.read(
            f"SELECT {ROW} FROM jobs WHERE idempotency_key = ?", (idempotency_key,)
        )
        return JobRecord.from_row(rows[0]) if rows else None

    async def list_jobs(
        self,
        *,
        state: JobState | None = None,
        owner: str | None = None,
        printer: str | None = None,
        before_seq: int | None = None,
        limit: int = 50,
        idempotency_key: str | None = None,
        id_prefix: str | None = None,
        owner_contains: str | None = None,
    ) -> list[JobRecord]:
        """Jobs newest first, filtered; ``before_seq`` pages (exclusive).

        Search (issue 24): ``idempotency_key`` exact; ``id_prefix`` the id's first hex
        characters (checked by the caller: lowercase hex only); ``owner_contains`` a
        substring of the owner, case-insensitive (LIKE wildcards in it are matched as
        themselves).
        """
        where: list[str] = []
        params: list[Any] = []
        if idempotency_key is not None:
            where.append("idempotency_key = ?")
            params.append(idempotency_key)
        if id_prefix is not None:
            where.append("id LIKE ?")
            params.append(id_prefix + "%")
        if owner_contains is not None:
            where.append("lower(owner) LIKE ? ESCAPE '\\'")
            params.append("%" + like_escape(owner_contains.lower()) + "%")
        if state is not None:
            where.append("state = ?")
            params.append(state.value)
        if owner is not None:
            where.append("owner = ?")
            params.append(owner)
        if printer is not None:
            where.append("(printer = ? OR printed_on = ?)")
            params.extend([printer, printer])
        if before_seq is not None:
            where.append("seq < ?")
            params.append(before_seq)
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        params.append(limit)
        rows = await self._store.read(
            f"SELECT {ROW} FROM jobs {clause} ORDER BY seq DESC LIMIT ?", tuple(params)
        )
        return [JobRecord.from_row(r) for r in rows]

    async def events(self, job_id: str) -> list[EventRecord]:
        """The job's event history, oldest first."""
        rows = await self._store.read(
            "SELECT * FROM job_events WHERE job_id = ? ORDER BY seq", (job_id,)
        )
        out = []
        for r in rows:
            d = dict(r)
            d["from_state"] = JobState(d["from_state"]) if d["from_state"] else None
            d["to_state"] = JobState(d["to_state"])
            out.append(EventRecord(**d))
        return out

    async def count_by_state(
        self, *, rehearsal: bool = False, since: float | None = None
    ) -> dict[JobState, int]:
        """Number of live jobs (or, with ``rehearsal``, rehearsal jobs) in each state (every
        state present, zero if none); ``since``: only jobs made from then on."""
        rows = await self._store.read(
            "SELECT state, count(*) FROM jobs WHERE rehearsal = ? AND created_at >= ? "
            "GROUP BY state",
            (int(rehearsal), since if since is not None else 0.0),
        )
        counts = dict.fromkeys(JobState, 0)
        for r in rows:
            counts[JobState(r[0])] = int(r[1])
        return counts

    async def ids_with_documents(self, ids: set[str]) -> set[str]:
        """Those of ``ids`` that are jobs whose document has not been deleted."""
        out: set[str] = set()
        chunk = list(ids)
        for i in range(0, len(chunk), 500):
            part = chunk[i : i + 500]
            marks = ", ".join("?" for _ in part)
            rows = await self._store.read(
                f"SELECT id FROM jobs WHERE id IN ({marks}) AND document_deleted_at IS NULL",
                tuple(part),
            )
            out.update(str(r[0]) for r in rows)
        return out

    async def waiting_depths(self) -> dict[tuple[str | None, str | None], int]:
        """RELEASED jobs by (printer, pool) target: the waiting depth of each queue."""
        rows = await self._store.read(
            "SELECT printer, pool, count(*) FROM jobs "
            f"WHERE state IN ({in_list(WAITING)}) GROUP BY 1, 2"
        )
        return {(r[0], r[1]): int(r[2]) for r in rows}

    async def oldest_waiting(self) -> dict[tuple[str | None, str | None], float]:
        """The oldest release (run-clock seconds, ``released_run``) of each (printer, pool)
        queue: compare with the run clock now, which no wall-clock step moves."""
        rows = await self._store.read(
            "SELECT printer, pool, min(released_run) FROM jobs "
            f"WHERE state IN ({in_list(WAITING)}) "
            "GROUP BY 1, 2"
        )
        return {(r[0], r[1]): float(r[2]) for r in rows if r[2] is not None}

    async def dead_letters(self, *, after_seq: int = 0, limit: int = 100) -> list[JobRecord]:
        """DEAD jobs, oldest first; ``after_seq`` pages forwards (exclusive)."""
        rows = await self._store.read(
            f"SELECT {ROW} FROM jobs WHERE state IN ({in_list(DEAD)}) AND seq > ? "
            "ORDER BY seq LIMIT ?",
            (after_seq, limit),
        )
        return [JobRecord.from_row(r) for r in rows]

    async def retention_due(self, finished_before: float, limit: int = 500) -> list[str]:
        """Terminal jobs (not DEAD: replayable) finished before the cut (run clock) whose
        document remains."""
        rows = await self._store.read(
            f"SELECT id FROM jobs WHERE state IN ({in_list(FINISHED)}) "
            "AND finished_run <= ? AND document_deleted_at IS NULL ORDER BY finished_run LIMIT ?",
            (finished_before, limit),
        )
        return [str(r[0]) for r in rows]
