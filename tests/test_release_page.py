"""The release page (issue 24) in real headless chromium on real printers, at a phone's
(390×844) and a tablet's (1024×768) size: a code typed at a person's pace and Enter lists
the person's HELD jobs, a real mouse click on "Print all" prints them here; a card reader
(a keyboard wedge: its digits at once or 15 ms apart, then Enter) prints everything with no
other input, while a person typing the same number is shown the list.
axe-core finds nothing, and the page never scrolls sideways."""

from __future__ import annotations

import asyncio
import base64
import re
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from edgeprint.api.auth import token_digest
from testbed.rig import Rig
from tests.browser import SCREENS, at_size, axe_violations, fits_screen, js, mouse_click
from tests.cdp import Page, browser
from tests.conftest import KIOSK_TOKEN
from tests.printing import Client, appliance, printed_names, rig_config

ARTIFACTS = Path(__file__).parent.parent / "test-artifacts"
STATIC = Path(__file__).parent.parent / "edgeprint" / "api" / "static"
STATION_TOKEN = "station-token-for-page-tests"
CODE = "48213907"
CARD = "0004127733"


def _page_constant(name: str) -> int:
    """A number the release page's script sets (``var NAME = 30;``)."""
    found = re.search(rf"var {name} = (\d+);", (STATIC / "release.js").read_text())
    assert found is not None, name
    return int(found[1])


#: The page's own threshold: a card reader's keys are at most this far apart on average.
WEDGE_GAP_MS = _page_constant("WEDGE_GAP_MS")
#: Paces of key input (seconds between keys): a reader's burst (back to back), a reader
#: at a realistic pace (well under WEDGE_GAP_MS), a fast typist (twice WEDGE_GAP_MS
#: between keys) and a person at an ordinary pace.
BURST, READER, FAST_PERSON, PERSON = 0.0, 0.015, 2 * WEDGE_GAP_MS / 1000, 0.15


async def _size(page: Page, size: str) -> None:
    await at_size(page, *SCREENS[size])


async def _click(page: Page, selector: str) -> None:
    """A real mouse click (pressed and released) at the middle of the element."""
    x, y = await page.eval(
        f"(function () {{ var e = document.querySelector({js(selector)});"
        " e.scrollIntoView({block: 'center'}); var r = e.getBoundingClientRect();"
        " return [r.left + r.width / 2, r.top + r.height / 2]; })()"
    )
    await page.call("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)
    await mouse_click(page, x, y)


async def _key(page: Page, key: str, text: str, code: str, vk: int) -> None:
    await page.call(
        "Input.dispatchKeyEvent", type="keyDown", key=key, text=text, code=code,
        windowsVirtualKeyCode=vk,
    )  # fmt: skip
    await page.call(
        "Input.dispatchKeyEvent", type="keyUp", key=key, code=code, windowsVirtualKeyCode=vk
    )


def _keys(key: str, text: str, code: str, vk: int) -> list[tuple[str, dict[str, Any]]]:
    down = {"type": "keyDown", "key": key, "text": text, "code": code, "windowsVirtualKeyCode": vk}
    up = {"type": "keyUp", "key": key, "code": code, "windowsVirtualKeyCode": vk}
    return [("Input.dispatchKeyEvent", down), ("Input.dispatchKeyEvent", up)]


async def _type(page: Page, digits: str, gap_s: float) -> None:
    """Key events for each digit into the focused field, then Enter. ``gap_s`` between keys
    is the pace under test: a person's, a reader's, or none: a card reader's burst, sent
    back to back. Keys go out on a fixed schedule (key i at i × ``gap_s``), so the time the
    DevTools round trips take does not add up."""
    if not gap_s:
        burst = [k for d in digits for k in _keys(d, d, f"Digit{d}", ord(d))]
        await page.burst([*burst, *_keys("Enter", "\r", "Enter", 13)])
        return
    loop = asyncio.get_running_loop()
    start = loop.time()
    for i, d in enumerate(digits):
        # the pace is the behaviour the page tells apart, not a wait for something
        await asyncio.sleep(max(0.0, start + i * gap_s - loop.time()))
        await _key(page, d, d, f"Digit{d}", ord(d))
    await _key(page, "Enter", "\r", "Enter", 13)


async def _watch_keys(page: Page) -> None:
    """Record when the page sees each key in the code field (as the page itself does)."""
    await page.eval(
        "window.seenKeys = []; document.getElementById('code').addEventListener('keydown',"
        " function (e) { if (e.key.length === 1) { window.seenKeys.push(performance.now()); }"
        " }); true"
    )


async def _mean_gap_ms(page: Page) -> float:
    """The mean time between the keys the page saw last (what it compares to WEDGE_GAP_MS)."""
    seen: list[float] = await page.eval("window.seenKeys")
    return (seen[-1] - seen[0]) / (len(seen) - 1)


async def _held(kiosk: Client, owner: str, key: str, **meta: Any) -> str:
    job = await kiosk.submit(key, owner=owner, **meta)
    assert job["state"] == "HELD"
    return str(job["id"])


async def _set_credentials(kiosk: Client, owner: str, body: dict[str, str]) -> None:
    headers = {"Authorization": f"Bearer {KIOSK_TOKEN}"}
    async with kiosk.http.put(f"{kiosk.url}/v1/owners/{owner}", json=body, headers=headers) as r:
        assert r.status == 200, await r.text()


def _printed_on(rig: Rig, job_ids: list[str]) -> dict[str, list[str]]:
    names = printed_names(rig)
    return {i: names.get(f"edgeprint-{i}", []) for i in job_ids}


def _config(tmp_path: Path, printers: Rig) -> dict[str, Any]:
    cfg = rig_config(tmp_path / "data", printers)
    cfg["tokens"].append(
        {"name": "station-1", "role": "station", "sha256": token_digest(STATION_TOKEN),
         "printers": ["printer-01"]}
    )  # fmt: skip
    return cfg


@pytest.mark.parametrize("size", ["phone", "tablet"])
async def test_a_typed_code_lists_the_jobs_and_print_all_prints_them_here(
    chromium_path: str, tmp_path: Path, printers: Rig, size: str
) -> None:
    async with appliance(_config(tmp_path, printers)) as (_, kiosk), browser(tmp_path) as page:
        await _set_credentials(kiosk, "ann", {"release_code": CODE})
        titled = await _held(
            kiosk,
            "ann",
            f"page-{size}-0000",
            pool="lobby",
            title="Zoë Ann-Marie Lindqvist-Okonkwo, speaker badge",
        )
        mine = [titled, await _held(kiosk, "ann", f"page-{size}-0001", pool="lobby")]
        other = await _held(kiosk, "carl", f"page-{size}-carl", pool="lobby")
        await _size(page, size)
        await page.goto(f"{kiosk.url}/release/printer-02")
        await page.wait("document.body && document.body.getAttribute('data-state') === 'ready'")
        assert await page.eval("document.activeElement.id") == "code"
        assert await page.eval("document.getElementById('title').textContent") == (
            "Print here: printer-02"
        )
        await _type(page, CODE, PERSON)
        await page.wait("document.body.getAttribute('data-state') === 'listed'")
        items = await page.eval(
            "Array.from(document.querySelectorAll('#jobs li')).map(function (li) {"
            " return [li.dataset.job, li.textContent]; })"
        )
        assert sorted(i[0] for i in items) == sorted(mine)
        for _, text in items:
            assert "1 page · 1 copy · sent " in text
        # the job's title (issue 24); a job without one is named by its id
        titles = await page.eval(
            "Object.fromEntries(Array.from(document.querySelectorAll('#jobs li')).map("
            "function (li) { return [li.dataset.job,"
            " li.querySelector('.job-title').textContent]; }))"
        )
        assert titles == {
            titled: "Zoë Ann-Marie Lindqvist-Okonkwo, speaker badge",
            mine[1]: f"Job {mine[1][:6]}",
        }
        assert await page.eval("document.getElementById('answer').textContent") == (
            "2 jobs waiting for you"
        )
        # each job's first page, drawn by the render workers, shown from a blob: URL
        await page.wait("document.body.getAttribute('data-previews') === '2'")
        shown = await page.eval(
            "Array.from(document.querySelectorAll('#jobs img.preview')).map(function (i) {"
            " return [i.src.slice(0, 5), i.naturalWidth, i.complete]; })"
        )
        assert shown == [["blob:", 300, True], ["blob:", 300, True]]
        await fits_screen(page)
        assert await axe_violations(page) == []
        if size == "phone":
            shot = await page.call("Page.captureScreenshot", format="png")
            # docs/release-page-phone.png is this picture, copied by hand when the page changes
            ARTIFACTS.mkdir(exist_ok=True)
            (ARTIFACTS / "release-page-phone.png").write_bytes(base64.b64decode(shot["data"]))
        await _click(page, "#print-all")
        await page.wait("document.body.getAttribute('data-state') === 'printed'")
        assert await page.eval("document.getElementById('answer').textContent") == (
            "2 jobs sent to printer-02"
        )
        await kiosk.wait_states(mine, {"DONE"})
        assert _printed_on(printers, mine) == {key: ["printer-02"] for key in mine}
        assert (await kiosk.job(other))["state"] == "HELD"
        await fits_screen(page)
        assert await axe_violations(page) == []
        # a shared station: the page forgets the person after a few seconds
        await page.wait(
            "document.body.getAttribute('data-state') === 'ready' && "
            "document.getElementById('code').value === '' && "
            "document.getElementById('mine').hidden",
            timeout_s=15,
        )


@pytest.mark.parametrize("pace", ["burst", "reader"])
@pytest.mark.parametrize("size", ["phone", "tablet"])
async def test_a_card_read_prints_everything_with_no_other_input(
    chromium_path: str, tmp_path: Path, printers: Rig, size: str, pace: str
) -> None:
    """A card reader's keys back to back, or at a reader's realistic pace (15 ms apart,
    under the page's WEDGE_GAP_MS), then Enter: everything of the card's owner prints here."""
    async with appliance(_config(tmp_path, printers)) as (_, kiosk), browser(tmp_path) as page:
        await _set_credentials(kiosk, "bob", {"card": CARD})
        mine = [await _held(kiosk, "bob", f"card-{size}-{i:04d}", pool="lobby") for i in range(3)]
        await _size(page, size)
        # a station at printer-01: its token rides in the fragment and stays off the address
        await page.goto(f"{kiosk.url}/release/printer-01#token={STATION_TOKEN}")
        await page.wait("document.body && document.body.getAttribute('data-state') === 'ready'")
        assert await page.eval("location.hash") == ""
        assert await page.eval("document.body.getAttribute('data-station')") == "1"
        await _watch_keys(page)
        await _type(page, CARD, BURST if pace == "burst" else READER)
        gap = await _mean_gap_ms(page)
        if pace == "reader":  # the pace really was a reader's, as the page saw it
            assert READER * 1000 / 2 <= gap < WEDGE_GAP_MS, f"keys {gap:.1f} ms apart on average"
        await page.wait("document.body.getAttribute('data-state') === 'printed'")
        assert await page.eval("document.getElementById('answer').textContent") == (
            "3 jobs sent to printer-01"
        )
        assert await page.eval("document.getElementById('code').value") == ""
        assert await page.eval("document.activeElement.id") == "code"
        await kiosk.wait_states(mine, {"DONE"})
        assert _printed_on(printers, mine) == {key: ["printer-01"] for key in mine}
        # the same card again: nothing is waiting, said plainly
        await _type(page, CARD, 0)
        await page.wait(
            "document.getElementById('answer').textContent === 'Nothing is waiting for you'"
        )
        await fits_screen(page)
        assert await axe_violations(page) == []


@pytest.mark.parametrize("size", ["phone", "tablet"])
async def test_a_person_typing_a_card_number_is_not_a_card(
    chromium_path: str, tmp_path: Path, printers: Rig, size: str
) -> None:
    """The card's number typed by a person, even a fast typist (keys twice WEDGE_GAP_MS
    apart), then Enter: the page lists the jobs for the person to choose, and prints
    nothing by itself."""
    async with appliance(_config(tmp_path, printers)) as (run, kiosk), browser(tmp_path) as page:
        await _set_credentials(kiosk, "bob", {"card": CARD})
        mine = [await _held(kiosk, "bob", f"slow-{size}-{i:04d}", pool="lobby") for i in range(2)]
        await _size(page, size)
        await page.goto(f"{kiosk.url}/release/printer-01")
        await page.wait("document.body && document.body.getAttribute('data-state') === 'ready'")
        await _watch_keys(page)
        await _type(page, CARD, FAST_PERSON)
        assert await _mean_gap_ms(page) > WEDGE_GAP_MS
        await page.wait("document.body.getAttribute('data-state') === 'listed'")
        assert await page.eval("document.getElementById('answer').textContent") == (
            "2 jobs waiting for you"
        )
        listed = await page.eval(
            "Array.from(document.querySelectorAll('#jobs li')).map(function (li) {"
            " return li.dataset.job; })"
        )
        assert sorted(listed) == sorted(mine)
        for job_id in mine:
            assert (await kiosk.job(job_id))["state"] == "HELD"
            assert [e.to_state for e in await run.service.jobs.events(job_id)] == ["HELD"]
        await fits_screen(page)
        assert await axe_violations(page) == []


@pytest.mark.parametrize("size", ["phone", "tablet"])
async def test_a_wrong_code_and_a_pool_page(
    chromium_path: str, tmp_path: Path, printers: Rig, size: str
) -> None:
    """A wrong code is said in words; a pool's page offers its printers, the least busy
    chosen, and prints one job there with its own button."""
    async with appliance(_config(tmp_path, printers)) as (_, kiosk), browser(tmp_path) as page:
        await _set_credentials(kiosk, "ann", {"release_code": CODE})
        mine = [await _held(kiosk, "ann", f"pool-page-{i:04d}", pool="lobby") for i in range(2)]
        await _size(page, size)
        await page.goto(f"{kiosk.url}/release/lobby")
        await page.wait("document.body && document.body.getAttribute('data-state') === 'ready'")
        await _type(page, "11110000", PERSON)
        await page.wait("document.body.getAttribute('data-state') === 'refused'")
        assert await page.eval("document.getElementById('answer').textContent") == (
            "That code, card or PIN opens nothing here. Check it and try again."
        )
        await page.eval("document.getElementById('code').select()")
        await _type(page, CODE, PERSON)
        await page.wait("document.body.getAttribute('data-state') === 'listed'")
        options = await page.eval(
            "Array.from(document.querySelectorAll('#printer option')).map(function (o) {"
            " return [o.value, o.textContent]; })"
        )
        assert [o[0] for o in options] == ["", "printer-01", "printer-02"]
        chosen = await page.eval("document.getElementById('printer').value")
        assert chosen in ("printer-01", "printer-02")
        assert dict(options)[chosen].startswith(f"{chosen} (least busy)")
        await _click(page, f'li[data-job="{mine[1]}"] button')
        await page.wait("document.body.getAttribute('data-state') === 'printed'")
        assert await page.eval("document.getElementById('answer').textContent") == (
            f"1 job sent to {chosen}"
        )
        await kiosk.wait_states([mine[1]], {"DONE"})
        assert _printed_on(printers, [mine[1]]) == {mine[1]: [chosen]}
        assert (await kiosk.job(mine[0]))["state"] == "HELD"
        await fits_screen(page)
        assert await axe_violations(page) == []
        async with aiohttp.ClientSession() as http, http.get(f"{kiosk.url}/release/nope") as r:
            assert r.status == 404


@pytest.mark.parametrize("size", ["phone", "tablet"])
async def test_a_job_pin_at_the_page(
    chromium_path: str, tmp_path: Path, printers: Rig, size: str
) -> None:
    """ "I have a job PIN" (a real click) shows the job and PIN fields; typed and Enter, the
    page lists that one job, and its Print button prints it here."""
    async with appliance(_config(tmp_path, printers)) as (_, kiosk), browser(tmp_path) as page:
        job = await _held(kiosk, "dora", "pin-page-0001", pool="lobby", release_pin="4711")
        other = await _held(kiosk, "dora", "pin-page-0002", pool="lobby")
        await _size(page, size)
        await page.goto(f"{kiosk.url}/release/printer-01")
        await page.wait("document.body && document.body.getAttribute('data-state') === 'ready'")
        await _click(page, "#pin-toggle")
        assert await page.eval("document.getElementById('pin-fields').hidden") is False
        assert await page.eval("document.activeElement.id") == "job"
        # the short number the pages show, typed as read (any case)
        await page.call("Input.insertText", text=job[:6].upper())
        await _click(page, "#pin")
        await _type(page, "4711", PERSON)
        await page.wait("document.body.getAttribute('data-state') === 'listed'")
        assert await page.eval(
            "Array.from(document.querySelectorAll('#jobs li')).map(function (li) {"
            " return li.dataset.job; })"
        ) == [job]
        await fits_screen(page)
        assert await axe_violations(page) == []
        await _click(page, f'li[data-job="{job}"] button')
        await page.wait("document.body.getAttribute('data-state') === 'printed'")
        assert await page.eval("document.getElementById('answer').textContent") == (
            "1 job sent to printer-01"
        )
        await kiosk.wait_states([job], {"DONE"})
        assert _printed_on(printers, [job]) == {job: ["printer-01"]}
        assert (await kiosk.job(other))["state"] == "HELD"
