"""Upload from any browser (issue 24 part 4): ``[release] web_upload``, ``GET/POST /upload``.

A person at a phone (headless chromium at 390×844) types a name, picks a PDF and taps
Upload with real input events; the answer page shows a PIN, and releasing the job with
that PIN prints it on a real ippeveprinter. Bad files, floods, double taps, the switch
and the allowed networks are each checked against the stored state.
"""

from __future__ import annotations

import asyncio
import html
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from testbed.pdfs import make_pdf
from testbed.rig import Rig
from tests.browser import SCREENS, at_size, axe_violations, no_sideways_scroll, real_click
from tests.cdp import browser
from tests.conftest import KIOSK_TOKEN, Appliance
from tests.polling import eventually
from tests.printing import appliance, rig_config
from tests.test_release_page import _type
from tests.test_status_page import require_chromium

ON = {"release": {"web_upload": True}}
PROBLEM = "urn:edgeprint:problem:"
_FORM_KEY = re.compile(r'name="form_key" value="([0-9a-f]{32})"')
_PIN = re.compile(r'<p class="pin" id="pin">([0-9]{6})</p>')


async def _form_key(app: Appliance) -> str:
    async with app.http.get(f"{app.url}/upload") as r:
        assert r.status == 200
        found = _FORM_KEY.search(await r.text())
    assert found is not None
    return found.group(1)


async def _post(
    app: Appliance, form_key: str, doc: bytes, *, owner: str = "ann", target: str = "pool:lobby",
    content_type: str = "application/pdf", filename: str = "paper.pdf",
) -> tuple[int, str, Any]:  # fmt: skip
    form = aiohttp.FormData()
    form.add_field("form_key", form_key)
    form.add_field("owner", owner)
    form.add_field("target", target)
    form.add_field("document", doc, content_type=content_type, filename=filename)
    async with app.http.post(f"{app.url}/upload", data=form) as r:
        return r.status, await r.text(), r.headers


def _jobs_and_spool(app: Appliance) -> tuple[Any, Any]:
    snap = app.snapshot()
    return snap["jobs"], snap["spool"]


async def test_off_by_default_404(make_appliance: Callable[..., Any]) -> None:
    async with make_appliance() as app:
        before = app.snapshot()
        async with app.http.get(f"{app.url}/upload") as r:
            assert r.status == 404
            assert (await r.json())["type"] == PROBLEM + "not-found"
        status, _, _ = await _post(app, "0" * 32, make_pdf())
        assert status == 404
        assert app.snapshot() == before


async def test_double_tap_is_one_job_with_one_pin(make_appliance: Callable[..., Any]) -> None:
    async with make_appliance(sections=ON) as app:
        key = await _form_key(app)
        doc = make_pdf("double tap", pages=2)
        (s1, page1, _), (s2, page2, _) = await asyncio.gather(
            _post(app, key, doc), _post(app, key, doc)
        )
        assert sorted((s1, s2)) == [200, 201]
        pins = {m.group(1) for m in (_PIN.search(page1), _PIN.search(page2)) if m}
        assert len(pins) == 1  # both answers show the same PIN
        (pin,) = pins
        jobs = await app.running.service.views.list_jobs(owner="ann", limit=10)
        assert len(jobs) == 1
        (job,) = jobs
        assert (job.state.value, job.pool, job.document_pages) == ("HELD", "lobby", 2)
        assert job.token_name == "web-upload"
        assert job.release_pin_hash is not None
        assert "2 page(s)" in page1
        assert "Release it at the printer: any printer in lobby." in page1
        assert f'<strong id="job-number">{job.id[:6]}</strong>' in page1
        # the link names the job in the fragment (never sent to a server), not the PIN
        assert re.findall(r'id="release-link" href="([^"]*)"', page1) == [
            f"/release/lobby#job={job.id}"
        ]
        # the PIN is needed, and it is this one
        async with app.http.post(
            f"{app.url}/v1/jobs/{job.id}/release", json={"pin": "000000" if pin != "000000"
                                                         else "111111"},
            headers=app.headers(KIOSK_TOKEN),
        ) as r:  # fmt: skip
            assert (r.status, (await r.json())["type"]) == (403, PROBLEM + "pin-mismatch")
        # another file with the same form: refused in words, still one job
        status, page, _ = await _post(app, key, make_pdf("another"))
        assert status == 422
        assert "This form was already used" in page
        assert len(await app.running.service.views.list_jobs(owner="ann", limit=10)) == 1


def _said(page: str) -> str:
    found = re.search(r'<p class="problem" role="alert">([^<]*)</p>', page)
    assert found is not None, page
    return html.unescape(found.group(1))


@pytest.mark.parametrize(
    ("doc", "ctype", "name", "status", "words"),
    [
        (b"just some notes\n", "text/plain", "notes.txt", 415,
         "That file is not a PDF. Save it as PDF and try again."),
        (b"just some notes\n", "application/pdf", "fake.pdf", 415,
         "That file is not a PDF. Save it as PDF and try again."),
        (b"^XA^FDlabel^FS^XZ", "application/vnd.zebra-zpl", "label.zpl", 415,
         "That file is not a PDF. Save it as PDF and try again."),
        (b"%PDF-1.4\ngarbage\n", "application/pdf", "broken.pdf", 422,
         "That PDF could not be read. Save it again and try again."),
    ],
)  # fmt: skip
async def test_bad_file_is_refused_in_words_and_nothing_stored(
    make_appliance: Callable[..., Any], doc: bytes, ctype: str, name: str, status: int, words: str
) -> None:
    async with make_appliance(sections=ON) as app:
        before = _jobs_and_spool(app)
        key = await _form_key(app)
        got, page, headers = await _post(app, key, doc, content_type=ctype, filename=name)
        assert got == status, page
        assert headers["Content-Type"].startswith("text/html")
        assert _said(page) == words
        assert 'name="form_key"' in page
        assert _FORM_KEY.search(page).group(1) != key  # type: ignore[union-attr]
        assert _jobs_and_spool(app) == before
        assert not list((app.data_dir / "spool" / "tmp").iterdir())  # nothing staged left


async def _post_fields(app: Appliance, fields: list[tuple[str, Any, dict[str, str]]]) -> Any:
    form = aiohttp.FormData(default_to_multipart=True)
    for name, value, extra in fields:
        form.add_field(name, value, **extra)
    async with app.http.post(f"{app.url}/upload", data=form) as r:
        return r.status, await r.text()


async def test_bad_name_or_target_is_refused_in_words(make_appliance: Callable[..., Any]) -> None:
    async with make_appliance(sections=ON) as app:
        before = _jobs_and_spool(app)
        cases: list[tuple[dict[str, Any], int, str]] = [
            ({"owner": ""}, 422, "Type your name."),
            ({"owner": "x" * 129}, 422, "Type your name (at most 128 letters)."),
            ({"target": "pool:nope"}, 422,
             "That printer is not here any more. Pick a printer from the list."),
            ({"target": ""}, 422, "Pick a printer."),
            ({"target": "lobby"}, 422, "Pick a printer."),
        ]  # fmt: skip
        for change, status, words in cases:
            got, page, _ = await _post(app, await _form_key(app), make_pdf(), **change)
            assert (got, _said(page)) == (status, words), change
        status, page, _ = await _post(app, "not-a-key", make_pdf())
        assert (status, _said(page)) == (
            400,
            "The form is out of date: reload the page and try again.",
        )
        # no file chosen: a browser sends the part with no file name and nothing in it
        key = await _form_key(app)
        no_file = [
            ("form_key", key, {}),
            ("owner", "ann", {}),
            ("target", "pool:lobby", {}),
            ("document", b"", {"filename": "", "content_type": "application/octet-stream"}),
        ]
        status, page = await _post_fields(app, no_file)
        assert (status, _said(page)) == (422, "Choose a PDF file.")
        status, page = await _post_fields(app, no_file[:3])  # no document part at all
        assert (status, _said(page)) == (422, "Choose a PDF file.")
        for _, page in [await _post_fields(app, no_file)]:
            for technical in ("form.", "Content-Type", "String should", "Error", "target:"):
                assert technical not in page.split("<form")[0], technical
        assert _jobs_and_spool(app) == before


async def test_flood_is_429_with_retry_after(make_appliance: Callable[..., Any]) -> None:
    sections = {"release": {"web_upload": True, "upload_rate_limit": "2/minute"}}
    async with make_appliance(sections=sections) as app:
        for i in range(2):
            status, _, _ = await _post(app, await _form_key(app), make_pdf(f"flood {i}"))
            assert status == 201
        before = app.snapshot()
        status, page, headers = await _post(app, await _form_key(app), make_pdf("flood 3"))
        assert status == 429
        retry = int(headers["Retry-After"])
        assert 1 <= retry <= 60
        assert _said(page) == f"Too many uploads from your address. Try again in {retry} seconds."
        assert app.snapshot() == before


async def test_outside_allowed_networks_is_403(make_appliance: Callable[..., Any]) -> None:
    sections = {**ON, "ipp": {"advertise": False, "allowed_networks": ["10.0.0.0/8"]}}
    async with make_appliance(sections=sections) as app:
        before = app.snapshot()
        async with app.http.get(f"{app.url}/upload") as r:
            assert r.status == 403
            assert _said(await r.text()) == (
                "Uploads are not taken from your network. Ask at the desk."
            )
        status, _, _ = await _post(app, "0" * 32, make_pdf())
        assert status == 403
        assert app.snapshot() == before


@pytest.mark.parametrize("screen", sorted(SCREENS))
async def test_phone_uploads_and_the_pin_releases_it_on_a_real_printer(
    tmp_path: Path, printers: Rig, screen: str
) -> None:
    require_chromium()
    pdf = tmp_path / "homework.pdf"
    pdf.write_bytes(make_pdf("homework", pages=1))
    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"not a pdf\n")
    cfg = {**rig_config(tmp_path / "data", printers), **ON}
    async with appliance(cfg) as (run, kiosk), browser(tmp_path) as page:
        await at_size(page, *SCREENS[screen])
        await page.call("DOM.enable")

        async def fill(file: Path) -> None:
            await page.wait("document.readyState === 'complete' && !!document.getElementById"
                            "('upload')")  # fmt: skip
            await real_click(page, "#owner")
            await page.wait("document.activeElement && document.activeElement.id === 'owner'")
            await page.eval("document.getElementById('owner').value = ''")
            await page.call("Input.insertText", text="Ada Lovelace")
            doc = await page.call("DOM.getDocument")
            node = await page.call(
                "DOM.querySelector", nodeId=doc["root"]["nodeId"], selector="#document"
            )
            await page.call("DOM.setFileInputFiles", files=[str(file)], nodeId=node["nodeId"])

        await page.goto(f"{kiosk.url}/upload")
        await page.wait("document.readyState === 'complete' && !!document.getElementById('upload')")
        assert await axe_violations(page) == []
        await no_sideways_scroll(page)
        assert await page.eval("document.getElementById('target').value") == "pool:lobby"

        # a file that is not a PDF: the page says so, nothing is stored
        await fill(notes)
        await real_click(page, "#send")
        problem = await page.wait(
            "(function () { var p = document.querySelector('.problem');"
            " return p && p.textContent; })()"
        )
        assert problem == "That file is not a PDF. Save it as PDF and try again."
        assert await page.eval("document.getElementById('owner').value") == "Ada Lovelace"
        assert await run.service.views.list_jobs(limit=10) == []
        assert await axe_violations(page) == []
        await no_sideways_scroll(page)

        # the PDF: a PIN
        await fill(pdf)
        await real_click(page, "#send")
        pin = await page.wait(
            "(function () { var p = document.getElementById('pin'); return p && p.textContent; })()"
        )
        assert re.fullmatch(r"[0-9]{6}", pin)
        said = await page.eval("document.querySelector('.done').textContent")
        assert "Release it at the printer" in said
        assert "Ada Lovelace" in said
        assert await axe_violations(page) == []
        await no_sideways_scroll(page)

        (job,) = await run.service.views.list_jobs(owner="Ada Lovelace", limit=10)
        assert job.state.value == "HELD"
        assert await page.eval("document.getElementById('job-number').textContent") == (job.id[:6])
        # the person taps the link: the pool's release page, the job filled in, the PIN
        # field waiting; they type the PIN and Enter, then tap the job's Print button
        await real_click(page, "#release-link")
        await page.wait(
            "location.pathname === '/release/lobby' && document.body &&"
            " document.body.getAttribute('data-state') === 'ready'"
        )
        assert await page.eval("location.hash") == ""  # the job number is off the address
        assert await page.eval("document.getElementById('pin-fields').hidden") is False
        assert await page.eval("document.getElementById('job').value") == job.id
        assert await page.eval("document.activeElement.id") == "pin"
        await _type(page, pin, 0.12)
        await page.wait("document.body.getAttribute('data-state') === 'listed'")
        assert await page.eval(
            "Array.from(document.querySelectorAll('#jobs li')).map(function (li) {"
            " return li.dataset.job; })"
        ) == [job.id]
        assert await axe_violations(page) == []
        await no_sideways_scroll(page)
        await real_click(page, f'li[data-job="{job.id}"] button')
        await page.wait("document.body.getAttribute('data-state') === 'printed'")
        said = await page.eval("document.getElementById('answer').textContent")
        assert said.startswith("1 job sent to "), said
        name = f"edgeprint-{job.id}"
        await eventually(
            lambda: any(p.job_name == name for q in printers for p in printers.printed(q.name)),
            "the uploaded PDF printed",
            timeout_s=20,
        )

        async def done() -> bool:
            return (await run.service.get(job.id)).state.value == "DONE"

        await eventually(done, "the uploaded job DONE", timeout_s=20)
        printed = [p for q in printers for p in printers.printed(q.name) if p.job_name == name]
        assert len(printed) == 1
        assert [e.to_state for e in await run.service.jobs.events(job.id)].count("RELEASED") == 1
