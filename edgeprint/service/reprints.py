"""Reprint with a record (issue 24): a DONE job printed again on purpose, exactly once per key.

A badge lost, damaged, or misspelt then fixed upstream: the desk asks for the same
document, same owner, target and copies again, with a reason. The reprint is a new
job, RELEASED at once, that names its original (``reprint_of``); the original lists
it (``reprints``); both jobs' events say who asked and why. One ``Idempotency-Key``
makes one reprint, as a submission does (the same key again answers the same job);
``[release] max_reprints`` bounds the reprints of one original, held in the store's
one conditional insert (:mod:`edgeprint.store.reprints`), never by a read then a write.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import uuid

from edgeprint import errors
from edgeprint.logs import log_event
from edgeprint.runway import labels_of
from edgeprint.service.jobs import JobService
from edgeprint.service.records import Caller, JobRecord, SubmitResult
from edgeprint.states import JobState
from edgeprint.store.reprints import NewReprint, Reprints

log = logging.getLogger(__name__)

ACTION = "reprint"


def reprint_digest(job_id: str, reason: str) -> str:
    """What one reprint request is, for the idempotency check (the job asked for, the reason)."""
    return hashlib.sha256(f"reprint\0{job_id}\0{reason}".encode()).hexdigest()


class ReprintService:
    """Reprints over the job service's store, spool, admission and board."""

    def __init__(self, service: JobService) -> None:
        self._service = service
        self._reprints = Reprints(service.jobs.store)

    async def reprints_of(self, ids: list[str]) -> dict[str, list[str]]:
        """Each of ``ids`` → its reprints' ids, oldest first (absent: none)."""
        return await self._reprints.of(ids) if ids else {}

    async def reprint(self, job_id: str, reason: str, key: str, caller: Caller) -> SubmitResult:
        """Make the reprint of DONE job ``job_id``; ``created=False`` when ``key`` made it
        already (the same request).

        Raises errors.JobNotFound, errors.StateConflict (not DONE), errors.ReprintLimit,
        errors.DocumentGone (retention deleted the document), errors.IdempotencyKeyReused
        (``key`` made another job), errors.UnknownTarget (its printer or pool is no longer
        configured), errors.Backpressure, errors.StoreError.
        """
        service = self._service
        digest = reprint_digest(job_id, reason)
        existing = await service.jobs.get_by_key(key)
        if existing is not None:
            return self._replayed(existing, key, digest, caller)
        asked = await service.get(job_id)
        original_id = asked.reprint_of or asked.id
        limit = service.config.release.max_reprints
        await self._check(asked, original_id, limit)
        service.check_target(asked.printer, asked.pool, "job")
        printer, pool = await service.admission.admit(
            asked.printer,
            asked.pool,
            caller,
            labels=labels_of(asked.document_pages, asked.copies),
            document_format=asked.document_format,
        )
        new_id = uuid.uuid4().hex
        try:
            await service.spool.duplicate(asked.id, asked.document_sha256, new_id)
        except FileNotFoundError:
            raise errors.DocumentGone(asked.id) from None
        except OSError as exc:
            if exc.errno == errno.EIO:
                raise errors.StoreUnavailable(f"document not readable now: {exc}") from exc
            raise
        new = NewReprint(
            id=new_id,
            idempotency_key=key,
            request_sha256=digest,
            original_id=original_id,
            asked_id=asked.id,
            document_sha256=asked.document_sha256,
            printer=printer,
            pool=pool,
            token_name=caller.name,
            correlation_id=caller.correlation_id,
            actor=caller.name,
            reason=reason,
            webhook_id=f"msg_{uuid.uuid4().hex}",
        )
        try:
            job = await self._reprints.insert(
                new,
                now=service.clock(),
                max_reprints=limit,
                run=service.run(),
            )
        except errors.StoreError:
            service.spool.remove(new_id)
            raise
        if job is None:
            service.spool.remove(new_id)
            return await self._lost(job_id, key, digest, original_id, limit, caller)
        if not job.rehearsal:
            service.metrics.jobs_accepted.labels(state=job.state.value).inc()
        service.admission.admitted(job.printer, job.pool)
        log_event(
            log,
            "job_reprinted",
            job_id=job.id,
            reprint_of=original_id,
            asked_for=asked.id,
            owner=job.owner,
            actor=caller.name,
            reason=reason,
            correlation_id=caller.correlation_id,
        )
        job = await service.stock.on_released(job)
        service.board.wake(job.printer, job.pool)
        return SubmitResult(job, created=True)

    async def _check(self, asked: JobRecord, original_id: str, limit: int) -> None:
        """Refuse before any work what the insert would refuse (the insert decides races)."""
        if asked.state is not JobState.DONE:
            raise errors.StateConflict(asked.id, ACTION, asked.state.value)
        if asked.document_deleted_at is not None:
            raise errors.DocumentGone(asked.id)
        count = await self._reprints.count(original_id)
        if count >= limit:
            raise errors.ReprintLimit(asked.id, original_id, count, limit)

    async def _lost(
        self, job_id: str, key: str, digest: str, original_id: str, limit: int, caller: Caller
    ) -> SubmitResult:
        """The insert stored nothing: say why (a concurrent request won the key, the
        state changed, retention deleted the document, or the limit was reached meanwhile)."""
        winner = await self._service.jobs.get_by_key(key)
        if winner is not None:
            return self._replayed(winner, key, digest, caller)
        asked = await self._service.get(job_id)
        await self._check(asked, original_id, limit)
        raise errors.StoreUnavailable("the reprint was not stored; retry with the same key")

    def _replayed(self, existing: JobRecord, key: str, digest: str, caller: Caller) -> SubmitResult:
        if existing.request_sha256 != digest:
            raise errors.IdempotencyKeyReused(key, existing.id)
        self._service.metrics.duplicates_suppressed.inc()
        log_event(
            log, "duplicate_suppressed", job_id=existing.id, correlation_id=caller.correlation_id
        )
        return SubmitResult(existing, created=False)
