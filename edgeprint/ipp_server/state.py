"""What the IPP operations share: the service, the printers' view, the clocks, the pending
Create-Jobs, and the ids and job-names this process gave jobs; a queue's stored jobs as
its IPP clients name them.

IPP job ids: a stored job's ``job-id`` is its acceptance sequence number (``seq``); a
job stored from a Create-Job keeps that Create-Job's id (:mod:`.pending`) for this
process's life (DESIGN §11).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from edgeprint.ipp.codec import IppMessage
from edgeprint.ipp.names import GroupTag, Status
from edgeprint.ipp.values import AttributeGroup
from edgeprint.ipp_server import attributes as A
from edgeprint.ipp_server.pending import PENDING_BASE, PendingJobs, created_key
from edgeprint.ipp_server.request import Context, refuse
from edgeprint.printers.health import PrinterSnapshot
from edgeprint.records import JobRecord
from edgeprint.service import JobService

#: Get-Jobs looks at this many of the newest jobs at most.
GET_JOBS_SCAN = 500
#: The job attributes of a Print-Job or Send-Document answer.
SHORT_JOB = {"job-id", "job-uri", "job-uuid", "job-state", "job-state-reasons", "job-state-message"}


@dataclass
class _Names:
    """What this process knows beyond the store: Create-Job ids and job-names."""

    ipp_ids: dict[str, int] = field(default_factory=dict)  # edgeprint id → Create-Job id
    by_ipp_id: dict[int, str] = field(default_factory=dict)
    job_names: dict[str, str] = field(default_factory=dict)


class ServerState:
    """The queues' shared state over one JobService."""

    def __init__(
        self,
        service: JobService,
        printers: Callable[[], list[PrinterSnapshot]],
        *,
        clock: Callable[[], float] = time.time,
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        self.service = service
        self.printers = printers
        self.clock = clock
        self.up_since = clock()
        #: For durations (a pending Create-Job's time-out): no wall-clock step moves it.
        self.pending = PendingJobs(self.up_since, timer)
        self._names = _Names()

    def remember(self, job: JobRecord, ipp_id: int, name: str | None) -> None:
        """The id a Create-Job gave ``job`` and its job-name, for this life: a retried
        job-uuid is the same job, its listings keep the first Create-Job's id and name,
        and this client's id names it too."""
        self._names.ipp_ids.setdefault(job.id, ipp_id)
        self._names.by_ipp_id[ipp_id] = job.id
        if name is not None:
            self._names.job_names.setdefault(job.id, name)

    def name(self, job: JobRecord, name: str) -> None:
        """The job-name a Print-Job gave ``job`` (its listings show it for this life)."""
        self._names.job_names[job.id] = name

    def named(self, ipp_id: int) -> bool:
        """True when ``ipp_id`` names a stored job (a seq, or a Create-Job's id of this life)."""
        return ipp_id in self._names.by_ipp_id or 0 < ipp_id < PENDING_BASE

    async def find(self, ipp_id: int, ctx: Context) -> JobRecord:
        """The stored job with this IPP job-id on this queue; IppRefused not-found otherwise."""
        job_id = self._names.by_ipp_id.get(ipp_id)
        job: JobRecord | None
        if job_id is not None:
            job = await self.service.get(job_id)
        elif 0 < ipp_id < PENDING_BASE:
            job = await self.service.views.job_by_seq(ipp_id)
        else:
            job = await self.service.views.job_by_idempotency_key(created_key(ipp_id))
            if job is not None:
                self._names.ipp_ids.setdefault(job.id, ipp_id)
                self._names.by_ipp_id[ipp_id] = job.id
        if job is None or not on_queue(job, ctx.queue):
            raise refuse(Status.CLIENT_ERROR_NOT_FOUND, f"no job {ipp_id} on this queue", "job-id")
        return job

    async def queue_jobs(self, queue: A.Queue, owner: str | None = None) -> list[JobRecord]:
        """The newest jobs of ``queue`` (of ``owner``), at most GET_JOBS_SCAN looked at."""
        printer = queue.name if queue.kind == "printer" else None
        jobs = await self.service.views.recent_jobs(
            printer=printer, owner=owner, limit=GET_JOBS_SCAN
        )
        return [j for j in jobs if on_queue(j, queue)]

    def job_group(
        self,
        ctx: Context,
        job: JobRecord,
        response: IppMessage,
        requested: set[str] | None,
        ipp_id: int | None = None,
    ) -> None:
        """The job's attributes; ``ipp_id``: the id the client knows it by, if not the usual."""
        if ipp_id is None:
            ipp_id = self._names.ipp_ids.get(job.id, job.seq)
        name = self._names.job_names.get(job.id) or job.title
        attrs = A.job_attributes(ctx.queue, job, ipp_id, name)
        response.groups.append(AttributeGroup(GroupTag.JOB, A.select(attrs, requested)))


def on_queue(job: JobRecord, queue: A.Queue) -> bool:
    """True when ``job`` belongs to ``queue`` (a pool's: its own, or a member's unpooled)."""
    if queue.kind == "pool":
        return job.pool == queue.name or (job.pool is None and job.printer in queue.members)
    return job.printer == queue.name or job.printed_on == queue.name


#: An operation: the shared state, the request, its context, the response to fill.
Handler = Callable[[ServerState, IppMessage, Context, IppMessage], Awaitable[None]]
