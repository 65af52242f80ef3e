"""How a printer's worker settles what it holds (DESIGN §3): the judge and retry/poison policy
under this config, and the job's own transitions a printer's outcome makes (DONE, DEAD,
CANCELLED, back to RELEASED).
"""

from __future__ import annotations

import logging

from edgeprint.backoff import Backoff
from edgeprint.copies import Copy, CopyState, Kind, Policy, Verdict
from edgeprint.copy_policy import judge, on_failure
from edgeprint.logs import log_event
from edgeprint.service.records import JobRecord, PrinterJobReport, job_facts
from edgeprint.service.shared import Shared
from edgeprint.store import units

#: One logger for every part of the service: the name log readers filter on (issue 28 split it).
log = logging.getLogger("edgeprint.service.jobs")


class Outcomes:
    """How a printer's worker settles what it holds (DESIGN §3)."""

    def __init__(self, shared: Shared) -> None:
        self._s = shared

    def judge(self, job: JobRecord, copies: list[Copy]) -> Verdict:
        """What ``copies`` mean for ``job`` (:func:`edgeprint.copies.judge`) under this config."""
        return judge(job_facts(job), copies, self.policy)

    def on_failure(self, job: JobRecord, printer: str, sig: str, error: str) -> Verdict:
        """The retry/poison policy for a failed attempt (:func:`edgeprint.copies.on_failure`)."""
        return on_failure(job_facts(job), printer, sig, error, self.policy)

    @property
    def policy(self) -> Policy:
        d = self._s.config.dispatch
        return Policy(
            max_attempts=d.max_attempts,
            reprint_unknown=d.on_unknown_outcome == "reprint",
            busy_backoff_s=d.busy_backoff_s,
            ask_forgotten=frozenset(
                p.name for p in self._s.config.printers if p.on_forgotten == "ask"
            ),
        )

    async def settle_job(
        self, job: JobRecord, printer: str, verdict: Verdict, *, not_before: float | None = None
    ) -> JobRecord | None:
        """Carry out a terminal verdict on a job PRINTING on ``printer``; None if not ours.

        DONE needs a printed copy (the store checks); CANCELLED, DEAD, RETRY
        (after a back-off, the attempt counts) and SEND (at once or at
        ``not_before``, the attempt given back).
        """
        evidence = verdict.settled_by
        match verdict.kind:
            case Kind.DONE:
                by = verdict.copy.printer if verdict.copy is not None else printer
                return await self.complete(job, printer, evidence=evidence, printed_by=by)
            case Kind.CANCELLED:
                return await self.cancelled(
                    job, printer, verdict.error, evidence=evidence, pages=verdict.pages_printed
                )
            case Kind.DEAD:
                assert verdict.dead_reason is not None
                return await self.fail(
                    job,
                    printer,
                    verdict.dead_reason,
                    verdict.error or "",
                    evidence=evidence,
                    pages=verdict.pages_printed,
                )
            case Kind.RETRY:
                d = self._s.config.dispatch
                backoff = Backoff(d.retry_base_s, d.retry_max_s)
                delay = backoff.for_attempt(max(1, job.attempts), self._s.rng)
                return await self.requeue(
                    job,
                    printer,
                    verdict.error or "retry",
                    self._s.run() + delay,
                    count=True,
                    failure_sig=verdict.failure_sig,
                )
            case Kind.SEND:
                when = self._s.run() + verdict.delay_s if not_before is None else not_before
                return await self.requeue(
                    job, printer, verdict.error or "resent", when, count=False
                )
        raise ValueError(f"not a terminal verdict: {verdict.kind}")

    async def complete(
        self,
        job: JobRecord,
        printer: str,
        *,
        evidence: str | None = None,
        printed_by: str | None = None,
    ) -> JobRecord | None:
        """PRINTING → DONE on ``printer``: a copy of it printed, or was forgotten whole where
        that counts (the store checks); None if not ours. ``printed_by`` names the printer
        of that copy where it is another (a copy left on a printer the job had moved from):
        ``printed_on`` then says where it came out."""
        now = self._s.clock()
        done = await self._s.jobs.complete(
            job.id,
            printer,
            job.claims,
            now=now,
            evidence=evidence,
            printed_on=printed_by if printed_by is not None and printed_by != printer else None,
        )
        if done is not None:
            self._printed(done, printed_by or printer, now)
        return done

    def _printed(self, done: JobRecord, printer: str, now: float) -> None:
        if not done.rehearsal:  # the live figures never count a rehearsal job
            self._s.metrics.jobs_printed.labels(printer=printer).inc()
            if done.released_run is not None:  # on the run clock: a step is no latency
                self._s.metrics.release_to_completed.observe(
                    max(0.0, self._s.run() - done.released_run)
                )
        log_event(
            log,
            "job_printed",
            job_id=done.id,
            printer=printer,
            attempts=done.attempts,
            correlation_id=done.correlation_id,
        )

    async def requeue(
        self,
        job: JobRecord,
        printer: str,
        reason: str,
        not_before: float,
        *,
        count: bool,
        failure_sig: str | None = None,
    ) -> JobRecord | None:
        """PRINTING → RELEASED not before ``not_before`` (run clock); None if not ours.

        ``count=False`` gives the attempt back (backpressure, fencing, a move):
        only real failures use up ``max_attempts``. ``failure_sig`` records how
        this attempt failed, to tell a bad job from a bad printer. A copy of the
        claim that is still live stays as it is: the printer settles it (cancels
        it) before it gets new work.
        """
        out = await self._s.jobs.requeue(
            job.id,
            printer,
            job.claims,
            now=self._s.clock(),
            reason=reason,
            not_before=not_before,
            failure_sig=failure_sig,
            attempts=None if count else max(0, job.attempts - 1),
        )
        if out is None:
            return None
        self._s.admission.admitted(out.printer, out.pool)
        if count:
            self._s.metrics.retries.labels(printer=printer).inc()
            log_event(
                log,
                "job_retry",
                job_id=job.id,
                printer=printer,
                attempts=job.attempts,
                error=reason,
                not_before=not_before,
                correlation_id=job.correlation_id,
            )
        self._s.board.wake(out.printer, out.pool)
        return out

    async def fail(
        self,
        job: JobRecord,
        printer: str,
        dead_reason: str,
        error: str,
        *,
        evidence: str | None = None,
        pages: int | None = None,
    ) -> JobRecord | None:
        """PRINTING → DEAD with ``dead_reason`` (poison, attempts_exhausted, outcome_unknown…),
        settled by ``evidence``; ``pages``: impressions that came out of a partial copy."""
        dead = await self._s.jobs.fail(
            job.id,
            printer,
            job.claims,
            now=self._s.clock(),
            reason=f"{dead_reason}: {evidence}" if evidence else dead_reason,
            error=error,
            dead_reason=dead_reason,
            evidence=evidence,
            pages=pages,
        )
        if dead is not None:
            self._s.metrics.jobs_dead.labels(reason=dead_reason).inc()
            log_event(
                log,
                "job_dead",
                level=logging.WARNING,
                job_id=job.id,
                printer=printer,
                dead_reason=dead_reason,
                error=error,
                correlation_id=job.correlation_id,
            )
        return dead

    async def cancelled(
        self,
        job: JobRecord,
        printer: str,
        error: str | None = None,
        *,
        evidence: str | None = None,
        pages: int | None = None,
    ) -> JobRecord | None:
        """PRINTING → CANCELLED: a person cancelled it (through edgeprint, or at the printer)."""
        reason = "cancelled_at_printer" if error else "cancel_requested"
        out = await self._s.jobs.cancel_printing(
            job.id,
            printer,
            job.claims,
            now=self._s.clock(),
            reason=reason + (f": {evidence}" if evidence else ""),
            error=error,
            evidence=evidence,
            pages=pages,
        )
        if out is not None and error:
            log_event(
                log,
                "job_cancelled_at_printer",
                message="job cancelled at the printer",
                level=logging.WARNING,
                job_id=job.id,
                printer=printer,
                why=error,
                correlation_id=job.correlation_id,
            )
        return out

    async def settle_copy(
        self,
        copy: Copy,
        state: CopyState,
        outcome: str,
        pj: PrinterJobReport | None = None,
        *,
        evidence: str | None = None,
    ) -> Copy | None:
        """The copy settles as ``state`` (printed, aborted, cancelled…) by ``evidence``
        (an :class:`edgeprint.evidence.Evidence`); None if it already was settled."""
        settled = await self._s.copies.settle(
            copy, state, outcome, pj, evidence=evidence, now=self._s.clock()
        )
        if settled is not None:
            self._copy_settled(settled)
        return settled

    async def settle_printed(
        self, job: JobRecord, copy: Copy, pj: PrinterJobReport, *, evidence: str
    ) -> tuple[Copy | None, JobRecord | None]:
        """The common case in one transaction: the copy printed whole (by ``evidence``), and
        the job is DONE."""
        now = self._s.clock()
        settled, done = await units.printed_and_done(
            self._s.jobs, self._s.copies, job, copy, pj, evidence=evidence, now=now
        )
        if settled is not None:
            self._copy_settled(settled)
        if done is not None:
            self._printed(done, copy.printer, now)
        return settled, done

    def _copy_settled(self, copy: Copy) -> None:
        self._s.metrics.copies_settled.labels(printer=copy.printer, state=copy.state.value).inc()
        level = logging.INFO if copy.state is CopyState.PRINTED else logging.WARNING
        log_event(
            log,
            "copy_settled",
            level=level,
            job_id=copy.job_id,
            printer=copy.printer,
            printer_job_id=copy.printer_job_id,
            state=copy.state.value,
            outcome=copy.outcome,
            settled_by=copy.settled_by,
            epoch=copy.epoch,
        )
