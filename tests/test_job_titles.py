"""A job's title (issue 24): given with the submission, else the PDF's /Title, an IPP
job-name or an uploaded file's name; shown by GET /v1/jobs/{id} and the release look-up,
stored on both backends, kept by a reprint. Bad titles are refused with nothing stored.

Over real HTTP and IPP against a real appliance (SQLite file); the store on SQLite and
PostgreSQL.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from typing import Any

import aiohttp
import pypdf
import pytest

from edgeprint.documents import inspect_pdf
from edgeprint.ipp.names import GroupTag, Operation, Status, Tag
from edgeprint.ipp.values import attr
from edgeprint.states import JobState
from edgeprint.store.interface import Store
from edgeprint.store.job_rows import NewJob
from edgeprint.store.jobs import Jobs
from edgeprint.store.reprints import NewReprint, Reprints
from edgeprint.titles import MAX_TITLE_CHARS, clean_title, file_title
from testbed.pdfs import make_pdf
from tests.conftest import Appliance
from tests.ipp_client import IppQueue, status_message
from tests.test_ipp_server import edgeprint_id, job_id

PROBLEM = "urn:edgeprint:problem:"
CODE = "48213907"
HOLD = [attr("job-hold-until", Tag.KEYWORD, "indefinite")]


def titled_pdf(title: Any, text: str = "titled") -> bytes:
    """A one-page PDF whose document information dictionary has ``/Title`` ``title``."""
    writer = pypdf.PdfWriter(clone_from=io.BytesIO(make_pdf(text)))
    writer.add_metadata({"/Title": title})
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


# --- pure: cleaning the titles clients send without asking -----------------------------


@pytest.mark.parametrize(
    ("value", "title"),
    [
        ("Ann Lee", "Ann Lee"),
        ("  Ann\tLee\r\n badge \x00\x1b[31m ", "Ann Lee badge [31m"),
        ("line\u2028break\u0085", "line break"),
        ("x" * 500, "x" * MAX_TITLE_CHARS),
        ("\n\t \x07", None),
        ("", None),
        (42, None),
        (None, None),
    ],
)
def test_clean_title(value: object, title: str | None) -> None:
    assert clean_title(value) == title


def test_file_title_drops_the_folders_a_browser_sent() -> None:
    assert file_title("C:\\Users\\ann\\Desktop\\badge 2.pdf") == "badge 2.pdf"
    assert file_title("/home/ann/badge.pdf") == "badge.pdf"
    assert file_title("the %22best%22%0Abadge.pdf") == 'the "best" badge.pdf'
    assert file_title("") is None
    assert file_title(None) is None


def test_a_pdf_title_is_read_with_the_pages() -> None:
    facts = inspect_pdf(io.BytesIO(titled_pdf("Grace Hopper\n— keynote")), 100)
    assert (facts.pages, facts.title) == (1, "Grace Hopper — keynote")
    assert inspect_pdf(io.BytesIO(make_pdf()), 100).title is None
    assert inspect_pdf(io.BytesIO(titled_pdf("   ")), 100).title is None
    # a /Title that is not a text string is no title, never a refusal
    for info in (b"<< /Title 7 >>", b"<< /Title [(a) (b)] >>", b"(not a dictionary)"):
        odd = make_pdf().replace(b"/Root 1 0 R >>", b"/Root 1 0 R /Info " + info + b" >>")
        assert inspect_pdf(io.BytesIO(odd), 100).title is None


# --- over HTTP: submission, GET /v1/jobs/{id}, the release look-up -----------------------


async def _lookup(app: Appliance, name: str = "printer-03") -> dict[str, str]:
    """The owner ann's HELD jobs at the release page of ``name``: id → the title shown."""
    resp = await app.http.post(f"{app.url}/release/{name}/lookup", json={"code": CODE})
    body = await resp.json()
    assert resp.status == 200, body
    return {j["id"]: j["title"] for j in body["jobs"]}


async def _set_code(app: Appliance) -> None:
    resp = await app.http.put(
        f"{app.url}/v1/owners/ann", json={"release_code": CODE}, headers=app.headers()
    )
    assert resp.status == 200, await resp.text()


async def _job(app: Appliance, job: str) -> dict[str, Any]:
    resp = await app.http.get(f"{app.url}/v1/jobs/{job}", headers=app.headers())
    assert resp.status == 200
    body: dict[str, Any] = await resp.json()
    return body


async def test_a_given_title_else_the_pdf_title_else_none(
    make_appliance: Callable[..., Any],
) -> None:
    async with make_appliance() as app:
        await _set_code(app)
        meta = {"owner": "ann", "printer": "printer-03"}
        given = await app.submit(
            {**meta, "title": "Zoë Lindqvist — speaker"}, titled_pdf("from the PDF"), "key-given1"
        )
        assert given.status == 201, await given.text()
        from_pdf = await app.submit(meta, titled_pdf("Grace Hopper badge"), "key-frompdf")
        untitled = await app.submit(meta, make_pdf("no title"), "key-untitled")
        ids = [(await r.json())["id"] for r in (given, from_pdf, untitled)]
        assert [(await r.json())["title"] for r in (given, from_pdf, untitled)] == [
            "Zoë Lindqvist — speaker", "Grace Hopper badge", None,
        ]  # fmt: skip
        assert [(await _job(app, i))["title"] for i in ids] == [
            "Zoë Lindqvist — speaker", "Grace Hopper badge", None,
        ]  # fmt: skip
        assert await _lookup(app) == {
            ids[0]: "Zoë Lindqvist — speaker",
            ids[1]: "Grace Hopper badge",
            ids[2]: f"Job {ids[2][:6]}",
        }
        # the title is part of the request: the same key with another title is refused
        again = await app.submit({**meta, "title": "Someone else"}, make_pdf(), "key-given1")
        problem = await again.json()
        assert (again.status, problem["type"]) == (422, PROBLEM + "idempotency-key-reused")


@pytest.mark.parametrize(
    ("title", "why"),
    [
        ("x" * (MAX_TITLE_CHARS + 1), "too long"),
        ("Ann\nLee", "a newline"),
        ("bell\x07", "a control character"),
        ("\x85next line", "a C1 control"),
        ("   ", "blank"),
        ("", "empty"),
        (42, "not a string"),
        (["Ann"], "a list"),
    ],
)
async def test_a_bad_title_is_refused_and_nothing_is_stored(
    make_appliance: Callable[..., Any], title: Any, why: str
) -> None:
    async with make_appliance() as app:
        before = app.snapshot()
        resp = await app.submit(
            {"owner": "ann", "pool": "lobby", "title": title}, key="key-badtitle"
        )
        problem = await resp.json(content_type=None)
        assert resp.status == 422, why
        assert problem["type"] == PROBLEM + "invalid-request"
        assert [e["loc"] for e in problem["errors"]] == ["metadata.title"], problem
        assert app.snapshot() == before
        # nothing was taken: the key is still free for a good request
        ok = await app.submit({"owner": "ann", "pool": "lobby", "title": "ok"}, key="key-badtitle")
        assert ok.status == 201


# --- IPP job-name ------------------------------------------------------------------------


async def test_an_ipp_job_name_is_the_title(make_appliance: Callable[..., Any]) -> None:
    async with make_appliance() as app:
        await _set_code(app)
        queue = IppQueue(app.http, app.url, "lobby")
        # Print-Job, a job-name with a line break and longer than a title may be
        long_name = "Quarterly report\nfinal " + "v" * 300
        printed = await queue.print_job(
            make_pdf("ipp"), attr("job-name", Tag.NAME, long_name), job=HOLD
        )
        assert printed.status_code == Status.SUCCESSFUL_OK, status_message(printed)
        # Create-Job with a job-name, then Send-Document
        created = await queue.send(
            queue.request(Operation.CREATE_JOB, attr("job-name", Tag.NAME, "Ann's badge.pdf"),
                          job=HOLD)
        )  # fmt: skip
        sent = await queue.send(
            queue.request(
                Operation.SEND_DOCUMENT, attr("job-id", Tag.INTEGER, job_id(created)),
                attr("document-format", Tag.MIME_MEDIA_TYPE, "application/pdf"),
                attr("last-document", Tag.BOOLEAN, True), data=make_pdf("created"),
            )
        )  # fmt: skip
        assert sent.status_code == Status.SUCCESSFUL_OK, status_message(sent)
        # no job-name: the PDF's /Title
        nameless = await queue.print_job(titled_pdf("From the PDF"), job=HOLD)
        ids = [edgeprint_id(a) for a in (printed, sent, nameless)]
        expected = [("Quarterly report final " + "v" * 300)[:MAX_TITLE_CHARS],
                    "Ann's badge.pdf", "From the PDF"]  # fmt: skip
        assert [(await _job(app, i))["title"] for i in ids] == expected
        assert [(await _job(app, i))["state"] for i in ids] == ["HELD"] * 3
        assert await _lookup(app, "lobby") == dict(zip(ids, expected, strict=True))
        # after a restart (no job-names in memory), IPP still names the job by its title
    async with make_appliance() as app:
        queue = IppQueue(app.http, app.url, "lobby")
        found = await queue.job_attributes(job_id(nameless))
        assert found.value(GroupTag.JOB, "job-name") == "From the PDF"


# --- the upload page: the file's name ------------------------------------------------------

_FORM_KEY = re.compile(r'name="form_key" value="([0-9a-f]{32})"')


async def _upload(app: Appliance, doc: bytes, filename: str) -> None:
    async with app.http.get(f"{app.url}/upload") as r:
        found = _FORM_KEY.search(await r.text())
    assert found is not None
    form = aiohttp.FormData(quote_fields=False)  # as a browser sends a file's name
    form.add_field("form_key", found.group(1))
    form.add_field("owner", "ann")
    form.add_field("target", "printer:printer-03")
    form.add_field("document", doc, content_type="application/pdf", filename=filename)
    async with app.http.post(f"{app.url}/upload", data=form) as r:
        assert r.status == 201, await r.text()


async def test_an_uploaded_files_name_is_the_title(make_appliance: Callable[..., Any]) -> None:
    async with make_appliance(sections={"release": {"web_upload": True}}) as app:
        await _set_code(app)
        await _upload(app, titled_pdf("the PDF's own"), "Ann Lee badge.pdf")
        await _upload(app, make_pdf("second"), "C:\\fakepath\\poster %22final%22.pdf")
        jobs = await app.running.service.views.list_jobs(owner="ann", limit=10)
        titles = {j.id: j.title for j in jobs}
        assert sorted(t or "" for t in titles.values()) == [
            "Ann Lee badge.pdf",
            'poster "final".pdf',
        ]
        for job in titles:
            assert (await _job(app, job))["title"] == titles[job]
        assert await _lookup(app) == titles


# --- the store, both backends: a round trip, and a reprint keeps the title -----------------


def _new(job_id: str, key: str, title: str | None) -> NewJob:
    return NewJob(
        id=job_id, idempotency_key=key, request_sha256="r", state=JobState.DONE, owner="Ann",
        printer="printer-01", pool=None, priority=7, copies=1, document_sha256="d" * 64,
        document_bytes=10, token_name="kiosk-1", correlation_id=None, document_pages=1,
        title=title,
    )  # fmt: skip


async def test_the_store_keeps_the_title_and_a_reprint_copies_it(store: Store) -> None:
    jobs, reprints = Jobs(store), Reprints(store)
    title = "Zoë — “speaker” 🎤"
    made = await jobs.insert(_new("a" * 32, "key-a", title), 1.0, "kiosk-1")
    untitled = await jobs.insert(_new("b" * 32, "key-b", None), 1.0, "kiosk-1")
    assert made is not None
    assert untitled is not None
    assert (made.title, untitled.title) == (title, None)
    got = await jobs.get("a" * 32)
    assert got is not None
    assert got.title == title
    listed = await jobs.list_jobs(owner="Ann", limit=10)
    assert {j.id: j.title for j in listed} == {"a" * 32: title, "b" * 32: None}
    reprint = await reprints.insert(
        NewReprint(
            id="c" * 32, idempotency_key="reprint-1", request_sha256="q", original_id="a" * 32,
            asked_id="a" * 32, document_sha256="d" * 64, printer="printer-01", pool=None,
            token_name="desk-1", correlation_id=None, actor="desk-1", reason="badge lost",
            webhook_id="msg_1",
        ),
        now=2.0, max_reprints=3,
    )  # fmt: skip
    assert reprint is not None
    assert (reprint.reprint_of, reprint.title) == ("a" * 32, title)
    stored = await jobs.get("c" * 32)
    assert stored is not None
    assert stored.title == title
