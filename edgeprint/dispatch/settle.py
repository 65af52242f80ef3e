"""Settlement: what a copy's outcome, and the printer's word on every copy, mean for jobs.

:meth:`Settlement.after` takes a :class:`~edgeprint.dispatch.copy_run.Outcome`
and carries out what it means (one transaction for printed-and-DONE; the refusal
policy; a stuck copy cancelled and its job moved; a lost one parked);
:meth:`Settlement.conclude` brings the printer's word on a job's copies up to date
and does what :func:`edgeprint.copy_policy.judge` says; :meth:`Settlement.sweep`
settles the copies a printer may still hold of jobs that left it, before it gets new work
(the worker first concludes, and follows, each job PRINTING there);
:meth:`Settlement.give_up_in_hand` settles without a printer that stayed away.
Each returns the copy to follow next, if any: the worker follows it
(:mod:`edgeprint.dispatch.copy_run`) and hands the outcome back here.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace

from edgeprint import errors
from edgeprint.config import DispatchConfig
from edgeprint.copies import (
    ORIGIN_REQUESTED,
    Copy,
    CopyState,
    Kind,
    Policy,
    Verdict,
)
from edgeprint.copy_policy import Refusal, judge, on_refusal, refusal_of
from edgeprint.dispatch.copy_run import Ended, Outcome
from edgeprint.dispatch.monitor import Monitor
from edgeprint.dispatch.observer import MonitoringFailed, Observer, Unsettled
from edgeprint.dispatch.stall import stall_reasons
from edgeprint.evidence import Evidence
from edgeprint.logs import log_event
from edgeprint.metrics import Metrics
from edgeprint.printers.health import trays_of
from edgeprint.runway import labels_of
from edgeprint.service import JobRecord, JobService
from edgeprint.service.records import job_facts
from edgeprint.states import JobState

log = logging.getLogger(__name__)

#: Rounds of observe → judge → act for one job before the worker waits and tries later.
ROUNDS = 10
#: Cancel-Job asks for the empty printer job of a refused upload, over answers the printer
#: did not act on (busy, service-unavailable): backing off from poll_interval_min_s ×4 each
#: time, about a third of a second in all at the default 5 ms.
REFUSED_CANCEL_TRIES = 5
#: A stuck copy whose cancel the printer took is watched this long for the printer to
#: settle it (seconds): a printer that never started it settles it at once, a jammed device
#: may keep it "processing-to-stop-point" until a person clears the jam (minutes). The job
#: moves then as long as nothing of it is shown out and the printer still shows the stall
#: (nothing comes out of a jammed printer); the copy stays ``cancelling`` here and the
#: printer is swept before it gets new work. A printer whose stall cleared meanwhile is
#: given three request time-outs to settle it, as any cancel.
STUCK_CANCEL_WATCH_S = 1.0
#: The failure signature of a copy moved because its printer could not go on: no printer
#: answer is ever signed so, so it never makes a job poison (copy_policy.on_failure).
STUCK_SIG = "stuck-at-printer"

#: What settlement hands back: a copy to follow, True (the job is settled, or no longer
#: this printer's), False (not settled yet: try again later).
Next = Copy | bool


class Settlement:
    """Settles one printer's jobs and copies."""

    def __init__(
        self,
        service: JobService,
        monitor: Monitor,
        observer: Observer,
        settings: DispatchConfig,
        metrics: Metrics,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.name = monitor.name
        self.service = service
        self.monitor = monitor
        self.observer = observer
        self.settings = settings
        self.metrics = metrics
        self._clock = clock
        #: A copy was left live on the printer (cancelled, not confirmed yet): the worker
        #: sweeps before it sends anything new.
        self.left_live = False

    def policy(self) -> Policy:
        """The service's policy, with what this printer is known to do."""
        base = self.service.outcomes.policy
        counting = base.counting | ({self.name} if self.monitor.life.traits.impressions else set())
        return replace(base, counting=frozenset(counting))

    def judge(self, job: JobRecord, copies: list[Copy]) -> Verdict:
        return judge(job_facts(job), copies, self.policy())

    async def after(self, job: JobRecord, outcome: Outcome) -> Next:
        """Carry out what a copy's run ended with. Raises Unsettled (reconcile later)."""
        match outcome.ended:
            case Ended.PRINTED:
                obs = outcome.observation
                assert obs is not None
                assert obs.pj is not None
                _, done = await self.service.outcomes.settle_printed(
                    job, outcome.copy, obs.pj, evidence=obs.evidence.value
                )
                if done is not None:
                    await self._printed_here(job)
                    return True
                return await self.conclude(job)
            case Ended.SETTLED | Ended.CHANGED:
                return await self.conclude(job)
            case Ended.REFUSED:
                assert outcome.error is not None
                return await self.refused(job, outcome.copy, outcome.error)
            case Ended.UNSETTLED:
                raise Unsettled
            case Ended.STUCK:
                return await self.move_stuck(job, outcome.copy, outcome.why)
            case Ended.LOST:
                await self.monitoring_gave_up(job, outcome.copy, outcome.why)
                return True
        return False  # STOPPED: the job stays PRINTING; the next start reconciles it

    async def conclude(self, job: JobRecord) -> Next:
        """Bring the printer's word on the job's copies up to date, then do what they mean.

        Raises Unsettled when the printer cannot be asked.
        """
        for _ in range(ROUNDS):
            copies = await self.service.worker.copies_of(job.id)
            for c in copies:
                if c.live and c.printer == self.name and c.printer_job_id is not None:
                    try:
                        obs = await self.observer.look(c)
                    except MonitoringFailed:
                        continue  # judged as it stands; following it retries the printer
                    await self.observer.record(c, obs, job)
            copies = await self.service.worker.copies_of(job.id)
            verdict = self.judge(job, copies)
            self.metrics.reconciliations.labels(printer=self.name, verdict=verdict.kind).inc()
            log_event(
                log,
                "job_reconciled",
                job_id=job.id,
                printer=self.name,
                verdict=verdict.kind.value,
                printer_job_id=verdict.copy.printer_job_id if verdict.copy else None,
                settled_by=verdict.settled_by,
                correlation_id=job.correlation_id,
            )
            copy = verdict.copy
            match verdict.kind:
                case Kind.FOLLOW:
                    assert copy is not None
                    return copy
                case Kind.CANCEL:
                    assert copy is not None
                    cancelling = await self.service.worker.copy_cancelling(copy, verdict.kind.value)
                    if cancelling is not None:
                        await self.observer.await_cancel(cancelling)
                case Kind.WAIT:
                    assert copy is not None
                    after = await self.observer.await_cancel(copy)
                    if after is not None and after.live:
                        return False  # the printer is still stopping it: try again later
                case Kind.FIND:
                    assert copy is not None
                    if not await self.observer.find(copy, job):
                        raise Unsettled
                case _:
                    current = await self.service.worker.find(job.id)
                    if current is None or current.state is not JobState.PRINTING:
                        return True
                    await self._count_outcome(job, verdict)
                    await self.service.outcomes.settle_job(job, self.name, verdict)
                    return True
        return False

    async def _count_outcome(self, job: JobRecord, verdict: Verdict) -> None:
        """A job this printer aborted counts towards quarantining the printer (several
        different jobs failing here blame the printer); a printed one breaks the run."""
        copy = verdict.copy
        if verdict.kind is Kind.DONE:
            self.monitor.health.on_job_printed()
            if copy is not None and copy.printer == self.name:  # its labels came off this roll
                await self.monitor.rolls.printed(
                    labels_of(job.document_pages, job.copies, job.from_page),
                    live=not job.rehearsal,
                )
        elif copy is not None and copy.printer == self.name and copy.state is CopyState.ABORTED:
            await self.monitor.health_changed(
                self.monitor.health.on_job_failed(job.id, self._clock())
            )

    async def _printed_here(self, job: JobRecord) -> None:
        """A job printed here: the run of failures is broken, and its labels came off the
        roll (issue 23: pages × copies)."""
        self.monitor.health.on_job_printed()
        await self.monitor.rolls.printed(
            labels_of(job.document_pages, job.copies, job.from_page), live=not job.rehearsal
        )

    async def refused(self, job: JobRecord, copy: Copy, exc: errors.PrinterError) -> Next:
        """The printer answered a Create-Job/Send-Document/Print-Job with an error.

        Nothing of this attempt can print: a printer job it may have made is
        cancelled, the copy is settled ``refused``, and the job follows the
        refusal (:func:`edgeprint.copy_policy.on_refusal`) — unless a person asked to
        cancel it meanwhile.
        """
        if copy.printer_job_id is not None:
            cancelling = await self.service.worker.copy_cancelling(copy, f"refused: {exc}")
            if cancelling is not None:
                # an empty printer job blocks a printer that takes one job at a time
                await self.observer.send_cancel(cancelling, tries=REFUSED_CANCEL_TRIES)
                copy = cancelling
        settled = await self.service.outcomes.settle_copy(
            copy, CopyState.REFUSED, str(exc), evidence=Evidence.REFUSED.value
        )
        if settled is None:  # it settled otherwise meanwhile: let the copies decide
            return await self.conclude(job)
        judged = self.judge(job, await self.service.worker.copies_of(job.id))
        if judged.kind is not Kind.SEND:  # e.g. a person's cancel
            await self.service.outcomes.settle_job(job, self.name, judged)
            return True
        refusal, sig = refusal_of(exc)
        if refusal is Refusal.OTHER:
            await self.monitor.health_changed(
                self.monitor.health.on_job_failed(job.id, self._clock())
            )
        verdict = on_refusal(job_facts(job), self.name, refusal, sig, str(exc), self.policy())
        await self.service.outcomes.settle_job(job, self.name, replace(verdict, copy=settled))
        return True

    async def move_stuck(self, job: JobRecord, copy: Copy, why: str = "") -> Next:
        """Cancel a copy the printer cannot go on with (none of it out), then move its job.

        The job moves once the printer accepted the cancel (answered Cancel-Job with
        success, or settled the copy cancelled) and shows nothing of it out; a jammed
        printer may keep the copy "processing-to-stop-point" until the jam is cleared
        (michaelrsweet/pappl#163), so it is watched for ``STUCK_CANCEL_WATCH_S`` only, and
        stays ``cancelling`` here, settled before this printer gets work again. A copy
        the printer settled otherwise meanwhile (printed, or stopped after pages), or
        showed pages of, is judged as such; one whose cancel the printer refused, or
        answered "already finished" for while edgeprint cannot yet tell how, stays here
        (a job that finished may have printed: moving it could print it twice).
        """
        why = why or self.monitor.health.reason or "it cannot go on"
        cancelling = await self.service.worker.copy_cancelling(
            copy, f"{self.name} cannot go on ({why})"
        )
        accepted = False
        after: Copy | None = copy
        if cancelling is not None:
            accepted = await self.observer.send_cancel(cancelling)
            if accepted:
                sent = replace(cancelling, cancel_sent_at=self._clock())
                after = await self.observer.await_cancel(sent, within_s=STUCK_CANCEL_WATCH_S)
                if after is not None and after.live and not await self._still_stalled():
                    # it no longer says what held the sheet: it may be printing it after
                    # all (a cancel taken, the job finished anyway): wait for its word
                    after = await self.observer.await_cancel(after)
            else:
                after = await self.service.worker.copy(cancelling.id)
        cleanly = (
            after is not None
            and not after.live
            and not after.pages_out
            and after.state in (CopyState.CANCELLED, CopyState.CANCELLED_ELSEWHERE)
        )
        if not cleanly and after is not None and (after.pages_out or not after.live):
            return await self.conclude(job)  # settled otherwise, or pages out: judge it
        if not cleanly and not accepted:
            return False  # the printer did not take the cancel: nothing may move yet
        reason = f"{self.name} cannot go on ({why}); cancelled there, moved to a peer"
        log_event(
            log,
            "job_failed_over",
            level=logging.WARNING,
            job_id=job.id,
            printer=self.name,
            why=why,
            correlation_id=job.correlation_id,
        )
        self.metrics.failovers.labels(printer=self.name).inc()
        self.left_live = after is None or after.live
        # failed here: its pool's peers have it first (PEER_FIRST_S), as the printer may look
        # idle once the cancel took its job and still be jammed
        await self.service.outcomes.requeue(
            job, self.name, reason, self.service.run(), count=False, failure_sig=STUCK_SIG
        )
        # a job named for this printer goes to its pool: the printer may look idle now and
        # still be jammed (its peers take it, as they take its other waiting jobs)
        await self.service.printers.fail_over_waiting(self.name, reason)
        return True

    async def _still_stalled(self) -> bool:
        """A fresh probe still shows what stalls a job in hand (a jam, an open door, no
        media): nothing of the job can come out while it does."""
        try:
            status, _ = await self.monitor.probe()
        except errors.PrinterError:
            return False
        return bool(stall_reasons(status.reasons, trays_of(status.attributes)))

    async def monitoring_gave_up(self, job: JobRecord, copy: Copy, why: str) -> None:
        """The printer cannot say what became of a copy: park the job, blame the printer."""
        log_event(
            log,
            "job_monitoring_failed",
            level=logging.WARNING,
            job_id=job.id,
            printer=self.name,
            printer_job_id=copy.printer_job_id,
            error=why,
        )
        await self.service.outcomes.settle_copy(
            copy,
            CopyState.LOST,
            f"cannot report job state: {why}",
            evidence=Evidence.MONITORING_FAILED.value,
        )
        health = self.monitor.health
        await self.monitor.health_changed(health.on_monitoring_failed(why, self._clock()))
        await self.service.printers.fail_over_waiting(self.name, health.reason or why)
        await self.conclude(job)

    async def give_up_in_hand(self) -> None:
        """The printer has been unreachable too long: settle what it held without it.

        A job of which no document can have left goes back to the queue for a
        peer; one the printer may have printed is parked DEAD
        ``outcome_unknown`` (or sent again with ``on_unknown_outcome =
        "reprint"``). Its copies stay live here: when the printer comes back
        they are settled (live ones cancelled) before it gets new work.
        """
        for job in await self.service.worker.printing_on(self.name):
            copies = await self.service.worker.copies_of(job.id)
            current = [c for c in copies if c.claim == job.claims and c.live]
            risky = any(c.document_may_have_left for c in current)
            if any(c.cancel_origin == ORIGIN_REQUESTED for c in current):
                # a person asked to cancel it: that stands (its copy is cancelled here later)
                why = f"cancelled as asked; {self.name} became unreachable before it confirmed"
                if risky:
                    why += " (it may have printed part of it)"
                await self.service.outcomes.cancelled(job, self.name, why)
            elif not risky or self.settings.on_unknown_outcome == "reprint":
                await self.service.outcomes.requeue(
                    job,
                    self.name,
                    f"{self.name} unreachable; moved to a peer",
                    self.service.run(),
                    count=False,
                )
            else:
                await self.service.outcomes.fail(
                    job,
                    self.name,
                    "outcome_unknown",
                    f"{self.name} became unreachable while it may have been printing the job",
                )
            self.left_live = True

    async def sweep(self) -> bool:
        """Settle every copy this printer may still hold whose job is not PRINTING here
        (its job left it), then cancel the printer's stray empty jobs.

        True when nothing is left open; raises Unsettled.
        """
        current = {(j.id, j.claims) for j in await self.service.worker.printing_on(self.name)}
        for copy in await self.service.worker.open_copies_on(self.name):
            if (copy.job_id, copy.claim) in current:
                continue
            if not await self.settle_stale(copy):
                return False
        live = {
            c.printer_job_id
            for c in await self.service.worker.open_copies_on(self.name)
            if c.printer_job_id is not None
        }
        await self.observer.cancel_strays(live)
        return True

    async def settle_stale(self, copy: Copy) -> bool:
        """A copy of a job that left this printer: cancel it if live, record it if settled.

        True when it is settled (or could be left); raises Unsettled.
        """
        if copy.printer_job_id is None:
            if not await self.observer.find(copy, await self.service.worker.find(copy.job_id)):
                return False
            refreshed = await self.service.worker.copy(copy.id)
            if refreshed is None or not refreshed.live or refreshed.printer_job_id is None:
                return True
            copy = refreshed
        try:
            obs = await self.observer.look(copy)
        except MonitoringFailed as exc:
            await self.service.outcomes.settle_copy(
                copy,
                CopyState.LOST,
                f"cannot report job state: {exc}",
                evidence=Evidence.MONITORING_FAILED.value,
            )
            return True
        if obs.settled is None:
            log_event(
                log,
                "stale_copy_cancelled",
                level=logging.WARNING,
                job_id=copy.job_id,
                printer=self.name,
                printer_job_id=copy.printer_job_id,
            )
            cancelling = await self.service.worker.copy_cancelling(
                copy, "its job left this printer"
            )
            if cancelling is None:
                return True
            after = await self.observer.await_cancel(cancelling)
            return after is None or not after.live
        settled = await self.observer.record(copy, obs)
        if settled is not None and settled.state is CopyState.PRINTED:
            await self.service.worker.stale_copy_printed(settled)
            stale = await self.service.worker.find(copy.job_id)  # its labels came off the roll too
            if stale is not None:
                await self.monitor.rolls.printed(
                    labels_of(stale.document_pages, stale.copies, stale.from_page),
                    live=not stale.rehearsal,
                )
        return True
