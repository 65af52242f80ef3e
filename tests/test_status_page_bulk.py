"""The status page acts on many jobs at once (issue 24): checkboxes, "Retry all N dead letters
with reason R" and "Cancel all matching", clicked with real mouse events (CDP
Input.dispatchMouseEvent) and typed with real key input at a phone's and a tablet's size, on real
printers. Each confirmation names the count; each answer counts the outcomes; the store and
the printers' own logs agree; axe-core finds nothing; the page never scrolls sideways."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from edgeprint.service import Caller
from testbed.rig import Rig
from tests.browser import (
    SCREENS,
    at_size,
    axe_violations,
    fits_screen,
    js,
    open_status_page,
    real_click,
)
from tests.cdp import Page, browser
from tests.conftest import TECH_TOKEN
from tests.printing import appliance, assert_each_printed_once, rig_config
from tests.test_status_page_actions import dead_on, state

TECH = Caller("tech-1", "tech")


async def tick_box(page: Page, selector: str) -> None:
    """Tick a checkbox with the mouse; the page re-renders every 2 s, so a click that fell
    between two renders (pressed on one, released on the next) is made again."""
    for _ in range(3):
        await real_click(page, selector)
        try:
            await page.wait(f"document.querySelector({js(selector)}).checked", timeout_s=1.0)
            return
        except (AssertionError, pytest.fail.Exception):  # an error in the page, or no sign
            continue
    raise AssertionError(f"{selector} would not tick")


async def confirm_and_answer(page: Page) -> tuple[str, str]:
    """The question the page asks; then Yes (clicked) and the answer it shows."""
    question: str = await page.wait(
        "!document.getElementById('confirm').hidden && "
        "document.getElementById('confirm-text').textContent"
    )
    await real_click(page, "#confirm-yes")
    answer: str = await page.wait(
        "(function () { var a = document.getElementById('answer');"
        " return !document.body.hasAttribute('data-busy') && !a.hidden"
        " && !/sending/.test(a.textContent) && a.textContent; })()"
    )
    return question, answer


@pytest.mark.parametrize("screen", sorted(SCREENS))
async def test_select_cancel_retry_by_reason_and_cancel_matching(
    chromium_path: str, tmp_path: Path, printers: Rig, screen: str
) -> None:
    """Two HELD jobs ticked and cancelled; all three attempts_exhausted dead letters retried
    by reason (printed once each, the poison one left); the owner filter typed and its one
    job cancelled: each confirmation names the count, each answer counts the outcomes."""
    cfg = rig_config(tmp_path / "data", printers)
    del cfg["printers"][1]["pool"]  # printer-02 alone: paused while the dead letters are made
    async with appliance(cfg) as (run, kiosk):
        await run.service.printers.set_paused("printer-02", True, TECH)
        exhausted = [
            await dead_on(kiosk, run, f"page-bulk-x{i}", "attempts_exhausted", "dee")
            for i in range(3)
        ]
        poison = await dead_on(kiosk, run, "page-bulk-p1", "poison", "cy")
        held = [(await kiosk.submit(f"page-bulk-h{i}", pool="lobby", owner="zed"))["id"]
                for i in range(2)]  # fmt: skip
        other = (await kiosk.submit("page-bulk-h9", pool="lobby", owner="yan"))["id"]
        await run.service.printers.set_paused("printer-02", False, TECH)

        async with browser(tmp_path) as page:
            await at_size(page, *SCREENS[screen])
            await open_status_page(page, kiosk.url, TECH_TOKEN)

            # tick two HELD jobs in the recent jobs list: the bar counts them
            for job_id in held:
                await tick_box(page, f'#jobs tr[data-job="{job_id}"] input[data-select]')
            bar = await page.wait(
                "!document.getElementById('bulk-bar').hidden && "
                "document.querySelector('#bulk-bar p').textContent"
            )
            assert bar == "2 jobs selected"
            # no Retry for jobs that are not all dead letters
            assert await page.eval("!document.querySelector('[data-action=\"bulk-replay\"]')")
            assert await axe_violations(page) == []
            await fits_screen(page)

            await real_click(page, '[data-action="bulk-cancel"][data-target="selected"]')
            question, answer = await confirm_and_answer(page)
            assert question == "Cancel 2 selected jobs (zed)? They will not be printed."
            assert answer == "2 cancelled, 0 conflicts (200 OK)"
            assert [await state(run, i) for i in held] == ["CANCELLED", "CANCELLED"]
            assert await state(run, other) == "HELD"
            await page.wait("document.getElementById('bulk-bar').hidden")

            # retry every dead letter of one reason
            retry = '[data-action="replay-reason"][data-target="attempts_exhausted"]'
            label = await page.wait(f"document.querySelector({js(retry)})"
                                    f" && document.querySelector({js(retry)}).textContent")  # fmt: skip
            assert label == "Retry all 3 dead letters with reason attempts_exhausted"
            await real_click(page, retry)
            question, answer = await confirm_and_answer(page)
            assert question == (
                "Send all 3 dead letters with reason attempts_exhausted back to their printers "
                "to try again? Each is printed once more."
            )
            assert answer == "3 replayed, 0 conflicts (200 OK)"
            await kiosk.wait_states(exhausted, {"DONE"}, timeout_s=30)
            assert await state(run, poison) == "DEAD"

            # the jobs list's filter: type an owner, show, cancel all matching
            await real_click(page, "#job-owner")
            await page.wait("document.activeElement === document.getElementById('job-owner')")
            await page.call("Input.insertText", text="yan")
            await real_click(page, '#filters button[type="submit"]')
            await page.wait(
                "document.body.getAttribute('data-jobs-query').indexOf('owner=yan') > 0"
                " && !document.getElementById('filter-cancel').hidden"
            )
            await real_click(page, "#filter-cancel")
            question, answer = await confirm_and_answer(page)
            assert question == "Cancel all 1 job matching owner yan? They will not be printed."
            assert answer == "1 cancelled, 0 conflicts (200 OK)"
            assert await state(run, other) == "CANCELLED"
            assert await axe_violations(page) == []
            await fits_screen(page)
    assert_each_printed_once(printers, exhausted)


@pytest.mark.parametrize("screen", sorted(SCREENS))
async def test_saying_no_to_a_bulk_action_changes_nothing(
    chromium_path: str, tmp_path: Path, printers: Rig, screen: str
) -> None:
    """Ticking a dead letter offers Retry and Cancel; "Cancel" in the dialog does nothing."""
    cfg = rig_config(tmp_path / "data", printers)
    del cfg["printers"][1]["pool"]
    async with appliance(cfg) as (run, kiosk):
        await run.service.printers.set_paused("printer-02", True, TECH)
        dead = await dead_on(kiosk, run, "page-bulk-no1", "poison", "ann")
        async with browser(tmp_path) as page:
            await at_size(page, *SCREENS[screen])
            await open_status_page(page, kiosk.url, TECH_TOKEN)
            await tick_box(page, f'#dead li[data-job="{dead}"] input[data-select]')
            # the same job in the jobs list shows the same choice
            await page.wait(
                f"document.querySelector('#jobs tr[data-job=\"{dead}\"] input[data-select]')"
                ".checked"
            )
            actions: Any = await page.eval(
                "Array.from(document.querySelectorAll('#bulk-bar button')).map(function (b) {"
                " return b.getAttribute('data-action'); })"
            )
            assert actions == ["bulk-cancel", "bulk-replay", "bulk-clear"]
            await real_click(page, '[data-action="bulk-replay"]')
            await page.wait("!document.getElementById('confirm').hidden")
            await real_click(page, "#confirm-no")
            answer = await page.wait(
                "!document.getElementById('answer').hidden && "
                "document.getElementById('answer').textContent"
            )
            assert answer == "Retry 1 job: not done (you said no)."
            assert await state(run, dead) == "DEAD"
            assert [e.to_state for e in await run.service.jobs.events(dead)][-1] == "DEAD"
            assert await axe_violations(page) == []
            await fits_screen(page)
            await real_click(page, '[data-action="bulk-clear"]')
            await page.wait("document.getElementById('bulk-bar').hidden")
