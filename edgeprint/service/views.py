"""What the front doors read: jobs, dead letters, counts and the waiting queues."""

from __future__ import annotations

from dataclasses import dataclass

from edgeprint.service.records import JobRecord, JobStats
from edgeprint.service.shared import Shared
from edgeprint.states import JobState
from edgeprint.store import stats as store_stats


@dataclass(frozen=True)
class Queues:
    """The waiting queues: depths and the oldest release time, keyed by (printer, pool);
    ``oldest_waiting`` and ``at`` are run-clock seconds (edgeprint.clock): only ages mean
    anything."""

    waiting: dict[tuple[str | None, str | None], int]
    oldest_waiting: dict[tuple[str | None, str | None], float]
    at: float


class Views:
    """What the front doors read: jobs, dead letters, counts and the waiting queues."""

    def __init__(self, shared: Shared) -> None:
        self._s = shared

    async def list_jobs(
        self,
        *,
        state: JobState | None = None,
        owner: str | None = None,
        printer: str | None = None,
        before_seq: int | None = None,
        limit: int = 50,
    ) -> list[JobRecord]:
        """Jobs newest first, optionally filtered; ``before_seq`` pages on from a cursor."""
        return await self._s.jobs.list_jobs(
            state=state, owner=owner, printer=printer, before_seq=before_seq, limit=limit
        )

    async def dead_letters(self, *, after_seq: int = 0, limit: int = 100) -> list[JobRecord]:
        """DEAD jobs, oldest first, after the cursor ``after_seq``."""
        return await self._s.jobs.dead_letters(after_seq=after_seq, limit=limit)

    async def jobs_by_state(
        self, *, rehearsal: bool = False, since: float | None = None
    ) -> dict[JobState, int]:
        """How many live jobs (with ``rehearsal``: rehearsal jobs; ``since``: made from then
        on) are in each state now."""
        return await self._s.jobs.count_by_state(rehearsal=rehearsal, since=since)

    async def queues(self) -> Queues:
        """The waiting queues, keyed by (printer, None) and (None, pool), read now."""
        depths = await self._s.jobs.waiting_depths()
        oldest = await self._s.jobs.oldest_waiting()
        return Queues(depths, oldest, self._s.run())  # ages on the run clock (issue 27)

    async def stats(self) -> JobStats:
        """Jobs by state, dead letters by reason and the waiting queues, read now."""
        counts = await self._s.jobs.count_by_state()
        dead = await store_stats.dead_by_reason(self._s.jobs.store)
        depths = await self._s.jobs.waiting_depths()
        oldest = await self._s.jobs.oldest_waiting()
        return JobStats(counts, dead, depths, oldest, self._s.run())  # ages: run clock

    async def job_by_seq(self, seq: int) -> JobRecord | None:
        """The job with acceptance sequence number ``seq`` (its IPP job-id), or None."""
        jobs = await self._s.jobs.list_jobs(before_seq=seq + 1, limit=1)
        return jobs[0] if jobs and jobs[0].seq == seq else None

    async def recent_jobs(
        self, *, printer: str | None = None, owner: str | None = None, limit: int = 50
    ) -> list[JobRecord]:
        """The newest jobs (newest first), optionally for one printer and one owner."""
        return await self._s.jobs.list_jobs(printer=printer, owner=owner, limit=limit)

    async def job_by_idempotency_key(self, key: str) -> JobRecord | None:
        """The job submitted with Idempotency-Key ``key``, or None."""
        return await self._s.jobs.get_by_key(key)
