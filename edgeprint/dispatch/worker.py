"""One printer's worker: a loop over its monitor, its copies' runs and settlement (DESIGN §3).

Each turn: is the printer ours (its lease)? → the monitor checks trust and probes
(health, epoch, personality) → settlement sweeps what the printer may still hold
(at start-up, after a new epoch, an ambiguous outcome or an outage) → a job is
claimed with its copy → the copy's run sends and follows it
(:mod:`~edgeprint.dispatch.copy_run`) → settlement does what its outcome means
(:mod:`~edgeprint.dispatch.settle`), which may hand back a copy to follow again.
The worker holds at most one job at a time and hands the printer a job only
while the printer's ``queued-job-count`` is below ``max_inflight``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from edgeprint import errors
from edgeprint.backoff import Backoff
from edgeprint.board import PrinterBoard
from edgeprint.config import DispatchConfig, PrinterConfig
from edgeprint.copies import Copy
from edgeprint.dispatch import formats
from edgeprint.dispatch.copy_run import CopyRun, Outcome, wait_any
from edgeprint.dispatch.leases import Ownership, SoleOwner
from edgeprint.dispatch.monitor import Monitor
from edgeprint.dispatch.observer import Observer, Unsettled
from edgeprint.dispatch.prepare import Preparer
from edgeprint.dispatch.settle import ROUNDS, Settlement
from edgeprint.documents.cache import RenditionCache
from edgeprint.documents.render import RenderPool
from edgeprint.faults import crash_point
from edgeprint.logs import log_event
from edgeprint.metrics import Metrics
from edgeprint.printers.health import PrinterSnapshot
from edgeprint.printers.ipp import IppClient, PrinterStatus
from edgeprint.service import JobRecord, JobService

log = logging.getLogger(__name__)

DOCUMENT_FORMAT = formats.PDF
#: The first wait after a write the store refused; it doubles up to unreachable_retry_max_s.
_STORE_RETRY_S = 0.1


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
        clock: Callable[[], float] = time.time,
        timer: Callable[[], float] = time.monotonic,
        renderer: RenderPool | None = None,
        renditions: RenditionCache | None = None,
        board: PrinterBoard | None = None,
        ownership: Ownership | None = None,
    ) -> None:
        self.name = printer.name
        self.config = printer
        self.client = client
        self.service = service
        self.settings = settings
        self.stop = stop
        #: Whether this appliance drives the printer now (its lease, DESIGN §10).
        self.ownership: Ownership = ownership or SoleOwner("")
        self._lease_epoch = self.ownership.epoch(printer.name)
        self.board = board if board is not None else PrinterBoard()
        self._clock = clock
        self._wake = asyncio.Event()
        self._control = asyncio.Event()
        self._cancel = asyncio.Event()
        self._needs_reconcile = True
        cap = settings.unreachable_retry_max_s
        #: the wait after each unanswered probe (from twice the poll interval)
        self._unreachable = Backoff(min(2 * settings.poll_interval_min_s, cap), cap)
        self._store_lost = Backoff(min(_STORE_RETRY_S, cap), cap)  # while the store refuses
        self.current_job: str | None = None
        self.monitor = Monitor(
            printer,
            client,
            service,
            settings,
            metrics,
            self.board,
            self.ownership,
            raster=renderer is not None,
            clock=clock,
            timer=timer,
        )
        # a copy's timeouts are durations: the monotonic ``timer`` (no wall-clock step moves
        # them, issue 27); the monitor's times are shown to people (wall ``clock``)
        self.observer = Observer(client, service, self.monitor, settings, stop, clock=timer)
        self.run_copy = CopyRun(
            client,
            service,
            self.monitor,
            self.observer,
            settings,
            metrics,
            self.ownership,
            stop,
            self._cancel,
            clock=timer,
        )
        self.settle = Settlement(
            service, self.monitor, self.observer, settings, metrics, clock=clock
        )
        self.prepare = Preparer(
            service,
            self.monitor,
            settings,
            renderer=renderer,
            renditions=renditions,
            clock=clock,
        )

    # --- signals from the rest of the appliance ------------------------------------

    @property
    def retired(self) -> bool:
        """A reload removed this printer: it finishes what it holds and claims nothing new."""
        return self.monitor.retired

    @retired.setter
    def retired(self, value: bool) -> None:
        self.monitor.retired = value

    def wake(self) -> None:
        """A job for this printer became claimable: stop waiting."""
        self._wake.set()

    def control(self) -> None:
        """A technician acted on this printer (pause, resume, cancel of the job in hand)."""
        self._cancel.set()
        self._control.set()
        self._wake.set()

    def resumed(self) -> None:
        """A technician resumed (or re-trusted) the printer: forget what only a person clears."""
        self.monitor.resumed()
        self._needs_reconcile = True
        self.control()

    def snapshot(self) -> PrinterSnapshot:
        """The technician's view of this printer right now."""
        return self.monitor.snapshot(self.current_job)

    # --- main loop -------------------------------------------------------------------

    async def run(self) -> None:
        """Work until the stop event is set.

        A full disk, a disk that refuses writes or a lost database connection (PostgreSQL
        reconnects) makes the worker wait (nothing of the step was recorded: every write
        is conditional and all-or-nothing; what a broken COMMIT kept is reconciled); other
        store failures propagate (the process exits and systemd restarts it).
        """
        self._unreachable.reset()
        while not self.stop.is_set():
            try:
                await self._step()
                self._store_lost.reset()
                self.monitor.publish()  # health may have moved inside the step
            except errors.StorageFull as exc:
                log_event(
                    log,
                    "worker_store_full",
                    message="store full: worker waits",
                    level=logging.ERROR,
                    printer=self.name,
                    error=str(exc),
                )
                self._needs_reconcile = True
                await self._hold_off(self.settings.unreachable_retry_max_s)
            except errors.StoreTransient as exc:  # a disk or PostgreSQL that comes back
                # a refusing disk is logged once by the store's health (edgeprint.store.health)
                quiet = isinstance(exc, errors.StoreWriteFailed)
                log_event(
                    log,
                    "worker_store_lost",
                    message="store unavailable: worker waits",
                    level=logging.DEBUG if quiet else logging.ERROR,
                    printer=self.name,
                    error=str(exc),
                )
                self._needs_reconcile = True  # a claim may have committed as the link broke
                await self._hold_off(self._store_lost.failed())

    async def _step(self) -> None:
        """One turn: check, probe, settle, then claim and print one job (or wait)."""
        if not await self._owned():
            return
        m = self.monitor
        try:
            await m.ensure_trust()
            status, new_epoch = await m.probe()
            self._needs_reconcile |= new_epoch
            self._unreachable.reset()
            if not m.health.healthy:  # before anything that may wait on the printer
                await self.service.printers.fail_over_waiting(self.name, m.health.reason or "")
            if self._needs_reconcile and not await self._sweep():
                await self._hold_off(self.settings.unreachable_retry_max_s)
                return
            if not m.health.healthy:
                await self._hold_off(self.settings.unreachable_retry_max_s)
                return
            if self.name in self.service.admission.paused or self.retired:
                await self._hold_off(self.settings.idle_probe_interval_s)
                return
            if status.queued_job_count >= self.config.max_inflight:
                await self._pause(self.settings.poll_interval_max_s)
                return
            self._wake.clear()
            await self._claim_and_print(status)
        except errors.PrinterBusy:
            await self._pause(self.settings.busy_backoff_s)
        except (
            errors.PrinterNeedsTls,
            errors.PrinterAnswerError,
            errors.CertificateChanged,
            errors.TlsHandshakeFailed,
        ) as exc:
            self._needs_reconcile = True
            await self._hold_off(await m.on_bad_answer(exc))
        except errors.PrinterError as exc:
            self._needs_reconcile = True
            if await m.on_unreachable(exc) >= self.settings.in_hand_timeout_s:
                await self.settle.give_up_in_hand()
            await self._hold_off(self._unreachable.failed())

    async def _owned(self) -> bool:
        """True when this appliance may drive the printer now; else wait a little.

        A new lease (a takeover, or this appliance's own again after a lapse) means the
        printer's jobs are reconciled before anything is sent, as at start.
        """
        lease_epoch = self.ownership.epoch(self.name)
        if lease_epoch != self._lease_epoch:
            self._lease_epoch = lease_epoch
            self._needs_reconcile = True
            self.monitor.rolls.reload()  # another appliance may have counted its roll meanwhile
        if self.ownership.may_send(self.name):
            return True
        self._needs_reconcile = True
        self.board.withdraw(self.name)  # admission reads no stale view of a printer not ours
        self.monitor.reachable = False
        await self._pause(self.settings.poll_interval_max_s)
        return False

    # --- one job ---------------------------------------------------------------------

    async def _claim_and_print(self, status: PrinterStatus) -> None:
        """Claim the next job with its copy, make what the printer is sent, run the copy."""
        operation = "Create-Job" if status.supports_create_job else "Print-Job"
        epoch = self.monitor.life.epoch_number
        takes_zpl = formats.takes_raw(self.monitor.capabilities, formats.ZPL)
        if self.monitor.sends != formats.PDF:
            job = await self.service.worker.claim_next(self.name, takes_zpl=takes_zpl)
            if job is None:
                await self._idle()
                return
            if formats.is_raw(job.document_format):
                rendered = await self.prepare.raw(job)
            else:
                rendered = await self.prepare.raster(job)
            if rendered is None:
                return
            fmt, data = rendered
            copy = await self.service.worker.open_copy(
                job,
                self.name,
                operation=operation,
                document_format=fmt,
                printer_up_s=status.up_time_s,
                document_bytes=len(data),
                epoch=epoch,
            )
            if copy is None:  # cancelled or moved meanwhile, or a copy of it printed
                await self._settle_unopened(job)
                return
            await self._print(job, copy, data, status)
            return
        claimed = await self.service.worker.claim_and_open(
            self.name,
            operation=operation,
            document_format=DOCUMENT_FORMAT,
            printer_up_s=status.up_time_s,
            epoch=epoch,
            takes_zpl=takes_zpl,
        )
        if claimed is None:
            await self._idle()
            return
        job, opened = claimed
        if opened is None:
            await self._settle_unopened(job)
            return
        prepared = await self.prepare.for_copy(job, opened)
        if prepared is None:
            return
        copy, document = prepared
        await self._print(job, copy, document, status)

    async def _settle_unopened(self, job: JobRecord) -> None:
        """A claimed job that got no copy: settle it by its copies (one printed on a printer
        it had moved from makes it DONE); a printer that cannot be asked now leaves it to
        the next sweep."""
        try:
            await self.settle.conclude(job)
        except Unsettled:
            self._needs_reconcile = True

    async def _print(
        self, job: JobRecord, copy: Copy, document: bytes, status: PrinterStatus
    ) -> None:
        log_event(
            log,
            "job_dispatched",
            job_id=job.id,
            printer=self.name,
            attempt=job.attempts,
            correlation_id=job.correlation_id,
        )
        crash_point("after_claim")
        self.current_job = job.id
        try:
            outcome = await self.run_copy.send(job, copy, document, status)
            if not await self._see_through(job, outcome):
                self._needs_reconcile = True  # not settled yet: look again before new work
        except Unsettled:
            self._needs_reconcile = True
        finally:
            self.current_job = None
            if self.settle.left_live:  # a copy stays live here: settle it before new work
                self.settle.left_live = False
                self._needs_reconcile = True

    async def _see_through(self, job: JobRecord, outcome: Outcome) -> bool:
        """Settlement and the copy's run in turn, until the job is settled or must wait.

        True when settled. A refusal because the printer went away is raised on as it is
        (the printer is unreachable: the turn's handler counts it).
        """
        for _ in range(ROUNDS):
            nxt = await self.settle.after(job, outcome)
            if isinstance(outcome.error, errors.PrinterUnreachable):
                raise outcome.error
            if not isinstance(nxt, Copy):
                return nxt
            self.current_job = job.id
            outcome = await self.run_copy.follow(job, nxt)
        return False

    async def _sweep(self) -> bool:
        """Settle every job PRINTING here (concluded, and followed while a copy is live),
        then every other copy this printer may still hold (:meth:`Settlement.sweep`).

        True when nothing is left open; then new work may be sent.
        """
        try:
            for job in await self.service.worker.printing_on(self.name):
                nxt = await self.settle.conclude(job)
                if isinstance(nxt, Copy):
                    self.current_job = job.id
                    try:
                        nxt = await self._see_through(job, await self.run_copy.follow(job, nxt))
                    finally:
                        self.current_job = None
                if not nxt:
                    return False
            if not await self.settle.sweep():
                return False
        except Unsettled:
            return False
        self._needs_reconcile = False
        return True

    # --- waiting -----------------------------------------------------------------------

    async def _pause(self, seconds: float) -> None:
        """Wait ``seconds`` or until stopped or woken (a job became claimable)."""
        await wait_any((self.stop, self._wake), seconds)

    async def _hold_off(self, seconds: float) -> None:
        """Wait ``seconds`` or until stopped or a technician acts; new jobs do not wake it.

        A printer that cannot take work (unreachable, unhealthy, paused) must
        not be probed once per incoming job.
        """
        self._control.clear()
        await wait_any((self.stop, self._control), seconds)

    async def _idle(self) -> None:
        """Nothing to claim: wait for a wake-up, the next backed-off job, or a probe."""
        timeout = self.settings.idle_probe_interval_s
        ready_at = await self.service.worker.next_ready_at(self.name)
        if ready_at is not None:
            timeout = min(timeout, max(0.0, ready_at - self.service.run()) + 0.001)
        await self._pause(timeout)


__all__ = ["DOCUMENT_FORMAT", "PrinterWorker"]
