"""The front doors' use cases (the API and the IPP server): submit, release, cancel, replay,
resolve, and the reads of jobs and queues (DESIGN §1–§2).
"""

from __future__ import annotations

import logging
import math
import uuid
from typing import NoReturn

from edgeprint import errors, pins
from edgeprint.documents import ladder, zpl
from edgeprint.logs import log_event
from edgeprint.runway import labels_of
from edgeprint.service.documents import Documents
from edgeprint.service.records import Caller, JobRecord, JobRequest, SubmitResult, request_digest
from edgeprint.service.shared import Shared
from edgeprint.spool import StagedDocument
from edgeprint.states import TERMINAL_STATES, Action, JobState, sources
from edgeprint.stock import PageSizes
from edgeprint.store.job_rows import NewJob

#: One logger for every part of the service: the name log readers filter on (issue 28 split it).
log = logging.getLogger("edgeprint.service.jobs")

#: The states a release takes (HELD), from the transition table.
_RELEASABLE = sources(Action.RELEASE)


class Front:
    """The front doors' use cases (the API and the IPP server)."""

    def __init__(self, shared: Shared, documents: Documents) -> None:
        self._s = shared
        self._documents = documents

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
                pages = await self._documents.count_labels(document, meta.copies)
            else:
                if not document.looks_like_pdf():
                    raise errors.UnsupportedDocument(
                        "the document is not a PDF (no %PDF- header in its first 1024 bytes)"
                    )
                facts = await self._documents.inspect(document)
                pages, sizes, title = facts.pages, facts.sizes, title or facts.title
            self._s.check_target(meta.printer, meta.pool, "metadata")
            if meta.printer is not None:
                self._s.admission.check_takes(meta.printer)
            self._s.admission.check_format(meta.printer, meta.pool, document_format)
            digest = request_digest(meta, document.sha256)
            existing = await self._s.jobs.get_by_key(idempotency_key)
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
                printer, pool = await self._s.admission.admit(
                    printer,
                    pool,
                    caller,
                    labels=labels_of(pages, meta.copies),
                    document_format=document_format,
                )
            except errors.Backpressure:
                self._s.spool.remove(job_id)
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
            job = await self._s.jobs.insert(new, self._s.clock(), caller.name)
        except errors.StoreWriteFailed:  # its COMMIT may yet be kept: the store tells later
            self._s.spool.unsure.add(job_id)
            raise
        except errors.StoreError:
            self._s.spool.remove(job_id)
            raise
        if job is None:  # a concurrent request with the same key won
            self._s.spool.remove(job_id)
            winner = await self._s.jobs.get_by_key(idempotency_key)
            if winner is None:  # pragma: no cover - keys are never deleted
                raise errors.StoreUnavailable("idempotency key vanished")
            return await self._replayed(winner, idempotency_key, digest, meta, caller)
        if not job.rehearsal:  # the live figures never count a rehearsal job
            self._s.metrics.jobs_accepted.labels(state=job.state.value).inc()
        if job.state is JobState.RELEASED:
            self._s.admission.admitted(job.printer, job.pool)
        log_event(
            log,
            "job_accepted",
            job_id=job.id,
            state=job.state.value,
            owner=job.owner,
            printer=job.printer,
            pool=job.pool,
            bytes=job.document_bytes,
            correlation_id=caller.correlation_id,
        )
        if job.state is JobState.RELEASED:
            job = await self._s.stock.on_released(job)
            self._s.board.wake(job.printer, job.pool)
        return SubmitResult(job, created=True)

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
        self._s.metrics.duplicates_suppressed.inc()
        log_event(
            log, "duplicate_suppressed", job_id=existing.id, correlation_id=caller.correlation_id
        )
        return SubmitResult(existing, created=False)

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
        self._s.check_target(printer, pool, "body")
        current = await self._s.get(job_id)
        if current.state not in _RELEASABLE:  # the common loser of a race: no write needed
            self._release_conflict(job_id, current.state, caller)
        if current.release_pin_hash is not None:
            moved_on = await self.check_pin(current, pin, caller)
            if moved_on is not None:
                self._release_conflict(job_id, moved_on, caller)
        if printer is None and pool is None:
            printer, pool = current.printer, current.pool
        if printer is None and pool is None:
            raise errors.MissingTarget(
                "the job names no printer or pool; give one in the release body",
                [errors.FieldProblem("body", "printer or pool required")],
            )
        self._s.admission.check_format(printer, pool, current.document_format)
        printer, pool = await self._s.admission.admit(
            printer,
            pool,
            caller,
            labels=labels_of(current.document_pages, current.copies, current.from_page),
            document_format=current.document_format,
        )
        now = self._s.clock()
        job = await self._s.jobs.release(
            job_id,
            now=now,
            actor=caller.name,
            correlation_id=caller.correlation_id,
            printer=printer,
            pool=pool,
            reset_pin=current.release_pin_hash is not None,
        )
        if job is None:  # lost a race after the read: the conditional write is the arbiter
            self._release_conflict(job_id, (await self._s.get(job_id)).state, caller)
        self._s.admission.admitted(job.printer, job.pool)
        self._s.released_ok.inc()
        log_event(
            log,
            "job_released",
            job_id=job.id,
            printer=job.printer,
            pool=job.pool,
            correlation_id=caller.correlation_id,
        )
        job = await self._s.stock.on_released(job)
        self._s.board.wake(job.printer, job.pool)
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
        cfg = self._s.config.release
        now = self._s.run()  # a lockout is a duration (issue 27)
        taken = await self._s.jobs.take_pin_attempt(
            job.id, now=now, max_failures=cfg.max_pin_failures, lockout_s=cfg.pin_lockout_s
        )
        if taken is None:
            current = await self._s.get(job.id)
            if current.state not in _RELEASABLE:
                return current.state
            self._s.metrics.pin_attempts.labels(outcome="locked").inc()
            until = current.pin_locked_until or now
            raise errors.ReleaseLocked(job.id, max(1, math.ceil(until - now)))
        attempts, locked_until = taken
        if await pins.verify_pin_async(pin, job.release_pin_hash):
            self._s.metrics.pin_attempts.labels(outcome="ok").inc()
            return None
        self._s.metrics.pin_attempts.labels(outcome="mismatch").inc()
        locked_for = None if locked_until is None else max(1, math.ceil(locked_until - now))
        log_event(
            log,
            "release_pin_mismatch",
            message="release PIN mismatch",
            level=logging.WARNING,
            job_id=job.id,
            attempts=attempts,
            locked_for_s=locked_for,
            token=caller.name,
            correlation_id=caller.correlation_id,
        )
        if locked_for is not None:
            self._s.metrics.release_locks.inc()
        raise errors.PinMismatch(job.id, max(0, cfg.max_pin_failures - attempts), locked_for)

    def _release_conflict(self, job_id: str, state: JobState, caller: Caller) -> NoReturn:
        self._s.metrics.release_conflicts.inc()
        log_event(
            log,
            "release_conflict",
            job_id=job_id,
            state=state.value,
            correlation_id=caller.correlation_id,
        )
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
            current = await self._s.get(job_id)
            if current.state is JobState.HELD and current.release_pin_hash is not None:
                await self.check_pin(current, pin, caller)  # no longer HELD: no PIN needed
        job: JobRecord | None = None
        # Conditional writes in turn: the job can move between them (its worker requeued
        # it, or opened a copy of it), so each miss is tried again from the top.
        for _ in range(3):
            job = await self._s.jobs.cancel_waiting(
                job_id, now=self._s.clock(), actor=caller.name, correlation_id=caller.correlation_id
            )
            if job is not None:
                self._s.admission.forget_depths()  # it may have left a queue
                break
            # PRINTING with no copy at a printer yet: nothing to cancel there.
            job = await self._s.jobs.cancel_unsent(
                job_id, now=self._s.clock(), actor=caller.name, correlation_id=caller.correlation_id
            )
            if job is not None:
                break
            flagged = await self._s.copies.request_cancel(
                job_id, now=self._s.clock(), actor=caller.name
            )
            if flagged:
                printer = flagged[0].printer
                log_event(
                    log,
                    "cancel_requested",
                    job_id=job_id,
                    printer=printer,
                    correlation_id=caller.correlation_id,
                )
                self._s.board.control(printer)
                return await self._s.get(job_id)
            current = await self._s.get(job_id)
            if current.state in TERMINAL_STATES:
                break
        return await self._checked(job, job_id, Action.CANCEL, caller)

    async def replay(self, job_id: str, caller: Caller) -> JobRecord:
        """DEAD → RELEASED once (attempts and back-off reset). Raises like :meth:`cancel`."""
        job = await self._s.jobs.replay(
            job_id, now=self._s.clock(), actor=caller.name, correlation_id=caller.correlation_id
        )
        job = await self._checked(job, job_id, Action.REPLAY, caller)
        self._s.admission.admitted(job.printer, job.pool)
        self._s.board.wake(job.printer, job.pool)
        return job

    async def _checked(
        self, job: JobRecord | None, job_id: str, action: Action, caller: Caller
    ) -> JobRecord:
        if job is None:
            current = await self._s.get(job_id)
            self._s.metrics.transitions.labels(action=action.value, outcome="conflict").inc()
            raise errors.StateConflict(job_id, action.value, current.state.value)
        self._s.metrics.transitions.labels(action=action.value, outcome="ok").inc()
        log_event(
            log,
            f"job_{action.value}",
            message=f"job {action.value}",
            job_id=job_id,
            state=job.state.value,
            correlation_id=caller.correlation_id,
        )
        return job
