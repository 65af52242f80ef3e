"""The status page at the badge desk (issue 24), in real headless chromium at a phone's and a
tablet's size on real printers, with real input events (mouse presses and typed text, not
``element.click()``): search the job list (by owner, id prefix, Idempotency-Key; a bad
prefix is said, not sent), open a job's story, reprint it with a reason; the
reprint prints once (the printers' logs); axe-core finds nothing; no sideways scroll."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from testbed.rig import Rig
from tests.browser import (
    SCREENS,
    at_size,
    axe_violations,
    enter,
    fits_screen,
    js,
    key,
    open_status_page,
    real_click,
    type_text,
)
from tests.cdp import Page, browser
from tests.conftest import TECH_TOKEN
from tests.polling import eventually
from tests.printing import appliance, printed_names, rig_config
from tests.test_status_page_event import ARTIFACTS


async def _retype(page: Page, selector: str, text: str) -> None:
    """Replace the field's text by ``text`` typed as keyboard input (what was there selected,
    as a person's double click or Ctrl+A does, then typed over)."""
    await real_click(page, selector)
    await page.eval(f"document.querySelector({js(selector)}).select(); true")
    await page.call("Input.insertText", text=text)


async def _query_after_now(page: Page) -> str:
    """The jobs query of a poll that began after this call (the page polls one at a time and
    marks each answered poll's query on the body): the mark is overwritten twice, so the
    second poll started after the first was seen, i.e. after everything typed before."""
    for _ in range(2):
        await page.eval("document.body.setAttribute('data-jobs-query', 'seen'); true")
        query: str = await page.wait(
            "document.body.getAttribute('data-jobs-query') !== 'seen' && "
            "document.body.getAttribute('data-jobs-query')"
        )
    return query


async def _rows(page: Page) -> list[str]:
    """The ids of the rows of the recent jobs list (once the list has rows)."""
    rows: list[str] = await page.wait(
        "(function () { var r = Array.from(document.querySelectorAll('#jobs tr[data-job]'))"
        ".map(function (tr) { return tr.getAttribute('data-job'); });"
        " return r.length ? r : null; })()"
    )
    return rows


@pytest.mark.parametrize("screen", sorted(SCREENS))
async def test_search_story_and_reprint_from_the_page(
    chromium_path: str, tmp_path: Path, printers: Rig, screen: str
) -> None:
    async with appliance(rig_config(tmp_path / "data", printers)) as (run, kiosk):
        badge = await kiosk.submit(
            "desk-badge-0001", pool="lobby", hold=False, owner="Zoë Desk", title="Zoë's badge"
        )
        other = await kiosk.submit("desk-badge-0002", pool="lobby", hold=False, owner="Bob")
        await kiosk.wait_states([badge["id"], other["id"]], {"DONE"})

        async with browser(tmp_path) as page:
            await at_size(page, *SCREENS[screen])
            await open_status_page(page, kiosk.url, TECH_TOKEN)

            # search: owner contains "zoë" (typed, Enter)
            await type_text(page, "#job-search", "zoë")
            await enter(page)
            query = await page.wait(
                "(document.body.getAttribute('data-jobs-query') || '').indexOf('owner_contains')"
                " > 0 && document.body.getAttribute('data-jobs-query')"
            )
            assert query == "v1/jobs?limit=20&owner_contains=zo%C3%AB"
            rows = await page.wait(
                "Array.from(document.querySelectorAll('#jobs tr[data-job]')).map("
                "function (tr) { return tr.getAttribute('data-job'); })"
            )
            assert rows == [badge["id"]]
            cells = await page.eval(
                f"Array.from(document.querySelectorAll('#jobs tr[data-job={js(badge['id'])}] td'))"
                ".map(function (td) { return td.textContent; })"
            )
            assert "Zoë's badge" in cells  # issue 24: the job's title in its own column

            # by id prefix: a bad one is said under the box and not sent (the list shows
            # what it showed without a search); a good one, typed in capitals, is sent
            # lowercased and finds the one job
            await page.eval("document.getElementById('job-search-by').focus(); true")
            await key(page, "ArrowDown", 40)
            assert await page.eval("document.getElementById('job-search-by').value") == (
                "id_prefix"
            )
            await _retype(page, "#job-search", "zz12")
            await enter(page)
            hint = await page.wait(
                "!document.getElementById('search-hint').hidden && "
                "document.getElementById('search-hint').textContent"
            )
            assert hint == ("A job id prefix is 4 to 32 characters from 0-9 and a-f. Not searched.")
            assert await _query_after_now(page) == "v1/jobs?limit=20"
            await _retype(page, "#job-search", other["id"][:6].upper())
            await enter(page)
            await page.wait(
                "document.body.getAttribute('data-jobs-query') === "
                + js(f"v1/jobs?limit=20&id_prefix={other['id'][:6]}")
            )
            assert await page.eval("document.getElementById('search-hint').hidden") is True
            assert await _rows(page) == [other["id"]]

            # by Idempotency-Key: the exact key finds its job
            await page.eval("document.getElementById('job-search-by').focus(); true")
            await key(page, "ArrowDown", 40)
            await _retype(page, "#job-search", "desk-badge-0001")
            await enter(page)
            await page.wait(
                "document.body.getAttribute('data-jobs-query') === "
                "'v1/jobs?limit=20&idempotency_key=desk-badge-0001'"
            )
            assert await _rows(page) == [badge["id"]]

            # open the job's story: in words, with times, its copy on a printer and DONE
            await real_click(page, f'[data-action="open-story"][data-target="{badge["id"]}"]')
            await page.wait(f"document.body.getAttribute('data-story') === {js(badge['id'])}")
            title = await page.eval("document.getElementById('story-title').textContent")
            assert title == f"Job {badge['id'][:8]} (Zoë Desk): DONE"
            shown = await page.eval("document.querySelector('#story .story-job-title').textContent")
            assert shown == "Title: Zoë's badge"
            story = await page.eval(
                "Array.from(document.querySelectorAll('#story ol.story li')).map(function (li) {"
                " return [li.getAttribute('data-kind'), li.querySelector('time').textContent,"
                " li.textContent]; })"
            )
            kinds = [k for k, _, _ in story]
            assert kinds[0] == "state"
            assert "Accepted as RELEASED from kiosk-1" in story[0][2]
            assert "copy-made" in kinds
            assert "copy-settled" in kinds
            assert "→ DONE" in story[-1][2]
            assert all(t for _, t, _ in story)
            # its first page, drawn by the render workers, decoded by the browser at 300 px
            width = await page.wait(
                "(function () { var i = document.querySelector('#story p.preview img');"
                " return i && i.complete && i.naturalWidth; })()"
            )
            assert width == 300
            assert await axe_violations(page) == []
            await fits_screen(page)

            # "Reprint…": the page asks for a reason; an empty one is refused in the page
            await real_click(page, f'[data-action="reprint"][data-target="{badge["id"]}"]')
            await page.wait("!document.getElementById('reprint').hidden")
            question = await page.eval("document.getElementById('reprint-text').textContent")
            assert question.startswith(f"Print job {badge['id'][:8]} (Zoë Desk) again?")
            assert await axe_violations(page) == []
            await real_click(page, "#reprint-yes")
            error = await page.wait(
                "!document.getElementById('reprint-error').hidden && "
                "document.getElementById('reprint-error').textContent"
            )
            assert error.startswith("Say why it is printed again")
            assert (await kiosk.job(badge["id"]))["reprints"] == []

            await type_text(page, "#reprint-reason", "badge lost at the door")
            await real_click(page, "#reprint-yes")
            answer = await page.wait(
                "(function () { var a = document.getElementById('answer');"
                " return !document.body.hasAttribute('data-busy') && !a.hidden"
                " && a.textContent.indexOf('Reprint of') === 0 && a.textContent; })()"
            )
            [new_id] = (await kiosk.job(badge["id"]))["reprints"]
            assert answer.startswith(f"Reprint of job {badge['id'][:8]} made: job {new_id[:8]} is ")
            # the story, read again, lists the reprint and the note who asked and why
            await page.wait(
                '!!document.querySelector(\'#story [data-action="open-story"]'
                f"[data-target={js(new_id)}]')"
            )
            note = await page.eval(
                "document.querySelector('#story ol.story li[data-kind=\"note\"]').textContent"
            )
            assert note.endswith(f"tech-1: reprinted as {new_id}: badge lost at the door")
            await fits_screen(page)
            ARTIFACTS.mkdir(exist_ok=True)
            shot = await page.call("Page.captureScreenshot", format="png")
            (ARTIFACTS / "status-page-story-reprint.png").write_bytes(
                base64.b64decode(shot["data"])
            )

        # the reprint prints once, on paper; the original was not printed again
        await kiosk.wait_states([new_id], {"DONE"})
        expected = {f"edgeprint-{i}" for i in (badge["id"], other["id"], new_id)}

        def logged() -> dict[str, list[str]] | None:
            names = printed_names(printers)
            return names if expected <= set(names) else None

        names = await eventually(logged, "the printers' logs show the reprint")
        assert set(names) == expected
        assert all(len(names[n]) == 1 for n in expected), names
        events = await run.service.jobs.events(new_id)
        assert events[0].actor == "tech-1"
        assert events[0].reason == f"reprint of {badge['id']}: badge lost at the door"
