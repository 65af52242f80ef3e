"""The status page on a technician's phone (issue 25), in real headless chromium on real
printers: at 390x844 and at 1280x900, with HELD, DONE and DEAD jobs (rows with buttons) and
one printer switched off, nothing is wider than the screen, the printer that is down is the
first card and on the first screen, job ids are short and on one line, a tap shows the whole
id, axe-core finds nothing. Release of a HELD job with real clicks, on the printer chosen in
the page's dialog, prints it once there (the printers' logs); a release of a job that another
tab already released shows the API's 409 words and changes nothing.

Saves ``test-artifacts/status-page-phone.png`` (390x844, the top), ``status-page-phone-jobs.png``
(its job cards, one id tapped open) and ``status-page-laptop.png`` (1280x900);
``docs/status-page-phone.png`` and ``docs/status-page.png`` are the first and the last,
copied by hand when the page changes.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

import pytest

from edgeprint.service import Caller
from testbed.rig import Rig
from tests.browser import (
    DESKTOP,
    PHONE_HEIGHT,
    PHONE_WIDTH,
    at_size,
    axe_violations,
    fits_screen,
    js,
    key,
    one_line,
    open_status_page,
    real_click,
    type_text,
)
from tests.cdp import Page, browser
from tests.conftest import TECH_TOKEN
from tests.polling import eventually
from tests.printing import Client, appliance, printed_names, rig_config
from tests.test_status_page_actions import dead_on
from tests.test_status_page_event import ARTIFACTS

TECH = Caller("tech-1", "tech")
LONG_OWNER = "Maximilian Alexander Featherstonehaugh-Smythe"
LONG_TITLE = "Zoë Ann-Marie Lindqvist-Okonkwo, speaker badge, day two"


async def printers_json(kiosk: Client) -> dict[str, dict[str, Any]]:
    """GET /v1/printers as the page reads it, by name."""
    headers = {"Authorization": f"Bearer {TECH_TOKEN}"}
    async with kiosk.http.get(f"{kiosk.url}/v1/printers", headers=headers) as r:
        assert r.status == 200
        body = await r.json()
    return {p["name"]: p for p in body["printers"]}


async def open_dialog(page: Page, selector: str) -> str:
    """Tap the button; the question the page asks. The page re-renders every 2 s, so a tap
    that fell between two renders (pressed on one, released on the next) is made again."""
    asked = (
        "!document.getElementById('confirm').hidden && "
        "document.getElementById('confirm-text').textContent"
    )
    for _ in range(3):
        question: str | None = await page.eval(asked)
        if question:  # (a tap that was slow to show its dialog is not made twice)
            return question
        await real_click(page, selector)
        try:
            return str(await page.wait(asked, timeout_s=2.0))
        except (AssertionError, pytest.fail.Exception):  # an error in the page, or no sign
            continue
    raise AssertionError(f"{selector} opened no dialog")


async def answer_of_yes(page: Page) -> str:
    """Yes, clicked; the answer the page shows once the API has answered."""
    await real_click(page, "#confirm-yes")
    answer: str = await page.wait(
        "(function () { var a = document.getElementById('answer');"
        " return !document.body.hasAttribute('data-busy') && !a.hidden"
        " && !/sending/.test(a.textContent) && a.textContent; })()"
    )
    return answer


async def tap_id(page: Page, selector: str) -> None:
    """Tap a <details>' summary (a short job id, "Evidence") until it is open."""
    opened = f"document.querySelector({js(selector)}).open"
    for _ in range(3):
        if await page.eval(opened):  # (a second tap would close it again)
            return
        await real_click(page, f"{selector} summary")
        try:
            await page.wait(opened, timeout_s=2.0)
            return
        except (AssertionError, pytest.fail.Exception):  # an error in the page, or no sign
            continue
    raise AssertionError(f"{selector} would not open")


async def screenshot(page: Page, name: str, top: bool = True) -> None:
    """The screen as it is (scrolled to the top unless told), saved under test-artifacts/."""
    if top:
        await page.eval("window.scrollTo(0, 0); true")
    shot = await page.call("Page.captureScreenshot", format="png")
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / name).write_bytes(base64.b64decode(shot["data"]))


async def answer_in_sight(page: Page) -> None:
    """Scrolled halfway down, the answer of the last action is on the screen, clear of the
    header, nothing over it."""
    seen = await page.eval(
        "(function () { window.scrollTo(0, document.body.scrollHeight / 2);"
        " var r = document.getElementById('answer').getBoundingClientRect();"
        " var at = document.elementFromPoint(r.left + 5, r.top + 5);"
        " var top = document.querySelector('header').getBoundingClientRect();"
        " return [r.top >= 0 && r.bottom <= window.innerHeight &&"
        " (top.bottom <= r.top || top.top >= r.bottom) &&"
        " !!at && document.getElementById('answer').contains(at), r.top, top.bottom]; })()"
    )
    assert seen[0], f"the answer at {seen[1]} px, the header down to {seen[2]} px"


async def check_layout(page: Page, states: dict[str, str]) -> None:
    """At the page's present size: the down printer first and on the first screen, every
    job row shown, short ids on one line, nothing wider than the screen, axe clean."""
    await page.eval("window.scrollTo(0, 0); true")
    first = await page.wait(
        "(function () { var c = document.querySelector('#printers .card');"
        " return c && c.getAttribute('data-printer') === 'printer-02' &&"
        " [c.getAttribute('data-printer'), c.getBoundingClientRect().top + window.scrollY,"
        " window.innerHeight]; })()"
    )
    _, top, height = first
    assert top < height, f"the down printer's card starts at {top} px, below the first screen"
    order = await page.eval(
        "Array.from(document.querySelectorAll('#printers .card')).map(function (c) {"
        " return c.getAttribute('data-printer'); })"
    )
    assert order == ["printer-02", "printer-01"]
    rows = await page.eval(
        "Array.from(document.querySelectorAll('#jobs tr[data-job]')).map(function (tr) {"
        " return tr.getAttribute('data-job') + ':' + tr.getAttribute('data-state'); })"
    )
    assert sorted(rows) == sorted(f"{i}:{s}" for i, s in states.items())
    shorts = await page.eval(
        "Array.from(document.querySelectorAll('#jobs details.jobid .short')).map("
        "function (e) { return e.textContent; })"
    )
    assert sorted(shorts) == sorted(i[:8] for i in states)
    assert set(await one_line(page, "details.jobid .short")) == {1}
    await fits_screen(page)
    assert await axe_violations(page) == []


async def test_phone_layout_release_and_conflict(
    chromium_path: str, tmp_path: Path, printers: Rig
) -> None:
    cfg = rig_config(tmp_path / "data", printers)
    del cfg["printers"][1]["pool"]  # printer-02 alone: paused while its dead letter is made
    async with appliance(cfg) as (run, kiosk):
        await run.service.printers.set_paused("printer-02", True, TECH)
        dead = await dead_on(kiosk, run, "phone-dead-1", "attempts_exhausted", LONG_OWNER)
        await run.service.printers.set_paused("printer-02", False, TECH)
        done = await kiosk.submit("phone-done-1", pool="lobby", hold=False, title=LONG_TITLE)
        held = (await kiosk.submit("phone-held-1", pool="lobby", owner="ann"))["id"]
        raced = (await kiosk.submit("phone-held-2", pool="lobby", owner=LONG_OWNER))["id"]
        await kiosk.wait_states([done["id"]], {"DONE"})
        states = {dead: "DEAD", done["id"]: "DONE", held: "HELD", raced: "HELD"}

        # printer-02 switched off: the API says so before the page is looked at
        printers.kill("printer-02")

        async def down() -> bool:
            return not (await printers_json(kiosk))["printer-02"]["reachable"]

        await eventually(down, "printer-02 shown unreachable", timeout_s=20)

        async with browser(tmp_path) as page:
            await at_size(page, PHONE_WIDTH, PHONE_HEIGHT, True)
            await open_status_page(page, kiosk.url, TECH_TOKEN)
            assert await page.eval("window.innerWidth") == PHONE_WIDTH
            await check_layout(page, states)
            await screenshot(page, "status-page-phone.png")

            # the down printer's problem is said in words when the API has them
            api = (await printers_json(kiosk))["printer-02"]
            card = '#printers .card[data-printer="printer-02"]'
            if "problems" in api:
                now = js(card + ' .problem[data-current="1"] p')
                shown = await page.wait(
                    f"(function () {{ var p = document.querySelector({now});"
                    " return p && p.textContent; })()"
                )
                assert shown == api["problem"]
                # every problem, current and ended, as the API says it; evidence on a tap
                lines = await page.eval(
                    f"Array.from(document.querySelectorAll({js(card + ' .problem')}))"
                    ".map(function (d) { return [d.getAttribute('data-problem'),"
                    " d.getAttribute('data-current'), d.querySelector('p').textContent]; })"
                )
                assert lines == [
                    [x["kind"], "1" if x["until"] is None else "0", x["text"]]
                    for x in api["problems"]
                ]
                evidence = f"{card} .problem details.evidence"
                await tap_id(page, evidence)
                seen = await page.wait(
                    f"(function () {{ var p = document.querySelector({js(evidence + ' p')});"
                    " return p && p.offsetHeight && p.textContent; })()"
                )
                assert seen == api["problems"][0]["evidence"]
                terms = await page.eval(
                    f"Array.from(document.querySelectorAll({js(card + ' dt')}))"
                    ".map(function (d) { return d.textContent; })"
                )
                assert "Last error" not in terms
                # the badge says what the CLI and the RUNBOOK say
                badge = await page.eval(
                    f"document.querySelector({js(card + ' .badge')}).textContent"
                )
                assert badge == "DOWN"
            else:  # an appliance without the words: its health reason, as before
                health = await page.eval(f"document.querySelector({js(card + ' dd')}).textContent")
                assert health.startswith("DOWN (")
                assert api["health_reason"] in health

            # a tap on a short id shows the whole id, on one line, still within the screen
            chip = f'#jobs tr[data-job="{dead}"] details.jobid'
            await tap_id(page, chip)
            full = await page.wait(
                f"(function () {{ var f = document.querySelector({js(chip + ' .full')});"
                " return f && f.offsetHeight && f.textContent; })()"
            )
            assert full == dead
            assert await one_line(page, f"{chip} .full") == [1]
            await fits_screen(page)
            await screenshot(page, "status-page-phone-jobs.png", top=False)

            # Release: the dialog offers its pool, the pools and the printers (down marked)
            question = await open_dialog(
                page, f'#jobs tr[data-job="{held}"] [data-action="release"]'
            )
            assert question == f"Release job {held[:8]} (ann)? It prints once, on:"
            choices = await page.eval(
                "Array.from(document.querySelectorAll('#release-to option')).map("
                "function (o) { return [o.value, o.textContent]; })"
            )
            assert choices == [
                ["pool:lobby", "any printer of its pool (lobby)"],
                ["pool:lobby", "pool lobby"],
                ["printer:printer-01", "printer-01"],
                ["printer:printer-02", "printer-02 (down)"],
            ]
            assert await page.eval("document.getElementById('release-to').value") == "pool:lobby"
            assert await axe_violations(page) == []
            await fits_screen(page)
            # printer-01 chosen with the keyboard (a phone's picker is outside the page)
            await page.eval("document.getElementById('release-to').focus(); true")
            for _ in range(2):
                await key(page, "ArrowDown", 40)
            assert await page.eval("document.getElementById('release-to').selectedIndex") == 2
            answer = await answer_of_yes(page)
            assert answer == f"Job {held[:8]} is now RELEASED, to printer-01 (200 OK)"
            await kiosk.wait_states([held], {"DONE"})

            def on_paper() -> list[str] | None:
                return printed_names(printers).get(f"edgeprint-{held}")

            assert await eventually(on_paper, "the released job on paper") == ["printer-01"]

            # the same release from a second tab first: the page's Yes gets the 409's words
            question = await open_dialog(
                page, f'#jobs tr[data-job="{raced}"] [data-action="release"]'
            )
            assert question.startswith(f"Release job {raced[:8]} ")
            status, _ = await kiosk.post(
                f"/v1/jobs/{raced}/release", {"printer": "printer-01"}, tech=True
            )
            assert status == 200
            await kiosk.wait_states([raced], {"DONE"})
            before = await run.service.jobs.events(raced)
            answer = await answer_of_yes(page)
            status, problem = await kiosk.post(f"/v1/jobs/{raced}/release", None, tech=True)
            assert status == 409
            kind = problem["type"].replace("urn:edgeprint:problem:", "")
            assert answer == f"Refused (409 Conflict, {kind}): {problem['detail']}"
            assert problem["state"] == "DONE"
            assert (await kiosk.job(raced))["state"] == "DONE"
            assert await run.service.jobs.events(raced) == before
            await answer_in_sight(page)
            await fits_screen(page)  # the answer, with the API's words, fits the phone too
            assert await eventually(
                lambda: printed_names(printers).get(f"edgeprint-{raced}"), "the raced job"
            ) == ["printer-01"]

            # the wide screen: the same checks, the table as a table
            await at_size(page, *DESKTOP)
            states[held] = "DONE"
            states[raced] = "DONE"
            await page.wait(
                "Array.from(document.querySelectorAll('#jobs tr[data-job]')).every("
                "function (tr) { return tr.getAttribute('data-state') !== 'HELD'; })"
            )
            assert await page.eval("window.innerWidth") == DESKTOP[0]
            await check_layout(page, states)
            await answer_in_sight(page)
            await screenshot(page, "status-page-laptop.png")

    # paper: each released job once, on printer-01; the DEAD one never printed
    names = printed_names(printers)
    assert names.get(f"edgeprint-{held}") == ["printer-01"]
    assert names.get(f"edgeprint-{raced}") == ["printer-01"]
    assert f"edgeprint-{dead}" not in names


async def test_release_from_a_jobs_story_with_its_pin(
    chromium_path: str, tmp_path: Path, printers: Rig
) -> None:
    """A HELD job with a PIN, released from its story at a phone's width: the dialog asks for
    the PIN; a wrong one is refused with the API's words and leaves the job HELD; the right
    one releases it to the printer chosen, where it prints once."""
    async with appliance(rig_config(tmp_path / "data", printers)) as (_, kiosk):
        held = await kiosk.submit("phone-pin-1", pool="lobby", owner="pat", release_pin="4821")
        job = held["id"]
        async with browser(tmp_path) as page:
            await at_size(page, PHONE_WIDTH, PHONE_HEIGHT, True)
            await open_status_page(page, kiosk.url, TECH_TOKEN)
            await real_click(page, f'[data-action="open-story"][data-target="{job}"]')
            await page.wait(f"document.body.getAttribute('data-story') === {js(job)}")
            question = await open_dialog(
                page, f'#story [data-action="release"][data-target="{job}"]'
            )
            assert question == f"Release job {job[:8]} (pat)? It prints once, on:"
            assert await page.eval("!!document.getElementById('release-pin')")
            assert await axe_violations(page) == []
            await fits_screen(page)
            await type_text(page, "#release-pin", "1111")
            answer = await answer_of_yes(page)
            status, problem = await kiosk.post(f"/v1/jobs/{job}/release", {"pin": "2222"})
            assert status == 403
            kind = problem["type"].replace("urn:edgeprint:problem:", "")
            # the page's try was the first wrong one, the test's the second: one more left then
            found = re.search(r"; (\d+) more wrong", problem["detail"])
            assert found is not None, problem
            n = int(found.group(1))
            left = problem["detail"].replace(f"; {n} more wrong", f"; {n + 1} more wrong")
            assert answer == f"Refused (403 Forbidden, {kind}): {left}"
            assert (await kiosk.job(job))["state"] == "HELD"
            assert f"edgeprint-{job}" not in printed_names(printers)

            await open_dialog(page, f'#story [data-action="release"][data-target="{job}"]')
            assert await page.eval("document.getElementById('release-pin').value") == ""
            await page.eval("document.getElementById('release-to').focus(); true")
            for _ in range(3):  # past its pool, the pool and printer-01
                await key(page, "ArrowDown", 40)
            assert (
                await page.eval("document.getElementById('release-to').value")
                == "printer:printer-02"
            )
            await type_text(page, "#release-pin", "4821")
            answer = await answer_of_yes(page)
            assert answer == f"Job {job[:8]} is now RELEASED, to printer-02 (200 OK)"
            # the story is read again: no Release for a job that is no longer HELD
            await page.wait(
                "document.getElementById('story-title').textContent.indexOf(': HELD') < 0 && "
                f"!document.querySelector({js('#story [data-action=release]')})"
            )
            await kiosk.wait_states([job], {"DONE"})

            def on_paper() -> list[str] | None:
                return printed_names(printers).get(f"edgeprint-{job}")

            assert await eventually(on_paper, "the PIN job on paper") == ["printer-02"]
