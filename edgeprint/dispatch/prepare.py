"""The document a claimed job is sent as: its PDF, a raster made for this printer, or
(ZPL) its document unchanged, once per copy.

A printer that takes PDF gets the stored document; one that does not (or that
blamed this job's PDF before) gets a raster rendered by the render pool and
kept in the rendition cache (:mod:`edgeprint.dispatch.formats`). A document
that cannot be read or made ends or postpones the job here, before anything is
asked of the printer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace

from edgeprint import errors
from edgeprint.config import DispatchConfig
from edgeprint.copies import Copy, CopyState
from edgeprint.dispatch import formats
from edgeprint.dispatch.monitor import Monitor
from edgeprint.documents.cache import RenditionCache
from edgeprint.documents.render import RenderPool
from edgeprint.evidence import Evidence
from edgeprint.logs import log_event
from edgeprint.service import JobRecord, JobService

log = logging.getLogger(__name__)


class Preparer:
    """Makes what one printer is sent."""

    def __init__(
        self,
        service: JobService,
        monitor: Monitor,
        settings: DispatchConfig,
        *,
        renderer: RenderPool | None,
        renditions: RenditionCache | None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.name = monitor.name
        self.service = service
        self.monitor = monitor
        self.settings = settings
        self.renderer = renderer
        self.renditions = renditions
        self._clock = clock

    async def for_copy(self, job: JobRecord, copy: Copy) -> tuple[Copy, bytes] | None:
        """The copy (perhaps redescribed) and the bytes it carries; None when the job was
        failed or put back instead (nothing was asked of the printer)."""
        if formats.is_raw(job.document_format):
            made = await self.raw(job, copy)
            if made is None:
                return None
            fmt, data = made
            redescribed = await self.service.worker.redescribe_copy(copy, fmt, len(data))
            # not redescribed: a person cancelled it meanwhile; the run stops before the upload
            return redescribed or replace(copy, document_format=fmt, document_bytes=len(data)), data
        if job.claims > 1 and await self._pdf_failed_here(job):
            # The printer lists PDF but could not print this one: once more, in raster.
            rendered = await self._rendition(job, raster_only=True)
            if rendered is None:
                await self.service.outcomes.settle_copy(
                    copy,
                    CopyState.REFUSED,
                    "no raster could be made",
                    evidence=Evidence.NO_DOCUMENT.value,
                )
                return None
            fmt, data = rendered
            redescribed = await self.service.worker.redescribe_copy(copy, fmt, len(data))
            if redescribed is not None:
                return redescribed, data
        try:
            document = await self.service.documents.read_document(job)
            if job.from_page is not None:  # the rest only: the copy carries fewer bytes
                copy = (
                    await self.service.worker.redescribe_copy(
                        copy, copy.document_format, len(document)
                    )
                    or copy
                )
        except OSError as exc:
            await self._refuse_unreadable(job, copy, exc)
            return None
        return copy, document

    async def raw(self, job: JobRecord, copy: Copy | None = None) -> tuple[str, bytes] | None:
        """For a job in a raw label language (ZPL): its document unchanged, once per copy
        (one printer job; a raw path such as PAPPL's ignores IPP ``copies``). None when this
        printer does not list the language (the job is refused unsent: DEAD
        ``unsupported_document``) or the document cannot be read; ``copy``, when already
        opened, is settled refused first."""
        fmt = job.document_format
        if not formats.takes_raw(self.monitor.capabilities, fmt):
            why = (
                f"{self.name} does not take {fmt} (its document-format-supported does not list "
                "it); nothing was sent"
            )
            if copy is not None:
                await self.service.outcomes.settle_copy(
                    copy, CopyState.REFUSED, why, evidence=Evidence.NO_DOCUMENT.value
                )
            await self.service.outcomes.fail(job, self.name, "unsupported_document", why)
            return None
        try:
            document = await self.service.documents.read_document(job)
        except OSError as exc:
            await self._refuse_unreadable(job, copy, exc)
            return None
        return fmt, document * job.copies

    async def _refuse_unreadable(self, job: JobRecord, copy: Copy | None, exc: OSError) -> None:
        """The document cannot be read: its copy (if opened) is refused unsent, and the job
        goes where an unreadable document goes."""
        if copy is not None:
            await self.service.outcomes.settle_copy(
                copy,
                CopyState.REFUSED,
                f"document unreadable: {exc}",
                evidence=Evidence.NO_DOCUMENT.value,
            )
        await self._unreadable(job, exc)

    async def raster(self, job: JobRecord) -> tuple[str, bytes] | None:
        """For a printer that takes no PDF: the job rendered for it (None: it could not be)."""
        return await self._rendition(job, raster_only=False)

    async def _pdf_failed_here(self, job: JobRecord) -> bool:
        """This printer blamed this job's PDF before (completed/aborted with a document error)
        and takes a raster edgeprint can make instead."""
        caps = self.monitor.capabilities
        if self.renderer is None or caps is None:
            return False
        if formats.generic(formats.without_pdf(caps), raster=True) in (None, formats.PDF):
            return False
        return any(
            c.printer == self.name
            and c.state is CopyState.DOCUMENT_ERROR
            and c.document_format == formats.PDF
            for c in await self.service.worker.copies_of(job.id)
        )

    async def _rendition(self, job: JobRecord, *, raster_only: bool) -> tuple[str, bytes] | None:
        """The job's document in the format this printer takes best (rendered, cached).

        None when it cannot be made (the job is then failed or noted here).
        """
        assert self.renderer is not None
        caps = self.monitor.capabilities
        assert caps is not None
        caps = formats.without_pdf(caps) if raster_only else caps
        try:
            if job.from_page is None:
                path = await self.service.documents.document_path(job)
            else:  # the rest only: its own file, not the cached rendition of the whole
                path = await self.service.documents.rest_path(job)
        except OSError as exc:
            await self._unreadable(job, exc)
            return None
        try:
            made = await formats.render(
                self.renderer,
                self.renditions if job.from_page is None else None,
                caps,
                job.document_sha256,
                str(path),
            )
        except errors.DocumentUnprintable as exc:
            await self.service.outcomes.fail(job, self.name, exc.slug.replace("-", "_"), exc.detail)
            return None
        except errors.RenderFailed as exc:
            verdict = self.service.outcomes.on_failure(job, self.name, "render-failed", str(exc))
            await self.service.outcomes.settle_job(job, self.name, verdict)
            return None
        except OSError as exc:
            await self._unreadable(job, exc)
            return None
        if made.note:
            await self.service.worker.note(job, self.name, made.note)
        return made.format, made.data

    async def _unreadable(self, job: JobRecord, exc: OSError) -> None:
        """The document of a claimed job could not be read: gone → DEAD, else later again."""
        if isinstance(exc, FileNotFoundError):
            await self.service.outcomes.fail(job, self.name, "document_missing", f"document: {exc}")
        else:  # EMFILE, EIO…: the document is there, reading it failed now
            log_event(
                log,
                "document_unreadable",
                level=logging.WARNING,
                job_id=job.id,
                printer=self.name,
                error=str(exc),
                correlation_id=job.correlation_id,
            )
            not_before = self.service.run() + self.settings.unreachable_retry_max_s
            await self.service.outcomes.requeue(
                job, self.name, f"document: {exc}", not_before, count=False
            )
