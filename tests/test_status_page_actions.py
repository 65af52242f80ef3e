"""The status page acts: each button clicked in real headless chromium, on real printers.

After each click (and its confirmation in the page) the test checks what the page
shows (the API's answer), the store (job states and events) and the printers'
own logs (what came out on paper).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgeprint.service import Caller
from testbed.rig import Rig
from tests.browser import js, open_status_page
from tests.cdp import Page, browser
from tests.conftest import TECH_TOKEN
from tests.printing import Client, appliance, printed_names, rig_config
from tests.test_identify import identify_requests, wait_printed

TECH = Caller("tech-1", "tech")


async def click(page: Page, action: str, target: str, *, confirm: bool = True) -> tuple[str, str]:
    """Click the button, answer the page's question; (question, the answer the page shows)."""
    sel = f'[data-action="{action}"][data-target="{target}"]'
    await page.wait(
        f"!!document.querySelector({js(sel)}) && !document.body.hasAttribute('data-busy')"
    )
    await page.eval(f"document.querySelector({js(sel)}).click()")
    question: str = await page.wait(
        "!document.getElementById('confirm').hidden && "
        "document.getElementById('confirm-text').textContent"
    )
    await page.eval(f"document.getElementById({js('confirm-yes' if confirm else 'confirm-no')})"
                    ".click()")  # fmt: skip
    answer: str = await page.wait(
        "(function () { var a = document.getElementById('answer');"
        " return !document.body.hasAttribute('data-busy') && !a.hidden"
        " && document.getElementById('confirm').hidden && a.textContent; })()"
    )
    return question, answer


async def dead_on(kiosk: Client, run: Any, key: str, reason: str, owner: str) -> str:
    """A job for the paused printer-02, claimed and parked DEAD with ``reason`` (as a worker would)."""
    job = await kiosk.submit(key, printer="printer-02", hold=False, owner=owner)
    claimed = await run.service.worker.claim_next("printer-02")
    assert claimed is not None
    assert claimed.id == job["id"]
    assert await run.service.outcomes.fail(claimed, "printer-02", reason, "set up by the test")
    return str(job["id"])


async def state(run: Any, job_id: str) -> str:
    return str((await run.service.get(job_id)).state.value)


async def paused(kiosk: Client, name: str) -> bool:
    """The printer's paused flag as GET /v1/printers reports it."""
    async with kiosk.http.get(
        f"{kiosk.url}/v1/printers", headers={"Authorization": f"Bearer {TECH_TOKEN}"}
    ) as r:
        printers = (await r.json())["printers"]
    return bool({p["name"]: p["paused"] for p in printers}[name])


async def test_every_action_from_the_page(
    chromium_path: str, tmp_path: Path, printers: Rig
) -> None:
    """Resolve (both ways), retry, cancel, pause, resume, drain, identify, test page, refusals."""
    cfg = rig_config(tmp_path / "data", printers)
    del cfg["printers"][1]["pool"]  # printer-02 alone: paused, its jobs wait for it
    async with appliance(cfg) as (run, kiosk):
        await run.service.printers.set_paused("printer-02", True, TECH)
        printed_one = await dead_on(kiosk, run, "page-key-u1", "outcome_unknown", "ann")
        print_again = await dead_on(kiosk, run, "page-key-u2", "outcome_unknown", "bob")
        poison = await dead_on(kiosk, run, "page-key-p1", "poison", "cy")
        doomed = await dead_on(kiosk, run, "page-key-x1", "attempts_exhausted", "dee")
        held = (await kiosk.submit("page-key-h1", pool="lobby", owner="zed"))["id"]

        async with browser(tmp_path) as page:
            await open_status_page(page, kiosk.url, TECH_TOKEN)

            # counts from /v1/stats, reasons in words, the actions that fit each reason
            assert (
                await page.eval(
                    "document.querySelector('#counts [data-state=\"DEAD\"] b').textContent"
                )
                == "4"
            )
            why = await page.eval(
                f"document.querySelector('li[data-job={js(printed_one)}] .why').textContent"
            )
            assert why.startswith("Unknown outcome: the printer lost track of this job")
            actions = await page.eval(
                "Array.from(document.querySelectorAll('#dead li')).map(function (li) {"
                " return li.getAttribute('data-job') + ':' + Array.from("
                "li.querySelectorAll('button')).map(function (b) {"
                " return b.getAttribute('data-action'); }).join(','); })"
            )
            assert sorted(actions) == sorted([
                f"{printed_one}:resolve-printed,resolve-not-printed,cancel",
                f"{print_again}:resolve-printed,resolve-not-printed,cancel",
                f"{poison}:replay,cancel",
                f"{doomed}:replay,cancel",
            ])  # fmt: skip

            # saying no changes nothing
            question, answer = await click(page, "resolve-printed", printed_one, confirm=False)
            assert "Did job" in question
            assert answer == "It printed: not done (you said no)."
            assert await state(run, printed_one) == "DEAD"

            # "It printed": DONE, recorded with who decided, nothing sent to a printer
            question, answer = await click(page, "resolve-printed", printed_one)
            assert question.startswith(f"Did job {printed_one[:8]} (ann) come out")
            assert answer == f"Job {printed_one[:8]} is now DONE (200 OK)"
            assert await state(run, printed_one) == "DONE"
            events = await run.service.jobs.events(printed_one)
            assert (events[-1].actor, events[-1].to_state) == ("tech-1", "DONE")

            # "Print again" and "Retry": RELEASED, waiting for the paused printer-02
            _, answer = await click(page, "resolve-not-printed", print_again)
            assert answer == f"Job {print_again[:8]} is now RELEASED (200 OK)"
            _, answer = await click(page, "replay", poison)
            assert answer == f"Job {poison[:8]} is now RELEASED (200 OK)"
            # "Cancel" in the dead-letter list
            _, answer = await click(page, "cancel", doomed)
            assert answer == f"Job {doomed[:8]} is now CANCELLED (200 OK)"
            assert await state(run, doomed) == "CANCELLED"

            # "Resume" printer-02: the two released jobs print, once each
            question, answer = await click(page, "resume", "printer-02")
            assert question.startswith("Resume printer-02?")
            assert answer == "printer-02 is taking work (200 OK)"
            await kiosk.wait_states([print_again, poison], {"DONE"})

            # recent jobs: state filter and owner search, then "Cancel" there
            await page.eval(
                "document.getElementById('job-state').value = 'HELD';"
                "document.getElementById('job-owner').value = 'zed';"
                "document.getElementById('filters').requestSubmit()"
            )
            await page.wait(
                "document.body.getAttribute('data-jobs-query') === "
                "'v1/jobs?limit=20&state=HELD&owner=zed'"
            )
            rows = await page.wait(
                "document.body.getAttribute('data-jobs-query').indexOf('zed') > 0 && "
                "Array.from(document.querySelectorAll('#jobs tr[data-job]')).map("
                "function (tr) { return tr.getAttribute('data-job'); })"
            )
            assert rows == [held]
            _, answer = await click(page, "cancel", held)
            assert answer == f"Job {held[:8]} is now CANCELLED (200 OK)"
            assert await state(run, held) == "CANCELLED"

            # printer-01: pause, resume, drain (each stored: the API reads the flag)
            _, answer = await click(page, "pause", "printer-01")
            assert answer == "printer-01 is paused (200 OK)"
            assert await paused(kiosk, "printer-01")
            _, answer = await click(page, "resume", "printer-01")
            assert answer == "printer-01 is taking work (200 OK)"
            assert not await paused(kiosk, "printer-01")
            question, answer = await click(page, "drain", "printer-01")
            assert "other printers of pool lobby" in question
            assert answer == "printer-01 is paused; 0 waiting job(s) moved to its pool (200 OK)"
            assert await paused(kiosk, "printer-01")

            # "Identify": Identify-Printer in printer-01's own log; "Test page": paper
            before = identify_requests(printers, "printer-01")
            _, answer = await click(page, "identify", "printer-01")
            assert answer.startswith("printer-01: Identify-Printer sent")
            assert identify_requests(printers, "printer-01") == before + 1
            _, answer = await click(page, "test-page", "printer-02")
            assert answer.startswith("printer-02: test page sent (printer job ")
            await wait_printed(printers, "printer-02", "test-page-printer-02")

            # the API's refusal is shown as such: the printer is gone
            printers.kill("printer-01")
            _, answer = await click(page, "identify", "printer-01")
            assert answer.startswith("Refused (502 Bad Gateway, printer-error): ")

    # paper: the two jobs sent again came out once each, the resolved one never again
    names = printed_names(printers)
    assert names.get(f"edgeprint-{print_again}") == ["printer-02"]
    assert names.get(f"edgeprint-{poison}") == ["printer-02"]
    assert f"edgeprint-{printed_one}" not in names
    assert f"edgeprint-{doomed}" not in names
