"""A document's rendition for a printer: from the cache, or rendered and cached on the way.

:func:`stream` is what a sender reads: the bytes of the rendition ``choice``
says, in chunks. When the cache has it (a retry, a failover to an identical
printer), the file is read back and nothing is rendered; else the pages are
rendered by the pool and each chunk is both yielded and written to the cache,
which keeps the rendition only once the last chunk is written (a stream left
early or failed keeps nothing). JPEG (one file per page and job) is not cached.
File I/O runs in a worker thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from edgeprint.documents import ladder
from edgeprint.documents.cache import RenditionCache, RenditionKey, Writer
from edgeprint.documents.ladder import Choice, DocumentFacts
from edgeprint.documents.render import RenderPool

#: Bytes per chunk read back from the cache.
READ_CHUNK = 1 << 20


def key(document_sha256: str, choice: Choice) -> RenditionKey | None:
    """The cache key of this rendition; None when it is not cached (PDF as is, JPEG)."""
    if choice.format not in (ladder.PWG_RASTER, ladder.URF):
        return None
    if choice.resolution is None or choice.media is None or choice.color_space is None:
        return None
    return RenditionKey(
        document_sha256,
        choice.format,
        choice.resolution.x_dpi,
        choice.color_space,
        (choice.media.width_hmm, choice.media.height_hmm),
    )


async def stream(
    pool: RenderPool,
    cache: RenditionCache,
    pdf_path: str,
    document_sha256: str,
    choice: Choice,
    facts: DocumentFacts,
) -> AsyncIterator[bytes]:
    """The rendition's bytes; see the module docstring. Raises errors.RenderFailed."""
    k = key(document_sha256, choice)
    if k is None:
        async for chunk in pool.stream(pdf_path, choice, facts):
            yield chunk
        return
    cached = await asyncio.to_thread(cache.get, k)
    if cached is not None:
        with open(cached, "rb") as f:  # noqa: ASYNC230 - every read below is in a thread
            while chunk := await asyncio.to_thread(f.read, READ_CHUNK):
                yield chunk
        return
    writer: Writer = await asyncio.to_thread(cache.writer, k)
    try:
        async for chunk in pool.stream(pdf_path, choice, facts):
            await asyncio.to_thread(writer.write, chunk)
            yield chunk
        await asyncio.to_thread(writer.commit)
    finally:
        await asyncio.to_thread(writer.abort_unless_committed)
