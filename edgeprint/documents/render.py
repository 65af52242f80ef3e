"""Rendering off the event loop: PDF pages → encoded raster, page by page, in worker processes.

A :class:`RenderPool` is a small ``ProcessPoolExecutor`` (spawn start method:
no copy of the appliance's loop, sockets or threads in the workers). A
CPU-bound render therefore never stalls the API, the watchdog or the other
printers; the appliance process itself never imports numpy, pypdfium2 or
Pillow (the workers do, in :mod:`edgeprint.documents.raster`).

:meth:`RenderPool.stream` is an async iterator of encoded chunks — the file
header, then one page at a time — with at most ``pages_ahead`` pages rendered
ahead of the consumer: a 40-page A4 document at 600 dpi is never held whole,
in the workers or here; a slow printer holds back the rendering.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import importlib
import multiprocessing
from collections.abc import AsyncIterator
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

from edgeprint import errors
from edgeprint.documents import ladder
from edgeprint.documents.ladder import Choice, DocumentFacts

_RASTER = "edgeprint.documents.raster"
PWG_SYNC = b"RaS2"


@dataclass(frozen=True)
class PageJob:
    """One page to render: everything a worker needs (picklable, stdlib only)."""

    pdf_path: str
    index: int  # 0-based
    format: str  # image/pwg-raster, image/urf, image/jpeg
    color_space: str  # sgray_8, black_1, srgb_8
    dpi: int
    media_hmm: tuple[int, int]  # canvas: media width, height in hundredths of mm
    media_name: str
    turn: bool  # rotate the page 90° clockwise onto the media
    total_pages: int


def _call(name: str, *args: Any) -> Any:
    """Run ``raster.<name>(*args)`` in a worker (picklable by reference, stdlib only here)."""
    return getattr(importlib.import_module(_RASTER), name)(*args)


def urf_file_header(pages: int) -> bytes:
    """``UNIRAST\\0`` and the page count (as :func:`edgeprint.documents.urf.file_header`)."""
    return b"UNIRAST\0" + pages.to_bytes(4, "big")


class RenderPool:
    """``workers`` render processes; each stream keeps ``pages_ahead`` pages in flight at most."""

    def __init__(self, workers: int = 1, *, pages_ahead: int = 2) -> None:
        if workers < 1 or pages_ahead < 1:
            raise ValueError("workers and pages_ahead must be >= 1")
        self.workers = workers
        self.pages_ahead = pages_ahead
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None
        #: Pages submitted to the workers and not yet handed to a consumer (all streams).
        self.in_flight = 0

    def _executor(self) -> concurrent.futures.ProcessPoolExecutor:
        if self._pool is None:
            self._pool = concurrent.futures.ProcessPoolExecutor(
                max_workers=self.workers, mp_context=multiprocessing.get_context("spawn")
            )
        return self._pool

    async def _run(self, name: str, *args: Any) -> Any:
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor(), _call, name, *args)
        except BrokenProcessPool as exc:
            # A worker died (killed, out of memory): this pool is unusable; the next call
            # starts a fresh one.
            self._discard()
            raise errors.RenderFailed(f"a render worker died during {name}") from exc
        except (errors.EdgeprintError, asyncio.CancelledError):
            raise
        except Exception as exc:  # PDFium or numpy refused this page
            raise errors.RenderFailed(f"{name} failed: {type(exc).__name__}: {exc}") from exc

    def _discard(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    async def start(self) -> list[int]:
        """Start the workers and load PDFium in them (the first page is not slow); their pids."""
        pids = await asyncio.gather(*(self._run("warm") for _ in range(self.workers)))
        return sorted({int(p) for p in pids})

    async def close(self) -> None:
        """Stop the workers (waits for pages being rendered, in a thread)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            await asyncio.to_thread(pool.shutdown, wait=True, cancel_futures=True)

    async def to_pdf(self, data: bytes, document_format: str, max_pages: int) -> bytes:
        """A PWG raster, URF or JPEG document as a PDF of its pages (in a worker).

        Raises errors.UnsupportedDocument when it is not what its format says.
        """
        try:
            pdf: bytes = await self._run("to_pdf", data, document_format, max_pages)
        except errors.RenderFailed as exc:
            raise errors.UnsupportedDocument(f"{document_format}: {exc.detail}") from None
        return pdf

    async def facts(self, pdf_path: str) -> DocumentFacts:
        """Page sizes (points) and whether the document needs colour, read by PDFium."""
        sizes = await self._run("page_sizes", pdf_path)
        color = await self._run("needs_color", pdf_path)
        return DocumentFacts(tuple((float(w), float(h)) for w, h in sizes), bool(color))

    def _jobs(self, pdf_path: str, choice: Choice, facts: DocumentFacts) -> list[PageJob]:
        if not choice.raster or choice.media is None or choice.resolution is None:
            raise ValueError(f"{choice.format} is not rendered")
        media = choice.media
        return [
            PageJob(
                pdf_path=pdf_path,
                index=i,
                format=choice.format,
                color_space=choice.color_space or "sgray_8",
                dpi=choice.resolution.x_dpi,
                media_hmm=(media.width_hmm, media.height_hmm),
                media_name=media.name or "",
                turn=ladder.needs_turn(size, media),
                total_pages=len(facts.page_sizes_pt),
            )
            for i, size in enumerate(facts.page_sizes_pt)
        ]

    async def stream(
        self, pdf_path: str, choice: Choice, facts: DocumentFacts
    ) -> AsyncIterator[bytes]:
        """The document as ``choice`` says: file header, then each page, in order.

        For ``image/jpeg`` each chunk is a whole JPEG file (one page: one job).
        Raises errors.RenderFailed when a page cannot be rendered.
        """
        jobs = self._jobs(pdf_path, choice, facts)
        if choice.format == ladder.PWG_RASTER:
            yield PWG_SYNC
        elif choice.format == ladder.URF:
            yield urf_file_header(len(jobs))
        pending: collections.deque[asyncio.Task[Any]] = collections.deque()
        next_job = 0
        try:
            while next_job < len(jobs) or pending:
                while next_job < len(jobs) and len(pending) < self.pages_ahead:
                    pending.append(
                        asyncio.create_task(
                            self._run("encode", jobs[next_job]),
                            name=f"render:{next_job + 1}/{len(jobs)}",
                        )
                    )
                    next_job += 1
                    self.in_flight += 1
                task = pending.popleft()
                try:
                    page: bytes = await task
                finally:
                    self.in_flight -= 1
                yield page
        finally:
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)
                self.in_flight -= len(pending)
