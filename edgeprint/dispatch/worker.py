"""One printer's worker: reconcile, claim, send, follow (DESIGN §3).

The worker holds at most one job at a time and hands the printer a job only
while the printer's ``queued-job-count`` is below ``max_inflight``. Before it
sends anything new it reconciles every job the store says is PRINTING on its
printer (at start-up and after any ambiguous outcome), so a crash can never
put a second copy on paper.

A job's printer job is named ``edgeprint-<job id>`` on every attempt: after a
restart edgeprint finds its copies by name, because printers reuse job ids.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable

from edgeprint import errors
from edgeprint.config import DispatchConfig, PrinterConfig
from edgeprint.dispatch import reconcile
from edgeprint.dispatch.backoff import retry_delay
from edgeprint.faults import crash_point
from edgeprint.metrics import Metrics
from edgeprint.printers.health import Health, HealthChange, HealthSettings, PrinterSnapshot
from edgeprint.printers.ipp import (
    JOB_ABORTED,
    JOB_CANCELED,
    JOB_COMPLETED,
    IppClient,
    PrinterJob,
    PrinterStatus,
)
from edgeprint.service import JobService
from edgeprint.store.jobs import JobRecord

log = logging.getLogger(__name__)

DOCUMENT_FORMAT = "application/pdf"
#: job-state-reasons of an aborted printer job that blame the document (PWG 5100.x).
POISON_REASONS = frozenset(
    {
        "document-format-error",
        "document-unprintable-error",
        "unsupported-document-format",
        "document-password-error",
        "document-permission-error",
        "document-security-error",
    }
)


def printer_job_name(job_id: str) -> str:
    """The IPP job-name for an edgeprint job: contains the id verbatim (DESIGN §3)."""
    return f"edgeprint-{job_id}"


class _Unsettled(Exception):
    """The job's outcome is not settled yet (printer unreachable): keep it PRINTING."""


class PrinterWorker:
    """The long-lived task for one configured printer; run with :meth:`run`."""

    def __init__(
        self,
        printer: PrinterConfig,
        client: IppClient,
        service: JobService,
        settings: DispatchConfig,
        metrics: Metrics,
        stop: asyncio.Event,
        *,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.name = printer.name
        self.config = printer
        self.client = client
        self.service = service
        self.settings = settings
        self.metrics = metrics
        self.stop = stop
        self._rng = rng or random.Random()
        self._clock = clock
        self._wake = asyncio.Event()
        self._control = asyncio.Event()
        self._cancel = asyncio.Event()
        self._needs_reconcile = True
        self._unreachable_since: float | None = None
        self.status: PrinterStatus | None = None
        self.reachable = False
        self.current_job: str | None = None
        self.health = Health(
            HealthSettings(
                failure_threshold=settings.failure_threshold,
                stopped_grace_s=settings.stopped_grace_s,
                quarantine_after=settings.quarantine_after,
                quarantine_s=settings.quarantine_s,
            )
        )

    # --- signals from the rest of the appliance ------------------------------------

    def wake(self) -> None:
        """A job for this printer became claimable: stop waiting."""
        self._wake.set()

    def control(self) -> None:
        """A technician acted on this printer (pause, resume, cancel of the job in hand)."""
        self._cancel.set()
        self._control.set()
        self._wake.set()

    # --- main loop -------------------------------------------------------------------

    async def run(self) -> None:
        """Work until the stop event is set. Store failures propagate (the process exits)."""
        retry_delay_s = self.settings.poll_interval_min_s
        while not self.stop.is_set():
            try:
                self.status = await self._probe()
                retry_delay_s = self.settings.poll_interval_min_s
                if not self.health.healthy:  # before anything that may wait on the printer
                    await self.service.fail_over_waiting(self.name, self.health.reason or "")
                if self._needs_reconcile and not await self._reconcile_all():
                    await self._hold_off(self.settings.unreachable_retry_max_s)
                    continue
                if not await self._clear_fences():
                    await self._hold_off(self.settings.unreachable_retry_max_s)
                    continue
                if not self.health.healthy:
                    await self._hold_off(self.settings.unreachable_retry_max_s)
                    continue
                if self.name in self.service.paused:
                    await self._hold_off(self.settings.idle_probe_interval_s)
                    continue
                if self.status.queued_job_count >= self.config.max_inflight:
                    await self._pause(self.settings.poll_interval_max_s)
                    continue
                self._wake.clear()
                job = await self.service.claim_next(self.name)
                if job is None:
                    await self._idle()
                    continue
                await self._dispatch(job, self.status)
            except errors.PrinterBusy:
                await self._pause(self.settings.busy_backoff_s)
            except errors.PrinterError as exc:
                await self._unreachable(exc)
                retry_delay_s = min(retry_delay_s * 2, self.settings.unreachable_retry_max_s)
                await self._hold_off(retry_delay_s)

    async def _probe(self) -> PrinterStatus:
        status = await self.client.get_printer_attributes()
        now = self._clock()
        if not self.reachable:
            log.info("printer reachable", extra={"event": "printer_up", "printer": self.name})
        self.reachable = True
        self._unreachable_since = None
        self.metrics.printer_up.labels(printer=self.name).set(1)
        await self._health_changed(self.health.on_probe(status, now))
        self.metrics.printer_healthy.labels(printer=self.name).set(int(self.health.healthy))
        return status

    async def _unreachable(self, exc: errors.PrinterError) -> None:
        now = self._clock()
        if self.reachable or self._unreachable_since is None:
            log.info(
                "printer unreachable",
                extra={"event": "printer_down", "printer": self.name, "error": str(exc)},
            )
            self._unreachable_since = now
        self.reachable = False
        self.metrics.printer_up.labels(printer=self.name).set(0)
        await self._health_changed(self.health.on_transport_failure(str(exc), now))
        self.metrics.printer_healthy.labels(printer=self.name).set(int(self.health.healthy))
        if now - self._unreachable_since >= self.settings.in_hand_timeout_s:
            await self._give_up_in_hand()
        if not self.health.healthy:  # jobs named for it keep arriving (or come back): move them
            await self.service.fail_over_waiting(self.name, self.health.reason or "unreachable")

    async def _health_changed(self, change: HealthChange | None) -> None:
        if change is None:
            return
        self.metrics.printer_healthy.labels(printer=self.name).set(1 if change.healthy else 0)
        self.metrics.health_changes.labels(
            printer=self.name, healthy=str(change.healthy).lower()
        ).inc()
        await self.service.printer_health_changed(self.name, change.healthy, change.reason)
        if change.healthy:
            log.info("printer healthy", extra={"event": "printer_healthy", "printer": self.name})
            self.service.wake(self.name, self.config.pool)
            return
        log.warning(
            "printer unhealthy",
            extra={"event": "printer_unhealthy", "printer": self.name, "why": change.reason},
        )
        await self.service.fail_over_waiting(self.name, change.reason or "unhealthy")

    def snapshot(self) -> PrinterSnapshot:
        """The technician's view of this printer right now."""
        st = self.status
        return PrinterSnapshot(
            name=self.name,
            uri=self.config.uri,
            pool=self.config.pool,
            healthy=self.health.healthy,
            health_reason=self.health.reason,
            reachable=self.reachable,
            paused=self.name in self.service.paused,
            printer_state=_PRINTER_STATES.get(st.state, str(st.state)) if st else None,
            printer_state_reasons=st.reasons if st else (),
            printer_state_message=st.message if st else "",
            queued_job_count=st.queued_job_count if st else None,
            printing_job=self.current_job,
            last_error=self.health.last_error,
        )

    # --- jobs a dead printer may hold (DESIGN §3.5-6) --------------------------------------

    async def _give_up_in_hand(self) -> None:
        """The printer has been unreachable too long: settle what it held without it.

        A job whose document cannot have printed whole (none sent, or the upload
        broke off) goes back to the queue for a peer; one the printer may have
        printed is parked DEAD ``outcome_unknown`` (or re-sent with
        ``on_unknown_outcome = "reprint"``). Either way the printer is fenced:
        when it comes back, live copies of these jobs are cancelled first.
        """
        for job in await self.service.printing_on(self.name):
            await self.service.jobs.add_fence(self.name, job.id, now=self._clock())
            if job.upload != "sending" or self.settings.on_unknown_outcome == "reprint":
                await self.service.requeue(
                    job, self.name, f"{self.name} unreachable; moved to a peer", self._clock(),
                    count=False,
                )  # fmt: skip
            else:
                await self.service.fail(
                    job, self.name, "outcome_unknown",
                    f"{self.name} became unreachable while it may have been printing the job",
                )  # fmt: skip
        self._needs_reconcile = True

    async def _clear_fences(self) -> bool:
        """Cancel live copies of jobs that left this printer while it held them; True when clear.

        A fence is dropped only once the printer shows no live copy of the job.
        """
        fenced = await self.service.jobs.fences(self.name)
        if not fenced:
            return True
        try:
            jobs = await self.client.get_jobs("not-completed")
        except errors.PrinterTransient:
            return False
        clear = True
        for job_id in fenced:
            live = [c for c in reconcile.matching(job_id, jobs) if not c.terminal]
            for copy in live:
                log.warning(
                    "stale copy cancelled",
                    extra={"event": "stale_copy_cancelled", "job_id": job_id,
                           "printer": self.name, "printer_job_id": copy.job_id},
                )  # fmt: skip
                await self._cancel_and_wait(copy.job_id)
                after = await self.client.get_job_attributes(copy.job_id)
                if after is not None and not after.terminal:
                    clear = False
            if clear:
                await self.service.jobs.drop_fence(self.name, job_id)
        return clear

    async def _pause(self, seconds: float) -> None:
        """Wait ``seconds`` or until stopped or woken (a job became claimable)."""
        await _wait_any((self.stop, self._wake), seconds)

    async def _hold_off(self, seconds: float) -> None:
        """Wait ``seconds`` or until stopped or a technician acts; new jobs do not wake it.

        A printer that cannot take work (unreachable, unhealthy, paused) must
        not be probed once per incoming job.
        """
        self._control.clear()
        await _wait_any((self.stop, self._control), seconds)

    async def _idle(self) -> None:
        """Nothing to claim: wait for a wake-up, the next backed-off job, or a probe."""
        timeout = self.settings.idle_probe_interval_s
        ready_at = await self.service.next_ready_at(self.name)
        if ready_at is not None:
            timeout = min(timeout, max(0.0, ready_at - self._clock()) + 0.001)
        await self._pause(timeout)

    # --- one job ---------------------------------------------------------------------

    async def _dispatch(self, job: JobRecord, status: PrinterStatus) -> None:
        try:
            document = await asyncio.to_thread(self.service.spool.path_for(job.id).read_bytes)
        except FileNotFoundError as exc:
            await self.service.fail(job, self.name, "document_missing", f"document: {exc}")
            return
        except OSError as exc:  # EMFILE, EIO…: the document is there, reading it failed now
            log.warning(
                "document unreadable",
                extra={"event": "document_unreadable", "job_id": job.id, "printer": self.name,
                       "error": str(exc), "correlation_id": job.correlation_id},
            )  # fmt: skip
            not_before = self._clock() + self.settings.unreachable_retry_max_s
            await self.service.requeue(job, self.name, f"document: {exc}", not_before, count=False)
            return
        log.info(
            "job dispatched",
            extra={"event": "job_dispatched", "job_id": job.id, "printer": self.name,
                   "attempt": job.attempts, "correlation_id": job.correlation_id},
        )  # fmt: skip
        crash_point("after_claim")
        self.current_job = job.id
        try:
            await self._send(job, document, status)
        except _Unsettled:
            self._needs_reconcile = True
        finally:
            self.current_job = None

    async def _send(self, job: JobRecord, document: bytes, status: PrinterStatus) -> None:
        """Create-Job + Send-Document (or Print-Job), then follow; never sends blindly twice."""
        name = printer_job_name(job.id)
        copies = job.copies if job.copies > 1 and status.copies_supported else None
        if status.supports_create_job:
            try:
                pjid = await self.client.create_job(name, job.owner, copies=copies)
            except errors.PrinterAmbiguous:
                raise _Unsettled from None  # an empty job may exist: reconcile finds and cancels it
            except errors.PrinterError as exc:
                await self._refused(job, exc, None)
                return
            crash_point("after_create_job")
            held = await self.service.update_printing(
                job, self.name, printer_job_id=pjid, upload="sending"
            )
            if held is None:  # cancelled or moved meanwhile: the empty printer job must go
                await self._cancel_quietly(pjid)
                return
            try:
                await self.client.send_document(pjid, job.owner, document, DOCUMENT_FORMAT)
            except errors.PrinterAmbiguous as exc:
                if not exc.body_sent:
                    await self.service.update_printing(held, self.name, upload="truncated")
                raise _Unsettled from exc
            except errors.PrinterUnreachable:
                await self.service.update_printing(held, self.name, upload=None)
                raise _Unsettled from None
            except errors.PrinterError as exc:
                await self._refused(held, exc, pjid)
                return
            crash_point("after_send_document")
            job = held
        else:
            sending = await self.service.update_printing(job, self.name, upload="sending")
            if sending is None:
                return
            try:
                pjid = await self.client.print_job(
                    name, job.owner, document, DOCUMENT_FORMAT, copies=copies
                )
            except errors.PrinterAmbiguous as exc:
                if not exc.body_sent:
                    await self.service.update_printing(sending, self.name, upload="truncated")
                raise _Unsettled from exc
            except errors.PrinterError as exc:
                await self._refused(sending, exc, None)
                return
            recorded = await self.service.update_printing(sending, self.name, printer_job_id=pjid)
            if recorded is None:
                await self._cancel_quietly(pjid)
                return
            job = recorded
        await self._follow(job, pjid)

    async def _refused(self, job: JobRecord, exc: errors.PrinterError, pjid: int | None) -> None:
        """The printer answered with an error: nothing of this attempt can print."""
        if pjid is not None:
            await self._cancel_quietly(pjid)
        if isinstance(exc, errors.PrinterPermanent):
            await self.service.fail(job, self.name, "poison", str(exc))
        elif isinstance(exc, errors.PrinterBusy):
            not_before = self._clock() + self.settings.busy_backoff_s
            await self.service.requeue(job, self.name, str(exc), not_before, count=False)
        elif isinstance(exc, errors.PrinterUnreachable):
            await self.service.requeue(job, self.name, str(exc), self._clock(), count=False)
            raise exc
        else:
            sig = f"status:{exc.status_code:#06x}" if exc.status_code else type(exc).__name__
            await self._retry_or_dead(job, str(exc), sig)

    async def _retry_or_dead(self, job: JobRecord, error: str, sig: str) -> None:
        """A print attempt failed: poison, attempts exhausted, or a retry after a back-off.

        The same failure (``sig``) on two different printers blames the job:
        it is poison. Several different jobs failing here blame the printer:
        it is quarantined (health).
        """
        await self._health_changed(self.health.on_job_failed(job.id, self._clock()))
        if job.failure_sig == sig and job.failure_printer not in (None, self.name):
            await self.service.fail(
                job, self.name, "poison",
                f"failed the same way on {job.failure_printer} and {self.name}: {error}",
            )  # fmt: skip
            return
        if job.attempts >= self.settings.max_attempts:
            await self.service.fail(
                job, self.name, "attempts_exhausted", f"{job.attempts} attempts; last: {error}"
            )
            return
        delay = retry_delay(
            job.attempts, self.settings.retry_base_s, self.settings.retry_max_s, self._rng
        )
        await self.service.requeue(
            job, self.name, error, self._clock() + delay, count=True, failure_sig=sig
        )

    async def _cancel_quietly(self, pjid: int) -> None:
        try:
            await self.client.cancel_job(pjid)
        except errors.PrinterError as exc:
            log.warning(
                "cancel failed",
                extra={"event": "cancel_failed", "printer": self.name, "printer_job_id": pjid,
                       "error": str(exc)},
            )  # fmt: skip

    async def _follow(self, job: JobRecord, pjid: int) -> None:
        """Poll Get-Job-Attributes (fast first, then every ``follow_interval_max_s``) to the end.

        The printer is probed on the way (its health may change while it holds
        the job: paper out, jam); a job stuck on a printer unhealthy for
        ``in_hand_timeout_s`` is cancelled there and moved to a peer. On stop
        the job is left PRINTING: the next start reconciles it.
        """
        delay = self.settings.poll_interval_min_s
        failures = 0
        cancel_sent = False
        next_probe = self._clock() + self.settings.poll_interval_max_s
        while not self.stop.is_set():
            if self._cancel.is_set():
                self._cancel.clear()
                current = await self.service.jobs.get(job.id)
                if current is not None and current.cancel_requested and not cancel_sent:
                    await self._cancel_quietly(pjid)
                    cancel_sent = True
                    job = current
            if self._clock() >= next_probe:
                next_probe = self._clock() + self.settings.poll_interval_max_s
                with contextlib.suppress(errors.PrinterTransient):
                    self.status = await self._probe()
                stuck_for = self._clock() - self.health.since
                if not self.health.healthy and stuck_for >= self.settings.in_hand_timeout_s:
                    await self._move_stuck(job, pjid)
                    return
            try:
                pj = await self.client.get_job_attributes(pjid)
            except errors.PrinterTransient as exc:
                failures += 1
                if isinstance(exc, errors.PrinterUnreachable) or failures >= 3:
                    raise _Unsettled from exc
                pj = None
            else:
                failures = 0
                if pj is None or job.id not in pj.name:
                    raise _Unsettled  # the printer forgot it (restart): reconcile decides
                if pj.terminal:
                    await self._finished(job, pj)
                    return
            await _wait_any((self.stop, self._cancel), delay)
            delay = min(delay * 2, self.settings.follow_interval_max_s)

    async def _move_stuck(self, job: JobRecord, pjid: int) -> None:
        """Cancel a job held by an unhealthy (but reachable) printer, then hand it to a peer.

        A jammed printer may keep a cancelled job "processing-to-stop-point"
        until the jam is cleared: the job moves anyway (DESIGN §3.6) and the
        printer is fenced, so the copy is cancelled again before it gets work.
        """
        await self._cancel_and_wait(pjid)
        pj = await self.client.get_job_attributes(pjid)
        if pj is not None and pj.state == JOB_COMPLETED:
            await self.service.complete(job, self.name)
            return
        if pj is not None and not pj.terminal:
            await self.service.jobs.add_fence(self.name, job.id, now=self._clock())
        reason = f"{self.name} unhealthy ({self.health.reason}); cancelled there, moved to a peer"
        log.warning(
            "job failed over",
            extra={"event": "job_failed_over", "job_id": job.id, "printer": self.name,
                   "why": self.health.reason, "correlation_id": job.correlation_id},
        )  # fmt: skip
        self.metrics.failovers.labels(printer=self.name).inc()
        await self.service.requeue(job, self.name, reason, self._clock(), count=False)

    async def _finished(self, job: JobRecord, pj: PrinterJob) -> None:
        if pj.state == JOB_COMPLETED:
            crash_point("after_printer_completed")
            await self.service.complete(job, self.name)
            self.health.on_job_printed()
            return
        if job.cancel_requested or (await self._cancel_was_requested(job)):
            await self.service.cancelled_at_printer(job, self.name)
            return
        error = f"printer job {pj.job_id} {_STATE_NAMES.get(pj.state, pj.state)}"
        if pj.message:
            error += f": {pj.message}"
        if pj.state == JOB_ABORTED and POISON_REASONS & set(pj.reasons):
            await self.service.fail(job, self.name, "poison", error)
            return
        sig = f"{_STATE_NAMES.get(pj.state, pj.state)}:{','.join(sorted(pj.reasons))}"
        await self._retry_or_dead(job, error, sig)

    async def _cancel_was_requested(self, job: JobRecord) -> bool:
        current = await self.service.jobs.get(job.id)
        return current is not None and bool(current.cancel_requested)

    # --- reconciliation ----------------------------------------------------------------

    async def _reconcile_all(self) -> bool:
        """Settle every PRINTING job of this printer; True when all are settled."""
        for job in await self.service.printing_on(self.name):
            if not await self._reconcile(job):
                return False
        self._needs_reconcile = False
        return True

    async def _lookup(self, job: JobRecord) -> list[PrinterJob] | None:
        try:
            found: list[PrinterJob] = []
            if job.printer_job_id is not None:
                pj = await self.client.get_job_attributes(job.printer_job_id)
                if pj is not None:
                    found.append(pj)
            found.extend(await self.client.get_jobs("all"))
        except errors.PrinterTransient:
            return None
        return found

    async def _reconcile(self, job: JobRecord) -> bool:
        """Apply the decision table to one job until it is settled or must wait."""
        for _ in range(10):  # each round changes the printer's or the store's state
            copies = await self._lookup(job)
            stored = reconcile.Stored(
                job.id, job.printer_job_id, job.upload, bool(job.cancel_requested),
                frozenset(k for k in job.discounted_copies.split(",") if k),
            )  # fmt: skip
            decision = reconcile.decide(stored, copies)
            self.metrics.reconciliations.labels(
                printer=self.name, verdict=decision.verdict.value
            ).inc()
            log.info(
                "job reconciled",
                extra={"event": "job_reconciled", "job_id": job.id, "printer": self.name,
                       "verdict": decision.verdict.value,
                       "printer_job_id": decision.copy.job_id if decision.copy else None,
                       "correlation_id": job.correlation_id},
            )  # fmt: skip
            match decision.verdict:
                case reconcile.Verdict.WAIT:
                    return False
                case reconcile.Verdict.FOLLOW:
                    assert decision.copy is not None
                    try:
                        await self._follow(job, decision.copy.job_id)
                    except _Unsettled:
                        return False
                    return not self.stop.is_set()
                case reconcile.Verdict.CANCEL:
                    assert decision.copy is not None
                    await self._cancel_and_wait(decision.copy.job_id)
                case reconcile.Verdict.DONE:
                    await self.service.complete(job, self.name)
                    return True
                case reconcile.Verdict.TRUNCATED_DONE:
                    self.metrics.truncated_copies.labels(printer=self.name).inc()
                    log.warning(
                        "truncated copy printed",
                        extra={"event": "truncated_copy", "job_id": job.id,
                               "printer": self.name, "correlation_id": job.correlation_id},
                    )  # fmt: skip
                    assert decision.copy is not None
                    discounted = ",".join(
                        k for k in (job.discounted_copies, reconcile.copy_key(decision.copy)) if k
                    )
                    updated = await self.service.update_printing(
                        job, self.name, upload=None, printer_job_id=None,
                        truncated_copies=job.truncated_copies + 1, discounted_copies=discounted,
                    )  # fmt: skip
                    if updated is None:
                        return True
                    job = updated
                case reconcile.Verdict.RETRY | reconcile.Verdict.SEND if job.cancel_requested:
                    await self.service.cancelled_at_printer(job, self.name)
                    return True
                case reconcile.Verdict.RETRY:
                    copy = decision.copy
                    await self._retry_or_dead(
                        job, f"printer job {copy.job_id if copy else '?'} did not complete",
                        "reconciled:not-completed",
                    )  # fmt: skip
                    return True
                case reconcile.Verdict.SEND:
                    await self.service.requeue(
                        job, self.name, "resent after reconciliation", self._clock(), count=False
                    )
                    return True
                case reconcile.Verdict.UNKNOWN:
                    return await self._unknown(job)
        return False

    async def _unknown(self, job: JobRecord) -> bool:
        if self.settings.on_unknown_outcome == "reprint":
            await self.service.requeue(
                job, self.name, "printer forgot the job; reprinting (on_unknown_outcome=reprint)",
                self._clock(), count=False,
            )  # fmt: skip
            return True
        await self.service.fail(
            job, self.name, "outcome_unknown",
            "the printer has no record of a job whose document it may have printed",
        )  # fmt: skip
        return True

    async def _cancel_and_wait(self, pjid: int) -> None:
        """Cancel-Job, then wait (bounded) until the printer reports the job terminal."""
        await self._cancel_quietly(pjid)
        delay = self.settings.poll_interval_min_s
        deadline = self._clock() + self.settings.request_timeout_s * 3
        while self._clock() < deadline and not self.stop.is_set():
            try:
                pj = await self.client.get_job_attributes(pjid)
            except errors.PrinterTransient:
                return
            if pj is None or pj.terminal:
                return
            await asyncio.sleep(delay)
            delay = min(delay * 2, self.settings.poll_interval_max_s)


async def _wait_any(events: tuple[asyncio.Event, ...], seconds: float) -> None:
    """Return after ``seconds`` or as soon as any of ``events`` is set."""
    waits = [asyncio.ensure_future(e.wait()) for e in events]
    try:
        await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits:
            w.cancel()


_PRINTER_STATES = {3: "idle", 4: "processing", 5: "stopped"}
_STATE_NAMES = {JOB_ABORTED: "aborted", JOB_CANCELED: "canceled", JOB_COMPLETED: "completed"}
