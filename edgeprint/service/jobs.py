"""Use cases: submit, release, cancel, replay, claim, complete, retry, fail (DESIGN §1–§3).

The only module that knows the state machine's meaning; the store only applies
conditional writes and the API only speaks HTTP. Times come from the injected
``clock`` (unix seconds).
"""

from __future__ import annotations

import asyncio
import errno
import io
import logging
import math
import random
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from edgeprint import errors, pins
from edgeprint.backoff import retry_delay
from edgeprint.board import PrinterBoard
from edgeprint.clock import wall_cutoff
from edgeprint.config import Config, PrinterConfig
from edgeprint.copies import (
    ORIGIN_EDGEPRINT,
    Copy,
    CopyAction,
    CopyState,
    Kind,
    Policy,
    Verdict,
    judge,
    on_failure,
)
from edgeprint.documents import ladder, pages, zpl
from edgeprint.documents.cache import RenditionCache
from edgeprint.documents.render import RenderPool
from edgeprint.epochs import Epoch
from edgeprint.metrics import Metrics
from edgeprint.personality import Traits
from edgeprint.runway import Roll, labels_of
from edgeprint.service.admission import Admission
from edgeprint.service.audit import AuditTrail
from edgeprint.service.event import EventService
from edgeprint.service.records import (
    Caller,
    CheckPrinter,
    Identified,
    Identify,
    JobRecord,
    JobRequest,
    JobStats,
    PrinterCheck,
    PrinterJobMade,
    PrinterJobReport,
    SubmitResult,
    job_facts,
    request_digest,
)
from edgeprint.service.stock_routing import StockRouting
from edgeprint.spool import Spool, StagedDocument
from edgeprint.states import TERMINAL_STATES, Action, JobState, sources
from edgeprint.stock import PageSizes
from edgeprint.store import stats as store_stats
from edgeprint.store.copies import Copies, copy_from_row
from edgeprint.store.jobs import (
    GUARD_NO_LIVE_COPY,
    GUARD_OUTCOME_UNKNOWN,
    GUARD_PRINTED,
    Jobs,
    NewJob,
)
from edgeprint.store.outbox import FailedDelivery, Outbox
from edgeprint.store.printers import PrinterMemory
from edgeprint.store.waiting import Waiting

if TYPE_CHECKING:
    from edgeprint.documents.check import PdfFacts

log = logging.getLogger(__name__)

Clock = Callable[[], float]
#: PDFs up to this size are parsed on the event loop (a badge: ~0.15 ms; a hostile 64 KiB
#: page tree: ~17 ms); larger ones in a worker thread.
_INLINE_PDF_BYTES = 64 * 1024
#: The states a release takes (HELD), from the transition table.
_RELEASABLE = sources(Action.RELEASE)
#: A job a printer's worker holds (PRINTING): its outcome, or a cancel through the printer.
_ON_PRINTER = sources(Action.COMPLETE)
#: The states a cancel ends at once: every source of CANCEL but a printer's.
_CANCEL_AT_ONCE = tuple(s for s in sources(Action.CANCEL) if s not in _ON_PRINTER)


@dataclass(frozen=True)
class Queues:
    """The waiting queues: depths and the oldest release time, keyed by (printer, pool);
    ``oldest_waiting`` and ``at`` are run-clock seconds (edgeprint.clock): only ages mean
    anything."""

    waiting: dict[tuple[str | None, str | None], int]
    oldest_waiting: dict[tuple[str | None, str | None], float]
    at: float


class JobService:
    """The job use cases over one store, spool and config."""

    def __init__(
        self,
        config: Config,
        jobs: Jobs,
        spool: Spool,
        metrics: Metrics,
        *,
        board: PrinterBoard | None = None,
        clock: Clock = time.time,
        rng: random.Random | None = None,
        renderer: RenderPool | None = None,
        renditions: RenditionCache | None = None,
    ) -> None:
        self.config = config
        self.jobs = jobs
        self.copies = Copies(jobs.store, fence=jobs.fence)
        #: Each printer's epoch and learnt traits (DESIGN §3).
        self.printer_memory = PrinterMemory(jobs.store)
        #: Rasters rendered for printers without PDF; swept with their documents.
        self.renditions = renditions
        #: Renders and converts documents in worker processes.
        self.renderer = renderer
        self._rng = rng or random.Random()
        self.spool = spool
        self.metrics = metrics
        self.clock = clock
        #: The run clock (edgeprint.clock, issue 27): every duration judged against the store.
        self.run: Clock = jobs.run or clock
        #: The dispatcher's published printer view, and the bell the service rings.
        self.board = board if board is not None else PrinterBoard()
        # the depth snapshot's age is a duration: the run clock (issue 27)
        self.admission = Admission(config, self.board, metrics, jobs.waiting_depths, self.run)
        #: Which jobs each printer's stock fits, and why released jobs wait (issue 23).
        self.stock = StockRouting(
            config, self.board, lambda: self.admission.paused, Waiting(jobs.store), metrics,
            clock,
        )  # fmt: skip
        #: Who did what (issue 26): the front doors record each action through it.
        self.audit = AuditTrail(jobs.store, clock)
        #: The event's mode: rehearsal or live (issue 23).
        self.event = EventService(jobs.store, self.admission, clock, self.run)
        #: The release counter, looked up once (a label lookup per release is measurable).
        self._released_ok = metrics.transitions.labels(action="release", outcome="ok")
        self._pools = config.pools
        self._printers = {p.name for p in config.printers}
        self._pdf_checks = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pdf-check")

    def close(self) -> None:
        """Let go of the PDF-check thread (a check in progress finishes on its own)."""
        self._pdf_checks.shutdown(wait=False, cancel_futures=True)

    # --- targets ---------------------------------------------------------------

    def reconfigure(self, config: Config) -> None:
        """Use ``config`` from now on (a reload: edgeprint.reload says what may differ;
        printers are only ever added)."""
        self.config = config
        self._pools = config.pools
        self._printers = {p.name for p in config.printers}
        self.admission.config = config
        self.admission.forget_depths()

    async def retire(self, printer: PrinterConfig) -> list[str]:
        """A reload removed ``printer`` (already gone from this service's config): its
        waiting jobs go to its old pool; the ids moved. Without a pool they stay RELEASED,
        with a ``last_error`` saying why they wait (nothing prints them)."""
        if printer.pool is None:
            waiting = await self.jobs.note_waiting(
                printer.name,
                f"{printer.name} was removed from the config and has no pool: this job waits "
                "until the printer is configured again (or cancel it)",
                now=self.clock(),
            )
            log.warning(
                "printer removed; its waiting jobs wait for it",
                extra={"event": "printer_removed", "printer": printer.name, "moved": 0,
                       "waiting": len(waiting)},
            )  # fmt: skip
            return []
        moved = await self.jobs.retarget_waiting(
            printer.name, printer.pool, now=self.clock(), actor="reload",
            reason=f"{printer.name} was removed from the config",
        )  # fmt: skip
        self.admission.forget_depths()
        log.info(
            "printer removed; its waiting jobs moved to its pool",
            extra={"event": "printer_removed", "printer": printer.name, "pool": printer.pool,
                   "moved": len(moved)},
        )  # fmt: skip
        if moved:
            self.board.wake(None, printer.pool)
        return moved

    def check_target(self, printer: str | None, pool: str | None, where: str) -> None:
        """Raise errors.UnknownTarget unless the named printer/pool is configured."""
        if printer is not None and printer not in self._printers:
            raise errors.UnknownTarget(
                f"unknown printer {printer!r}; configured: {sorted(self._printers)}",
                [errors.FieldProblem(f"{where}.printer", "not a configured printer")],
            )
        if pool is not None and pool not in self._pools:
            raise errors.UnknownTarget(
                f"unknown pool {pool!r}; configured: {sorted(self._pools)}",
                [errors.FieldProblem(f"{where}.pool", "not a configured pool")],
            )

    def check_format(self, printer: str | None, pool: str | None, document_format: str) -> None:
        """Raise errors.DocumentUnprintable when the target cannot take ``document_format``
        (a raw language no printer of it lists; see Admission.check_format)."""
        self.admission.check_format(printer, pool, document_format)

    # --- kiosk use cases -------------------------------------------------------

    async def submit(
        self,
        meta: JobRequest,
        document: StagedDocument,
        idempotency_key: str,
        caller: Caller,
        *,
        document_format: str = ladder.PDF,
    ) -> SubmitResult:
        """Accept a job whose document has been staged; durable when it returns.

        Same key + same payload → the earlier job (``created=False``). Raises
        errors.UnsupportedDocument, errors.DocumentRejected, errors.UnknownTarget,
        errors.DocumentUnprintable (a target that cannot take the format),
        errors.PayloadTooLarge, errors.IdempotencyKeyReused, errors.StoreError. The
        staged document is committed or discarded in every case.
        ``document_format``: ``application/pdf`` or ``application/vnd.zebra-zpl``
        (counted in labels, sent unchanged).
        """
        with document:  # committed, or discarded whatever happens here
            sizes: PageSizes | None = None
            title = meta.title
            if document_format == zpl.ZPL:
                pages = await self._count_labels(document, meta.copies)
            else:
                if not document.looks_like_pdf():
                    raise errors.UnsupportedDocument(
                        "the document is not a PDF (no %PDF- header in its first 1024 bytes)"
                    )
                facts = await self._inspect(document)
                pages, sizes, title = facts.pages, facts.sizes, title or facts.title
            self.check_target(meta.printer, meta.pool, "metadata")
            if meta.printer is not None:
                self.admission.check_takes(meta.printer)
            self.admission.check_format(meta.printer, meta.pool, document_format)
            digest = request_digest(meta, document.sha256)
            existing = await self.jobs.get_by_key(idempotency_key)
            if existing is not None:
                return await self._replayed(existing, idempotency_key, digest, meta, caller)
            pin_hash = None
            if meta.release_pin is not None:
                pin_hash = await pins.hash_pin_async(meta.release_pin)
            job_id = uuid.uuid4().hex
            await document.commit(job_id)

        state = JobState.HELD if meta.hold else JobState.RELEASED
        printer, pool = meta.printer, meta.pool
        if state is JobState.RELEASED:
            try:
                printer, pool = await self.admission.admit(
                    printer,
                    pool,
                    caller,
                    labels=labels_of(pages, meta.copies),
                    document_format=document_format,
                )
            except errors.Backpressure:
                self.spool.remove(job_id)
                raise
        new = NewJob(
            id=job_id,
            idempotency_key=idempotency_key,
            request_sha256=digest,
            state=state,
            owner=meta.owner,
            printer=printer,
            pool=pool,
            priority=meta.priority,
            copies=meta.copies,
            document_sha256=document.sha256,
            document_bytes=document.size,
            token_name=caller.name,
            correlation_id=caller.correlation_id,
            release_pin_hash=pin_hash,
            document_pages=pages,
            **NewJob.edges(sizes),
            document_format=document_format,
            title=title,
        )
        try:
            job = await self.jobs.insert(new, self.clock(), caller.name)
        except errors.StoreWriteFailed:  # its COMMIT may yet be kept: the store tells later
            self.spool.unsure.add(job_id)
            raise
        except errors.StoreError:
            self.spool.remove(job_id)
            raise
        if job is None:  # a concurrent request with the same key won
            self.spool.remove(job_id)
            winner = await self.jobs.get_by_key(idempotency_key)
            if winner is None:  # pragma: no cover - keys are never deleted
                raise errors.StoreUnavailable("idempotency key vanished")
            return await self._replayed(winner, idempotency_key, digest, meta, caller)
        if not job.rehearsal:  # the live figures never count a rehearsal job
            self.metrics.jobs_accepted.labels(state=job.state.value).inc()
        if job.state is JobState.RELEASED:
            self.admission.admitted(job.printer, job.pool)
        log.info(
            "job accepted",
            extra={
                "event": "job_accepted", "job_id": job.id, "state": job.state.value,
                "owner": job.owner, "printer": job.printer, "pool": job.pool,
                "bytes": job.document_bytes, "correlation_id": caller.correlation_id,
            },
        )  # fmt: skip
        if job.state is JobState.RELEASED:
            job = await self.stock.on_released(job)
            self.board.wake(job.printer, job.pool)
        return SubmitResult(job, created=True)

    async def _inspect(self, document: StagedDocument) -> PdfFacts:
        # pypdf is imported on first use: ~40 ms less from start to ready (crash recovery).
        from edgeprint import documents

        pdf = document.contents()
        limit = self.config.server.max_document_pages
        try:
            if document.size <= _INLINE_PDF_BYTES:  # one read: pypdf makes hundreds of small ones
                return documents.inspect_pdf(io.BytesIO(pdf.read()), limit)
            # One thread of its own: a few hostile PDFs (seconds of parsing each) then
            # queue behind each other instead of taking the default pool that spool writes,
            # PIN hashing and the printer workers' document reads use.
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._pdf_checks, documents.inspect_pdf, pdf, limit)
        except errors.DocumentRejected as exc:
            self.metrics.documents_rejected.labels(reason=exc.slug).inc()
            log.info(
                "document rejected",
                extra={"event": "document_rejected", "reason": exc.slug, "bytes": document.size},
            )
            raise

    async def _count_labels(self, document: StagedDocument, copies: int) -> int:
        """Labels of a staged ZPL document (:func:`zpl.count_labels`), checked against
        ``server.max_zpl_labels``; its size sent ``copies`` times (a raw document's copies
        are its bytes repeated, DESIGN §11) against ``server.max_document_bytes``."""
        server = self.config.server
        if document.size * copies > server.max_document_bytes:
            raise errors.PayloadTooLarge(
                f"the ZPL document sent once per copy ({copies} × {document.size} bytes)",
                server.max_document_bytes,
            )
        data = document.contents().read()
        try:
            if document.size <= _INLINE_PDF_BYTES:
                return zpl.count_labels(data, server.max_zpl_labels)
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(
                self._pdf_checks, zpl.count_labels, data, server.max_zpl_labels
            )
        except errors.DocumentRejected as exc:
            self.metrics.documents_rejected.labels(reason=exc.slug).inc()
            log.info(
                "document rejected",
                extra={"event": "document_rejected", "reason": exc.slug, "bytes": document.size,
                       "format": zpl.ZPL},
            )  # fmt: skip
            raise

    async def _replayed(
        self, existing: JobRecord, key: str, digest: str, meta: JobRequest, caller: Caller
    ) -> SubmitResult:
        same = existing.request_sha256 == digest
        if same and (existing.release_pin_hash is None) != (meta.release_pin is None):
            same = False
        if same and existing.release_pin_hash is not None and meta.release_pin is not None:
            same = await pins.verify_pin_async(meta.release_pin, existing.release_pin_hash)
        if not same:
            raise errors.IdempotencyKeyReused(key, existing.id)
        self.metrics.duplicates_suppressed.inc()
        log.info(
            "duplicate suppressed",
            extra={
                "event": "duplicate_suppressed", "job_id": existing.id,
                "correlation_id": caller.correlation_id,
            },
        )  # fmt: skip
        return SubmitResult(existing, created=False)

    async def get(self, job_id: str) -> JobRecord:
        """The job; raises errors.JobNotFound."""
        job = await self.jobs.get(job_id)
        if job is None:
            raise errors.JobNotFound(job_id)
        return job

    async def release(
        self,
        job_id: str,
        caller: Caller,
        *,
        printer: str | None = None,
        pool: str | None = None,
        pin: str | None = None,
    ) -> JobRecord:
        """HELD → RELEASED, optionally (re)targeting a printer or pool.

        Exactly one of concurrent releases wins. Raises errors.UnknownTarget,
        errors.JobNotFound, errors.StateConflict (with the current state),
        errors.MissingTarget (held job with no printer/pool and none given);
        for a job with a release PIN errors.PinRequired, errors.PinMismatch,
        errors.ReleaseLocked (see :meth:`check_pin`).
        """
        self.check_target(printer, pool, "body")
        current = await self.get(job_id)
        if current.state not in _RELEASABLE:  # the common loser of a race: no write needed
            self._release_conflict(job_id, current.state, caller)
        pin_sets: dict[str, object] = {}
        if current.release_pin_hash is not None:
            moved_on = await self.check_pin(current, pin, caller)
            if moved_on is not None:
                self._release_conflict(job_id, moved_on, caller)
            pin_sets = {"pin_failures": 0, "pin_locked_until": None}
        if printer is None and pool is None:
            printer, pool = current.printer, current.pool
        if printer is None and pool is None:
            raise errors.MissingTarget(
                "the job names no printer or pool; give one in the release body",
                [errors.FieldProblem("body", "printer or pool required")],
            )
        self.admission.check_format(printer, pool, current.document_format)
        printer, pool = await self.admission.admit(
            printer, pool, caller,
            labels=labels_of(current.document_pages, current.copies, current.from_page),
            document_format=current.document_format,
        )  # fmt: skip
        now = self.clock()
        job = await self.jobs.transition(
            job_id, Action.RELEASE, now=now, actor=caller.name,
            correlation_id=caller.correlation_id,
            sets={"released_at": now, "printer": printer, "pool": pool, **pin_sets},
        )  # fmt: skip
        if job is None:  # lost a race after the read: the conditional write is the arbiter
            self._release_conflict(job_id, (await self.get(job_id)).state, caller)
        self.admission.admitted(job.printer, job.pool)
        self._released_ok.inc()
        log.info(
            "job released",
            extra={
                "event": "job_released", "job_id": job.id, "printer": job.printer,
                "pool": job.pool, "correlation_id": caller.correlation_id,
            },
        )  # fmt: skip
        job = await self.stock.on_released(job)
        self.board.wake(job.printer, job.pool)
        return job

    async def check_pin(self, job: JobRecord, pin: str | None, caller: Caller) -> JobState | None:
        """None when ``pin`` opens ``job`` (HELD); its current state if it is no longer HELD.

        The attempt is counted before the (slow) hash is checked, so parallel
        guesses cannot outrun the lock. Raises errors.PinRequired,
        errors.PinMismatch, errors.ReleaseLocked, errors.StateConflict. The
        PIN itself is never logged.
        """
        assert job.release_pin_hash is not None
        if pin is None:
            raise errors.PinRequired(job.id)
        cfg = self.config.release
        now = self.run()  # a lockout is a duration (issue 27)
        taken = await self.jobs.take_pin_attempt(
            job.id, now=now, max_failures=cfg.max_pin_failures, lockout_s=cfg.pin_lockout_s
        )
        if taken is None:
            current = await self.get(job.id)
            if current.state not in _RELEASABLE:
                return current.state
            self.metrics.pin_attempts.labels(outcome="locked").inc()
            until = current.pin_locked_until or now
            raise errors.ReleaseLocked(job.id, max(1, math.ceil(until - now)))
        attempts, locked_until = taken
        if await pins.verify_pin_async(pin, job.release_pin_hash):
            self.metrics.pin_attempts.labels(outcome="ok").inc()
            return None
        self.metrics.pin_attempts.labels(outcome="mismatch").inc()
        locked_for = None if locked_until is None else max(1, math.ceil(locked_until - now))
        log.warning(
            "release PIN mismatch",
            extra={
                "event": "release_pin_mismatch", "job_id": job.id, "attempts": attempts,
                "locked_for_s": locked_for, "token": caller.name,
                "correlation_id": caller.correlation_id,
            },
        )  # fmt: skip
        if locked_for is not None:
            self.metrics.release_locks.inc()
        raise errors.PinMismatch(job.id, max(0, cfg.max_pin_failures - attempts), locked_for)

    def _release_conflict(self, job_id: str, state: JobState, caller: Caller) -> NoReturn:
        self.metrics.release_conflicts.inc()
        log.info(
            "release conflict",
            extra={
                "event": "release_conflict", "job_id": job_id,
                "state": state.value, "correlation_id": caller.correlation_id,
            },
        )  # fmt: skip
        raise errors.StateConflict(job_id, Action.RELEASE.value, state.value)

    async def cancel(self, job_id: str, caller: Caller, *, pin: str | None = None) -> JobRecord:
        """HELD/RELEASED/DEAD → CANCELLED at once; PRINTING → flagged for Cancel-Job.

        A PRINTING job whose printer has a copy is returned still PRINTING with
        ``cancel_requested`` set: the copy is marked for Cancel-Job, its worker
        cancels it at the printer and then records CANCELLED (or DONE, if the
        printer finished first). One without a copy yet is CANCELLED at once.
        Raises errors.JobNotFound, errors.StateConflict (terminal). A HELD job
        with a release PIN needs that PIN from a kiosk (a technician's token
        does not): errors.PinRequired, errors.PinMismatch, errors.ReleaseLocked
        as for :meth:`release`.
        """
        if caller.role != "tech":
            current = await self.get(job_id)
            if current.state is JobState.HELD and current.release_pin_hash is not None:
                await self.check_pin(current, pin, caller)  # no longer HELD: no PIN needed
        job: JobRecord | None = None
        # Conditional writes in turn: the job can move between them (its worker requeued
        # it, or opened a copy of it), so each miss is tried again from the top.
        for _ in range(3):
            job = await self.jobs.transition(
                job_id, Action.CANCEL, now=self.clock(), actor=caller.name,
                correlation_id=caller.correlation_id,
                only_from=_CANCEL_AT_ONCE,
                sets={"finished_at": self.clock()},
            )  # fmt: skip
            if job is not None:
                self.admission.forget_depths()  # it may have left a queue
                break
            # PRINTING with no copy at a printer yet: nothing to cancel there.
            job = await self.jobs.transition(
                job_id, Action.CANCEL, now=self.clock(), actor=caller.name,
                correlation_id=caller.correlation_id, only_from=_ON_PRINTER,
                sets={"finished_at": self.clock()}, guard=GUARD_NO_LIVE_COPY,
            )  # fmt: skip
            if job is not None:
                break
            flagged = await self.copies.request_cancel(job_id, now=self.clock(), actor=caller.name)
            if flagged:
                printer = flagged[0].printer
                log.info(
                    "cancel requested",
                    extra={
                        "event": "cancel_requested", "job_id": job_id,
                        "printer": printer, "correlation_id": caller.correlation_id,
                    },
                )  # fmt: skip
                self.board.control(printer)
                return await self.get(job_id)
            current = await self.get(job_id)
            if current.state in TERMINAL_STATES:
                break
        return await self._checked(job, job_id, Action.CANCEL, caller)

    async def replay(self, job_id: str, caller: Caller) -> JobRecord:
        """DEAD → RELEASED once (attempts and back-off reset). Raises like :meth:`cancel`."""
        job = await self.jobs.transition(
            job_id, Action.REPLAY, now=self.clock(), actor=caller.name,
            correlation_id=caller.correlation_id,
            sets={"attempts": 0, "not_before": 0.0, "dead_reason": None, "printed_on": None,
                  "printer_job_id": None, "released_at": self.clock()},
        )  # fmt: skip
        job = await self._checked(job, job_id, Action.REPLAY, caller)
        self.admission.admitted(job.printer, job.pool)
        self.board.wake(job.printer, job.pool)
        return job

    async def _checked(
        self, job: JobRecord | None, job_id: str, action: Action, caller: Caller
    ) -> JobRecord:
        if job is None:
            current = await self.get(job_id)
            self.metrics.transitions.labels(action=action.value, outcome="conflict").inc()
            raise errors.StateConflict(job_id, action.value, current.state.value)
        self.metrics.transitions.labels(action=action.value, outcome="ok").inc()
        log.info(
            f"job {action.value}",
            extra={
                "event": f"job_{action.value}", "job_id": job_id, "state": job.state.value,
                "correlation_id": caller.correlation_id,
            },
        )  # fmt: skip
        return job

    # --- admission and failover (DESIGN §4) ----------------------------------------

    def usable(self, printer: str) -> bool:
        """Not paused and not known to be unhealthy (a printer not probed yet counts as usable)."""
        return self.admission.usable(printer)

    def is_paused(self, printer: str) -> bool:
        """Whether a technician paused ``printer`` (it takes no new work)."""
        return printer in self.admission.paused

    def wake(self, printer: str | None, pool: str | None) -> None:
        """Ring the dispatcher: a job may be printable for ``printer`` or ``pool``."""
        self.board.wake(printer, pool)

    async def fail_over_waiting(self, printer: str, reason: str) -> list[str]:
        """Move ``printer``'s waiting jobs to its pool, where healthy peers take them.

        Returns the ids moved (none when the printer has no pool).
        """
        cfg = self.config.printer(printer)
        if cfg is None or cfg.pool is None:
            return []
        moved = await self.jobs.retarget_waiting(
            printer, cfg.pool, now=self.clock(), actor=f"printer:{printer}",
            reason=f"failed over from {printer}: {reason}",
        )  # fmt: skip
        if moved:
            self.admission.forget_depths()  # many jobs changed queue
        for job_id in moved:
            log.info(
                "job failed over",
                extra={"event": "job_failed_over", "job_id": job_id, "printer": printer,
                       "pool": cfg.pool, "why": reason},
            )  # fmt: skip
        if moved:
            self.metrics.failovers.labels(printer=printer).inc(len(moved))
            self.board.wake(None, cfg.pool)
        return moved

    def printer_config(self, name: str) -> PrinterConfig:
        """The configured printer; raises errors.PrinterNotFound."""
        cfg = self.config.printer(name)
        if cfg is None:
            raise errors.PrinterNotFound(name)
        return cfg

    async def set_paused(self, name: str, paused: bool, caller: Caller) -> None:
        """Pause (no new work; the job in hand finishes) or resume a printer; persisted."""
        self.printer_config(name)
        await self.jobs.set_paused(name, paused, now=self.clock(), actor=caller.name)
        if paused:
            self.admission.paused.add(name)
        else:
            self.admission.paused.discard(name)
        log.info(
            "printer paused" if paused else "printer resumed",
            extra={"event": "printer_paused" if paused else "printer_resumed", "printer": name,
                   "actor": caller.name, "correlation_id": caller.correlation_id},
        )  # fmt: skip
        if paused:
            self.board.control(name)
        else:
            self.board.resumed(name)
        cfg = self.config.printer(name)
        self.board.wake(name, cfg.pool if cfg else None)

    async def drain(self, name: str, caller: Caller) -> list[str]:
        """Pause the printer and move its waiting jobs to its pool's peers; the ids moved."""
        await self.set_paused(name, True, caller)
        return await self.fail_over_waiting(name, f"drained by {caller.name}")

    async def printer_pin(self, name: str) -> str | None:
        """The certificate an ipps printer must present: configured, else pinned on first use."""
        cfg = self.printer_config(name)
        return cfg.tls_fingerprint or await self.jobs.pin(name)

    async def pin_printer(self, name: str, fingerprint: str) -> bool:
        """Record the certificate of a printer's first contact (trust on first use)."""
        stored = await self.jobs.set_pin(
            name, fingerprint, now=self.clock(), actor=f"printer:{name}"
        )
        if stored:
            log.info(
                "printer certificate pinned",
                extra={"event": "printer_pinned", "printer": name, "fingerprint": fingerprint},
            )
        return stored

    async def trust_printer(self, name: str, caller: Caller) -> PrinterConfig:
        """A technician trusts the certificate an ipps printer presents now (after a reset).

        The pin is forgotten: the next contact pins the certificate anew. A
        pin written in the config cannot be replaced this way (errors.InvalidRequest).
        """
        cfg = self.printer_config(name)
        if not cfg.secure:
            raise errors.InvalidRequest(f"printer {name} is not reached over ipps://")
        if cfg.tls_fingerprint is not None:
            raise errors.InvalidRequest(
                f"printer {name} has tls_fingerprint in the config: change it there"
            )
        await self.jobs.forget_pin(name)
        log.warning(
            "printer certificate re-trusted",
            extra={"event": "printer_retrusted", "printer": name, "actor": caller.name,
                   "correlation_id": caller.correlation_id},
        )  # fmt: skip
        self.board.resumed(name)
        return cfg

    async def media_loaded(self, name: str, caller: Caller) -> None:
        """A technician loaded a new roll in ``name`` (issue 23): its runway counts from a full
        roll. The worker hears it first (the board), then the count is stored reset, so a save
        of the old count already under way cannot outlast it. Raises errors.PrinterNotFound."""
        self.printer_config(name)
        self.board.media_loaded(name)
        kept = await self.printer_memory.roll(name) or Roll()
        now = self.clock()
        await self.printer_memory.save_roll(name, Roll(0, now, kept.media, False), now=now)
        log.info(
            "printer media loaded",
            extra={"event": "printer_media_loaded", "printer": name, "actor": caller.name,
                   "correlation_id": caller.correlation_id},
        )  # fmt: skip

    async def notified(
        self, kind: str, printer: str | None, pool: str | None, paused: bool | None
    ) -> None:
        """Another appliance changed the shared store (PostgreSQL's notifications): ``ready``
        (a job became claimable for ``printer``/``pool``), ``control`` (a copy on ``printer``
        is being cancelled), ``flags`` (``printer`` paused or resumed), ``all`` (unknown: the
        listener was not connected). The same rings the local change rings."""
        if kind == "ready":
            self.board.wake(printer, pool)
        elif kind == "control":
            self.board.control(printer)
        elif kind == "flags" and printer is not None:
            cfg = self.config.printer(printer)
            if paused:
                self.admission.paused.add(printer)
                self.board.control(printer)
            else:
                self.admission.paused.discard(printer)
                self.board.resumed(printer)
                self.board.wake(printer, cfg.pool if cfg else None)
        elif kind == "all":
            await self.load_paused()
            for cfg in self.config.printers:
                self.board.control(cfg.name)
                self.board.wake(cfg.name, cfg.pool)

    async def load_paused(self) -> None:
        """Read the persisted paused flags (at start-up)."""
        self.admission.paused = await self.jobs.paused_printers()

    async def housekeeping(self) -> tuple[list[str], int]:
        """Expire held jobs past ``hold_ttl_s``; delete documents past retention.

        Returns (expired job ids, documents deleted).
        """
        now, run = self.clock(), self.run()  # ages on the run clock (issue 27)
        retention = self.config.retention
        expired = await self.jobs.expire_held(run - retention.hold_ttl_s, now=now)
        for job_id in expired:
            log.info("job expired", extra={"event": "job_expired", "job_id": job_id})
        await self.audit.sweep(wall_cutoff(now, run, retention.audit_s))
        due = await self.jobs.retention_due(run - retention.document_retention_s)
        for job_id in due:
            self.spool.remove(job_id)
            if self.renditions is not None:
                job = await self.jobs.get(job_id)
                if job is not None:
                    self.renditions.sweep(job.document_sha256)
        if due:
            await self.jobs.mark_documents_deleted(due, now=now)
            log.info("documents deleted", extra={"event": "documents_deleted", "count": len(due)})
        return expired, len(due)

    # --- dispatcher use cases (DESIGN §3) ----------------------------------------

    async def claim_next(self, printer: str, *, takes_zpl: bool = False) -> JobRecord | None:
        """RELEASED → PRINTING for the next job ``printer`` should print, or None (a pool's
        ZPL jobs only when ``takes_zpl``)."""
        cfg = self.config.printer(printer)
        pool = cfg.pool if cfg is not None else None
        job = await self.jobs.claim_next(
            printer, pool, now=self.clock(), actor=f"printer:{printer}",
            fit=self.stock.condition(printer), takes_zpl=takes_zpl, run=self.run(),
        )  # fmt: skip
        if job is not None:
            self.admission.admitted(job.printer, job.pool, -1)
        return job

    async def claim_and_open(
        self,
        printer: str,
        *,
        operation: str,
        document_format: str,
        printer_up_s: int | None,
        epoch: int | None = None,
        takes_zpl: bool = False,
    ) -> tuple[JobRecord, Copy | None] | None:
        """Claim the next job for ``printer`` and open its copy, in one transaction.

        One group commit fewer before the printer gets the document than a claim
        followed by :meth:`open_copy`. None when there is nothing to claim; no copy when
        the claimed job already has one printed (a copy left on a printer it moved from
        that printed after all): the caller settles it.
        """
        cfg = self.config.printer(printer)
        pool = cfg.pool if cfg is not None else None
        now = self.clock()
        claim = self.jobs.claim_next_sql(
            printer,
            pool,
            now=now,
            actor=f"printer:{printer}",
            fit=self.stock.condition(printer),
            takes_zpl=takes_zpl,
            run=self.run(),
        )
        opened = self.copies.open_claimed_sql(
            printer=printer,
            state=CopyState.SENDING if operation == "Print-Job" else CopyState.CREATING,
            operation=operation, document_format=document_format,
            printer_up_s=printer_up_s, epoch=epoch, now=now,
        )  # fmt: skip
        rows = await self.jobs.store.write_many([claim, opened])
        if not rows[0]:
            return None
        job = JobRecord.from_row(rows[0][0])
        self.admission.admitted(job.printer, job.pool, -1)
        return job, copy_from_row(rows[1][0]) if rows[1] else None

    async def next_ready_at(self, printer: str) -> float | None:
        """When the earliest backed-off job for ``printer`` becomes claimable (run clock)."""
        cfg = self.config.printer(printer)
        pool = cfg.pool if cfg is not None else None
        return await self.jobs.next_not_before(printer, pool, self.run())

    async def printing_on(self, printer: str) -> list[JobRecord]:
        """Jobs PRINTING on ``printer`` (to reconcile before any new dispatch)."""
        return await self.jobs.printing_on(printer)

    # --- copies: what each printer was handed (DESIGN §3) --------------------------------

    async def copies_of(self, job_id: str) -> list[Copy]:
        """Every copy of the job, oldest first."""
        return await self.copies.of_job(job_id)

    async def open_copies_on(self, printer: str) -> list[Copy]:
        """Live copies on ``printer``: everything it may still hold, whatever their job."""
        return await self.copies.open_on(printer)

    async def known_printer_jobs(
        self, printer: str, epoch: int | None = None
    ) -> set[tuple[int, int | None]]:
        """(job-id, time-at-creation) of every copy on ``printer`` with a known job-id (made in
        ``epoch``, when given: job-ids of another life of the printer name other jobs)."""
        return await self.copies.known_printer_jobs(printer, epoch)

    # --- what edgeprint remembers of each printer (epochs, personality) ------------------

    async def printer_epoch(self, printer: str) -> Epoch | None:
        """The printer's epoch as last stored (DESIGN §3)."""
        return await self.printer_memory.epoch(printer)

    async def save_printer_epoch(self, printer: str, epoch: Epoch) -> None:
        await self.printer_memory.save_epoch(printer, epoch)

    async def printer_traits(self, printer: str) -> Traits | None:
        """What the printer is known to keep and echo (None: nothing learnt yet)."""
        return await self.printer_memory.traits(printer)

    async def save_printer_traits(self, printer: str, traits: Traits) -> None:
        await self.printer_memory.save_traits(printer, traits, now=self.clock())

    async def printer_roll(self, printer: str) -> Roll | None:
        """The printer's label roll as last stored (issue 23; None: never counted)."""
        return await self.printer_memory.roll(printer)

    async def save_printer_roll(self, printer: str, roll: Roll) -> None:
        await self.printer_memory.save_roll(printer, roll, now=self.clock())

    async def copy(self, copy_id: int) -> Copy | None:
        """The copy as stored now."""
        return await self.copies.get(copy_id)

    async def find(self, job_id: str) -> JobRecord | None:
        """The job, or None (for the dispatcher, which must not raise on a missing job)."""
        return await self.jobs.get(job_id)

    async def document_as_pdf(self, data: bytes, document_format: str) -> bytes:
        """A PWG raster, URF or JPEG document (an IPP client's) as a PDF of its pages.

        Raises errors.UnsupportedDocument (not what its format says, too many
        pages, or no converter in this process).
        """
        if self.renderer is None:
            raise errors.UnsupportedDocument(f"{document_format} cannot be converted here")
        return await self.renderer.to_pdf(
            data, document_format, self.config.server.max_document_pages
        )

    async def select_pages(
        self, staged: StagedDocument, ranges: Sequence[tuple[int, int]]
    ) -> StagedDocument:
        """A staged PDF replaced by one holding only the pages ``ranges`` (1-based,
        inclusive) select: what is stored, and so printed, is only those pages. A document
        the submission check refuses comes back as it is (:meth:`submit` says why).

        Raises errors.NoPageSelected (the staged document is discarded) and
        errors.DocumentRejected when the pages cannot be taken out.
        """
        try:
            raw = staged.contents().read()
            cut = await asyncio.to_thread(
                pages.cut, raw, ranges, self.config.server.max_document_pages
            )
        except BaseException:
            staged.discard()
            raise
        if cut is None or cut is raw:
            return staged  # every page, or not a PDF the check takes
        staged.discard()
        out = self.spool.stage()
        try:
            out.write(cut)
        except BaseException:
            out.discard()
            raise
        return out

    async def document_path(self, job: JobRecord) -> Path:
        """Where the job's document is stored (for the render pool, which reads it itself);
        fetched from the database first when another appliance accepted the job.
        Raises FileNotFoundError (nowhere), OSError (not now)."""
        return await self.spool.local(job.id, job.document_sha256)

    async def redescribe_copy(
        self, copy: Copy, document_format: str, document_bytes: int
    ) -> Copy | None:
        """What a copy not yet made will carry (another format than planned at the claim)."""
        return await self.copies.redescribe(
            copy.id, document_format, document_bytes, now=self.clock()
        )

    async def note(self, job: JobRecord, printer: str, text: str) -> None:
        """Put ``text`` in a PRINTING job's ``last_error`` (e.g. "no loaded media fits")."""
        await self.jobs.note_printing(job.id, printer, text, now=self.clock())

    async def read_document(self, job: JobRecord) -> bytes:
        """The job's document (off the event loop) — only its pages from ``from_page`` on when
        a person asked for the rest. Raises FileNotFoundError, OSError."""
        data = await asyncio.to_thread((await self.document_path(job)).read_bytes)
        if job.from_page is None or job.document_pages is None:
            return data
        rest = await asyncio.to_thread(
            pages.cut, data, [(job.from_page, job.document_pages)],
            self.config.server.max_document_pages,
        )  # fmt: skip
        if rest is None:  # pragma: no cover - the document passed this check at submission
            raise OSError(errno.EIO, "the stored document no longer passes the PDF check")
        return rest

    async def rest_path(self, job: JobRecord) -> Path:
        """A file of the pages of ``job`` from ``from_page`` on (for the render pool, which
        reads a file): in the spool's scratch folder, cleaned at every start."""
        data = await self.read_document(job)
        path = self.spool.tmp_dir / f"rest-{job.id}-{job.from_page}.pdf"
        await asyncio.to_thread(path.write_bytes, data)
        return path

    async def copy_found(self, copy: Copy, pj: PrinterJobReport) -> Copy | None:
        """The printer job of a copy whose job-id was never stored has been found."""
        return await self._copy(
            copy, CopyAction.CREATED, copy.printer,
            printer_job_id=pj.job_id, created_s=pj.created_s, job_uuid=pj.uuid,
            created_dt=pj.created_dt,
        )  # fmt: skip

    async def stale_copy_printed(self, copy: Copy) -> None:
        """A copy completed on a printer its job had already left: say so loudly."""
        job = await self.jobs.get(copy.job_id)
        log.error(
            "copy printed after its job left the printer",
            extra={"event": "stale_copy_printed", "job_id": copy.job_id,
                   "printer": copy.printer, "printer_job_id": copy.printer_job_id,
                   "state": job.state.value if job else None},
        )  # fmt: skip

    async def open_copy(
        self,
        job: JobRecord,
        printer: str,
        *,
        operation: str,
        document_format: str,
        printer_up_s: int | None,
        document_bytes: int | None = None,
        epoch: int | None = None,
    ) -> Copy | None:
        """Record that a printer job is about to be made for ``job`` (before Create-Job/Print-Job).

        ``document_bytes`` is the size of what is sent (a rendition); the job's
        document by default.

        Create-Job copies start ``creating``; Print-Job copies start ``sending``
        (the document leaves with the request). None when the job is no longer
        PRINTING on ``printer`` in this claim (cancelled or moved meanwhile).
        """
        pages = job.document_pages
        if pages and job.from_page:
            pages -= job.from_page - 1  # the rest only
        return await self.copies.open(
            job_id=job.id, claim=job.claims, printer=printer,
            state=CopyState.SENDING if operation == "Print-Job" else CopyState.CREATING,
            operation=operation, document_format=document_format,
            document_bytes=job.document_bytes if document_bytes is None else document_bytes,
            impressions_expected=pages * job.copies if pages else None,
            printer_up_s=printer_up_s, epoch=epoch, now=self.clock(),
        )  # fmt: skip

    async def _copy(
        self, copy: Copy, action: CopyAction, printer: str, **sets: object
    ) -> Copy | None:
        return await self.copies.change(
            copy.id, action, now=self.clock(), actor=f"printer:{printer}", sets=sets,
            printer=copy.printer,
        )  # fmt: skip

    async def copy_created(self, copy: Copy, made: PrinterJobMade, *, sending: bool) -> Copy | None:
        """Create-Job answered ``made`` (job-id, maybe job-uuid); with ``sending`` the upload
        starts now."""
        if sending:
            return await self._copy(
                copy, CopyAction.SEND, copy.printer,
                printer_job_id=made.job_id, job_uuid=made.uuid, sent_at=self.clock(),
            )  # fmt: skip
        return await self._copy(
            copy, CopyAction.CREATED, copy.printer, printer_job_id=made.job_id,
            job_uuid=made.uuid,
        )  # fmt: skip

    async def copy_written(self, copy: Copy) -> Copy | None:
        """Every byte of the upload was handed to the connection, and no answer came back."""
        return await self._copy(copy, CopyAction.SEND, copy.printer, written_at=self.clock())

    async def copy_unsent(self, copy: Copy) -> Copy | None:
        """The upload's connection was refused: not one byte of the document left."""
        return await self._copy(copy, CopyAction.UNSEND, copy.printer, sent_at=None)

    async def copy_acknowledged(
        self, copy: Copy, made: PrinterJobMade | None = None
    ) -> Copy | None:
        """The printer answered the upload with success: it has the whole document."""
        sets: dict[str, object] = {"acknowledged_at": self.clock()}
        if made is not None:
            sets["printer_job_id"] = made.job_id
            sets["job_uuid"] = made.uuid
        return await self._copy(copy, CopyAction.ACKNOWLEDGE, copy.printer, **sets)

    async def copy_cancelling(self, copy: Copy, why: str) -> Copy | None:
        """edgeprint will Cancel-Job this copy (recorded before the request is sent)."""
        log.info(
            "copy cancelled by edgeprint",
            extra={"event": "copy_cancelling", "job_id": copy.job_id, "printer": copy.printer,
                   "printer_job_id": copy.printer_job_id, "why": why},
        )  # fmt: skip
        return await self._copy(
            copy, CopyAction.CANCEL, copy.printer, cancel_origin=ORIGIN_EDGEPRINT
        )

    async def copy_cancel_sent(self, copy: Copy) -> Copy | None:
        """Cancel-Job for this copy was answered (the printer may still need time to stop)."""
        return await self._copy(copy, CopyAction.CANCEL, copy.printer, cancel_sent_at=self.clock())

    async def copy_reported(self, copy: Copy, pj: PrinterJobReport) -> Copy | None:
        """What the printer says of a live copy now (no state change): its figures, its identity."""
        facts = {
            "created_s": pj.created_s, "job_uuid": pj.uuid, "created_dt": pj.created_dt,
            **_report_sets(pj, ""),
        }  # fmt: skip
        return await self.copies.report(copy.id, facts, now=self.clock(), printer=copy.printer)

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
        settled, _ = await self.copies.settle_with(
            copy.id, state, now=self.clock(), actor=f"printer:{copy.printer}",
            sets={**_report_sets(pj, outcome), "settled_by": evidence}, then=[],
            printer=copy.printer,
        )  # fmt: skip
        if settled is not None:
            self._copy_settled(settled)
        return settled

    async def settle_printed(
        self, job: JobRecord, copy: Copy, pj: PrinterJobReport, *, evidence: str
    ) -> tuple[Copy | None, JobRecord | None]:
        """The common case in one transaction: the copy printed whole (by ``evidence``), and
        the job is DONE."""
        on_printer, on_printer_params = self.jobs.on_printer(copy.printer, job.claims)
        now = self.clock()
        printer = copy.printer
        done_sql, done_params = self.jobs.transition_sql(
            job.id, Action.COMPLETE, now=now, actor=f"printer:{printer}", reason=evidence,
            sets={"finished_at": now, "last_error": None, "settled_by": evidence,
                  "pages_printed": None},
            guard=f"{on_printer} AND {GUARD_PRINTED}", guard_params=on_printer_params,
        )  # fmt: skip
        settled, rows = await self.copies.settle_with(
            copy.id, CopyState.PRINTED, now=now, actor=f"printer:{printer}",
            sets={**_report_sets(pj, "completed"), "settled_by": evidence},
            then=[(done_sql, done_params)], printer=printer,
        )  # fmt: skip
        if settled is not None:
            self._copy_settled(settled)
        done = JobRecord.from_row(rows[0][0]) if rows and rows[0] else None
        if done is not None:
            self._printed(done, printer, now)
        return settled, done

    def _copy_settled(self, copy: Copy) -> None:
        self.metrics.copies_settled.labels(printer=copy.printer, state=copy.state.value).inc()
        level = logging.INFO if copy.state is CopyState.PRINTED else logging.WARNING
        log.log(
            level,
            "copy settled",
            extra={"event": "copy_settled", "job_id": copy.job_id, "printer": copy.printer,
                   "printer_job_id": copy.printer_job_id, "state": copy.state.value,
                   "outcome": copy.outcome, "settled_by": copy.settled_by,
                   "epoch": copy.epoch},
        )  # fmt: skip

    def judge(self, job: JobRecord, copies: list[Copy]) -> Verdict:
        """What ``copies`` mean for ``job`` (:func:`edgeprint.copies.judge`) under this config."""
        return judge(job_facts(job), copies, self.policy)

    def on_failure(self, job: JobRecord, printer: str, sig: str, error: str) -> Verdict:
        """The retry/poison policy for a failed attempt (:func:`edgeprint.copies.on_failure`)."""
        return on_failure(job_facts(job), printer, sig, error, self.policy)

    @property
    def policy(self) -> Policy:
        d = self.config.dispatch
        return Policy(
            max_attempts=d.max_attempts,
            reprint_unknown=d.on_unknown_outcome == "reprint",
            busy_backoff_s=d.busy_backoff_s,
            ask_forgotten=frozenset(
                p.name for p in self.config.printers if p.on_forgotten == "ask"
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
                    job, printer, verdict.dead_reason, verdict.error or "",
                    evidence=evidence, pages=verdict.pages_printed,
                )  # fmt: skip
            case Kind.RETRY:
                delay = retry_delay(
                    max(1, job.attempts), self.config.dispatch.retry_base_s,
                    self.config.dispatch.retry_max_s, self._rng,
                )  # fmt: skip
                return await self.requeue(
                    job, printer, verdict.error or "retry", self.run() + delay,
                    count=True, failure_sig=verdict.failure_sig,
                )  # fmt: skip
            case Kind.SEND:
                when = self.run() + verdict.delay_s if not_before is None else not_before
                return await self.requeue(
                    job, printer, verdict.error or "resent", when, count=False
                )
        raise ValueError(f"not a terminal verdict: {verdict.kind}")

    # --- the job's own transitions, as a printer's worker reports them ----------------------

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
        on_printer, on_printer_params = self.jobs.on_printer(printer, job.claims)
        now = self.clock()
        sets: dict[str, object] = {
            "finished_at": now, "last_error": None, "settled_by": evidence, "pages_printed": None,
        }  # fmt: skip
        if printed_by is not None and printed_by != printer:
            sets["printed_on"] = printed_by
        done = await self.jobs.transition(
            job.id, Action.COMPLETE, now=now, actor=f"printer:{printer}", reason=evidence,
            sets=sets, guard=f"{on_printer} AND {GUARD_PRINTED}", guard_params=on_printer_params,
        )  # fmt: skip
        if done is not None:
            self._printed(done, printed_by or printer, now)
        return done

    def _printed(self, done: JobRecord, printer: str, now: float) -> None:
        if not done.rehearsal:  # the live figures never count a rehearsal job
            self.metrics.jobs_printed.labels(printer=printer).inc()
            if done.released_run is not None:  # on the run clock: a step is no latency
                self.metrics.release_to_completed.observe(max(0.0, self.run() - done.released_run))
        log.info(
            "job printed",
            extra={
                "event": "job_printed", "job_id": done.id, "printer": printer,
                "attempts": done.attempts, "correlation_id": done.correlation_id,
            },
        )  # fmt: skip

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
        on_printer, on_printer_params = self.jobs.on_printer(printer, job.claims)
        sets: dict[str, object] = {
            "not_before": not_before, "printer_job_id": None, "last_error": reason,
            "printed_on": None,
        }  # fmt: skip
        if failure_sig is not None:
            sets.update(failure_sig=failure_sig, failure_printer=printer)
        if not count:
            sets["attempts"] = max(0, job.attempts - 1)
        out = await self.jobs.transition(
            job.id, Action.RETRY, now=self.clock(), actor=f"printer:{printer}", reason=reason,
            sets=sets, guard=on_printer, guard_params=on_printer_params,
        )  # fmt: skip
        if out is None:
            return None
        self.admission.admitted(out.printer, out.pool)
        if count:
            self.metrics.retries.labels(printer=printer).inc()
            log.info(
                "job retry",
                extra={
                    "event": "job_retry", "job_id": job.id, "printer": printer,
                    "attempts": job.attempts, "error": reason,
                    "not_before": not_before, "correlation_id": job.correlation_id,
                },
            )  # fmt: skip
        self.board.wake(out.printer, out.pool)
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
        on_printer, on_printer_params = self.jobs.on_printer(printer, job.claims)
        now = self.clock()
        dead = await self.jobs.transition(
            job.id, Action.FAIL, now=now, actor=f"printer:{printer}",
            reason=f"{dead_reason}: {evidence}" if evidence else dead_reason,
            sets={"last_error": error, "dead_reason": dead_reason, "finished_at": now,
                  "settled_by": evidence, "pages_printed": pages},
            guard=on_printer, guard_params=on_printer_params,
        )  # fmt: skip
        if dead is not None:
            self.metrics.jobs_dead.labels(reason=dead_reason).inc()
            log.warning(
                "job dead",
                extra={
                    "event": "job_dead", "job_id": job.id, "printer": printer,
                    "dead_reason": dead_reason, "error": error,
                    "correlation_id": job.correlation_id,
                },
            )  # fmt: skip
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
        on_printer, on_printer_params = self.jobs.on_printer(printer, job.claims)
        now = self.clock()
        out = await self.jobs.transition(
            job.id, Action.CANCEL, now=now, actor=f"printer:{printer}",
            reason=("cancelled_at_printer" if error else "cancel_requested")
            + (f": {evidence}" if evidence else ""),
            sets={"finished_at": now, "last_error": error, "settled_by": evidence,
                  "pages_printed": pages},
            only_from=_ON_PRINTER, guard=on_printer,
            guard_params=on_printer_params,
        )  # fmt: skip
        if out is not None and error:
            log.warning(
                "job cancelled at the printer",
                extra={"event": "job_cancelled_at_printer", "job_id": job.id,
                       "printer": printer, "why": error,
                       "correlation_id": job.correlation_id},
            )  # fmt: skip
        return out

    # --- technicians settle what edgeprint could not know (issue 17) ------------------------

    async def resolve(
        self, job_id: str, caller: Caller, *, printed: bool, rest: bool = False
    ) -> JobRecord:
        """A technician settles a DEAD ``outcome_unknown`` job: printed → DONE, else RELEASED.

        "Not printed" makes it printable once more, like a replay. Of concurrent
        resolutions (either way) exactly one wins. The event row records the
        technician (actor) and the decision (reason). Raises errors.JobNotFound,
        errors.OutcomeNotUnknown (any other job, or a lost race).
        """
        now = self.clock()
        if rest:
            return await self._resolve_rest(job_id, caller)
        if printed:
            job = await self.jobs.transition(
                job_id, Action.RESOLVE, now=now, actor=caller.name,
                reason="resolved: printed (a technician saw the copy)",
                correlation_id=caller.correlation_id,
                sets={"finished_at": now, "settled_by": "person"},
                guard=GUARD_OUTCOME_UNKNOWN,
            )  # fmt: skip
        else:
            job = await self.jobs.transition(
                job_id, Action.REPLAY, now=now, actor=caller.name,
                reason="resolved: not printed (a technician found no copy); print again",
                correlation_id=caller.correlation_id,
                sets={"attempts": 0, "not_before": 0.0, "dead_reason": None, "printed_on": None,
                      "printer_job_id": None, "released_at": now},
                guard=GUARD_OUTCOME_UNKNOWN,
            )  # fmt: skip
        outcome = "printed" if printed else "not_printed"
        if job is None:
            current = await self.get(job_id)
            self.metrics.transitions.labels(action="resolve", outcome="conflict").inc()
            raise errors.OutcomeNotUnknown(job_id, current.state.value, current.dead_reason)
        self.metrics.transitions.labels(action="resolve", outcome="ok").inc()
        log.info(
            "job resolved",
            extra={"event": "job_resolved", "job_id": job_id, "printed": printed,
                   "outcome": outcome, "state": job.state.value, "actor": caller.name,
                   "correlation_id": caller.correlation_id},
        )  # fmt: skip
        if not printed:
            self.admission.admitted(job.printer, job.pool)
            self.board.wake(job.printer, job.pool)
        return job

    async def _resolve_rest(self, job_id: str, caller: Caller) -> JobRecord:
        """A technician asks for the pages that did not come out: the job is RELEASED to print
        its document from the page after the last one out (one copy jobs, from a copy that
        stopped part-way). Exactly one of concurrent resolutions wins."""
        current = await self.get(job_id)
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
                job_id, current.state.value, out, total, current.copies,
                why=f"its document is {current.document_format}, which is sent unchanged: "
                "print it again whole, or mark it printed",
            )  # fmt: skip
        now = self.clock()
        first = done_before + out + 1
        job = await self.jobs.transition(
            job_id, Action.REPLAY, now=now, actor=caller.name,
            reason=f"resolved: print the rest (pages {first}–{total}; {out} came out)",
            correlation_id=caller.correlation_id,
            sets={"attempts": 0, "not_before": 0.0, "dead_reason": None, "printed_on": None,
                  "printer_job_id": None, "released_at": now, "from_page": first},
            guard=f"{GUARD_OUTCOME_UNKNOWN} AND pages_printed = ?", guard_params=(out,),
        )  # fmt: skip
        if job is None:
            latest = await self.get(job_id)
            self.metrics.transitions.labels(action="resolve", outcome="conflict").inc()
            raise errors.OutcomeNotUnknown(job_id, latest.state.value, latest.dead_reason)
        self.metrics.transitions.labels(action="resolve", outcome="ok").inc()
        log.info(
            "job resolved",
            extra={"event": "job_resolved", "job_id": job_id, "printed": "rest",
                   "outcome": "rest", "from_page": first, "state": job.state.value,
                   "actor": caller.name, "correlation_id": caller.correlation_id},
        )  # fmt: skip
        self.admission.admitted(job.printer, job.pool)
        self.board.wake(job.printer, job.pool)
        return job

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
        return await self.jobs.list_jobs(
            state=state, owner=owner, printer=printer, before_seq=before_seq, limit=limit
        )

    async def dead_letters(self, *, after_seq: int = 0, limit: int = 100) -> list[JobRecord]:
        """DEAD jobs, oldest first, after the cursor ``after_seq``."""
        return await self.jobs.dead_letters(after_seq=after_seq, limit=limit)

    async def jobs_by_state(
        self, *, rehearsal: bool = False, since: float | None = None
    ) -> dict[JobState, int]:
        """How many live jobs (with ``rehearsal``: rehearsal jobs; ``since``: made from then
        on) are in each state now."""
        return await self.jobs.count_by_state(rehearsal=rehearsal, since=since)

    async def queues(self) -> Queues:
        """The waiting queues, keyed by (printer, None) and (None, pool), read now."""
        depths = await self.jobs.waiting_depths()
        oldest = await self.jobs.oldest_waiting()
        return Queues(depths, oldest, self.run())  # ages on the run clock (issue 27)

    def stage_document(self) -> StagedDocument:
        """A place to stream an incoming document into (committed by :meth:`submit`)."""
        return self.spool.stage()

    async def stats(self) -> JobStats:
        """Jobs by state, dead letters by reason and the waiting queues, read now."""
        counts = await self.jobs.count_by_state()
        dead = await store_stats.dead_by_reason(self.jobs.store)
        depths = await self.jobs.waiting_depths()
        oldest = await self.jobs.oldest_waiting()
        return JobStats(counts, dead, depths, oldest, self.run())  # ages: run clock

    # --- webhooks (issue 17) ------------------------------------------------------------------

    async def printer_health_changed(self, printer: str, healthy: bool, why: str | None) -> None:
        """Put ``printer.healthy`` / ``printer.unhealthy`` in the webhook outbox (if wanted)."""
        now = self.clock()
        type_ = "printer.healthy" if healthy else "printer.unhealthy"
        await Outbox(self.jobs.store).add_printer_event(
            f"msg_{uuid.uuid4().hex}", type_, printer, now,
            {"printer": printer, "healthy": healthy, "reason": why,
             "pool": self._printer_pool(printer)},
        )  # fmt: skip

    def _printer_pool(self, printer: str) -> str | None:
        cfg = self.config.printer(printer)
        return cfg.pool if cfg is not None else None

    async def failed_webhook_deliveries(
        self, *, after_seq: int = 0, limit: int = 100
    ) -> list[FailedDelivery]:
        """Webhook deliveries parked as failed, oldest first."""
        return await Outbox(self.jobs.store).failures(after_seq=after_seq, limit=limit)

    # --- identify a printer (issue 17) -----------------------------------------------------

    async def identify(self, name: str, how: str, caller: Caller, identify: Identify) -> Identified:
        """Make a printer show itself (``how``: auto, identify, test-page) through
        ``identify`` (the dispatcher's: it owns the printers' IPP clients); what was done.

        Raises errors.PrinterNotFound, errors.IdentifyUnsupported, errors.PrinterError.
        """
        self.printer_config(name)
        done = await identify(name, how, caller.name)
        log.info(
            "printer identified",
            extra={"event": "printer_identified", "printer": name, "how": how,
                   "action": done.action, "printer_job_id": done.printer_job_id,
                   "actor": caller.name, "correlation_id": caller.correlation_id},
        )  # fmt: skip
        return done

    async def check_printer(self, name: str, caller: Caller, check: CheckPrinter) -> PrinterCheck:
        """Ask a configured printer now, timed, through ``check`` (the dispatcher's; issue 23).
        Raises errors.PrinterNotFound."""
        self.printer_config(name)
        out = await check(name)
        log.info(
            "printer checked",
            extra={"event": "printer_checked", "printer": name, "reachable": out.reachable,
                   "round_trip_s": out.round_trip_s, "actor": caller.name,
                   "correlation_id": caller.correlation_id},
        )  # fmt: skip
        return out

    # --- the IPP server's reads (edgeprint.ipp_server) ---------------------------------

    async def job_by_seq(self, seq: int) -> JobRecord | None:
        """The job with acceptance sequence number ``seq`` (its IPP job-id), or None."""
        jobs = await self.jobs.list_jobs(before_seq=seq + 1, limit=1)
        return jobs[0] if jobs and jobs[0].seq == seq else None

    async def recent_jobs(
        self, *, printer: str | None = None, owner: str | None = None, limit: int = 50
    ) -> list[JobRecord]:
        """The newest jobs (newest first), optionally for one printer and one owner."""
        return await self.jobs.list_jobs(printer=printer, owner=owner, limit=limit)

    async def job_by_idempotency_key(self, key: str) -> JobRecord | None:
        """The job submitted with Idempotency-Key ``key``, or None."""
        return await self.jobs.get_by_key(key)


def _report_sets(pj: PrinterJobReport | None, outcome: str) -> dict[str, object]:
    sets: dict[str, object] = {"outcome": outcome}
    if pj is not None:
        sets.update(
            job_state=pj.state, job_state_reasons=",".join(pj.reasons),
            k_octets=pj.k_octets, impressions_completed=pj.impressions_completed,
            sheets_completed=pj.sheets_completed,
        )  # fmt: skip
    return sets
