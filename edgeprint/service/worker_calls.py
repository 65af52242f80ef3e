"""What a printer's worker calls (DESIGN §3): the claim, the reads of its copies and of what is
remembered of its printer, and each copy's writes up to its settling.
"""

from __future__ import annotations

import logging

from edgeprint.copies import Copy, CopyState
from edgeprint.epochs import Epoch
from edgeprint.logs import log_event
from edgeprint.personality import Traits
from edgeprint.runway import Roll
from edgeprint.service.records import JobRecord, PrinterJobMade, PrinterJobReport
from edgeprint.service.shared import Shared
from edgeprint.store import units

#: One logger for every part of the service: the name log readers filter on (issue 28 split it).
log = logging.getLogger("edgeprint.service.jobs")


class WorkerCalls:
    """What a printer's worker calls (DESIGN §3)."""

    def __init__(self, shared: Shared) -> None:
        self._s = shared

    async def claim_next(self, printer: str, *, takes_zpl: bool = False) -> JobRecord | None:
        """RELEASED → PRINTING for the next job ``printer`` should print, or None (a pool's
        ZPL jobs only when ``takes_zpl``)."""
        cfg = self._s.config.printer(printer)
        pool = cfg.pool if cfg is not None else None
        job = await self._s.jobs.claim_next(
            printer,
            pool,
            now=self._s.clock(),
            actor=f"printer:{printer}",
            fit=self._s.stock.condition(printer),
            takes_zpl=takes_zpl,
            run=self._s.run(),
        )
        if job is not None:
            self._s.admission.admitted(job.printer, job.pool, -1)
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
        cfg = self._s.config.printer(printer)
        pool = cfg.pool if cfg is not None else None
        claimed = await units.claim_and_open(
            self._s.jobs,
            self._s.copies,
            printer,
            pool,
            operation=operation,
            document_format=document_format,
            printer_up_s=printer_up_s,
            epoch=epoch,
            fit=self._s.stock.condition(printer),
            takes_zpl=takes_zpl,
            now=self._s.clock(),
            run=self._s.run(),
        )
        if claimed is None:
            return None
        job, copy = claimed
        self._s.admission.admitted(job.printer, job.pool, -1)
        return job, copy

    async def next_ready_at(self, printer: str) -> float | None:
        """When the earliest backed-off job for ``printer`` becomes claimable (run clock)."""
        cfg = self._s.config.printer(printer)
        pool = cfg.pool if cfg is not None else None
        return await self._s.jobs.next_not_before(printer, pool, self._s.run())

    async def printing_on(self, printer: str) -> list[JobRecord]:
        """Jobs PRINTING on ``printer`` (to reconcile before any new dispatch)."""
        return await self._s.jobs.printing_on(printer)

    async def copies_of(self, job_id: str) -> list[Copy]:
        """Every copy of the job, oldest first."""
        return await self._s.copies.of_job(job_id)

    async def open_copies_on(self, printer: str) -> list[Copy]:
        """Live copies on ``printer``: everything it may still hold, whatever their job."""
        return await self._s.copies.open_on(printer)

    async def known_printer_jobs(
        self, printer: str, epoch: int | None = None
    ) -> set[tuple[int, int | None]]:
        """(job-id, time-at-creation) of every copy on ``printer`` with a known job-id (made in
        ``epoch``, when given: job-ids of another life of the printer name other jobs)."""
        return await self._s.copies.known_printer_jobs(printer, epoch)

    async def printer_epoch(self, printer: str) -> Epoch | None:
        """The printer's epoch as last stored (DESIGN §3)."""
        return await self._s.printer_memory.epoch(printer)

    async def save_printer_epoch(self, printer: str, epoch: Epoch) -> None:
        await self._s.printer_memory.save_epoch(printer, epoch)

    async def printer_traits(self, printer: str) -> Traits | None:
        """What the printer is known to keep and echo (None: nothing learnt yet)."""
        return await self._s.printer_memory.traits(printer)

    async def save_printer_traits(self, printer: str, traits: Traits) -> None:
        await self._s.printer_memory.save_traits(printer, traits, now=self._s.clock())

    async def printer_roll(self, printer: str) -> Roll | None:
        """The printer's label roll as last stored (issue 23; None: never counted)."""
        return await self._s.printer_memory.roll(printer)

    async def save_printer_roll(self, printer: str, roll: Roll) -> None:
        await self._s.printer_memory.save_roll(printer, roll, now=self._s.clock())

    async def copy(self, copy_id: int) -> Copy | None:
        """The copy as stored now."""
        return await self._s.copies.get(copy_id)

    async def find(self, job_id: str) -> JobRecord | None:
        """The job, or None (for the dispatcher, which must not raise on a missing job)."""
        return await self._s.jobs.get(job_id)

    async def note(self, job: JobRecord, printer: str, text: str) -> None:
        """Put ``text`` in a PRINTING job's ``last_error`` (e.g. "no loaded media fits")."""
        await self._s.jobs.note_printing(job.id, printer, text, now=self._s.clock())

    async def redescribe_copy(
        self, copy: Copy, document_format: str, document_bytes: int
    ) -> Copy | None:
        """What a copy not yet made will carry (another format than planned at the claim)."""
        return await self._s.copies.redescribe(
            copy.id, document_format, document_bytes, now=self._s.clock()
        )

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
        return await self._s.copies.open(
            job_id=job.id,
            claim=job.claims,
            printer=printer,
            state=CopyState.SENDING if operation == "Print-Job" else CopyState.CREATING,
            operation=operation,
            document_format=document_format,
            document_bytes=job.document_bytes if document_bytes is None else document_bytes,
            impressions_expected=pages * job.copies if pages else None,
            printer_up_s=printer_up_s,
            epoch=epoch,
            now=self._s.clock(),
        )

    async def copy_found(self, copy: Copy, pj: PrinterJobReport) -> Copy | None:
        """The printer job of a copy whose job-id was never stored has been found."""
        return await self._s.copies.found(copy, pj, now=self._s.clock())

    async def stale_copy_printed(self, copy: Copy) -> None:
        """A copy completed on a printer its job had already left: say so loudly."""
        job = await self._s.jobs.get(copy.job_id)
        log_event(
            log,
            "stale_copy_printed",
            message="copy printed after its job left the printer",
            level=logging.ERROR,
            job_id=copy.job_id,
            printer=copy.printer,
            printer_job_id=copy.printer_job_id,
            state=job.state.value if job else None,
        )

    async def copy_created(self, copy: Copy, made: PrinterJobMade, *, sending: bool) -> Copy | None:
        """Create-Job answered ``made`` (job-id, maybe job-uuid); with ``sending`` the upload
        starts now."""
        if sending:
            return await self._s.copies.sending(copy, made.job_id, made.uuid, now=self._s.clock())
        return await self._s.copies.created(copy, made.job_id, made.uuid, now=self._s.clock())

    async def copy_written(self, copy: Copy) -> Copy | None:
        """Every byte of the upload was handed to the connection, and no answer came back."""
        return await self._s.copies.written(copy, now=self._s.clock())

    async def copy_unsent(self, copy: Copy) -> Copy | None:
        """The upload's connection was refused: not one byte of the document left."""
        return await self._s.copies.unsent(copy, now=self._s.clock())

    async def copy_acknowledged(
        self, copy: Copy, made: PrinterJobMade | None = None
    ) -> Copy | None:
        """The printer answered the upload with success: it has the whole document."""
        if made is None:
            return await self._s.copies.acknowledge(copy, now=self._s.clock())
        return await self._s.copies.acknowledge(
            copy, now=self._s.clock(), printer_job_id=made.job_id, job_uuid=made.uuid
        )

    async def copy_cancelling(self, copy: Copy, why: str) -> Copy | None:
        """edgeprint will Cancel-Job this copy (recorded before the request is sent)."""
        log_event(
            log,
            "copy_cancelling",
            message="copy cancelled by edgeprint",
            job_id=copy.job_id,
            printer=copy.printer,
            printer_job_id=copy.printer_job_id,
            why=why,
        )
        return await self._s.copies.cancelling(copy, now=self._s.clock())

    async def copy_cancel_sent(self, copy: Copy) -> Copy | None:
        """Cancel-Job for this copy was answered (the printer may still need time to stop)."""
        return await self._s.copies.cancel_sent(copy, now=self._s.clock())

    async def copy_reported(self, copy: Copy, pj: PrinterJobReport) -> Copy | None:
        """What the printer says of a live copy now (no state change): its figures, its identity."""
        return await self._s.copies.report(copy, pj, now=self._s.clock())
