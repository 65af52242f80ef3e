"""Printer stickers (issue 24 part 2): the QR code really decodes to the release page's URL.

Each sticker is rendered with PDFium (pypdfium2) at 300 dpi and its QR code read back
with zxing-cpp; the page size is read from the PDF. The API route runs on a real
appliance; ``edgeprint printers sticker --print`` prints once on a real ippeveprinter,
and what that printer received is decoded too; the status page's button downloads it
in headless chromium.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ifaddr
import pypdfium2 as pdfium
import pytest
import zxingcpp

from edgeprint import cli, errors
from edgeprint.documents.sticker import sticker_pdf
from edgeprint.service.stickers import (
    DEFAULT_SIZE_HMM,
    box_address,
    choose_base,
    page_size,
    release_url,
)
from edgeprint.stock import Stock, StockView
from testbed.rig import Rig
from tests.browser import (
    SCREENS,
    at_size,
    axe_violations,
    fits_screen,
    open_status_page,
    real_click,
)
from tests.cdp import browser
from tests.conftest import KIOSK_TOKEN, TECH_TOKEN, Appliance
from tests.polling import eventually
from tests.printing import appliance, rig_config
from tests.test_status_page import require_chromium

PROBLEM = "urn:edgeprint:problem:"
PT_PER_IN = 72


def read_sticker(pdf: bytes) -> tuple[tuple[float, float], list[str]]:
    """(page width, height in points) and the texts of the QR codes PDFium's rendering shows."""
    doc = pdfium.PdfDocument(pdf)
    try:
        assert len(doc) == 1
        page = doc[0]
        size = (round(page.get_width(), 1), round(page.get_height(), 1))
        image = page.render(scale=300 / 72).to_pil()
        page.close()
    finally:
        doc.close()
    return size, [r.text for r in zxingcpp.read_barcodes(image)]


@pytest.mark.parametrize(
    ("size_hmm", "points"),
    [
        ((10160, 7620), (288.0, 216.0)),  # a 4×3 in badge label
        ((10160, 15240), (288.0, 432.0)),  # 4×6 in
        ((10500, 14800), (297.6, 419.5)),  # A6
        ((5080, 2540), (144.0, 72.0)),  # a 2×1 in label: small, still scannable
    ],
)
def test_qr_decodes_to_the_exact_url_on_each_page_size(
    size_hmm: tuple[int, int], points: tuple[float, float]
) -> None:
    url = "http://print.example.org:8631/release/printer-01"
    pdf = sticker_pdf("printer-01", url, size_hmm)
    assert pdf.startswith(b"%PDF-")
    size, codes = read_sticker(pdf)
    assert size == points
    assert codes == [url]


def test_sticker_shows_the_name_and_the_short_url() -> None:
    url = "https://print.example.org/release/lobby-printer-7"
    pdf = sticker_pdf("lobby-printer-7", url, (10160, 7620))
    doc = pdfium.PdfDocument(pdf)
    text = doc[0].get_textpage().get_text_bounded()
    doc.close()
    words = text.replace("\r", "").replace("\n", "")
    assert "lobby-printer-7" in words
    assert "print.example.org/release/lobby-printer-7" in words
    assert "https://" not in words  # the short form is printed; the QR code holds the scheme


def test_page_size_follows_the_printers_stock() -> None:
    label = Stock(short=7620, long=10160, label=True, name="oe_4x3-label_4x3in")
    sheet = Stock(short=21000, long=29700, label=False, name="iso_a4_210x297mm")
    assert page_size(StockView((sheet, label))) == (10160, 7620)  # the label, wider than tall
    assert page_size(StockView((sheet,))) == DEFAULT_SIZE_HMM  # sheets are scaled to
    assert page_size(StockView((sheet,), fit="exact")) == (29700, 21000)
    assert page_size(None) == DEFAULT_SIZE_HMM
    assert page_size(StockView(())) == DEFAULT_SIZE_HMM
    assert release_url("http://a.example:8631/", "p-1") == "http://a.example:8631/release/p-1"


def _expected_from_loopback(url: str, name: str) -> str:
    """The release URL a sticker asked for at a loopback ``url`` carries."""
    box = box_address()
    assert box is not None  # this machine has a LAN address (see the test below)
    port = url.rsplit(":", 1)[1]
    return f"http://{box}:{port}/release/{name}"


LOOPBACK_WORDS = (
    "the sticker would point at 127.0.0.1, which phones cannot reach: "
    "set [release] public_url or pass base"
)


def test_box_address_is_an_interface_address_not_loopback() -> None:
    """Read from the interfaces, not by resolving the host name (127.0.1.1 on many boxes)."""
    box = box_address()
    lan = {
        str(ip.ip)
        for a in ifaddr.get_adapters()
        for ip in a.ips
        if ip.is_IPv4 and not str(ip.ip).startswith(("127.", "169.254."))
    }
    if not lan:  # a machine with loopback only: nothing a phone could reach
        assert box is None
        return
    assert box in lan


def test_choose_base_order_and_loopback_refused() -> None:
    lan = "http://badges.lan:8631"
    lan_ip = lambda: "192.0.2.9"  # noqa: E731 - an interface address
    none = lambda: None  # noqa: E731 - a machine with no address but loopback
    assert choose_base("http://a.lan", "https://b.lan", lan, 8631, lan_ip) == "http://a.lan"
    assert choose_base(None, "https://b.lan", lan, 8631, lan_ip) == "https://b.lan"
    assert choose_base(None, None, lan, 8631, lan_ip) == lan
    # a loopback origin: the interface address and the port the appliance listens on
    assert choose_base(None, None, "http://127.0.0.1:9000", 8631, lan_ip) == "http://192.0.2.9:8631"
    # nothing reachable, or a loopback base given or configured: refused, not printed
    for asked, configured, origin, find in [
        (None, None, "http://127.0.0.1:8631", none),
        (None, None, "http://localhost:8631", none),
        (None, None, "http://[::1]:8631", none),
        ("http://127.0.0.1:8631", None, lan, lan_ip),
        (None, "http://localhost:8631/", lan, lan_ip),
    ]:
        with pytest.raises(errors.StickerBaseLoopback) as caught:
            choose_base(asked, configured, origin, 8631, find)
        assert str(caught.value) == LOOPBACK_WORDS
        assert caught.value.slug == "sticker-base-loopback"


async def _sticker(app: Appliance, name: str, query: str = "", **headers: str) -> Any:
    async with app.http.get(
        f"{app.url}/v1/printers/{name}/sticker.pdf{query}",
        headers=app.headers(TECH_TOKEN, **headers),
    ) as resp:
        return resp.status, resp.headers, await resp.read()


async def test_api_sticker_base_from_query_config_or_the_address_asked(
    make_appliance: Callable[..., Any],
) -> None:
    async with make_appliance() as app:
        status, headers, pdf = await _sticker(app, "printer-03", "?base=http://print.lan:8631/")
        assert status == 200, pdf
        assert headers["Content-Type"] == "application/pdf"
        assert headers["Content-Disposition"] == 'attachment; filename="sticker-printer-03.pdf"'
        size, codes = await asyncio.to_thread(read_sticker, pdf)
        assert codes == ["http://print.lan:8631/release/printer-03"]
        assert size == (4 * PT_PER_IN, 6 * PT_PER_IN)  # stock unknown: 4×6 in

        # no base: the address the caller reached the appliance at (its Host)
        _, _, pdf = await _sticker(app, "printer-01", Host="badges.example.org:8631")
        _, codes = await asyncio.to_thread(read_sticker, pdf)
        assert codes == ["http://badges.example.org:8631/release/printer-01"]

        # a loopback address is not put on a sticker a phone scans
        _, _, pdf = await _sticker(app, "printer-01")
        _, codes = await asyncio.to_thread(read_sticker, pdf)
        assert codes == [_expected_from_loopback(app.url, "printer-01")]

        before = app.snapshot()
        for query, status_, slug in [
            ("?base=ftp://x.example", 422, "invalid-request"),
            ("?base=http://u:p@x.example", 422, "invalid-request"),
            ("?base=http://x.example/?q=1", 422, "invalid-request"),
            ("?size=4", 422, "invalid-request"),
        ]:
            status, _, body = await _sticker(app, "printer-01", query)
            assert status == status_, query
            assert slug in body.decode(), query
        # a loopback base is refused with words saying what to do, not drawn
        status, headers, body = await _sticker(app, "printer-01", "?base=http://127.0.0.1:8631")
        assert status == 422
        assert headers["Content-Type"] == "application/problem+json"
        problem = json.loads(body)
        assert problem["type"] == PROBLEM + "sticker-base-loopback"
        assert problem["detail"] == LOOPBACK_WORDS
        status, _, body = await _sticker(app, "printer-99")
        assert (status, b"printer-not-found" in body) == (404, True)
        async with app.http.get(
            f"{app.url}/v1/printers/printer-01/sticker.pdf", headers=app.headers(KIOSK_TOKEN)
        ) as resp:
            assert resp.status == 403
        assert app.snapshot() == before  # a sticker stores nothing

    public = {"release": {"public_url": "https://print.example.org/"}}
    async with make_appliance(sections=public) as app:
        _, _, pdf = await _sticker(app, "printer-02", Host="badges.example.org:8631")
        _, codes = await asyncio.to_thread(read_sticker, pdf)
        assert codes == ["https://print.example.org/release/printer-02"]


def _spooled_pdfs(rig: Rig, name: str) -> list[bytes]:
    spool = rig.printer(name).spool
    return [f.read_bytes() for f in sorted(spool.iterdir()) if f.read_bytes()[:5] == b"%PDF-"]


async def test_cli_sticker_print_prints_once_on_a_real_printer(
    tmp_path: Path, printers: Rig, capsys: pytest.CaptureFixture[str]
) -> None:
    async with appliance(rig_config(tmp_path / "data", printers)) as (run, kiosk):
        out = tmp_path / "sticker.pdf"
        argv = [
            "printers", "sticker", "printer-02", "--print", "--out", str(out),
            "--base", "http://print.lan:8631", "--url", kiosk.url, "--token", TECH_TOKEN,
        ]  # fmt: skip
        assert await asyncio.to_thread(cli.main, argv) == 0
        said = capsys.readouterr().out
        assert f"sticker for printer-02 written to {out}" in said
        assert "sticker sent to printer-02: job " in said
        _, codes = await asyncio.to_thread(read_sticker, out.read_bytes())
        assert codes == ["http://print.lan:8631/release/printer-02"]

        jobs = await run.service.views.list_jobs(owner="edgeprint-sticker", limit=10)
        assert len(jobs) == 1
        (job,) = jobs
        await eventually(
            lambda: any(
                p.job_name == f"edgeprint-{job.id}" for p in printers.printed("printer-02")
            ),
            "the sticker printed on printer-02",
            timeout_s=20,
        )

        async def done() -> bool:
            return (await run.service.get(job.id)).state.value == "DONE"

        await eventually(done, "the sticker's job DONE", timeout_s=20)
        assert [p.name for p in printers if printers.printed(p.name)] == ["printer-02"]
        assert len(printers.printed("printer-02")) == 1  # once
        # what the printer received is the sticker: its QR code reads back the same
        received = _spooled_pdfs(printers, "printer-02")
        assert len(received) == 1
        _, codes = await asyncio.to_thread(read_sticker, received[0])
        assert codes == ["http://print.lan:8631/release/printer-02"]


async def test_cli_sticker_refuses_a_loopback_base(
    make_appliance: Callable[..., Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async with make_appliance() as app:
        out = tmp_path / "s.pdf"
        argv = [
            "printers", "sticker", "printer-01", "--out", str(out),
            "--base", "http://127.0.0.1:8631", "--url", app.url, "--token", TECH_TOKEN,
        ]  # fmt: skip
        before = app.snapshot()
        assert await asyncio.to_thread(cli.main, argv) == 1
        err = capsys.readouterr().err
        assert LOOPBACK_WORDS in err
        assert "--base http://<box address>:<port>" in err
        assert not out.exists()
        assert app.snapshot() == before


async def test_cli_sticker_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert await asyncio.to_thread(cli.main, ["printers", "sticker"]) == 2
    assert "name the printer" in capsys.readouterr().err
    assert await asyncio.to_thread(cli.main, ["printers", "--print"]) == 2
    assert "go with: edgeprint printers sticker" in capsys.readouterr().err


@pytest.mark.parametrize("screen", sorted(SCREENS))
async def test_status_page_sticker_button_downloads_it(
    tmp_path: Path, make_appliance: Callable[..., Any], screen: str
) -> None:
    """At a phone's and a tablet's size: the button (a real click) downloads the sticker,
    whose QR code decodes; axe-core finds nothing on the page, nothing is wider than it."""
    require_chromium()
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    async with make_appliance() as app, browser(tmp_path) as page:
        await page.call(
            "Browser.setDownloadBehavior", behavior="allow", downloadPath=str(downloads)
        )
        await at_size(page, *SCREENS[screen])
        await open_status_page(page, app.url, TECH_TOKEN)
        # clicked with the mouse in the middle of the viewport, nothing over it
        await real_click(page, '[data-action="sticker"][data-target="printer-01"]')
        answer = await page.wait(
            "(function () { var a = document.getElementById('answer');"
            " return !a.hidden && /downloaded|refused|no answer/.test(a.textContent)"
            " && a.textContent; })()"
        )
        assert answer.startswith("Sticker for printer-01 downloaded: sticker-printer-01.pdf")
        assert await axe_violations(page) == []
        await fits_screen(page)
        target = downloads / "sticker-printer-01.pdf"
        await eventually(lambda: target.is_file(), "the sticker downloaded", timeout_s=20)
        pdf = target.read_bytes()
        with contextlib.suppress(FileNotFoundError):
            (downloads / "sticker-printer-01.pdf.crdownload").unlink()
        _, codes = await asyncio.to_thread(read_sticker, pdf)
        # the page was opened at the appliance's loopback address: the QR code names the
        # box's own address instead (or, on a box with none, the address used)
        assert codes == [_expected_from_loopback(app.url, "printer-01")]


def test_read_sticker_fails_on_a_page_without_a_code() -> None:
    """The decoder is real: a PDF with no QR code reads as none."""
    from testbed.pdfs import make_pdf

    size, codes = read_sticker(make_pdf("no code here"))
    assert codes == []
    assert size == (288.0, 216.0)


async def test_sticker_needs_the_render_workers() -> None:
    """fpdf2 (Pillow, numpy) never runs in the appliance's process: no pool, no sticker."""
    from edgeprint import errors
    from edgeprint.service import stickers

    with pytest.raises(errors.RenderFailed, match="no render workers"):
        await stickers.sticker("printer-01", "http://print.lan:8631", None, None)
    with pytest.raises(errors.InvalidRequest):  # a bad base is told first
        await stickers.sticker("printer-01", "ftp://print.lan", None, None)
