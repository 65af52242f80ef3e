"""The status page's event and preflight buttons (issue 23), clicked in real headless chromium
at a phone's width, on real printers: rehearsal, go-live, preflight; axe finds nothing and
the page never scrolls sideways."""

from __future__ import annotations

from pathlib import Path

from testbed.rig import Rig
from tests.browser import at_size, axe_violations, fits_screen, open_status_page
from tests.cdp import browser
from tests.conftest import TECH_TOKEN
from tests.printing import appliance, rig_config
from tests.test_status_page_actions import click

ARTIFACTS = Path(__file__).parent.parent / "test-artifacts"


async def test_rehearsal_go_live_and_preflight_from_the_page(
    chromium_path: str, tmp_path: Path, printers: Rig
) -> None:
    """Start rehearsal, go live (a waiting test job cancelled) and run preflight by clicking,
    at 390 px; the page shows each answer, axe-core reports no violation, no sideways scroll."""
    cfg = rig_config(tmp_path / "data", printers)
    cfg["printers"].append({"name": "printer-09", "uri": "ipp://127.0.0.1:9/ipp/print"})
    cfg["event"] = {"badge_media": "na_letter_8.5x11in"}
    async with appliance(cfg) as (run, kiosk), browser(tmp_path) as page:
        await at_size(page)
        await open_status_page(page, kiosk.url, TECH_TOKEN)
        assert await page.eval("document.querySelector('#event .event').dataset.mode") == "live"

        question, answer = await click(page, "rehearsal", "event")
        assert question.startswith("Start a rehearsal? Every new job is a test")
        assert answer == "Rehearsal started: new jobs are tests until go-live (200 OK)"
        assert (await run.service.event.current()).mode == "rehearsal"
        test_job = await kiosk.submit("page-reh-0001", pool="lobby")  # held: it waits
        await page.wait(
            "document.querySelector('#event .event').dataset.mode === 'rehearsal' && "
            "document.querySelector('#event').textContent.indexOf('(1 test job(s) so far)') >= 0"
        )

        question, answer = await click(page, "go-live", "event")
        assert question == (
            "Go live? The rehearsal ends; its 1 test job(s) still waiting (held, released or "
            "dead) are cancelled, and the live figures start now."
        )
        assert answer == "Live: the rehearsal is over; 1 rehearsal job(s) cancelled (200 OK)"
        assert (await kiosk.job(test_job["id"]))["state"] == "CANCELLED"
        await page.wait("document.querySelector('#event .event').dataset.mode === 'live'")

        await page.wait(  # printer-09 probed and shown down: the preflight asks it first
            "document.querySelector('#printers .card').dataset.printer === 'printer-09'"
        )
        await page.eval("document.getElementById('preflight-run').click()")
        await page.wait("document.body.getAttribute('data-preflight') === 'done'")
        verdicts = await page.eval(
            "Array.from(document.querySelectorAll('#preflight li')).map(function (li) {"
            " return [li.dataset.printer, li.dataset.verdict, li.textContent]; })"
        )
        # the printer that is down comes first, as its card does (issue 25)
        assert [v[:2] for v in verdicts] == [
            ["printer-09", "fail"],
            ["printer-01", "ok"],
            ["printer-02", "ok"],
        ]
        for _, _, text in verdicts[1:]:
            assert text.startswith(f"{text.split(':')[0]}: ready: answers in ")
            assert "idle; stock ready: na_letter_8.5x11in (215.9x279.4mm)" in text
        assert verdicts[0][2].startswith(
            "printer-09: would fail the morning: does not answer: Get-Printer-Attributes: "
            "cannot connect"
        )
        assert await page.eval("document.getElementById('answer').textContent") == (
            "Preflight: 2 of 3 printer(s) ready; 1 would fail the morning"
        )
        await fits_screen(page)
        assert await axe_violations(page) == []
        ARTIFACTS.mkdir(exist_ok=True)
        shot = await page.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        (ARTIFACTS / "status-page-preflight.png").write_bytes(
            __import__("base64").b64decode(shot["data"])
        )
