"""Supplies on the status page, in real headless chromium on real printers (issue 23 part 2).

printer-01 (labels_per_roll = 3) runs low on paper and its roll is counted empty; the page
warns of both, shows its levels and runway, and its "Roll loaded" button starts a full roll.
A screenshot goes to test-artifacts/status-page-supplies.png.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.rig import Rig
from tests.cdp import browser
from tests.conftest import TECH_TOKEN
from tests.polling import eventually
from tests.printing import appliance, rig_config
from tests.test_status_page import ARTIFACTS, require_chromium
from tests.test_status_page_actions import click
from tests.test_supplies import _left_is, _print, _printers, _probed


@pytest.fixture
def chromium_path() -> str:
    """Checked before the printers start: a missing browser skips (or fails in CI) at once."""
    return require_chromium()


def _card_text(name: str) -> str:
    return f"document.querySelector('[data-printer=\"{name}\"]').textContent"


async def test_page_warns_of_low_supplies_and_loads_a_roll(
    chromium_path: str, tmp_path: Path, printers: Rig
) -> None:
    """media-low and an empty-counted roll are warnings on printer-01's card (none on
    printer-02's); the card shows levels and runway; "Roll loaded" makes it full again."""
    cfg = rig_config(tmp_path / "data", printers)
    cfg["printers"][0]["labels_per_roll"] = 3
    for p in printers:
        printers.media(p.name, "loaded")
    async with appliance(cfg) as (_, kiosk):
        await eventually(lambda: _probed(kiosk), "the printers probed")
        await _print(kiosk, "page-job-0001", pages=3)
        printers.media("printer-01", "low")

        async def low() -> bool:
            reasons = (await _printers(kiosk))["printer-01"]["printer_state_reasons"]
            return "media-low-report" in reasons

        await eventually(low, "media-low seen")
        async with browser(tmp_path) as page:
            await page.call("Emulation.setDeviceMetricsOverride", width=1280, height=1100,
                            deviceScaleFactor=1, mobile=False)  # fmt: skip
            await page.goto(f"{kiosk.url}/#token={TECH_TOKEN}")
            await page.wait("document.body && document.body.getAttribute('data-loaded') === '1'")
            warnings = await page.eval(
                "Array.from(document.querySelectorAll('p.warn')).map(function (p) {"
                " return [p.getAttribute('data-warning'), p.textContent]; })"
            )
            assert warnings == [
                ["printer-01", "Paper or labels low (media-low-report)"],
                ["printer-01", "Label roll counted empty: load a new roll"],
            ]
            one = await page.eval(_card_text("printer-01"))
            assert "supplies low" in one
            assert "Toner Waste Tank 25 %, Black Toner 75 %" in one
            assert "main 4 % (na_letter_8.5x11in)" in one
            assert "0 of 3 left; 3 a minute; counted empty" in one
            two = await page.eval(_card_text("printer-02"))
            assert "supplies low" not in two
            assert "Labels" not in two
            assert await page.eval(
                '!document.querySelector(\'[data-action="media-loaded"][data-target="printer-02"]\')'
            )
            ARTIFACTS.mkdir(exist_ok=True)
            shot = await page.call("Page.captureScreenshot", format="png")
            import base64

            (ARTIFACTS / "status-page-supplies.png").write_bytes(base64.b64decode(shot["data"]))

            question, answer = await click(page, "media-loaded", "printer-01")
            assert question == (
                "A new roll of 3 labels is in printer-01? Its count starts again from a full roll."
            )
            assert answer == "printer-01: new roll, 3 labels left (200 OK)"
        assert await _left_is(kiosk, 3)
