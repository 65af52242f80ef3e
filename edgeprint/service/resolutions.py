"""A technician settles what edgeprint could not know (issue 17): printed, not printed, the rest."""

from __future__ import annotations

import logging

from edgeprint import errors
from edgeprint.documents import ladder
from edgeprint.logs import log_event
from edgeprint.service.records import Caller, JobRecord
from edgeprint.service.shared import Shared
from edgeprint.states import JobState

#: One logger for every part of the service: the name log readers filter on (issue 28 split it).
log = logging.getLogger("edgeprint.service.jobs")


class Resolutions:
    """A technician settles what edgeprint could not know (issue 17)."""

    def __init__(self, shared: Shared) -> None:
        self._s = shared

    async def resolve(
        self, job_id: str, caller: Caller, *, printed: bool, rest: bool = False
    ) -> JobRecord:
        """A technician settles a DEAD ``outcome_unknown`` job: printed → DONE, else RELEASED.

        "Not printed" makes it printable once more, like a replay. Of concurrent
        resolutions (either way) exactly one wins. The event row records the
        technician (actor) and the decision (reason). Raises errors.JobNotFound,
        errors.OutcomeNotUnknown (any other job, or a lost race).
        """
        now = self._s.clock()
        if rest:
            return await self._resolve_rest(job_id, caller)
        if printed:
            job = await self._s.jobs.resolve_printed(
                job_id,
                now=now,
                actor=caller.name,
                reason="resolved: printed (a technician saw the copy)",
                correlation_id=caller.correlation_id,
            )
        else:
            job = await self._s.jobs.replay(
                job_id,
                now=now,
                actor=caller.name,
                reason="resolved: not printed (a technician found no copy); print again",
                correlation_id=caller.correlation_id,
                unknown_only=True,
            )
        outcome = "printed" if printed else "not_printed"
        if job is None:
            current = await self._s.get(job_id)
            self._s.metrics.transitions.labels(action="resolve", outcome="conflict").inc()
            raise errors.OutcomeNotUnknown(job_id, current.state.value, current.dead_reason)
        self._s.metrics.transitions.labels(action="resolve", outcome="ok").inc()
        log_event(
            log,
            "job_resolved",
            job_id=job_id,
            printed=printed,
            outcome=outcome,
            state=job.state.value,
            actor=caller.name,
            correlation_id=caller.correlation_id,
        )
        if not printed:
            self._s.admission.admitted(job.printer, job.pool)
            self._s.board.wake(job.printer, job.pool)
        return job

    async def _resolve_rest(self, job_id: str, caller: Caller) -> JobRecord:
        """A technician asks for the pages that did not come out: the job is RELEASED to print
        its document from the page after the last one out (one copy jobs, from a copy that
        stopped part-way). Exactly one of concurrent resolutions wins."""
        current = await self._s.get(job_id)
        out, total = current.pages_printed, current.document_pages
        done_before = (current.from_page or 1) - 1  # a rest asked for before
        if (
            current.state is not JobState.DEAD
            or current.dead_reason != "outcome_unknown"
            or not out
            or total is None
            or current.copies != 1
            or done_before + out >= total
        ):
            if current.state is not JobState.DEAD or current.dead_reason != "outcome_unknown":
                raise errors.OutcomeNotUnknown(job_id, current.state.value, current.dead_reason)
            raise errors.CannotPrintRest(job_id, current.state.value, out, total, current.copies)
        if current.document_format != ladder.PDF:  # a raw language is sent whole or not at all
            raise errors.CannotPrintRest(
                job_id,
                current.state.value,
                out,
                total,
                current.copies,
                why=f"its document is {current.document_format}, which is sent unchanged: "
                "print it again whole, or mark it printed",
            )
        now = self._s.clock()
        first = done_before + out + 1
        job = await self._s.jobs.replay(
            job_id,
            now=now,
            actor=caller.name,
            reason=f"resolved: print the rest (pages {first}–{total}; {out} came out)",
            correlation_id=caller.correlation_id,
            from_page=first,
            pages_printed=out,
        )
        if job is None:
            latest = await self._s.get(job_id)
            self._s.metrics.transitions.labels(action="resolve", outcome="conflict").inc()
            raise errors.OutcomeNotUnknown(job_id, latest.state.value, latest.dead_reason)
        self._s.metrics.transitions.labels(action="resolve", outcome="ok").inc()
        log_event(
            log,
            "job_resolved",
            job_id=job_id,
            printed="rest",
            outcome="rest",
            from_page=first,
            state=job.state.value,
            actor=caller.name,
            correlation_id=caller.correlation_id,
        )
        self._s.admission.admitted(job.printer, job.pool)
        self._s.board.wake(job.printer, job.pool)
        return job
