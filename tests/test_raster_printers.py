"""Rasters we make, printed by real raster-only printers: ippeveprinter (PWG, URF) and LPrint (ZPL label).

Ground truth: the printer's own record (ippeveprinter's prints.log and kept
spool file, decoded again by CUPS's ``ippevepcl``, a real raster consumer),
and for LPrint the bytes a Zebra label printer would have received.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from edgeprint.documents import ladder
from edgeprint.documents.capabilities import parse_capabilities
from edgeprint.documents.decode import decode_pwg
from edgeprint.documents.render import RenderPool
from tests import pdfs
from tests.ipp_helpers import print_job, printer_attributes
from tests.lprint_rig import LPrintRig
from tests.rig import Rig, find_tool
from tests.rig_fixtures import in_ci, require_ippeveprinter
from tests.zpl_decode import graphics


@pytest.fixture
async def pool() -> AsyncIterator[RenderPool]:
    p = RenderPool(workers=1)
    await p.start()
    try:
        yield p
    finally:
        await p.close()


def _rig(root: Path, formats: str) -> Iterator[Rig]:
    require_ippeveprinter()
    rig = Rig(root, formats=formats)
    rig.start(1)
    try:
        yield rig
    finally:
        rig.stop()


@pytest.fixture
def pwg_printer(tmp_path: Path) -> Iterator[Rig]:
    """A raster-only ippeveprinter (PWG raster and JPEG)."""
    yield from _rig(tmp_path / "pwg", "image/pwg-raster,image/jpeg")


@pytest.fixture
def urf_printer(tmp_path: Path) -> Iterator[Rig]:
    """An Apple-raster-only ippeveprinter (URF and JPEG)."""
    yield from _rig(tmp_path / "urf", "image/urf,image/jpeg")


@pytest.fixture
def lprint(tmp_path: Path) -> Iterator[LPrintRig]:
    """LPrint with a 4-inch 203 dpi Zebra (ZPL), 4x3 in labels loaded, on a recorded socket."""
    why = LPrintRig.missing()
    if why is not None:
        if in_ci():
            pytest.fail(f"{why}; CI is set, so this is a failure, not a skip", pytrace=False)
        pytest.skip(why)
    rig = LPrintRig(tmp_path / "lprint")
    rig.start()
    try:
        yield rig
    finally:
        rig.stop()


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
    deadline_ok = _wait(lambda: len(rig_printed("printer-01")) == 1)
    assert deadline_ok, f"not printed; server log:\n{printer.server_log.read_text()[-2000:]}"
    (printed,) = rig_printed("printer-01")
    assert (printed.job_name, printed.pages, printed.bytes) == ("raster-handout", 2, len(document))
    (kept,) = [
        f for f in printer.spool.iterdir() if f.is_file() and f.stat().st_size == len(document)
    ]
    assert kept.read_bytes() == document
    impressions, pcl = _ippevepcl(kept, fmt)
    assert impressions == 2
    assert pcl.count(b"\x1b*r0B\x0c") == 2  # end of raster graphics, form feed: per page


def _wait(cond: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Poll ``cond`` until it holds (True) or ``timeout`` passes (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return False


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


async def test_lprint_prints_one_label(lprint: LPrintRig, pool: RenderPool, tmp_path: Path) -> None:
    """A badge rendered for LPrint's Zebra reaches the label printer as one ZPL label showing the badge."""
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
    document = b"".join([c async for c in pool.stream(str(pdf), choice, facts)])
    answer = await print_job(
        lprint.printer_uri, document, "image/pwg-raster", unix_socket=lprint.socket_path
    )
    assert answer["status-code"] == 0, hex(answer["status-code"])

    labels = [zpl for zpl in lprint.wait_received(1) if b"^XA" in zpl]
    assert len(labels) == 1
    zpl = labels[0]
    assert zpl.count(b"^PQ1,") == 1  # one label
    assert zpl.count(b"^XG") == 1  # the graphic is printed once
    (label,) = graphics(zpl).values()
    (page,) = decode_pwg(document)
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
