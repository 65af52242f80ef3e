"""A request's document to a stored job: staged, made a PDF when it is a raster or JPEG, cut
to its page-ranges, and submitted through the service exactly as ``POST /v1/jobs`` does
(same checks, durability, limits, states and events).

Every staged document here is a context manager: whatever the request ends in, nothing
stays in the spool's staging area unless a job took it.
"""

from __future__ import annotations

import contextlib

from edgeprint import errors
from edgeprint.documents import formats, ladder
from edgeprint.faults import crash_point
from edgeprint.ipp.names import Status
from edgeprint.ipp_server.request import Context, refuse
from edgeprint.ipp_server.template import PageRanges
from edgeprint.models import SubmitMetadata
from edgeprint.records import JobRecord
from edgeprint.service import JobService
from edgeprint.spool import StagedDocument

#: The Idempotency-Key of a job submitted with a job-uuid is this and the uuid.
UUID_KEY = "ipp-job-uuid:"


async def store_document(
    service: JobService,
    ctx: Context,
    meta: SubmitMetadata,
    data: bytes,
    key: str,
    fmt: str,
    page_ranges: PageRanges | None = None,
) -> JobRecord:
    """Submit the request's document (``ctx.document``, or ``data`` staged here).

    A raster or JPEG (AirPrint, Mopria, IPP Everywhere clients) is kept as a
    PDF of its pages, so it is an ordinary job that reaches any printer in a
    format that printer takes.
    """
    with contextlib.ExitStack() as staging:
        staged = ctx.document
        if staged is None:
            limit = service.config.server.max_document_bytes
            if len(data) > limit:
                raise errors.PayloadTooLarge("the document", limit)
            staged = staging.enter_context(service.documents.stage_document())
            staged.write(data)
        if staged.size > 0 and formats.converted(fmt):
            pdf = await as_pdf(service, staged, fmt)
            if pdf is not None:
                staged = staging.enter_context(service.documents.stage_document())
                staged.write(pdf)
        raw = fmt in formats.RAW_FORMATS
        if raw and page_ranges is not None:
            raise refuse(
                Status.CLIENT_ERROR_ATTRIBUTES_OR_VALUES_NOT_SUPPORTED,
                f"page-ranges select pages of a PDF; a {fmt} document is sent whole",
                "page-ranges",
            )
        if staged.size > 0 and page_ranges is not None:
            staged = staging.enter_context(await cut(service, staged, page_ranges))
        if staged.size == 0:
            raise refuse(Status.CLIENT_ERROR_BAD_REQUEST, "the request carries no document")
        result = await service.front.submit(
            meta, staged, key, ctx.caller, document_format=fmt if raw else ladder.PDF
        )
    crash_point("ipp_after_store")
    return result.job


async def cut(
    service: JobService, staged: StagedDocument, page_ranges: PageRanges
) -> StagedDocument:
    """A staged PDF replaced by one of the pages ``page_ranges`` select (what is
    stored, and so printed, is only those pages)."""
    try:
        return await service.documents.select_pages(staged, page_ranges)
    except errors.NoPageSelected as exc:
        raise refuse(
            Status.CLIENT_ERROR_ATTRIBUTES_OR_VALUES_NOT_SUPPORTED, str(exc), "page-ranges"
        ) from None


async def as_pdf(service: JobService, staged: StagedDocument, fmt: str) -> bytes | None:
    """A staged raster or JPEG as a PDF of its pages; None for a PDF (or something the PDF
    check will refuse), which stays as it is. The raster is discarded once read.

    Raises errors.UnsupportedDocument when it is not what its format says.
    """
    raw = staged.contents().read()
    kind = formats.sniff(fmt, raw)
    if kind not in formats.CONVERTED_FORMATS:
        return None
    staged.discard()  # its room in the spool is free before the PDF is staged
    return await service.documents.document_as_pdf(raw, kind)
