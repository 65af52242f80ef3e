"""A page of a job's document as a small PNG, for people choosing what to release (issue 24).

Drawn by the render pool's workers (never on the event loop; the appliance
process does not load PDFium or Pillow) and kept in the rendition cache under
its own key (document SHA-256, page, width): a second look costs a file read,
and the preview is evicted and swept with the document's renditions. Only a
PDF has pages to draw: a ZPL job (sent to the printer as it came) has no
preview (415).
"""

from __future__ import annotations

import asyncio

from edgeprint import errors
from edgeprint.documents.cache import PreviewKey, RenditionCache
from edgeprint.documents.ladder import PDF
from edgeprint.documents.render import RenderPool
from edgeprint.service.jobs import JobService
from edgeprint.service.records import JobRecord

#: The widths a preview may be drawn at, in pixels (a thumbnail to a tablet's full width).
MIN_WIDTH = 50
MAX_WIDTH = 1200


class Previews:
    """``png(job, page, width)``: the page drawn, from the cache or rendered and cached."""

    def __init__(self, service: JobService) -> None:
        self._service = service
        #: Previews drawn by the workers (not answered from the cache) since the start.
        self.rendered = 0

    def _source(self) -> tuple[RenderPool, RenditionCache]:
        pool, cache = self._service.renderer, self._service.renditions
        if pool is None or cache is None:  # an appliance built without a render pool
            raise errors.RenderFailed("this appliance has no render workers")
        return pool, cache

    async def png(self, job: JobRecord, page: int, width: int) -> bytes:
        """Page ``page`` (1-based) of ``job``'s document, ``width`` pixels wide, as PNG bytes.

        Raises errors.InvalidRequest (width outside MIN_WIDTH–MAX_WIDTH, or a page the
        document does not have), errors.UnsupportedDocument (not a PDF: a ZPL job),
        errors.DocumentGone (retention deleted the document, or it is nowhere),
        errors.RenderFailed (the workers could not draw it now).
        """
        self._check(job, page, width)
        if job.document_format != PDF:
            raise errors.UnsupportedDocument(
                f"a {job.document_format} job has no preview: it is sent to the printer as it "
                "came, and only a PDF's pages can be drawn"
            )
        if job.document_deleted_at is not None:
            raise self._gone(job)
        pool, cache = self._source()
        key = PreviewKey(job.document_sha256, page, width)
        cached = await asyncio.to_thread(cache.get, key)
        if cached is not None:
            try:
                return await asyncio.to_thread(cached.read_bytes)
            except FileNotFoundError:
                pass  # evicted between the lookup and the read: draw it again
        try:
            path = await self._service.documents.document_path(job)
        except FileNotFoundError:
            raise self._gone(job) from None
        except OSError as exc:
            raise errors.RenderFailed(f"the document cannot be read now: {exc}") from exc
        pages = job.document_pages
        if pages is None:  # a job stored before its pages were counted
            pages = await pool.page_count(str(path))
        if page > pages:
            raise self._page_problem(f"the document has {pages} page(s)")
        png = await pool.preview(str(path), page - 1, width)
        self.rendered += 1
        await asyncio.to_thread(self._keep, cache, key, png)
        return png

    @staticmethod
    def _keep(cache: RenditionCache, key: PreviewKey, png: bytes) -> None:
        with cache.writer(key) as writer:
            writer.write(png)
            writer.commit()

    @staticmethod
    def _check(job: JobRecord, page: int, width: int) -> None:
        problems = []
        if not MIN_WIDTH <= width <= MAX_WIDTH:
            problems.append(
                errors.FieldProblem("query.width", f"an integer from {MIN_WIDTH} to {MAX_WIDTH}")
            )
        if page < 1:
            problems.append(errors.FieldProblem("query.page", "an integer from 1"))
        elif job.document_pages is not None and page > job.document_pages:
            problems.append(
                errors.FieldProblem("query.page", f"the document has {job.document_pages} page(s)")
            )
        if problems:
            raise errors.InvalidRequest("invalid query parameters", problems)

    @staticmethod
    def _page_problem(why: str) -> errors.InvalidRequest:
        return errors.InvalidRequest(
            "invalid query parameters", [errors.FieldProblem("query.page", why)]
        )

    @staticmethod
    def _gone(job: JobRecord) -> errors.DocumentGone:
        return errors.DocumentGone(
            job.id,
            f"job {job.id}'s document is no longer kept (documents of finished jobs are "
            "deleted after retention.document_retention_s): there is nothing to preview",
        )
