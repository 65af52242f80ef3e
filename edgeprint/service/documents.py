"""A job's document: staging, the submission checks (PDF pages, ZPL labels), page selection,
raster → PDF, and reading it back for a printer.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import io
import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from edgeprint import errors
from edgeprint.documents import pages, zpl
from edgeprint.logs import log_event
from edgeprint.service.records import JobRecord
from edgeprint.spool import StagedDocument

if TYPE_CHECKING:
    from edgeprint.documents.check import PdfFacts

from edgeprint.service.shared import Shared

#: One logger for every part of the service: the name log readers filter on (issue 28 split it).
log = logging.getLogger("edgeprint.service.jobs")

#: PDFs up to this size are parsed on the event loop (a badge: ~0.15 ms; a hostile 64 KiB
#: page tree: ~17 ms); larger ones in a worker thread.
_INLINE_PDF_BYTES = 64 * 1024


class Documents:
    """A job's document, from staging to a printer."""

    def __init__(self, shared: Shared) -> None:
        self._s = shared
        self._pdf_checks = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pdf-check")

    def stage_document(self) -> StagedDocument:
        """A place to stream an incoming document into (committed by :meth:`submit`)."""
        return self._s.spool.stage()

    async def inspect(self, document: StagedDocument) -> PdfFacts:
        # pypdf is imported on first use: ~40 ms less from start to ready (crash recovery).
        from edgeprint import documents

        pdf = document.contents()
        limit = self._s.config.server.max_document_pages
        try:
            if document.size <= _INLINE_PDF_BYTES:  # one read: pypdf makes hundreds of small ones
                return documents.inspect_pdf(io.BytesIO(pdf.read()), limit)
            # One thread of its own: a few hostile PDFs (seconds of parsing each) then
            # queue behind each other instead of taking the default pool that spool writes,
            # PIN hashing and the printer workers' document reads use.
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._pdf_checks, documents.inspect_pdf, pdf, limit)
        except errors.DocumentRejected as exc:
            self._s.metrics.documents_rejected.labels(reason=exc.slug).inc()
            log_event(log, "document_rejected", reason=exc.slug, bytes=document.size)
            raise

    async def count_labels(self, document: StagedDocument, copies: int) -> int:
        """Labels of a staged ZPL document (:func:`zpl.count_labels`), checked against
        ``server.max_zpl_labels``; its size sent ``copies`` times (a raw document's copies
        are its bytes repeated, DESIGN §11) against ``server.max_document_bytes``."""
        server = self._s.config.server
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
            self._s.metrics.documents_rejected.labels(reason=exc.slug).inc()
            log_event(
                log, "document_rejected", reason=exc.slug, bytes=document.size, format=zpl.ZPL
            )
            raise

    async def document_as_pdf(self, data: bytes, document_format: str) -> bytes:
        """A PWG raster, URF or JPEG document (an IPP client's) as a PDF of its pages.

        Raises errors.UnsupportedDocument (not what its format says, too many
        pages, or no converter in this process).
        """
        if self._s.renderer is None:
            raise errors.UnsupportedDocument(f"{document_format} cannot be converted here")
        return await self._s.renderer.to_pdf(
            data, document_format, self._s.config.server.max_document_pages
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
        with contextlib.ExitStack() as unless_kept:  # discarded on error, or when replaced
            unless_kept.enter_context(staged)
            raw = staged.contents().read()
            cut = await asyncio.to_thread(
                pages.cut, raw, ranges, self._s.config.server.max_document_pages
            )
            if cut is None or cut is raw:
                unless_kept.pop_all()
                return staged  # every page, or not a PDF the check takes
        with contextlib.ExitStack() as unless_kept:
            out = unless_kept.enter_context(self._s.spool.stage())
            out.write(cut)
            unless_kept.pop_all()
            return out

    async def document_path(self, job: JobRecord) -> Path:
        """Where the job's document is stored (for the render pool, which reads it itself);
        fetched from the database first when another appliance accepted the job.
        Raises FileNotFoundError (nowhere), OSError (not now)."""
        return await self._s.spool.local(job.id, job.document_sha256)

    async def read_document(self, job: JobRecord) -> bytes:
        """The job's document (off the event loop) — only its pages from ``from_page`` on when
        a person asked for the rest. Raises FileNotFoundError, OSError."""
        data = await asyncio.to_thread((await self.document_path(job)).read_bytes)
        if job.from_page is None or job.document_pages is None:
            return data
        rest = await asyncio.to_thread(
            pages.cut,
            data,
            [(job.from_page, job.document_pages)],
            self._s.config.server.max_document_pages,
        )
        if rest is None:  # pragma: no cover - the document passed this check at submission
            raise OSError(errno.EIO, "the stored document no longer passes the PDF check")
        return rest

    async def rest_path(self, job: JobRecord) -> Path:
        """A file of the pages of ``job`` from ``from_page`` on (for the render pool, which
        reads a file): in the spool's scratch folder, cleaned at every start."""
        data = await self.read_document(job)
        path = self._s.spool.tmp_dir / f"rest-{job.id}-{job.from_page}.pdf"
        await asyncio.to_thread(path.write_bytes, data)
        return path

    def close(self) -> None:
        """Let go of the PDF-check thread (a check in progress finishes on its own)."""
        self._pdf_checks.shutdown(wait=False, cancel_futures=True)
