"""What a fresh technician met on the status page (issue 25 follow-up), in real headless
chromium at 390x844 on real printers: a printer that cannot report job state offers the Resume
its sentence asks for (clicked, confirmed, and the problem is gone from the API); the health
badge uses the CLI's words; a printer out of paper lists its reasons with the printer's note
labelled as such and its time in the card's one format; the pools are cards whose words never
break; nothing is wider than the screen and axe-core finds nothing."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from testbed.adversary.proxy import AdversaryProxy
from testbed.rig import Rig
from tests.browser import (
    PHONE_HEIGHT,
    PHONE_WIDTH,
    at_size,
    axe_violations,
    broken_words,
    fits_screen,
    js,
    open_status_page,
)
from tests.cdp import browser
from tests.conftest import TECH_TOKEN
from tests.polling import eventually
from tests.test_printer_behaviour import BADGE, proxied, proxy  # noqa: F401 - the fixture
from tests.test_status_page_phone import answer_of_yes, open_dialog, printers_json

CLOCK = r"\d\d:\d\d:\d\d"
#: A pool name as a venue gives it: at 390 px the old pools table broke it ("registratio/n"),
#: and its headers ("Waitin/g", "Oldes/t").
POOL = "registration"


async def test_resume_clears_cannot_report_job_state_and_the_card_reads_right(
    chromium_path: str,
    tmp_path: Path,
    printers: Rig,
    proxy: AdversaryProxy,  # noqa: F811 - the fixture
) -> None:
    async with proxied(tmp_path, printers, proxy, in_hand_timeout_s=1.0, pool=POOL) as (_, kiosk):
        # printer-01 (behind the proxy) cannot report job state: its job is set aside
        proxy.knobs.gja_http, proxy.knobs.jobs_http = 500, 500
        job = await kiosk.submit("words-0001", printer="printer-01", hold=False, doc=BADGE)
        [final] = await kiosk.wait_states([job["id"]], {"DONE", "DEAD"})
        assert (final["state"], final["dead_reason"]) == ("DEAD", "outcome_unknown"), final
        proxy.knobs.gja_http = proxy.knobs.jobs_http = None  # the printer answers again
        # printer-02 out of paper: unhealthy, its printer-state-reasons only a report
        printers.media("printer-02", "empty")

        async def both_troubled() -> dict[str, dict[str, Any]] | None:
            ps = await printers_json(kiosk)
            ok = ps["printer-01"]["problem"] and not ps["printer-02"]["healthy"]
            return ps if ok and ps["printer-02"]["reasons"] else None

        ps = await eventually(both_troubled, "printer-01 and printer-02 troubled", timeout_s=20)
        p1 = ps["printer-01"]
        assert p1["problems"][0]["kind"] == "cannot-report-job-state"
        assert [r["severity"] for r in ps["printer-02"]["reasons"]] == ["report"]

        async with browser(tmp_path) as page:
            await at_size(page, PHONE_WIDTH, PHONE_HEIGHT, True)
            await open_status_page(page, kiosk.url, TECH_TOKEN)
            card1 = '#printers .card[data-printer="printer-01"]'
            card2 = '#printers .card[data-printer="printer-02"]'
            await page.wait(f"!!document.querySelector({js(card1 + ' [data-action=resume]')})")

            # the CLI's word in the badge (edgeprint.cli.render.health: ok, UNHEALTHY, DOWN)
            badges = await page.eval(
                "Array.from(document.querySelectorAll('#printers .card h3 .badge'))"
                ".map(function (b) { return b.textContent; })"
            )
            assert badges == ["UNHEALTHY", "UNHEALTHY"]
            # Resume is offered only where a resume clears the problem
            assert await page.eval(
                f"!document.querySelector({js(card2 + ' [data-action=resume]')})"
            )

            # printer-02's reasons: the printer's note, said as its own, its time HH:MM:SS
            reason = await page.eval(
                f"document.querySelector({js(card2 + ' ul.reasons li')}).textContent"
            )
            assert re.fullmatch(
                rf"Printer's note out of paper or labels \(media-empty-report\), since {CLOCK}",
                reason,
            ), reason
            card_text = await page.eval(f"document.querySelector({js(card2)}).textContent")
            assert not re.search(r"\d+/\d+/\d{4}|[AP]M\b", card_text), card_text

            # the pools: cards at this width, no word broken over two lines
            assert (
                await page.eval(
                    "getComputedStyle(document.querySelector('#pools tr[data-pool=registration]')).display"
                )
                == "flex"
            )
            assert await broken_words(page, "#pools td, #pools th") == []
            await fits_screen(page)
            assert await axe_violations(page) == []

            # Resume, confirmed, with real clicks: the problem ends, the printer takes work
            question = await open_dialog(page, f"{card1} [data-action=resume]")
            assert question == (
                f"Resume printer-01? Only once you have checked what it printed: "
                f"\u201c{p1['problem']}\u201d is cleared and it takes new work again."
            )
            assert await answer_of_yes(page) == "printer-01 is taking work (200 OK)"

            async def cleared() -> dict[str, Any] | None:
                p = (await printers_json(kiosk))["printer-01"]
                return p if p["problem"] is None else None

            p1 = await eventually(cleared, "printer-01's problem cleared", timeout_s=10)
            assert p1["paused"] is False
            assert [(x["kind"], x["until"] is not None) for x in p1["problems"]] == [
                ("cannot-report-job-state", True)
            ]
            await page.wait(f"!document.querySelector({js(card1 + ' [data-action=resume]')})")

            # printer-01 now reports a note, a warning and an error, in that order: blocked, its
            # card lists the blocking one first, then the printer's own warning and note
            proxy.knobs.extra_reasons = (
                "media-low-report",
                "door-open-warning",
                "toner-empty-error",
            )
            reasons = js(card1 + " ul.reasons li")
            shown = await page.wait(
                f"(function () {{ var li = document.querySelectorAll({reasons});"
                " return li.length === 3 && Array.from(li).map(function (x) {"
                " return x.getAttribute('data-severity') + ': ' + x.textContent; }); })()",
                timeout_s=15,
            )
            assert [re.sub(CLOCK, "T", x) for x in shown] == [
                "error: Blocking toner is empty (toner-empty-error), since T",
                "warning: Printer's warning a door is open (door-open-warning), since T",
                "report: Printer's note paper or labels running low (media-low-report), since T",
            ]
        # the set-aside job stays where the technician's judgement is needed
        assert (await kiosk.job(job["id"]))["state"] == "DEAD"
