"""What a printer is sent: its capabilities through the format ladder, rendered and cached.

A printer that lists ``application/pdf`` (or lists no formats at all, as
before capabilities were read) gets the document as submitted. One that does
not gets a raster (PWG raster, Apple raster, or a JPEG for a one-page
document) rendered off the event loop by :class:`RenderPool` and kept in the
rendition cache, so a retry or a failover to an identical printer does not
render again (docs/decisions/0030). A document in a raw label
language (ZPL) is never rendered: it goes unchanged, and only to a printer that
lists its format (:func:`takes_raw`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from pathlib import Path

from edgeprint import errors
from edgeprint.documents import ladder, zpl
from edgeprint.documents.cache import RenditionCache, RenditionKey
from edgeprint.documents.capabilities import PrinterCapabilities
from edgeprint.documents.ladder import DocumentFacts
from edgeprint.documents.render import RenderPool

PDF = ladder.PDF
#: issue 23 (zpl): raw languages, sent unchanged (once per copy) to printers that list them.
ZPL = zpl.ZPL
RAW = (ZPL,)
#: A 4×3 in badge: what "can this printer take our documents at all" is judged on.
_BADGE = DocumentFacts(((288.0, 216.0),))


@dataclass(frozen=True)
class Rendered:
    """The bytes to send, their format, and a note for the job (e.g. no loaded media fits)."""

    format: str
    data: bytes
    note: str | None = None


def generic(caps: PrinterCapabilities, *, raster: bool) -> str | None:
    """The format a badge is sent in to a printer of ``caps``; None when none can be made.

    ``raster`` says whether this appliance can render (a render pool exists).
    """
    if not caps.formats or PDF in caps.formats:
        return PDF
    if not raster:
        return None
    try:
        return ladder.choose(replace(caps, media_ready=()), _BADGE).format
    except errors.DocumentUnprintable:
        return None


def takes_raw(caps: PrinterCapabilities | None, document_format: str) -> bool:
    """The printer lists the raw language ``document_format`` in document-format-supported
    (``application/octet-stream`` does not count: it promises nothing of what is inside)."""
    return caps is not None and document_format in caps.formats


def is_raw(document_format: str) -> bool:
    """A raw language: sent as it is, its copies as its bytes repeated (never IPP copies)."""
    return document_format in RAW


def unusable(caps: PrinterCapabilities) -> str:
    """Why a printer cannot be used: the formats it lists and the ones edgeprint makes."""
    return (
        f"takes none of the formats edgeprint can send (it lists {', '.join(caps.formats)}; "
        f"edgeprint sends {', '.join(ladder.LADDER)})"
    )


def without_pdf(caps: PrinterCapabilities) -> PrinterCapabilities:
    """The same printer, as if it did not list PDF (a PDF it could not print: try raster)."""
    return replace(caps, formats=tuple(f for f in caps.formats if f != PDF))


async def render(
    renderer: RenderPool,
    cache: RenditionCache | None,
    caps: PrinterCapabilities,
    document_sha256: str,
    pdf_path: str,
) -> Rendered:
    """The document at ``pdf_path`` as the ladder says for ``caps``.

    Raises errors.DocumentUnprintable (nothing this printer takes can be made
    of it), errors.RenderFailed, OSError (the document cannot be read). No
    loaded media large enough is not fatal: the page is rendered on its own
    size and the job gets a note saying so.
    """
    facts = await renderer.facts(pdf_path)
    note = None
    try:
        choice = ladder.choose(caps, facts)
    except errors.DocumentUnprintable as exc:
        if exc.slug != "no-media-fits":
            raise
        note = f"{exc.detail}; sent on the page's own size"
        choice = ladder.choose(replace(caps, media_ready=()), facts)
    if not choice.raster:
        return Rendered(PDF, await asyncio.to_thread(Path(pdf_path).read_bytes), note)
    pages = len(facts.page_sizes_pt)
    if choice.one_page_per_job and pages > 1:
        raise errors.DocumentUnprintable(
            "unsupported-document",
            f"the printer takes JPEG only (one page per job) and this document has {pages} pages",
            takes=caps.formats,
        )
    assert choice.resolution is not None
    assert choice.media is not None
    key = RenditionKey(
        document_sha256,
        choice.format,
        choice.resolution.x_dpi,
        choice.color_space or ladder.SGRAY_8,
        (choice.media.width_hmm, choice.media.height_hmm),
    )
    if cache is not None:
        kept = cache.get(key)
        if kept is None:
            with cache.writer(key) as writer:
                async for chunk in renderer.stream(pdf_path, choice, facts):
                    writer.write(chunk)
                kept = await asyncio.to_thread(writer.commit)  # fsync: off the loop
        if kept is not None:
            return Rendered(choice.format, await asyncio.to_thread(kept.read_bytes), note)
    chunks = [chunk async for chunk in renderer.stream(pdf_path, choice, facts)]
    return Rendered(choice.format, b"".join(chunks), note)
