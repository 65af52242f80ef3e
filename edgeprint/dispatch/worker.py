"""One printer's worker: settle what the printer holds, claim, send, follow (DESIGN §3).

The worker holds at most one job at a time and hands the printer a job only
while the printer's ``queued-job-count`` is below ``max_inflight``. Every
printer job it makes is a *copy* (:mod:`edgeprint.copies`), recorded before
the request that makes it and moved through its own states as the printer
answers. Before it sends anything new the worker settles every copy the
printer may still hold (at start-up, after any ambiguous outcome, after the
printer was unreachable), so a crash can never put a second copy on paper.

What each printer answer means for a copy is :func:`reconcile.observe`; what
a job's copies mean for the job is :func:`edgeprint.copies.judge`, carried out
by the service. This loop only asks the printer and reports.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable
from typing import Any

from yarl import URL

from edgeprint import errors
from edgeprint.board import PrinterBoard, Usability
from edgeprint.config import DispatchConfig, PrinterConfig
from edgeprint.copies import ORIGIN_REQUESTED, Copy, CopyState, Kind, Verdict
from edgeprint.dispatch import formats, reconcile
from edgeprint.documents.cache import RenditionCache
from edgeprint.documents.capabilities import (
    REQUESTED_ATTRIBUTES,
    PrinterCapabilities,
    parse_capabilities,
)
from edgeprint.documents.render import RenderPool
from edgeprint.faults import crash_point
from edgeprint.metrics import Metrics
from edgeprint.printers import supplies, tls
from edgeprint.printers.health import Health, HealthChange, HealthSettings, PrinterSnapshot
from edgeprint.printers.ipp import IppClient, PrinterStatus
from edgeprint.service import JobRecord, JobService
from edgeprint.service.leases import Ownership, SoleOwner
from edgeprint.states import JobState

log = logging.getLogger(__name__)

DOCUMENT_FORMAT = formats.PDF
#: Longest back-off between probes of a printer that answers but cannot be used (seconds).
BAD_ANSWER_BACKOFF_MAX_S = 60.0
#: The first bytes of an answer that is not IPP are logged at most this often (seconds).
HEX_LOG_INTERVAL_S = 3600.0
#: Rounds of observe → judge → act for one job before the worker waits and tries later.
ROUNDS = 10
#: A printer that reports printer-config-change-time is described (capabilities,
#: supplies) when that time moves, when it restarted or was unreachable, and at least this
#: often (seconds); the probes between ask for its state only.
DESCRIBE_EVERY_S = 60.0
#: A printer-up-time this far behind the time since the printer was described means it
#: restarted (seconds; printer-up-time counts whole seconds).
RESTART_SLACK_S = 2.0


class _Unsettled(Exception):
    """A copy's outcome is not settled yet (printer unreachable): keep the job PRINTING."""


class _MonitoringFailed(Exception):
    """Neither Get-Job-Attributes nor Get-Jobs gave a usable answer about a copy."""


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
        renderer: RenderPool | None = None,
        renditions: RenditionCache | None = None,
        board: PrinterBoard | None = None,
        ownership: Ownership | None = None,
    ) -> None:
        self.name = printer.name
        #: Whether this appliance drives the printer now (its lease, DESIGN §10).
        self.ownership: Ownership = ownership or SoleOwner("")
        self._epoch = self.ownership.epoch(printer.name)
        #: Where this worker publishes what admission needs of its printer.
        self.board = board if board is not None else PrinterBoard()
        self.renderer = renderer
        self.renditions = renditions
        self.capabilities: PrinterCapabilities | None = None
        self._caps_from: dict[str, Any] | None = None  # the attributes they were read from
        #: The last probe that described the printer (its capabilities and supplies), and when.
        self._described: PrinterStatus | None = None
        self._described_at = 0.0
        #: The format a (PDF) job is sent to this printer in; None: none edgeprint can make.
        self.sends: str | None = formats.PDF
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
        self._bad_answer_backoff_s = 0.0
        self._retry_delay_s = settings.poll_interval_min_s
        self._hex_logged_at: float | None = None
        #: How long this printer's jobs take, acknowledged → seen settled (moving average):
        #: the follow polls finely around then instead of on its back-off (DESIGN §11).
        self._typical_s: float | None = None
        self.status: PrinterStatus | None = None
        self._trusted = False  # ipps: the certificate was checked against its pin
        self.reachable = False
        self.current_job: str | None = None
        #: A reload removed this printer: it finishes what it holds and claims nothing new.
        self.retired = False
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

    def resumed(self) -> None:
        """A technician resumed (or re-trusted) the printer: forget what only a person clears."""
        self.health.clear()
        self._trusted = False
        self._needs_reconcile = True
        self.publish()
        self.control()

    def publish(self) -> None:
        """Put what admission needs of this printer on the board (after every change of view)."""
        if self.retired:  # withdrawn from the board: the printer is no longer configured
            return
        if not self.ownership.may_send(self.name):  # another appliance's printer (its lease)
            return
        caps = self.capabilities
        self.board.publish(
            self.name,
            Usability(
                healthy=self.health.healthy, sends=self.sends,
                takes=caps.formats if caps is not None else (), probed=caps is not None,
            ),
        )  # fmt: skip

    # --- main loop -------------------------------------------------------------------

    async def run(self) -> None:
        """Work until the stop event is set.

        A full disk or a lost database connection (PostgreSQL reconnects) makes the
        worker wait (nothing of the step was recorded: every write is conditional and
        all-or-nothing; what a broken COMMIT kept is reconciled); other store failures propagate
        (the process exits and systemd restarts it).
        """
        self._retry_delay_s = self.settings.poll_interval_min_s
        while not self.stop.is_set():
            try:
                await self._step()
                self.publish()  # health may have moved inside the step (a job printed, failed)
            except errors.StorageFull as exc:
                log.error(
                    "store full: worker waits",
                    extra={"event": "worker_store_full", "printer": self.name, "error": str(exc)},
                )
                self._needs_reconcile = True
                await self._hold_off(self.settings.unreachable_retry_max_s)
            except errors.StoreReconnecting as exc:  # PostgreSQL lost: the store reconnects
                log.error(
                    "store reconnecting: worker waits",
                    extra={"event": "worker_store_lost", "printer": self.name, "error": str(exc)},
                )
                self._needs_reconcile = True  # a claim may have committed as the link broke
                await self._hold_off(self.settings.unreachable_retry_max_s)

    async def _step(self) -> None:
        """One turn: check, probe, settle, then claim and print one job (or wait)."""
        if not await self._owned():
            return
        try:
            await self._ensure_trust()
            self.status = await self._probe()
            self._retry_delay_s = self.settings.poll_interval_min_s
            self._bad_answer_backoff_s = 0.0
            if not self.health.healthy:  # before anything that may wait on the printer
                await self.service.fail_over_waiting(self.name, self.health.reason or "")
            if self._needs_reconcile and not await self._sweep():
                await self._hold_off(self.settings.unreachable_retry_max_s)
                return
            if not self.health.healthy:
                await self._hold_off(self.settings.unreachable_retry_max_s)
                return
            if self.service.is_paused(self.name) or self.retired:
                await self._hold_off(self.settings.idle_probe_interval_s)
                return
            if self.status.queued_job_count >= self.config.max_inflight:
                await self._pause(self.settings.poll_interval_max_s)
                return
            self._wake.clear()
            if self.sends != formats.PDF:
                job = await self.service.claim_next(self.name)
                if job is None:
                    await self._idle()
                    return
                await self._dispatch_raster(job, self.status)
                return
            claimed = await self.service.claim_and_open(
                self.name,
                operation=self._operation(self.status),
                document_format=DOCUMENT_FORMAT,
                printer_up_s=self.status.up_time_s,
            )
            if claimed is None:
                await self._idle()
                return
            await self._dispatch(*claimed, self.status)
        except errors.PrinterBusy:
            await self._pause(self.settings.busy_backoff_s)
        except (
            errors.PrinterNeedsTls, errors.PrinterAnswerError, errors.CertificateChanged,
            errors.TlsHandshakeFailed,
        ) as exc:  # fmt: skip
            await self._bad_answer(exc)
        except errors.PrinterError as exc:
            await self._unreachable(exc)
            self._retry_delay_s = min(
                self._retry_delay_s * 2, self.settings.unreachable_retry_max_s
            )
            await self._hold_off(self._retry_delay_s)

    async def _owned(self) -> bool:
        """True when this appliance may drive the printer now; else wait a little.

        A new lease (a takeover, or this appliance's own again after a lapse) means the
        printer's jobs are reconciled before anything is sent, as at start.
        """
        epoch = self.ownership.epoch(self.name)
        if epoch != self._epoch:
            self._epoch = epoch
            self._needs_reconcile = True
        if self.ownership.may_send(self.name):
            return True
        self._needs_reconcile = True
        self.board.withdraw(self.name)  # admission reads no stale view of a printer not ours
        self.reachable = False
        await self._pause(self.settings.poll_interval_max_s)
        return False

    def _check_lease(self) -> None:
        """Right before a request that may print: stop when the lease may be near its end."""
        if not self.ownership.may_send(self.name):
            raise _Unsettled

    def _describe_due(self, now: float) -> bool:
        last = self._described
        return (
            last is None
            or last.config_change_time is None  # it cannot say when it changed: always ask
            or now - self._described_at >= DESCRIBE_EVERY_S
        )

    def _described_since(self, status: PrinterStatus, now: float) -> bool:
        """True when a state-only answer shows the printer as last described: the same
        printer-config-change-time, and its printer-up-time as far on as the time since
        (give or take ``RESTART_SLACK_S``), so it has not restarted meanwhile."""
        last = self._described
        if last is None or status.config_change_time != last.config_change_time:
            return False
        if status.up_time_s is None or last.up_time_s is None:
            return False
        expected = last.up_time_s + (now - self._described_at)
        return status.up_time_s >= expected - RESTART_SLACK_S

    async def _probe(self) -> PrinterStatus:
        status = await self.client.get_printer_attributes(
            describe=self._describe_due(self._clock())
        )
        if not status.described and not self._described_since(status, self._clock()):
            status = await self.client.get_printer_attributes(describe=True)
        now = self._clock()
        if status.described:
            self._described, self._described_at = status, now
        if not self.reachable:
            log.info("printer reachable", extra={"event": "printer_up", "printer": self.name})
        self.reachable = True
        self._unreachable_since = None
        self.metrics.printer_up.labels(printer=self.name).set(1)
        described = self._described
        assert described is not None
        said = {k: described.attributes.get(k) for k in REQUESTED_ATTRIBUTES}
        if said != self._caps_from:  # what the printer says it takes changed: read it again
            self._caps_from = said
            self.capabilities = parse_capabilities(described.attributes)
            self.sends = formats.generic(self.capabilities, raster=self.renderer is not None)
        unusable = None
        if self.sends is None and self.capabilities is not None:
            unusable = formats.unusable(self.capabilities)
        await self._health_changed(self.health.on_probe(status, now, unusable))
        self.publish()
        self.metrics.printer_healthy.labels(printer=self.name).set(int(self.health.healthy))
        return status

    async def _unreachable(self, exc: errors.PrinterError) -> None:
        now = self._clock()
        self._described = None  # it may come back another printer: describe it again
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

    async def _ensure_trust(self) -> None:
        """ipps://: check the printer's certificate before anything is sent to it.

        ``tls = "pin"``: trust on first use — the fingerprint seen first is
        stored, and every later contact must present the same certificate.
        ``tls = "verify"``: the system CA store. Raises errors.CertificateChanged,
        errors.TlsHandshakeFailed, errors.PrinterUnreachable.
        """
        if self._trusted or not self.config.secure:
            return
        if self.config.tls == "verify":
            self.client.ssl = tls.verify_context()
            self._trusted = True
            return
        url = URL(self.config.uri)
        pinned = await self.service.printer_pin(self.name)
        got = await tls.trust(
            url.host or "", url.port or 631, pinned, printer=self.name,
            timeout_s=self.settings.request_timeout_s,
        )  # fmt: skip
        if got.first_contact:
            await self.service.pin_printer(self.name, got.fingerprint)
        self.client.ssl = got.ssl
        self._trusted = True

    async def _bad_answer(self, exc: errors.EdgeprintError) -> None:
        """The printer answered in a way edgeprint cannot use: unhealthy, probed slowly.

        HTTP 426 says "use ipps://"; an HTTP error or a reply that is not IPP is
        named as such. Jobs are untouched; the first bytes of a reply that is
        not IPP are logged (hex) at most once an hour.
        """
        now = self._clock()
        self._needs_reconcile = True
        if isinstance(exc, errors.PrinterNeedsTls):
            problem = "printer requires TLS: use ipps://"
        elif isinstance(exc, errors.CertificateChanged):
            problem = str(errors.CertificateChanged(exc.was, exc.now, self.name))
            self._trusted = False  # nothing is sent until it presents the pinned one again
            self.metrics.certificate_changes.labels(printer=self.name).inc()
        elif isinstance(exc, errors.TlsHandshakeFailed):
            problem = f"no TLS session: {exc.detail}"
        else:
            problem = f"printer answer unusable: {exc}"
        self.reachable = True
        self.metrics.printer_up.labels(printer=self.name).set(1)
        await self._health_changed(self.health.on_bad_answer(problem, now))
        self.metrics.printer_healthy.labels(printer=self.name).set(0)
        head = exc.head if isinstance(exc, errors.PrinterAnswerError) else b""
        if head and (
            self._hex_logged_at is None or now - self._hex_logged_at >= HEX_LOG_INTERVAL_S
        ):
            self._hex_logged_at = now
            log.warning(
                "printer answer is not IPP",
                extra={"event": "printer_bad_answer", "printer": self.name,
                       "error": str(exc), "head_hex": head.hex()},
            )  # fmt: skip
        await self.service.fail_over_waiting(self.name, problem)
        self._bad_answer_backoff_s = min(
            BAD_ANSWER_BACKOFF_MAX_S,
            max(self.settings.unreachable_retry_max_s, self._bad_answer_backoff_s * 2),
        )
        await self._hold_off(self._bad_answer_backoff_s)

    async def _health_changed(self, change: HealthChange | None) -> None:
        if change is None:
            return
        self.publish()
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
        """The technician's view of this printer right now (no stale state when it is down)."""
        st = self.status if self.reachable else None
        owner, epoch = self.ownership.owner(self.name)
        return PrinterSnapshot(
            name=self.name,
            uri=self.config.uri,
            pool=self.config.pool,
            healthy=self.health.healthy,
            health_reason=self.health.reason,
            reachable=self.reachable,
            paused=self.service.is_paused(self.name),
            printer_state=_PRINTER_STATES.get(st.state, str(st.state)) if st else None,
            printer_state_reasons=st.reasons if st else (),
            printer_state_message=st.message if st else "",
            queued_job_count=st.queued_job_count if st else None,
            printing_job=self.current_job,
            last_error=self.health.last_error,
            capabilities=self.capabilities.as_json() if self.capabilities else None,
            sends=self.sends if self.capabilities else None,
            unreachable_since=self._unreachable_since,
            supplies=(
                supplies.from_attributes(self._described.attributes)
                if st and self._described
                else None
            ),
            owner=owner,
            epoch=epoch,
        )

    # --- waiting -----------------------------------------------------------------------

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

    @staticmethod
    def _operation(status: PrinterStatus) -> str:
        return "Create-Job" if status.supports_create_job else "Print-Job"

    async def _dispatch(self, job: JobRecord, copy: Copy, status: PrinterStatus) -> None:
        if job.claims > 1 and await self._pdf_failed_here(job):
            # The printer lists PDF but could not print this one: once more, in raster.
            rendered = await self._rendition(job, raster_only=True)
            if rendered is None:  # the job was failed or put back: nothing was asked of the printer
                await self.service.settle_copy(copy, CopyState.REFUSED, "no raster could be made")
                return
            fmt, data = rendered
            redescribed = await self.service.redescribe_copy(copy, fmt, len(data))
            if redescribed is not None:
                await self._go(job, redescribed, data, status)
                return
        try:
            document = await self.service.read_document(job)
        except OSError as exc:
            await self.service.settle_copy(copy, CopyState.REFUSED, f"document unreadable: {exc}")
            await self._unreadable(job, exc)
            return
        await self._go(job, copy, document, status)

    async def _pdf_failed_here(self, job: JobRecord) -> bool:
        """This printer blamed this job's PDF before (completed/aborted with a document error)
        and takes a raster edgeprint can make instead."""
        if self.renderer is None or self.capabilities is None:
            return False
        if formats.generic(formats.without_pdf(self.capabilities), raster=True) in (
            None,
            formats.PDF,
        ):
            return False
        return any(
            c.printer == self.name
            and c.state is CopyState.DOCUMENT_ERROR
            and c.document_format == formats.PDF
            for c in await self.service.copies_of(job.id)
        )

    async def _rendition(self, job: JobRecord, *, raster_only: bool) -> tuple[str, bytes] | None:
        """The job's document in the format this printer takes best (rendered, cached).

        None when it cannot be made (the job is then failed or noted here).
        """
        assert self.renderer is not None
        assert self.capabilities is not None
        caps = formats.without_pdf(self.capabilities) if raster_only else self.capabilities
        try:
            path = await self.service.document_path(job)
        except OSError as exc:
            await self._unreadable(job, exc)
            return None
        try:
            made = await formats.render(
                self.renderer, self.renditions, caps, job.document_sha256, str(path)
            )
        except errors.DocumentUnprintable as exc:
            await self.service.fail(job, self.name, exc.slug.replace("-", "_"), exc.detail)
            return None
        except errors.RenderFailed as exc:
            verdict = self.service.on_failure(job, self.name, "render-failed", str(exc))
            await self.service.settle_job(job, self.name, verdict)
            return None
        except OSError as exc:
            await self._unreadable(job, exc)
            return None
        if made.note:
            await self.service.note(job, self.name, made.note)
        return made.format, made.data

    async def _dispatch_raster(self, job: JobRecord, status: PrinterStatus) -> None:
        """A printer that takes no PDF: render the job for it, then make one copy of that."""
        rendered = await self._rendition(job, raster_only=False)
        if rendered is None:
            return
        fmt, data = rendered
        copy = await self.service.open_copy(
            job, self.name, operation=self._operation(status), document_format=fmt,
            printer_up_s=status.up_time_s, document_bytes=len(data),
        )  # fmt: skip
        if copy is None:  # cancelled or moved meanwhile
            return
        await self._go(job, copy, data, status)

    async def _go(self, job: JobRecord, copy: Copy, document: bytes, status: PrinterStatus) -> None:
        log.info(
            "job dispatched",
            extra={"event": "job_dispatched", "job_id": job.id, "printer": self.name,
                   "attempt": job.attempts, "correlation_id": job.correlation_id},
        )  # fmt: skip
        crash_point("after_claim")
        self.current_job = job.id
        try:
            await self._send(job, copy, document, status)
        except _Unsettled:
            self._needs_reconcile = True
        finally:
            self.current_job = None

    async def _unreadable(self, job: JobRecord, exc: OSError) -> None:
        """The document of a claimed job could not be read: gone → DEAD, else later again."""
        if isinstance(exc, FileNotFoundError):
            await self.service.fail(job, self.name, "document_missing", f"document: {exc}")
        else:  # EMFILE, EIO…: the document is there, reading it failed now
            log.warning(
                "document unreadable",
                extra={"event": "document_unreadable", "job_id": job.id, "printer": self.name,
                       "error": str(exc), "correlation_id": job.correlation_id},
            )  # fmt: skip
            not_before = self._clock() + self.settings.unreachable_retry_max_s
            await self.service.requeue(job, self.name, f"document: {exc}", not_before, count=False)

    async def _send(
        self, job: JobRecord, copy: Copy, document: bytes, status: PrinterStatus
    ) -> None:
        """Make one copy: Create-Job + Send-Document (or Print-Job), then follow it.

        The copy is recorded before each request that may make or fill a
        printer job, so a crash at any point leaves a record that reconciliation
        settles; nothing is ever sent blindly twice.
        """
        name = reconcile.printer_job_name(job.id)
        copies = job.copies if job.copies > 1 and status.copies_supported else None
        if copy.operation == "Create-Job":
            self._check_lease()
            try:
                pjid = await self.client.create_job(name, job.owner, copies=copies)
            except errors.PrinterAmbiguous:
                raise _Unsettled from None  # an empty job may exist: reconciliation finds it
            except errors.PrinterError as exc:
                await self._refused(job, copy, exc)
                return
            crash_point("after_create_job")
            sending = await self.service.copy_created(copy, pjid, sending=True)
            if sending is None or sending.state is not CopyState.SENDING:
                # a person cancelled it meanwhile: the empty printer job must go
                await self._conclude(job)
                return
            self._check_lease()
            try:
                await self.client.send_document(pjid, job.owner, document, copy.document_format)
            except errors.PrinterAmbiguous:
                raise _Unsettled from None  # the printer may have all, part or none of it
            except errors.PrinterUnreachable:
                await self.service.copy_unsent(sending)  # not one byte left
                raise _Unsettled from None
            except errors.PrinterError as exc:
                await self._refused(job, sending, exc)
                return
            crash_point("after_send_document")
            acked = await self.service.copy_acknowledged(sending)
        else:
            self._check_lease()
            try:
                pjid = await self.client.print_job(
                    name, job.owner, document, copy.document_format, copies=copies
                )
            except errors.PrinterAmbiguous:
                raise _Unsettled from None
            except errors.PrinterError as exc:
                await self._refused(job, copy, exc)
                return
            crash_point("after_send_document")
            acked = await self.service.copy_acknowledged(copy, pjid)
        if acked is None or acked.state is not CopyState.ACKNOWLEDGED:
            await self._conclude(job)  # cancelled meanwhile: judged with the printer's word
            return
        await self._follow(job, acked)

    async def _refused(self, job: JobRecord, copy: Copy, exc: errors.PrinterError) -> None:
        """The printer answered a Create-Job/Send-Document/Print-Job with an error.

        Nothing of this attempt can print: a printer job it may have made is
        cancelled, the copy is settled ``refused``, and the job follows the
        refusal (poison, busy back-off, retry policy) — unless a person asked
        to cancel it meanwhile.
        """
        if copy.printer_job_id is not None:
            cancelling = await self.service.copy_cancelling(copy, f"refused: {exc}")
            if cancelling is not None:
                await self._send_cancel(cancelling)
                copy = cancelling
        settled = await self.service.settle_copy(copy, CopyState.REFUSED, str(exc))
        if settled is None:  # it settled otherwise meanwhile: let the copies decide
            await self._conclude(job)
            return
        judged = self.service.judge(job, await self.service.copies_of(job.id))
        if judged.kind is not Kind.SEND:  # e.g. a person's cancel
            await self.service.settle_job(job, self.name, judged)
            return
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
            await self._health_changed(self.health.on_job_failed(job.id, self._clock()))
            verdict = self.service.on_failure(job, self.name, sig, str(exc))
            await self.service.settle_job(job, self.name, verdict)

    async def _follow(self, job: JobRecord, copy: Copy) -> bool:
        """Follow a copy that has the whole document until the printer settles it.

        Get-Job-Attributes fast first, then every ``follow_interval_max_s``,
        falling back to Get-Jobs; the printer is probed on the way (its health
        may change while it holds the job: paper out, jam). A copy on a printer
        unhealthy for ``in_hand_timeout_s`` is cancelled there and the job moved
        to a peer; one whose state the printer cannot report for that long is
        given up (DEAD ``outcome_unknown``, the printer unhealthy). On stop the
        job is left PRINTING: the next start reconciles it. True when settled.
        """
        delay = self.settings.poll_interval_min_s
        acked_at = self._clock()
        next_probe = acked_at + self.settings.poll_interval_max_s
        failing_since: float | None = None
        while not self.stop.is_set():
            if self._cancel.is_set():
                self._cancel.clear()
                current = await self.service.copy(copy.id)
                if current is None or not current.live:
                    return await self._conclude(job)
                copy = current
                if copy.state is CopyState.CANCELLING and copy.cancel_sent_at is None:
                    await self._send_cancel(copy)
            if self._clock() >= next_probe:
                next_probe = self._clock() + self.settings.poll_interval_max_s
                if self.ownership.shared:  # a cancel made on another appliance rings no bell
                    self._cancel.set()
                try:
                    self.status = await self._probe()
                except errors.PrinterUnreachable as exc:
                    raise _Unsettled from exc
                except errors.PrinterTransient:
                    pass
                stuck_for = self._clock() - self.health.since
                if not self.health.healthy and stuck_for >= self.settings.in_hand_timeout_s:
                    await self._move_stuck(job, copy)
                    return True
            try:
                obs = await self._observe(copy)
            except _MonitoringFailed as exc:
                self.metrics.monitoring_failures.labels(printer=self.name).inc()
                now = self._clock()
                failing_since = now if failing_since is None else failing_since
                if now - failing_since >= self.settings.in_hand_timeout_s:
                    await self._monitoring_gave_up(job, copy, str(exc))
                    return True
            else:
                failing_since = None
                if obs.settled is CopyState.PRINTED and obs.pj is not None:
                    crash_point("after_printer_completed")
                    self._learn(self._clock() - acked_at)
                    _, done = await self.service.settle_printed(job, copy, obs.pj)
                    if done is not None:
                        self.health.on_job_printed()
                        return True
                    return await self._conclude(job)
                if obs.settled is not None:
                    await self._record(copy, obs)
                    return await self._conclude(job)
                copy = await self._record(copy, obs) or copy
            await _wait_any((self.stop, self._cancel), self._next_poll(delay, acked_at))
            delay = min(delay * 2, self.settings.follow_interval_max_s)
        return False

    def _next_poll(self, delay: float, acked_at: float) -> float:
        """The wait before the next Get-Job-Attributes: the back-off ``delay``, except that
        polls come finely (a quarter of the window, at least ``poll_interval_min_s``) from a
        little before to a little after the time this printer's jobs usually take (a
        window of at most ``follow_interval_max_s`` either side): a finished job is seen
        within a few ms for at most ~8 extra polls a job."""
        if self._typical_s is None:
            return delay
        window = min(0.25 * self._typical_s, self.settings.follow_interval_max_s)
        fine = max(self.settings.poll_interval_min_s, window / 4)
        elapsed = self._clock() - acked_at
        if elapsed < self._typical_s - window:  # not yet: back off, but not past the window
            return max(fine, min(delay, self._typical_s - window - elapsed))
        if elapsed < self._typical_s + window:
            return fine
        return delay

    def _learn(self, took_s: float) -> None:
        """Fold one job's acknowledged → seen-settled time into the printer's typical time."""
        if self._typical_s is None:
            self._typical_s = took_s
        else:
            self._typical_s += 0.25 * (took_s - self._typical_s)

    async def _count_outcome(self, job: JobRecord, verdict: Verdict) -> None:
        """A job this printer aborted counts towards quarantining the printer (several
        different jobs failing here blame the printer); a printed one breaks the run."""
        copy = verdict.copy
        if verdict.kind is Kind.DONE:
            self.health.on_job_printed()
        elif copy is not None and copy.printer == self.name and copy.state is CopyState.ABORTED:
            await self._health_changed(self.health.on_job_failed(job.id, self._clock()))

    async def _monitoring_gave_up(self, job: JobRecord, copy: Copy, why: str) -> None:
        """The printer cannot say what became of a copy: park the job, blame the printer."""
        log.warning(
            "job monitoring failed",
            extra={"event": "job_monitoring_failed", "job_id": job.id, "printer": self.name,
                   "printer_job_id": copy.printer_job_id, "error": why},
        )  # fmt: skip
        await self.service.settle_copy(copy, CopyState.LOST, f"cannot report job state: {why}")
        await self._health_changed(self.health.on_monitoring_failed(why, self._clock()))
        await self.service.fail_over_waiting(self.name, self.health.reason or why)
        await self._conclude(job)

    async def _move_stuck(self, job: JobRecord, copy: Copy) -> None:
        """Cancel a copy held by an unhealthy (but reachable) printer, then hand the job on.

        A jammed printer may keep a cancelled job "processing-to-stop-point"
        until the jam is cleared: the job moves anyway and the copy stays
        ``cancelling`` on this printer, which settles it before it gets work.
        """
        cancelling = await self.service.copy_cancelling(
            copy, f"{self.name} unhealthy ({self.health.reason})"
        )
        if cancelling is not None:
            await self._await_cancel(cancelling)
        copies = await self.service.copies_of(job.id)
        mine = [c for c in copies if c.id == copy.id]
        if mine and not mine[0].live:
            await self._conclude(job)
            return
        reason = f"{self.name} unhealthy ({self.health.reason}); cancelled there, moved to a peer"
        log.warning(
            "job failed over",
            extra={"event": "job_failed_over", "job_id": job.id, "printer": self.name,
                   "why": self.health.reason, "correlation_id": job.correlation_id},
        )  # fmt: skip
        self.metrics.failovers.labels(printer=self.name).inc()
        self._needs_reconcile = True
        await self.service.requeue(job, self.name, reason, self._clock(), count=False)

    async def _give_up_in_hand(self) -> None:
        """The printer has been unreachable too long: settle what it held without it.

        A job of which no document can have left goes back to the queue for a
        peer; one the printer may have printed is parked DEAD
        ``outcome_unknown`` (or sent again with ``on_unknown_outcome =
        "reprint"``). Its copies stay live here: when the printer comes back
        they are settled (live ones cancelled) before it gets new work.
        """
        for job in await self.service.printing_on(self.name):
            copies = await self.service.copies_of(job.id)
            current = [c for c in copies if c.claim == job.claims and c.live]
            risky = any(c.document_may_have_left for c in current)
            if any(c.cancel_origin == ORIGIN_REQUESTED for c in current):
                # a person asked to cancel it: that stands (its copy is cancelled here later)
                why = f"cancelled as asked; {self.name} became unreachable before it confirmed"
                if risky:
                    why += " (it may have printed part of it)"
                await self.service.cancelled(job, self.name, why)
            elif not risky or self.settings.on_unknown_outcome == "reprint":
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

    # --- asking the printer about a copy ----------------------------------------------------

    async def _observe(self, copy: Copy) -> reconcile.Observation:
        """The printer's word on a copy whose job-id is known.

        Get-Job-Attributes first; when it fails (an error status, HTTP 500, a
        reply that is not IPP), Get-Jobs. Raises _Unsettled (unreachable) or
        _MonitoringFailed (neither answered usably).
        """
        assert copy.printer_job_id is not None
        try:
            pj = await self.client.get_job_attributes(copy.printer_job_id)
        except errors.PrinterUnreachable as exc:
            raise _Unsettled from exc
        except errors.PrinterTransient as first:
            try:
                listed = await self.client.get_jobs("all")
            except errors.PrinterUnreachable as exc:
                raise _Unsettled from exc
            except errors.PrinterTransient as second:
                raise _MonitoringFailed(
                    f"Get-Job-Attributes: {first}; Get-Jobs: {second}"
                ) from second
            pj = next((j for j in listed if reconcile.identify(copy, j)), None)
            return reconcile.observe(copy, pj)
        if pj is not None and not reconcile.identify(copy, pj):
            pj = None  # the id now names another job: the printer restarted and reused it
        return reconcile.observe(copy, pj)

    async def _record(self, copy: Copy, obs: reconcile.Observation) -> Copy | None:
        """Store what was observed: a settled copy, or a live copy's new figures."""
        if obs.settled is not None:
            return await self.service.settle_copy(copy, obs.settled, obs.outcome or "", obs.pj)
        pj = obs.pj
        assert pj is not None
        changed = (
            (copy.created_s is None and pj.created_s is not None)
            or copy.job_state != pj.state
            or copy.job_state_reasons != ",".join(pj.reasons)
            or copy.k_octets != pj.k_octets
        )
        if not changed:
            return copy
        return await self.service.copy_reported(copy, pj)

    async def _send_cancel(self, copy: Copy) -> None:
        """Cancel-Job for a copy already recorded ``cancelling``; no-op without a job-id."""
        if copy.printer_job_id is None:
            return
        try:
            await self.client.cancel_job(copy.printer_job_id)
        except errors.PrinterUnreachable as exc:
            raise _Unsettled from exc
        except errors.PrinterError as exc:
            log.warning(
                "cancel failed",
                extra={"event": "cancel_failed", "printer": self.name,
                       "printer_job_id": copy.printer_job_id, "error": str(exc)},
            )  # fmt: skip
            return
        await self.service.copy_cancel_sent(copy)

    async def _await_cancel(self, copy: Copy) -> None:
        """Cancel-Job (once), then wait (bounded) until the printer settles the copy."""
        if copy.cancel_sent_at is None:
            await self._send_cancel(copy)
        if copy.printer_job_id is None:
            return
        delay = self.settings.poll_interval_min_s
        deadline = self._clock() + self.settings.request_timeout_s * 3
        while not self.stop.is_set():
            try:
                obs = await self._observe(copy)
            except _MonitoringFailed:
                return
            if obs.settled is not None:
                await self._record(copy, obs)
                return
            if self._clock() >= deadline:
                return
            await asyncio.sleep(delay)  # the printer is stopping the job: poll, bounded
            delay = min(delay * 2, self.settings.poll_interval_max_s)

    async def _find(self, copy: Copy, job: JobRecord | None) -> bool:
        """Find the printer job of a copy whose job-id was never stored (crash after Create-Job).

        One candidate: its job-id is recorded (and an empty one is cancelled on
        the next round). None: the printer has no such job (``vanished``).
        Several: edgeprint cannot tell which (``lost``; for a copy that never
        got a document the job is simply sent again). False when unreachable.
        """
        try:
            listed = await self.client.get_jobs("all")
        except errors.PrinterUnreachable:
            return False
        except errors.PrinterTransient as exc:
            await self.service.settle_copy(copy, CopyState.LOST, f"cannot list jobs: {exc}")
            return True
        known = await self.service.known_printer_jobs(self.name)
        owner = job.owner if job is not None else ""
        found = reconcile.find_orphans(copy, owner, listed, known)
        if len(found) == 1:
            pj = found[0]
            log.info(
                "orphan printer job found",
                extra={"event": "copy_found", "job_id": copy.job_id, "printer": self.name,
                       "printer_job_id": pj.job_id},
            )  # fmt: skip
            await self.service.copy_found(copy, pj)
            return True
        if not found:
            await self.service.settle_copy(
                copy, CopyState.VANISHED, "no printer job matches it: never created, or purged"
            )
            return True
        ids = ", ".join(str(j.job_id) for j in found)
        log.warning(
            "orphan printer job ambiguous",
            extra={"event": "copy_ambiguous", "job_id": copy.job_id, "printer": self.name,
                   "candidates": ids},
        )  # fmt: skip
        await self.service.settle_copy(
            copy, CopyState.LOST, f"printer jobs {ids} could each be it: cancel the stray one"
        )
        return True

    # --- reconciliation ----------------------------------------------------------------

    async def _sweep(self) -> bool:
        """Settle every job PRINTING here and every copy this printer may still hold.

        True when nothing is left open; then new work may be sent.
        """
        printing = await self.service.printing_on(self.name)
        for job in printing:
            if not await self._reconcile(job):
                return False
        current = {(j.id, j.claims) for j in await self.service.printing_on(self.name)}
        for copy in await self.service.open_copies_on(self.name):
            if (copy.job_id, copy.claim) in current:
                continue
            try:
                if not await self._settle_stale(copy):
                    return False
            except _Unsettled:
                return False
        self._needs_reconcile = False
        return True

    async def _settle_stale(self, copy: Copy) -> bool:
        """A copy of a job that left this printer: cancel it if live, record it if settled."""
        if copy.printer_job_id is None:
            if not await self._find(copy, await self.service.find(copy.job_id)):
                return False
            refreshed = await self.service.copy(copy.id)
            if refreshed is None or not refreshed.live or refreshed.printer_job_id is None:
                return True
            copy = refreshed
        try:
            obs = await self._observe(copy)
        except _MonitoringFailed as exc:
            await self.service.settle_copy(copy, CopyState.LOST, f"cannot report job state: {exc}")
            return True
        if obs.settled is None:
            log.warning(
                "stale copy cancelled",
                extra={"event": "stale_copy_cancelled", "job_id": copy.job_id,
                       "printer": self.name, "printer_job_id": copy.printer_job_id},
            )  # fmt: skip
            cancelling = await self.service.copy_cancelling(copy, "its job left this printer")
            if cancelling is None:
                return True
            await self._await_cancel(cancelling)
            after = await self.service.copy(copy.id)
            return after is None or not after.live
        settled = await self._record(copy, obs)
        if settled is not None and settled.state is CopyState.PRINTED:
            await self.service.stale_copy_printed(settled)
        return True

    async def _reconcile(self, job: JobRecord) -> bool:
        """Observe, judge and act on one job PRINTING here until it is settled or must wait."""
        try:
            return await self._conclude(job)
        except _Unsettled:
            return False

    async def _conclude(self, job: JobRecord) -> bool:
        """Bring the printer's word on the job's copies up to date, then do what they mean."""
        for _ in range(ROUNDS):
            copies = await self.service.copies_of(job.id)
            for c in copies:
                if c.live and c.printer == self.name and c.printer_job_id is not None:
                    try:
                        obs = await self._observe(c)
                    except _MonitoringFailed:
                        continue  # judged as it stands; following it retries the printer
                    await self._record(c, obs)
            copies = await self.service.copies_of(job.id)
            verdict = self.service.judge(job, copies)
            self.metrics.reconciliations.labels(printer=self.name, verdict=verdict.kind).inc()
            log.info(
                "job reconciled",
                extra={"event": "job_reconciled", "job_id": job.id, "printer": self.name,
                       "verdict": verdict.kind.value,
                       "printer_job_id": verdict.copy.printer_job_id if verdict.copy else None,
                       "correlation_id": job.correlation_id},
            )  # fmt: skip
            copy = verdict.copy
            match verdict.kind:
                case Kind.FOLLOW:
                    assert copy is not None
                    self.current_job = job.id
                    try:
                        return await self._follow(job, copy)
                    finally:
                        self.current_job = None
                case Kind.CANCEL:
                    assert copy is not None
                    cancelling = await self.service.copy_cancelling(copy, verdict.kind.value)
                    if cancelling is not None:
                        await self._await_cancel(cancelling)
                case Kind.WAIT:
                    assert copy is not None
                    await self._await_cancel(copy)
                    after = await self.service.copy(copy.id)
                    if after is not None and after.live:
                        return False  # the printer is still stopping it: try again later
                case Kind.FIND:
                    assert copy is not None
                    if not await self._find(copy, job):
                        return False
                case _:
                    current = await self.service.find(job.id)
                    if current is None or current.state is not JobState.PRINTING:
                        return True
                    await self._count_outcome(job, verdict)
                    await self.service.settle_job(job, self.name, verdict)
                    return True
        return False


async def _wait_any(events: tuple[asyncio.Event, ...], seconds: float) -> None:
    """Return after ``seconds`` or as soon as any of ``events`` is set."""
    waits = [asyncio.ensure_future(e.wait()) for e in events]
    try:
        await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits:
            w.cancel()


_PRINTER_STATES = {3: "idle", 4: "processing", 5: "stopped"}

__all__ = ["DOCUMENT_FORMAT", "PrinterWorker"]
