"""Rasters we make, printed by real raster-only printers: ippeveprinter (PWG, URF) and LPrint (ZPL label).

Ground truth: the printer's own record (ippeveprinter's prints.log and kept
spool file, decoded again by CUPS's ``ippevepcl``, a real raster consumer),
and for LPrint the bytes a Zebra label printer would have received.
"""

from __future__ import annotations

import io
import os
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from edgeprint import errors
from edgeprint.documents import ladder
from edgeprint.documents.capabilities import parse_capabilities
from edgeprint.documents.decode import decode_pwg, decode_urf
from edgeprint.documents.render import RenderPool
from testbed import pdfs
from testbed.rig import Rig, find_tool
from tests.ipp_helpers import print_job, printer_attributes
from tests.lprint_rig import LPrintRig
from tests.polling import eventually
from tests.rig_fixtures import one_printer
from tests.zpl_decode import graphics


@pytest.fixture
async def pool() -> AsyncIterator[RenderPool]:
    p = RenderPool(workers=1)
    await p.start()
    try:
        yield p
    finally:
        await p.close()


def _ippevepcl(document: Path, content_type: str) -> tuple[int, bytes]:
    """CUPS's PCL print command run on a document: (job-impressions it reports, PCL bytes)."""
    tool = find_tool("ippevepcl")
    assert tool is not None, "ippevepcl (cups-ipp-utils) not found"
    done = subprocess.run(
        [tool, str(document)],
        env={**os.environ, "CONTENT_TYPE": content_type},
        capture_output=True,
        timeout=60,
        check=True,
    )
    said = [
        ln for ln in done.stderr.decode().splitlines() if ln.startswith("ATTR: job-impressions=")
    ]
    return int(said[-1].split("=")[1]), done.stdout


async def _print_on_rig(rig: Rig, pool: RenderPool, tmp_path: Path, fmt: str) -> None:
    printer = rig["printer-01"]
    caps = parse_capabilities(await printer_attributes(printer.uri))
    pdf = tmp_path / "handout.pdf"
    pdf.write_bytes(pdfs.make_a4_pdf(2, size_pt=(612, 792)))  # US letter: what is loaded
    facts = await pool.facts(str(pdf))
    choice = ladder.choose(caps, facts)
    assert choice.format == fmt
    assert choice.resolution is not None
    assert choice.resolution.x_dpi in (300, 600)
    document = b"".join([c async for c in pool.stream(str(pdf), choice, facts)])
    answer = await print_job(printer.uri, document, fmt, job_name="raster-handout")
    assert answer["status-code"] == 0, hex(answer["status-code"])
    rig_printed = rig.printed  # ground truth: the printer's own log of what came out
    await eventually(
        lambda: len(rig_printed("printer-01")) == 1,
        lambda: f"the print; server log:\n{printer.server_log.read_text()[-2000:]}",
    )
    (printed,) = rig_printed("printer-01")
    assert (printed.job_name, printed.pages, printed.bytes) == ("raster-handout", 2, len(document))
    (kept,) = [
        f for f in printer.spool.iterdir() if f.is_file() and f.stat().st_size == len(document)
    ]
    assert kept.read_bytes() == document
    impressions, pcl = _ippevepcl(kept, fmt)
    assert impressions == 2
    assert pcl.count(b"\x1b*r0B\x0c") == 2  # end of raster graphics, form feed: per page


async def test_pwg_raster_prints_on_a_raster_only_ippeveprinter(
    pwg_printer: Rig, pool: RenderPool, tmp_path: Path
) -> None:
    """A 2-page letter PDF, rendered to PWG raster for a printer without PDF, prints once as 2 pages that CUPS's raster reader accepts."""
    await _print_on_rig(pwg_printer, pool, tmp_path, "image/pwg-raster")


async def test_urf_prints_on_an_urf_only_ippeveprinter(
    urf_printer: Rig, pool: RenderPool, tmp_path: Path
) -> None:
    """The same document as Apple raster for an AirPrint-only printer prints once as 2 pages CUPS accepts."""
    await _print_on_rig(urf_printer, pool, tmp_path, "image/urf")


@pytest.mark.parametrize("fmt", ["image/pwg-raster", "image/urf"])
async def test_lprint_prints_one_label(
    lprint: LPrintRig, pool: RenderPool, tmp_path: Path, fmt: str
) -> None:
    """A badge rendered for LPrint's Zebra (PWG raster as the ladder picks, or URF) reaches the label printer as one ZPL label showing the badge."""
    caps = parse_capabilities(
        await printer_attributes(lprint.printer_uri, unix_socket=lprint.socket_path)
    )
    assert "application/pdf" not in caps.formats
    pdf = tmp_path / "badge.pdf"
    pdf.write_bytes(pdfs.make_badge_pdf("Hedy Lamarr"))
    facts = await pool.facts(str(pdf))
    choice = ladder.choose(caps, facts)
    assert (choice.format, choice.color_space, str(choice.resolution)) == (
        "image/pwg-raster",
        "sgray_8",
        "203dpi",
    )
    assert choice.media is not None
    assert choice.media.name == "oe_4x3-label_4x3in"
    if fmt == "image/urf":  # LPrint lists URF too (RS203, W8): the next rung down
        choice = ladder.Choice(fmt, "sgray_8", choice.resolution, choice.media)
    document = b"".join([c async for c in pool.stream(str(pdf), choice, facts)])
    answer = await print_job(lprint.printer_uri, document, fmt, unix_socket=lprint.socket_path)
    assert answer["status-code"] == 0, hex(answer["status-code"])

    (zpl,) = lprint.wait_labels(1)
    assert len(lprint.labels()) == 1  # LPrint answered Print-Job once the job was done
    assert zpl.count(b"^PQ1,") == 1  # one label
    assert zpl.count(b"^XG") == 1  # the graphic is printed once
    (label,) = graphics(zpl).values()
    (page,) = decode_pwg(document) if fmt == "image/pwg-raster" else decode_urf(document)
    assert label.shape[0] == page.height == 609
    ours = page.rows[:, : page.width]
    dots = label[:, : page.width]
    # Where our page is pure black or pure white, the label must agree (LPrint dithers the greys).
    black, white = ours == 0, ours == 255
    assert black.sum() > 1000
    assert dots[black].mean() > 0.99
    assert (~dots[white]).mean() > 0.99
    assert np.any(dots[ours == 77])
    assert not np.all(dots[ours == 77])


@pytest.fixture
def jpeg_printer(tmp_path: Path) -> Iterator[Rig]:
    """An ippeveprinter that takes JPEG only (the last rung of the ladder)."""
    yield from one_printer(tmp_path / "jpeg", "image/jpeg")


async def test_jpeg_prints_one_job_per_page(
    jpeg_printer: Rig, pool: RenderPool, tmp_path: Path
) -> None:
    """A 2-page document for a JPEG-only printer prints as two jobs of one JPEG page each."""
    printer = jpeg_printer["printer-01"]
    caps = parse_capabilities(await printer_attributes(printer.uri))
    pdf = tmp_path / "two.pdf"
    pdf.write_bytes(pdfs.make_a4_pdf(2, size_pt=(612, 792)))
    facts = await pool.facts(str(pdf))
    choice = ladder.choose(caps, facts)
    assert (choice.format, choice.one_page_per_job) == ("image/jpeg", True)
    pages = [c async for c in pool.stream(str(pdf), choice, facts)]
    assert len(pages) == 2
    for i, page in enumerate(pages, start=1):
        answer = await print_job(printer.uri, page, "image/jpeg", job_name=f"handout-p{i}")
        assert answer["status-code"] == 0, hex(answer["status-code"])
        await eventually(  # one job at a time
            lambda n=i: len(jpeg_printer.printed("printer-01")) == n, f"page {i} printed"
        )
    printed = jpeg_printer.printed("printer-01")
    assert [(p.job_name, p.bytes) for p in printed] == [
        ("handout-p1", len(pages[0])),
        ("handout-p2", len(pages[1])),
    ]
    for page in pages:
        with Image.open(io.BytesIO(page)) as img:
            assert (img.format, img.size) == ("JPEG", (2550, 3300))  # letter at 300 dpi


async def test_a4_page_fits_no_loaded_label(
    lprint: LPrintRig, pool: RenderPool, tmp_path: Path
) -> None:
    """An A4 PDF for LPrint with 4x3 in labels loaded is refused before printing: no-media-fits, naming both; nothing reaches the printer."""
    caps = parse_capabilities(
        await printer_attributes(lprint.printer_uri, unix_socket=lprint.socket_path)
    )
    pdf = tmp_path / "a4.pdf"
    pdf.write_bytes(pdfs.make_a4_pdf(1))
    with pytest.raises(errors.DocumentUnprintable) as exc:
        ladder.choose(caps, await pool.facts(str(pdf)))
    assert exc.value.slug == "no-media-fits"
    assert str(exc.value) == (
        "no loaded media fits a 209.9x297.04mm page "
        "(media-ready: oe_4x3-label_4x3in (101.6x76.2mm))"
    )
    assert lprint.labels() == []


@pytest.fixture
def ps_printer(tmp_path: Path) -> Iterator[Rig]:
    """An ippeveprinter that takes PostScript only (nothing edgeprint can produce)."""
    yield from one_printer(tmp_path / "ps", "application/postscript")


async def test_postscript_only_printer_is_refused(
    ps_printer: Rig, pool: RenderPool, tmp_path: Path
) -> None:
    """A real printer that takes only PostScript is refused with what it takes (unsupported-document)."""
    caps = parse_capabilities(await printer_attributes(ps_printer["printer-01"].uri))
    pdf = tmp_path / "badge.pdf"
    pdf.write_bytes(pdfs.make_badge_pdf())
    with pytest.raises(errors.DocumentUnprintable) as exc:
        ladder.choose(caps, await pool.facts(str(pdf)))
    assert exc.value.slug == "unsupported-document"
    assert exc.value.takes == ("application/octet-stream", "application/postscript")
    assert str(exc.value).startswith(
        "the printer takes application/octet-stream, application/postscript; "
        "edgeprint can send application/pdf"
    )
    assert ps_printer.received("printer-01") == 0
