"""Rendering in worker processes: streamed page by page, bounded, off the event loop, failures typed."""

from __future__ import annotations

import asyncio
import io
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from edgeprint import errors
from edgeprint.documents import ladder, raster
from edgeprint.documents.capabilities import Media, PrinterCapabilities, Resolution
from edgeprint.documents.decode import decode_pwg, decode_urf, gray
from edgeprint.documents.ladder import Choice, DocumentFacts
from edgeprint.documents.render import PageJob, RenderPool
from testbed import pdfs
from tests.polling import eventually
from tests.raster_golden import SHAPES, assert_close

LABEL = Media("oe_4x3-label_4x3in", 10160, 7620)
A4 = Media("iso_a4_210x297mm", 21000, 29700)
LPRINT_LIKE = PrinterCapabilities(
    formats=("image/pwg-raster", "image/urf", "image/jpeg"),
    pwg_raster_resolutions=(Resolution(203, 203),),
    pwg_raster_types=("black_1", "sgray_8"),
    urf=("V1.5", "W8", "RS203"),
    media_ready=(LABEL,),
)


@pytest.fixture
async def pool() -> AsyncIterator[RenderPool]:
    """One warmed render worker."""
    p = RenderPool(workers=1, pages_ahead=2)
    await p.start()
    try:
        yield p
    finally:
        await p.close()


def _write(tmp_path: Path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


async def _all(pool: RenderPool, path: str, choice: Choice, facts: DocumentFacts) -> list[bytes]:
    return [chunk async for chunk in pool.stream(path, choice, facts)]


async def test_badge_streams_as_pwg_raster(pool: RenderPool, tmp_path: Path) -> None:
    """A badge for a LPrint-like printer streams as RaS2 then one page, equal to the worker's pixels."""
    path = _write(tmp_path, "badge.pdf", pdfs.make_badge_pdf())
    facts = await pool.facts(path)
    assert facts == DocumentFacts(((288.0, 216.0),), needs_color=False)
    choice = ladder.choose(LPRINT_LIKE, facts)
    chunks = await _all(pool, path, choice, facts)
    assert chunks[0] == b"RaS2"
    assert len(chunks) == 2
    (page,) = decode_pwg(b"".join(chunks))
    assert (page.width, page.height, page.dpi, page.color_space) == (812, 609, 203, 18)
    assert page.media_name == "oe_4x3-label_4x3in"
    job = PageJob(path, 0, "image/pwg-raster", "sgray_8", 203, (10160, 7620), "", False, 1)
    assert np.array_equal(page.rows, raster.pixels(job))


async def test_urf_stream_counts_its_pages(pool: RenderPool, tmp_path: Path) -> None:
    """A three-page document as URF: the file header's page count matches the pages streamed, in order."""
    path = _write(tmp_path, "a4.pdf", pdfs.make_a4_pdf(3))
    facts = await pool.facts(path)
    choice = Choice("image/urf", "sgray_8", Resolution(75, 75), A4)
    pages = decode_urf(b"".join(await _all(pool, path, choice, facts)))
    assert [p.total_pages for p in pages] == [3, 3, 3]
    solo = [
        raster.pixels(PageJob(path, i, "image/urf", "sgray_8", 75, (21000, 29700), "", False, 3))
        for i in range(3)
    ]
    assert all(np.array_equal(p.rows, s) for p, s in zip(pages, solo, strict=True))


async def test_stream_keeps_few_pages_in_flight(tmp_path: Path) -> None:
    """However slow the consumer, no more than pages_ahead pages are rendered ahead of it."""
    path = _write(tmp_path, "a4.pdf", pdfs.make_a4_pdf(8))
    pool = RenderPool(workers=2, pages_ahead=3)
    try:
        facts = await pool.facts(path)
        choice = Choice("image/pwg-raster", "black_1", Resolution(150, 150), A4)
        seen = []
        async for chunk in pool.stream(path, choice, facts):
            seen.append(pool.in_flight)
            await asyncio.sleep(0.02)  # a slow printer; pages already rendered wait here
            assert len(chunk) > 0
        assert max(seen) <= 3
        assert pool.in_flight == 0
        assert len(seen) == 9  # header + 8 pages
    finally:
        await pool.close()


async def test_a_badge_overtakes_a_long_document(pool: RenderPool, tmp_path: Path) -> None:
    """With one worker busy on a 600 dpi handout, a badge waits for the page being rendered only, not for the handout's queue."""
    handout = _write(tmp_path, "a4.pdf", pdfs.make_a4_pdf(8))
    badge = _write(tmp_path, "badge.pdf", pdfs.make_badge_pdf())
    handout_facts, badge_facts = await pool.facts(handout), await pool.facts(badge)
    big = Choice("image/pwg-raster", "sgray_8", Resolution(600, 600), A4)
    handout_pages = 0
    badge_started = asyncio.Event()

    async def print_handout() -> None:
        nonlocal handout_pages
        async for chunk in pool.stream(handout, big, handout_facts):
            if chunk != b"RaS2":
                handout_pages += 1
                if handout_pages == 1:
                    badge_started.set()  # the badge arrives while the handout streams

    async def print_badge() -> tuple[int, int]:
        await badge_started.wait()
        at_arrival = handout_pages
        choice = ladder.choose(LPRINT_LIKE, badge_facts)
        chunks = [c async for c in pool.stream(badge, choice, badge_facts)]
        assert len(chunks) == 2
        return at_arrival, handout_pages

    handout_task = asyncio.create_task(print_handout())
    at_arrival, at_done = await print_badge()
    await handout_task
    assert handout_pages == 8
    # Without priority the badge would queue behind the handout's pages already asked
    # for (pages_ahead); with it, at most the page being rendered finishes first.
    assert at_done - at_arrival <= 1, (at_arrival, at_done)


async def test_long_documents_leave_a_worker_to_short_ones() -> None:
    """With two workers, pages of long documents hold one at most; a short one gets the other at once, and waiters go shortest first."""
    pool = RenderPool(workers=2)  # no process is started: only its admission is used
    order: list[str] = []
    first_long = pool.slot(pages=10)
    await first_long.__aenter__()

    async def take(name: str, pages: int, hold: asyncio.Event) -> None:
        async with pool.slot(pages):
            order.append(name)
            await hold.wait()

    release_long2, release_badge, release_rest = asyncio.Event(), asyncio.Event(), asyncio.Event()
    long2 = asyncio.create_task(take("long-2", 9, release_long2))
    await asyncio.sleep(0)
    badge = asyncio.create_task(take("badge", 1, release_badge))
    for _ in range(5):
        await asyncio.sleep(0)
    assert order == ["badge"]  # the second long page waits although a worker is free
    two_pages = asyncio.create_task(take("two-pages", 2, release_rest))
    long3 = asyncio.create_task(take("long-3", 8, release_rest))
    release_badge.set()
    await badge
    for _ in range(5):
        await asyncio.sleep(0)
    assert order == ["badge", "two-pages"]  # short first, and long still holds one only
    await first_long.__aexit__(None, None, None)
    for _ in range(5):
        await asyncio.sleep(0)
    assert order == ["badge", "two-pages", "long-3"]  # shortest long document first
    release_long2.set()
    release_rest.set()
    await asyncio.gather(long2, two_pages, long3)
    assert order == ["badge", "two-pages", "long-3", "long-2"]


async def test_leaving_a_stream_early_cancels_the_rest(pool: RenderPool, tmp_path: Path) -> None:
    """A consumer that stops after one page leaves nothing in flight, and the pool renders on."""
    path = _write(tmp_path, "a4.pdf", pdfs.make_a4_pdf(6))
    facts = await pool.facts(path)
    choice = Choice("image/pwg-raster", "sgray_8", Resolution(100, 100), A4)
    stream = pool.stream(path, choice, facts)
    assert await anext(stream) == b"RaS2"
    await anext(stream)
    await stream.aclose()  # type: ignore[attr-defined]
    assert pool.in_flight == 0
    badge = _write(tmp_path, "badge.pdf", pdfs.make_badge_pdf())
    chunks = await _all(
        pool, badge, ladder.choose(LPRINT_LIKE, await pool.facts(badge)), await pool.facts(badge)
    )
    assert len(chunks) == 2


async def test_render_runs_in_another_process(pool: RenderPool, tmp_path: Path) -> None:
    """While a 600 dpi A4 page renders, the event loop keeps running other coroutines."""
    path = _write(tmp_path, "a4.pdf", pdfs.make_a4_pdf(1))
    facts = await pool.facts(path)
    choice = Choice("image/pwg-raster", "sgray_8", Resolution(600, 600), A4)
    ticks = 0
    done = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    before = ticks
    chunks = await _all(pool, path, choice, facts)
    done.set()
    await task
    # Had the page been rendered on the loop, the ticker could not have run meanwhile.
    assert ticks - before > 10
    assert len(chunks) == 2


async def test_a_killed_worker_fails_the_stream_typed(pool: RenderPool, tmp_path: Path) -> None:
    """A render worker killed mid-document fails the stream with RenderFailed; the next document renders."""
    path = _write(tmp_path, "a4.pdf", pdfs.make_a4_pdf(4))
    facts = await pool.facts(path)
    choice = Choice("image/pwg-raster", "sgray_8", Resolution(600, 600), A4)
    (worker,) = await pool.start()
    stream = pool.stream(path, choice, facts)
    assert await anext(stream) == b"RaS2"
    os.kill(worker, signal.SIGKILL)
    with pytest.raises(errors.RenderFailed, match="a render worker died"):
        async for _ in stream:
            pass
    badge = _write(tmp_path, "badge.pdf", pdfs.make_badge_pdf())
    facts = await pool.facts(badge)
    assert len(await _all(pool, badge, ladder.choose(LPRINT_LIKE, facts), facts)) == 2


async def test_a_page_that_takes_too_long_stops_the_workers(tmp_path: Path) -> None:
    """A page slower than call_timeout_s fails typed, its worker is killed, and the pool renders on."""
    path = _write(tmp_path, "a4.pdf", pdfs.make_a4_pdf(2))
    pool = RenderPool(workers=1, call_timeout_s=5)
    try:
        (worker,) = await pool.start()
        facts = await pool.facts(path)
        pool.call_timeout_s = 0.02  # a 600 dpi A4 page takes ~0.3 s: "hangs" for this pool
        choice = Choice("image/pwg-raster", "sgray_8", Resolution(600, 600), A4)
        with pytest.raises(errors.RenderFailed, match=r"encode took longer than 0.02 s"):
            await _all(pool, path, choice, facts)
        # SIGKILL is delivered asynchronously.
        await eventually(lambda: not _alive(worker), f"render worker {worker} to end", timeout_s=5)
        pool.call_timeout_s = 30
        badge = _write(tmp_path, "badge.pdf", pdfs.make_badge_pdf())
        facts = await pool.facts(badge)
        assert len(await _all(pool, badge, ladder.choose(LPRINT_LIKE, facts), facts)) == 2
    finally:
        await pool.close()


def _alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):  # gone before the open, or during the read
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


async def test_unreadable_pdf_is_a_render_failure(pool: RenderPool, tmp_path: Path) -> None:
    """A file PDFium cannot open fails with RenderFailed naming PDFium's error, not a crash."""
    path = _write(tmp_path, "junk.pdf", b"%PDF-1.4\nthis is not a pdf\n")
    with pytest.raises(errors.RenderFailed, match=r"page_sizes failed: PdfiumError"):
        await pool.facts(path)


async def test_facts_color_and_rotation(pool: RenderPool, tmp_path: Path) -> None:
    """A red bar makes a document need colour; grey does not; a /Rotate 90 page reports turned sizes."""
    red = _write(tmp_path, "red.pdf", pdfs.make_badge_pdf(color=True))
    grey = _write(tmp_path, "grey.pdf", pdfs.make_badge_pdf(color=False))
    turned = _write(
        tmp_path, "turned.pdf", pdfs.make_drawn_pdf([pdfs.badge_content("x")], rotate=90)
    )
    assert (await pool.facts(red)).needs_color is True
    assert (await pool.facts(grey)).needs_color is False
    assert (await pool.facts(turned)).page_sizes_pt == ((216.0, 288.0),)


async def test_blank_document_renders_empty(pool: RenderPool, tmp_path: Path) -> None:
    """Pages without a mark are found blank and refused (document-renders-empty); one hairline is a mark."""
    blank = _write(tmp_path, "blank.pdf", pdfs.make_drawn_pdf([b"", b"1 1 1 rg 0 0 288 216 re f"]))
    facts = await pool.facts(blank)
    assert facts.blank
    with pytest.raises(errors.DocumentUnprintable) as exc:
        ladder.choose(LPRINT_LIKE, facts)
    assert (exc.value.slug, str(exc.value)) == (
        "document-renders-empty",
        "all 2 page(s) of the document render blank: nothing would be printed",
    )
    hairline = _write(
        tmp_path, "hair.pdf", pdfs.make_drawn_pdf([b"", b"0.1 w 0 g 10 10 m 50 10 l S"])
    )
    assert not (await pool.facts(hairline)).blank


async def test_portrait_page_is_turned_onto_landscape_label(
    pool: RenderPool, tmp_path: Path
) -> None:
    """A 3x4 in portrait page lands on a 4x3 in label turned 90° counter-clockwise, not shrunk or cropped."""
    portrait = _write(
        tmp_path, "p.pdf", pdfs.make_drawn_pdf([pdfs.badge_content("x", text=False)], rotate=90)
    )
    facts = await pool.facts(portrait)
    choice = ladder.choose(LPRINT_LIKE, facts)
    assert ladder.needs_turn(facts.page_sizes_pt[0], LABEL)
    (page,) = decode_pwg(b"".join(await _all(pool, portrait, choice, facts)))
    assert (page.width, page.height) == (812, 609)
    upright = _write(tmp_path, "u.pdf", pdfs.make_badge_pdf(text=False))
    plain = raster.pixels(
        PageJob(upright, 0, "image/pwg-raster", "sgray_8", 203, (10160, 7620), "", False, 1)
    )
    # /Rotate 90 shows the badge turned clockwise; turning it counter-clockwise restores it
    assert_close(gray(page), plain, SHAPES)


async def test_jpeg_is_one_file_per_page(pool: RenderPool, tmp_path: Path) -> None:
    """For a JPEG-only printer each page streams as a whole JPEG of the media's size."""
    path = _write(
        tmp_path, "two.pdf", pdfs.make_drawn_pdf([pdfs.badge_content("a"), pdfs.badge_content("b")])
    )
    facts = await pool.facts(path)
    choice = ladder.choose(
        PrinterCapabilities(formats=("image/jpeg",), media_ready=(LABEL,)), facts
    )
    chunks = await _all(pool, path, choice, facts)
    assert len(chunks) == 2
    for chunk in chunks:
        with Image.open(io.BytesIO(chunk)) as img:
            assert (img.format, img.size, img.mode) == ("JPEG", (1200, 900), "L")


def test_the_appliance_process_does_not_load_renderers() -> None:
    """Importing the documents package, the render pool and the sticker use case loads
    neither numpy, PDFium nor fpdf2 (stickers are drawn in the workers).

    (Pillow is loaded anyway: pypdf, which checks PDFs at submission, imports it.)
    """
    code = (
        "import sys, edgeprint.documents, edgeprint.documents.render, edgeprint.documents.ladder,"
        " edgeprint.service.stickers, edgeprint.api.stickers;"
        "print(sorted(m for m in ('numpy', 'pypdfium2', 'fpdf') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
