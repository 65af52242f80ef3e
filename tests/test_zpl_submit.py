"""ZPL at submission (issue 23 part 5): bad documents through the API and the IPP queues get
their exact answer and store nothing; a good one is stored with its format and label count.

A real appliance (SQLite file, HTTP on loopback); its printers never answer, so nothing is
known of what they take and the target check lets every document through to the ZPL check.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest

from edgeprint.ipp import codec
from edgeprint.ipp.names import GroupTag, Operation, Status, Tag
from edgeprint.ipp.values import Attribute, AttributeGroup, Range, Value, attr
from edgeprint.server import DB_FILE
from testbed.pdfs import make_pdf
from tests.conftest import KIOSK_TOKEN, TECH_TOKEN, Appliance
from tests.ipp_client import IppQueue, status_message

ZPL = "application/vnd.zebra-zpl"
PROBLEM = "urn:edgeprint:problem:"
BADGE = b"^XA\n^FO50,50^A0N,60,60^FDAda Lovelace^FS\n^XZ\n"
PDF = make_pdf("not a label")
NOT_ZPL = (
    "the document is not ZPL as sent: it starts with "
    f"{repr(PDF[:16])[1:]}… at byte 0, where a label (^XA) or a ~ command was expected; "
    "nothing was stored"
)
TRUNCATED = BADGE[: BADGE.index(b"^XZ")]
CUT = (
    "the document is not ZPL as sent: the label opened with ^XA at byte 0 is not closed with "
    "^XZ; nothing was stored"
)
TEN_THOUSAND = b"^XA^FO0,0^FDbadge^FS^PQ10000^XZ"
TOO_MANY = (
    "the ZPL document makes more than 1000 labels (^PQ quantities counted); at most 1000 are "
    "accepted (server.max_zpl_labels)"
)
EMPTY = "the document is not ZPL as sent: it is empty; nothing was stored"
JUNK = b"\x7fELF\x02\x01\x01\x00binary"
NOT_TEXT = (  # 14 bytes: shown whole
    f"the document is not ZPL as sent: it starts with {repr(JUNK)[1:]} at byte 0, where a "
    "label (^XA) or a ~ command was expected; nothing was stored"
)


@pytest.fixture
async def zpl_app(make_appliance: Callable[..., Any]) -> AsyncIterator[Appliance]:
    """The default limits (1000 labels) and a 2 KiB document limit."""
    async with make_appliance(max_document_bytes=2048) as app:
        yield app


async def submit(
    app: Appliance, doc: bytes, key: str = "zpl-key-0001", **meta: Any
) -> tuple[int, dict[str, Any]]:
    form = aiohttp.FormData()
    body = {"owner": "ann", "pool": "lobby", **meta}
    form.add_field("metadata", json.dumps(body), content_type="application/json")
    form.add_field("document", doc, content_type=ZPL, filename="badge.zpl")
    headers = app.headers(**{"Idempotency-Key": key})
    async with app.http.post(f"{app.url}/v1/jobs", data=form, headers=headers) as r:
        return r.status, await r.json()


@pytest.mark.parametrize(
    ("doc", "meta", "status", "slug", "detail"),
    [
        (PDF, {}, 422, "document-unreadable", NOT_ZPL),
        (TRUNCATED, {}, 422, "document-unreadable", CUT),
        (TEN_THOUSAND, {}, 422, "too-many-labels", TOO_MANY),
        (b"", {}, 422, "document-unreadable", EMPTY),
        (JUNK, {}, 422, "document-unreadable", NOT_TEXT),
        # sent once per copy: 3 × 800 bytes pass the 2 KiB document limit
        (BADGE.ljust(800, b"\n"), {"copies": 3}, 413, "payload-too-large",
         "the ZPL document sent once per copy (3 × 800 bytes) exceeds the limit of 2048 bytes"),
    ],
    ids=["pdf-as-zpl", "truncated", "ten-thousand-labels", "empty", "binary", "copies-too-big"],
)  # fmt: skip
async def test_bad_zpl_through_the_api_gets_its_answer_and_stores_nothing(
    zpl_app: Appliance, doc: bytes, meta: dict[str, Any], status: int, slug: str, detail: str
) -> None:
    """Not ZPL, cut short, 10,000 labels, empty, binary, too big once per copy: the exact
    problem, and no job, event or spool file."""
    before = zpl_app.snapshot()
    code, body = await submit(zpl_app, doc, **meta)
    assert (code, body["type"], body["detail"]) == (status, f"{PROBLEM}{slug}", detail)
    assert zpl_app.snapshot() == before


async def test_a_zpl_badge_is_stored_with_its_format_and_labels(zpl_app: Appliance) -> None:
    """A good ZPL document is accepted (201); the job shows document.format ZPL and its label
    count as pages; the same key and document again is the same job."""
    doc = BADGE + b"~SD20\n" + b"^XA^FO0,0^FDsecond^FS^PQ4^XZ\n"
    code, job = await submit(zpl_app, doc, hold=True)
    assert code == 201, job
    assert job["document"]["format"] == ZPL
    assert (job["document"]["pages"], job["document"]["bytes"]) == (5, len(doc))
    again, same = await submit(zpl_app, doc, hold=True)
    assert (again, same["id"]) == (200, job["id"])
    assert len(zpl_app.snapshot()["jobs"]) == 1


async def test_the_rest_of_a_zpl_job_cannot_be_asked_for(zpl_app: Appliance) -> None:
    """'Print the rest' cuts PDF pages: a ZPL job DEAD outcome_unknown after 1 of its 2
    labels came out is refused it (409 cannot-print-rest, saying why) and stays DEAD."""
    code, job = await submit(zpl_app, BADGE * 2, hold=True)
    assert code == 201, job
    # as a copy that stopped part-way leaves it (a printer that reports a raw job's labels)
    with sqlite3.connect(zpl_app.data_dir / DB_FILE) as db:
        db.execute(
            "UPDATE jobs SET state = 'DEAD', dead_reason = 'outcome_unknown', pages_printed = 1 "
            "WHERE id = ?",
            (job["id"],),
        )
    resp = await zpl_app.post(f"/v1/jobs/{job['id']}/resolve", {"rest": True}, TECH_TOKEN)
    body = await resp.json()
    assert (resp.status, body["type"]) == (409, f"{PROBLEM}cannot-print-rest"), body
    assert body["detail"] == (
        f"cannot print the rest of job {job['id']}: its document is {ZPL}, which is sent "
        "unchanged: print it again whole, or mark it printed"
    )
    after = await zpl_app.get(f"/v1/jobs/{job['id']}", TECH_TOKEN)
    assert (await after.json())["state"] == "DEAD"


def _print_job(queue: IppQueue, doc: bytes, *extra: Attribute) -> codec.IppMessage:
    return queue.request(
        Operation.PRINT_JOB, attr("document-format", Tag.MIME_MEDIA_TYPE, ZPL), *extra, data=doc
    )


@pytest.mark.parametrize(
    ("doc", "status", "message"),
    [
        (PDF, Status.CLIENT_ERROR_DOCUMENT_FORMAT_ERROR, NOT_ZPL),
        (TRUNCATED, Status.CLIENT_ERROR_DOCUMENT_FORMAT_ERROR, CUT),
        (TEN_THOUSAND, Status.CLIENT_ERROR_REQUEST_ENTITY_TOO_LARGE, TOO_MANY),
        (b"", Status.CLIENT_ERROR_BAD_REQUEST, "the request carries no document"),
        (JUNK, Status.CLIENT_ERROR_DOCUMENT_FORMAT_ERROR, NOT_TEXT),
    ],
    ids=["pdf-as-zpl", "truncated", "ten-thousand-labels", "empty", "binary"],
)
async def test_bad_zpl_through_ipp_gets_its_status_and_stores_nothing(
    zpl_app: Appliance, doc: bytes, status: int, message: str
) -> None:
    """The same documents by Print-Job, and by Create-Job + Send-Document: the IPP status and
    status-message, and nothing stored."""
    queue = IppQueue(zpl_app.http, zpl_app.url, "lobby")
    auth = {"Authorization": f"Bearer {KIOSK_TOKEN}"}
    before = zpl_app.snapshot()
    answer = await queue.send(_print_job(queue, doc), **auth)
    assert (answer.status_code, status_message(answer)) == (status, message)
    created = await queue.send(queue.request(Operation.CREATE_JOB), **auth)
    assert created.status_code == Status.SUCCESSFUL_OK, status_message(created)
    job_id = created.value(GroupTag.JOB, "job-id")
    assert isinstance(job_id, int)
    sent = await queue.send(
        queue.request(
            Operation.SEND_DOCUMENT, attr("job-id", Tag.INTEGER, job_id),
            attr("document-format", Tag.MIME_MEDIA_TYPE, ZPL),
            attr("last-document", Tag.BOOLEAN, True), data=doc,
        ),
        **auth,
    )  # fmt: skip
    assert (sent.status_code, status_message(sent)) == (status, message)
    assert zpl_app.snapshot() == before


async def test_zpl_with_page_ranges_is_refused_over_ipp(zpl_app: Appliance) -> None:
    """page-ranges select PDF pages; a ZPL document is sent whole: refused, nothing stored."""
    queue = IppQueue(zpl_app.http, zpl_app.url, "lobby")
    before = zpl_app.snapshot()
    ranges = Attribute("page-ranges", [Value(Tag.RANGE_OF_INTEGER, Range(1, 1))])
    message = _print_job(queue, BADGE)
    message.groups.append(AttributeGroup(GroupTag.JOB, [ranges]))
    answer = await queue.send(message, Authorization=f"Bearer {KIOSK_TOKEN}")
    assert answer.status_code == Status.CLIENT_ERROR_ATTRIBUTES_OR_VALUES_NOT_SUPPORTED
    assert (
        status_message(answer)
        == f"page-ranges select pages of a PDF; a {ZPL} document is sent whole"
    )
    assert zpl_app.snapshot() == before


async def test_a_zpl_print_job_is_a_job_with_its_labels(zpl_app: Appliance) -> None:
    """Print-Job in ZPL on the pool queue: one edgeprint job, format ZPL, labels counted."""
    queue = IppQueue(zpl_app.http, zpl_app.url, "lobby")
    answer = await queue.send(_print_job(queue, BADGE * 2), Authorization=f"Bearer {KIOSK_TOKEN}")
    assert answer.status_code == Status.SUCCESSFUL_OK, status_message(answer)
    [job] = await zpl_app.running.service.jobs.list_jobs()
    assert (job.document_format, job.document_pages, job.pool) == (ZPL, 2, "lobby")
