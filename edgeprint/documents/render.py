"""Rendering off the event loop: PDF pages → encoded raster, page by page, in worker processes.

A :class:`RenderPool` is a small ``ProcessPoolExecutor`` (spawn start method:
no copy of the appliance's loop, sockets or threads in the workers). A
CPU-bound render therefore never stalls the API, the watchdog or the other
printers; the appliance process itself never imports numpy, pypdfium2 or
fpdf2 (the workers do, in :mod:`edgeprint.documents.raster` and, for printer
stickers, :mod:`edgeprint.documents.sticker`).

:meth:`RenderPool.stream` is an async iterator of encoded chunks — the file
header, then one page at a time — with at most ``pages_ahead`` pages rendered
ahead of the consumer: a 40-page A4 document at 600 dpi is never held whole,
in the workers or here; a slow printer holds back the rendering.

The workers are shared by every stream, fairly for the short ones: at most
``workers`` pages are handed to the executor at once and the waiting ones go
shortest document first, so a badge waits for at most the pages
being rendered right now, not for a queue of handout pages; with two workers
or more, long documents leave one worker to short ones, and a badge does not
wait at all.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import heapq
import importlib
import itertools
import multiprocessing
from collections.abc import AsyncIterator
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

from edgeprint import errors
from edgeprint.documents import ladder
from edgeprint.documents.ladder import Choice, DocumentFacts

_RASTER = "edgeprint.documents.raster"
#: What a worker runs, by name: ``raster`` functions, or ``module.function`` in documents.
_DOCUMENTS = "edgeprint.documents."
#: A document of more pages than this is "long": with several workers, long documents
#: leave one free for short ones.
SHORT_PAGES = 2
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
    """Run ``raster.<name>(*args)`` — or, for a ``module.function`` name, that function of
    ``edgeprint.documents.<module>`` — in a worker (picklable by reference, stdlib only here)."""
    module, _, function = name.rpartition(".")
    return getattr(importlib.import_module(_DOCUMENTS + module if module else _RASTER), function)(
        *args
    )


def urf_file_header(pages: int) -> bytes:
    """``UNIRAST\\0`` and the page count (as :func:`edgeprint.documents.urf.file_header`)."""
    return b"UNIRAST\0" + pages.to_bytes(4, "big")


class RenderPool:
    """``workers`` render processes; each stream keeps ``pages_ahead`` pages in flight at most.

    A call that takes longer than ``call_timeout_s`` (a hostile PDF can keep PDFium
    busy for ever) fails with errors.RenderFailed and the workers are killed, so the
    pool never stays blocked: the next call starts fresh ones. Workers are told apart
    from other children as the multiprocessing children that appeared after the pool's
    creation (edgeprint starts no other multiprocessing children).
    """

    def __init__(
        self, workers: int = 1, *, pages_ahead: int = 2, call_timeout_s: float = 60.0
    ) -> None:
        if workers < 1 or pages_ahead < 1 or call_timeout_s <= 0:
            raise ValueError("workers and pages_ahead must be >= 1, call_timeout_s > 0")
        self.workers = workers
        self.pages_ahead = pages_ahead
        self.call_timeout_s = call_timeout_s
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None
        self._others: set[int] = set()  # pids of children that are not this pool's workers
        #: Pages submitted to the workers and not yet handed to a consumer (all streams).
        self.in_flight = 0
        #: Pages rendered and encoded since the pool was made (all streams).
        self.pages_rendered = 0
        # Admission: at most `workers` calls reach the executor at once, so its queue never
        # holds a backlog; the others wait here, shortest document first.
        self._free = workers
        self._long_busy = 0
        self._long_max = max(1, workers - 1)
        self._waiting: list[tuple[int, int, asyncio.Future[None]]] = []
        self._arrivals = itertools.count()

    def _executor(self) -> concurrent.futures.ProcessPoolExecutor:
        if self._pool is None:
            self._others = {p.pid for p in multiprocessing.active_children() if p.pid}
            self._pool = concurrent.futures.ProcessPoolExecutor(
                max_workers=self.workers, mp_context=multiprocessing.get_context("spawn")
            )
        return self._pool

    def _kill_workers(self) -> None:
        for proc in multiprocessing.active_children():
            if proc.pid not in self._others:
                proc.kill()
        self._discard()

    def _long(self, priority: int) -> bool:
        return priority > SHORT_PAGES

    async def _acquire(self, priority: int) -> None:
        """Wait for a worker: shortest document first (then FIFO); see _dispatch."""
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiting, (priority, next(self._arrivals), turn))
        self._dispatch()
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self._release(priority)  # the slot was handed over just now: pass it on
            raise

    def _dispatch(self) -> None:
        """Hand free workers to waiters, lowest priority first; with several workers, long
        documents never hold the last one (a badge then never waits for a handout page)."""
        while self._free > 0 and self._waiting:
            priority, _, turn = self._waiting[0]
            if turn.done():  # cancelled while waiting
                heapq.heappop(self._waiting)
                continue
            if self._long(priority) and self._long_busy >= self._long_max:
                return  # the first waiter is long, so all are
            heapq.heappop(self._waiting)
            self._free -= 1
            self._long_busy += self._long(priority)
            turn.set_result(None)

    def _release(self, priority: int) -> None:
        self._free += 1
        self._long_busy -= self._long(priority)
        self._dispatch()

    @contextlib.asynccontextmanager
    async def slot(self, pages: int = 0) -> AsyncIterator[None]:
        """Hold one worker for a page of a document of ``pages`` pages (0: not a page)."""
        await self._acquire(pages)
        try:
            yield
        finally:
            self._release(pages)

    async def _run(self, name: str, *args: Any, priority: int = 0) -> Any:
        async with self.slot(priority):
            return await self._call(name, *args)

    async def _call(self, name: str, *args: Any) -> Any:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.call_timeout_s):
                return await loop.run_in_executor(self._executor(), _call, name, *args)
        except TimeoutError as exc:
            self._kill_workers()
            raise errors.RenderFailed(
                f"{name} took longer than {self.call_timeout_s:g} s; the render workers "
                "were stopped"
            ) from exc
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

    async def preview(self, pdf_path: str, index: int, width: int) -> bytes:
        """Page ``index`` (0-based) as a PNG ``width`` pixels wide (a one-page job's turn:
        a preview waits behind badges no longer than a badge would).

        Raises errors.RenderFailed (also for a page the document does not have).
        """
        png: bytes = await self._run("preview_png", pdf_path, index, width, priority=1)
        return png

    async def sticker(self, name: str, url: str, size_hmm: tuple[int, int]) -> bytes:
        """Printer ``name``'s sticker (QR code of ``url``) as a one-page PDF of ``size_hmm``,
        drawn by fpdf2 in a worker (fpdf2 loads Pillow and numpy; a one-page job's turn).

        Raises errors.RenderFailed (the workers could not draw it now).
        """
        pdf: bytes = await self._run("sticker.sticker_pdf", name, url, size_hmm, priority=1)
        return pdf

    async def page_count(self, pdf_path: str) -> int:
        """How many pages the PDF has, by PDFium."""
        return len(await self._run("page_sizes", pdf_path))

    async def facts(self, pdf_path: str) -> DocumentFacts:
        """Page sizes (points), whether it needs colour and whether it is blank, by PDFium."""
        sizes = await self._run("page_sizes", pdf_path)
        inked, color = await self._run("inks", pdf_path)
        return DocumentFacts(
            tuple((float(w), float(h)) for w, h in sizes), bool(color), blank=not inked
        )

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
                            # Shortest document first: a badge overtakes a handout.
                            self._run("encode", jobs[next_job], priority=len(jobs)),
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
                self.pages_rendered += 1
                yield page
        finally:
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)
                self.in_flight -= len(pending)
