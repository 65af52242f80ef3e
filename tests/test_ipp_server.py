"""edgeprint's IPP queues (/ipp/print/<printer or pool>): jobs are edgeprint jobs, bad input stores nothing."""

from __future__ import annotations

import asyncio
import base64
import io
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

import pytest

from edgeprint.api import ipp
from edgeprint.api.app import Deps
from edgeprint.api.factory import build_app
from edgeprint.ipp import codec
from edgeprint.ipp.names import GroupTag, Operation, Status, Tag
from edgeprint.ipp.names import JobState as IppJobState
from edgeprint.ipp.values import Attribute, Range, Value, attr, strings
from edgeprint.ipp_server import attributes as A
from edgeprint.ipp_server.request import Context
from edgeprint.printers import supplies
from edgeprint.printers.health import PrinterSnapshot
from testbed.pdfs import make_page_tree_cycle_pdf, make_pdf
from testbed.rig import Rig
from tests.conftest import KIOSK_TOKEN, TECH_TOKEN, Appliance
from tests.ipp_client import IppQueue, status_message
from tests.polling import eventually
from tests.printing import appliance, assert_each_printed_once, rig_config

# --- helpers ---------------------------------------------------------------------------


def edgeprint_id(answer: codec.IppMessage) -> str:
    """The edgeprint job id behind an IPP job (its job-uuid is that UUID)."""
    value = answer.value(GroupTag.JOB, "job-uuid")
    assert isinstance(value, str), answer
    return uuid.UUID(value.removeprefix("urn:uuid:")).hex


def job_id(answer: codec.IppMessage) -> int:
    value = answer.value(GroupTag.JOB, "job-id")
    assert isinstance(value, int), answer
    return value


async def wait_job_state(
    queue: IppQueue, ipp_job_id: int, states: set[int], timeout_s: float = 20.0
) -> codec.IppMessage:
    """Poll Get-Job-Attributes until job-state is one of ``states`` (deadline ``timeout_s``)."""

    async def in_states() -> codec.IppMessage | None:
        answer = await queue.job_attributes(ipp_job_id)
        return answer if answer.value(GroupTag.JOB, "job-state") in states else None

    what = f"job {ipp_job_id} in {states}"
    return await eventually(in_states, what, timeout_s=timeout_s, every_s=0.02)


# --- with real printers -------------------------------------------------------------------


@pytest.fixture
async def lobby(printers: Rig, tmp_path: Path) -> AsyncIterator[tuple[IppQueue, Any, Rig]]:
    """The pool queue 'lobby' (printer-01, printer-02: real printers) and a kiosk API client."""
    cfg = rig_config(tmp_path / "data", printers)
    cfg["ipp"] = {"hold_queues": ["printer-02"]}
    async with appliance(cfg) as (_run, client):
        yield IppQueue(client.http, client.url, "lobby"), client, printers


async def test_print_job_prints_once_and_reports_completed(
    lobby: tuple[IppQueue, Any, Rig],
) -> None:
    """A Print-Job of a PDF on a pool queue becomes one edgeprint job for that pool, printed exactly once, and its IPP job-state ends completed."""
    queue, client, rig = lobby
    answer = await queue.print_job(make_pdf("ipp once"), attr("job-name", Tag.NAME, "badge.pdf"))
    assert answer.status_code == Status.SUCCESSFUL_OK, status_message(answer)
    assert answer.value(GroupTag.JOB, "job-state") in (
        IppJobState.PENDING,
        IppJobState.PROCESSING,
        IppJobState.COMPLETED,
    )
    done = await wait_job_state(queue, job_id(answer), {IppJobState.COMPLETED})
    assert done.value(GroupTag.JOB, "job-state-reasons") == "job-completed-successfully"
    assert done.value(GroupTag.JOB, "job-name") == "badge.pdf"
    job = await client.job(edgeprint_id(answer))
    assert (job["state"], job["owner"], job["pool"]) == ("DONE", "ann", "lobby")
    assert_each_printed_once(rig, [job["id"]])


async def test_held_job_waits_for_an_api_release(lobby: tuple[IppQueue, Any, Rig]) -> None:
    """job-hold-until=indefinite stores a HELD job (IPP pending-held) that prints once only after POST /v1/jobs/{id}/release."""
    queue, client, rig = lobby
    answer = await queue.print_job(
        make_pdf("held"), job=[attr("job-hold-until", Tag.KEYWORD, "indefinite")]
    )
    assert answer.status_code == Status.SUCCESSFUL_OK, status_message(answer)
    assert answer.value(GroupTag.JOB, "job-state") == IppJobState.PENDING_HELD
    job_uuid = edgeprint_id(answer)
    assert (await client.job(job_uuid))["state"] == "HELD"
    assert rig.printed("printer-01") + rig.printed("printer-02") == []
    status, body = await client.post(f"/v1/jobs/{job_uuid}/release")
    assert status == 200, body
    await wait_job_state(queue, job_id(answer), {IppJobState.COMPLETED})
    assert_each_printed_once(rig, [job_uuid])


async def test_a_hold_queue_holds_unless_the_client_says_no_hold(
    lobby: tuple[IppQueue, Any, Rig],
) -> None:
    """A queue in [ipp] hold_queues advertises job-hold-until-default indefinite and holds jobs; job-hold-until=no-hold prints at once."""
    queue_lobby, client, rig = lobby
    queue = IppQueue(queue_lobby.http, queue_lobby.url, "printer-02")
    attrs = await queue.send(queue.request(Operation.GET_PRINTER_ATTRIBUTES))
    assert attrs.value(GroupTag.PRINTER, "job-hold-until-default") == "indefinite"
    held = await queue.print_job(make_pdf("hold queue"))
    assert held.value(GroupTag.JOB, "job-state") == IppJobState.PENDING_HELD
    now = await queue.print_job(
        make_pdf("no hold"), job=[attr("job-hold-until", Tag.KEYWORD, "no-hold")]
    )
    await wait_job_state(queue, job_id(now), {IppJobState.COMPLETED})
    assert (await client.job(edgeprint_id(held)))["state"] == "HELD"
    assert_each_printed_once(rig, [edgeprint_id(now)])
    assert [p.job_name for p in rig.printed("printer-02")] == [f"edgeprint-{edgeprint_id(now)}"]


async def test_a_repeated_job_uuid_is_the_same_job(lobby: tuple[IppQueue, Any, Rig]) -> None:
    """A client retry with the job-uuid of an existing job (Print-Job, or Create-Job + Send-Document) is that job, printed once."""
    queue, _client, rig = lobby
    pdf = make_pdf("retry")
    same = attr("job-uuid", Tag.URI, f"urn:uuid:{uuid.uuid4()}")
    first = await queue.print_job(pdf, same)
    again = await queue.print_job(pdf, same)
    assert edgeprint_id(first) == edgeprint_id(again)
    assert job_id(first) == job_id(again)

    other = attr("job-uuid", Tag.URI, f"urn:uuid:{uuid.uuid4()}")
    ids = []
    for _ in range(2):
        created = await queue.send(queue.request(Operation.CREATE_JOB, other))
        assert created.status_code == Status.SUCCESSFUL_OK, status_message(created)
        sent = await queue.send(
            queue.request(
                Operation.SEND_DOCUMENT,
                attr("job-id", Tag.INTEGER, job_id(created)),
                attr("document-format", Tag.MIME_MEDIA_TYPE, "application/pdf"),
                attr("last-document", Tag.BOOLEAN, True),
                data=make_pdf("create-send"),
            )
        )
        assert sent.status_code == Status.SUCCESSFUL_OK, status_message(sent)
        ids.append((edgeprint_id(sent), job_id(sent)))
    assert ids[0][0] == ids[1][0]  # one edgeprint job, known by both Create-Job ids
    for _, ipp_job_id in ids:
        assert (
            edgeprint_id(await wait_job_state(queue, ipp_job_id, {IppJobState.COMPLETED}))
            == ids[0][0]
        )
    await wait_job_state(queue, job_id(first), {IppJobState.COMPLETED})
    assert_each_printed_once(rig, [edgeprint_id(first), ids[0][0]])


async def test_get_jobs_and_cancel_follow_edgeprint_states(
    lobby: tuple[IppQueue, Any, Rig],
) -> None:
    """Get-Jobs lists a held job as not-completed; Cancel-Job by its owner makes it CANCELLED (IPP canceled), and then it is in which-jobs=completed."""
    queue, client, _rig = lobby
    held = await queue.print_job(
        make_pdf("cancel me"), job=[attr("job-hold-until", Tag.KEYWORD, "indefinite")]
    )
    pending = await queue.send(
        queue.request(
            Operation.GET_JOBS, attr("requested-attributes", Tag.KEYWORD, "job-id", "job-state")
        )
    )
    listed = [(g.get("job-id"), g.get("job-state")) for g in pending.groups_of(GroupTag.JOB)]
    assert [(i.value, s.value) for i, s in listed if i and s] == [
        (job_id(held), IppJobState.PENDING_HELD)
    ]
    cancel = await queue.send(
        queue.request(Operation.CANCEL_JOB, attr("job-id", Tag.INTEGER, job_id(held)))
    )
    assert cancel.status_code == Status.SUCCESSFUL_OK, status_message(cancel)
    assert (await client.job(edgeprint_id(held)))["state"] == "CANCELLED"
    done = await queue.send(
        queue.request(
            Operation.GET_JOBS,
            attr("which-jobs", Tag.KEYWORD, "completed"),
            attr("requested-attributes", Tag.KEYWORD, "job-state"),
        )
    )
    assert [g.get("job-state").value for g in done.groups_of(GroupTag.JOB)] == [
        IppJobState.CANCELED
    ]  # type: ignore[union-attr]
    again = await queue.send(
        queue.request(Operation.CANCEL_JOB, attr("job-id", Tag.INTEGER, job_id(held)))
    )
    assert again.status_code == Status.CLIENT_ERROR_NOT_POSSIBLE


# --- bad input, access (no printers needed: jobs would wait) ----------------------------------


@pytest.fixture
async def ipp_app(make_appliance: Callable[..., Any]) -> AsyncIterator[tuple[Appliance, IppQueue]]:
    """An appliance with a 2 KiB document limit; the pool queue 'lobby'."""
    async with make_appliance(max_document_bytes=2048) as app:
        yield app, IppQueue(app.http, app.url, "lobby")


def _raw_request(
    queue: IppQueue, operation: int, *attributes: Attribute, data: bytes = b""
) -> bytes:
    return queue.request(operation, *attributes, data=data).encode()


async def test_bad_requests_get_the_right_status_and_store_nothing(
    ipp_app: tuple[Appliance, IppQueue],
) -> None:
    """Truncated, mistyped, unknown, wrongly formatted and oversize requests each get their IPP status, and nothing is stored."""
    app, queue = ipp_app
    before = app.snapshot()
    pdf = make_pdf("bad")
    fmt = attr("document-format", Tag.MIME_MEDIA_TYPE, "application/pdf")
    good = _raw_request(queue, Operation.PRINT_JOB, fmt, data=pdf)
    cases: list[tuple[str, bytes, int]] = [
        ("truncated", good[: len(good) - len(pdf) - 5], Status.CLIENT_ERROR_BAD_REQUEST),
        ("header only", good[:8], Status.CLIENT_ERROR_BAD_REQUEST),
        (
            "copies as a keyword",
            queue.request(
                Operation.PRINT_JOB, fmt, job=[attr("copies", Tag.KEYWORD, "two")], data=pdf
            ).encode(),
            Status.CLIENT_ERROR_BAD_REQUEST,
        ),
        (
            "copies out of range",
            queue.request(
                Operation.PRINT_JOB, fmt, job=[attr("copies", Tag.INTEGER, 1000)], data=pdf
            ).encode(),
            Status.CLIENT_ERROR_ATTRIBUTES_OR_VALUES_NOT_SUPPORTED,
        ),
        (
            "unknown operation",
            _raw_request(queue, 0x4001),
            Status.SERVER_ERROR_OPERATION_NOT_SUPPORTED,
        ),
        (
            "Hold-Job",
            _raw_request(queue, Operation.HOLD_JOB, attr("job-id", Tag.INTEGER, 1)),
            Status.SERVER_ERROR_OPERATION_NOT_SUPPORTED,
        ),
        (
            "not the JPEG it claims",
            _raw_request(
                queue,
                Operation.PRINT_JOB,
                attr("document-format", Tag.MIME_MEDIA_TYPE, "image/jpeg"),
                data=b"\xff\xd8\xff",
            ),
            Status.CLIENT_ERROR_DOCUMENT_FORMAT_ERROR,
        ),
        (
            "not the PWG raster it claims",
            _raw_request(
                queue,
                Operation.PRINT_JOB,
                attr("document-format", Tag.MIME_MEDIA_TYPE, "image/pwg-raster"),
                data=b"RaS2" + b"\0" * 64,
            ),
            Status.CLIENT_ERROR_DOCUMENT_FORMAT_ERROR,
        ),
        (
            "GIF",
            _raw_request(
                queue,
                Operation.PRINT_JOB,
                attr("document-format", Tag.MIME_MEDIA_TYPE, "image/gif"),
                data=b"GIF89a",
            ),
            Status.CLIENT_ERROR_DOCUMENT_FORMAT_NOT_SUPPORTED,
        ),
        (
            "not the PDF it claims",
            _raw_request(queue, Operation.PRINT_JOB, fmt, data=b"GIF89a" + b"\0" * 100),
            Status.CLIENT_ERROR_DOCUMENT_FORMAT_ERROR,
        ),
        (
            "oversize document",
            _raw_request(queue, Operation.PRINT_JOB, fmt, data=make_pdf("big", pad_to=4096)),
            Status.CLIENT_ERROR_REQUEST_ENTITY_TOO_LARGE,
        ),
        (
            "attributes over 64 KiB",
            _raw_request(
                queue,
                Operation.PRINT_JOB,
                fmt,
                attr("job-name", Tag.NAME, "x" * 40_000),
                attr("document-name", Tag.NAME, "y" * 40_000),
                data=pdf,
            ),
            Status.CLIENT_ERROR_REQUEST_ENTITY_TOO_LARGE,
        ),
        (
            "no document",
            _raw_request(queue, Operation.PRINT_JOB, fmt),
            Status.CLIENT_ERROR_BAD_REQUEST,
        ),
        (
            "gzip",
            _raw_request(
                queue, Operation.PRINT_JOB, fmt, attr("compression", Tag.KEYWORD, "gzip"), data=pdf
            ),
            Status.CLIENT_ERROR_COMPRESSION_NOT_SUPPORTED,
        ),
        (
            "charset",
            codec.request(Operation.PRINT_JOB, 7, printer_uri=queue.uri)
            .encode()
            .replace(b"utf-8", b"latin"),
            Status.CLIENT_ERROR_CHARSET_NOT_SUPPORTED,
        ),
        (
            "other queue's printer-uri",
            codec.request(
                Operation.PRINT_JOB,
                7,
                printer_uri=queue.uri.replace("lobby", "printer-03"),
                attributes=[fmt],
                data=pdf,
            ).encode(),
            Status.CLIENT_ERROR_NOT_FOUND,
        ),
        (
            "job of no queue",
            _raw_request(queue, Operation.GET_JOB_ATTRIBUTES, attr("job-id", Tag.INTEGER, 99)),
            Status.CLIENT_ERROR_NOT_FOUND,
        ),
        (
            "user name with a newline",
            _raw_request(queue, Operation.PRINT_JOB, fmt, data=pdf).replace(
                b"\x00\x03ann", b"\x00\x03a\nn"
            ),
            Status.CLIENT_ERROR_ATTRIBUTES_OR_VALUES_NOT_SUPPORTED,
        ),
    ]
    for label, body, expected in cases:
        http_status, raw = await queue.post(body)
        assert http_status == 200, label
        answer = codec.parse(raw)
        assert answer.status_code == expected, (
            label,
            hex(answer.status_code),
            status_message(answer),
        )
        assert status_message(answer), label
    assert app.snapshot() == before


async def test_only_the_advertised_ipp_versions_are_served(
    ipp_app: tuple[Appliance, IppQueue],
) -> None:
    """A request at an IPP version other than ipp-versions-supported (1.1, 2.0) gets
    server-error-version-not-supported at the nearest version spoken and stores nothing;
    1.1 and 2.0 are served."""
    app, queue = ipp_app
    before = app.snapshot()
    fmt = attr("document-format", Tag.MIME_MEDIA_TYPE, "application/pdf")
    good = _raw_request(queue, Operation.PRINT_JOB, fmt, data=make_pdf("v"))
    for version, answered in [((1, 0), (1, 1)), ((2, 1), (2, 0)), ((2, 5), (2, 0)),
                              ((3, 0), (2, 0)), ((0, 9), (1, 1))]:  # fmt: skip
        http_status, raw = await queue.post(bytes(version) + good[2:])
        answer = codec.parse(raw)
        assert (http_status, answer.status_code, answer.version) == (
            200,
            Status.SERVER_ERROR_VERSION_NOT_SUPPORTED,
            answered,
        ), version
        assert status_message(answer) == (
            f"IPP/{version[0]}.{version[1]} is not supported; use IPP/1.1 or IPP/2.0"
        )
    assert app.snapshot() == before
    asked = _raw_request(queue, Operation.GET_PRINTER_ATTRIBUTES)
    for version in [(1, 1), (2, 0)]:
        _, raw = await queue.post(bytes(version) + asked[2:])
        answer = codec.parse(raw)
        assert (answer.status_code, answer.version) == (Status.SUCCESSFUL_OK, version)
        supported = answer.get(GroupTag.PRINTER, "ipp-versions-supported")
        assert list(strings(supported)) == ["1.1", "2.0"]


def _by_job_uri(queue: IppQueue, operation: int, job_uri: str) -> codec.IppMessage:
    """A request addressed by job-uri alone (no printer-uri, no job-id)."""
    return codec.request(
        operation, 11, attributes=[
            attr("job-uri", Tag.URI, job_uri), attr("requesting-user-name", Tag.NAME, queue.user)
        ],
    )  # fmt: skip


async def test_jobs_are_addressed_by_job_uri_at_the_queue_or_at_the_job_uri(
    ipp_app: tuple[Appliance, IppQueue],
) -> None:
    """Get-Job-Attributes and Cancel-Job addressed by the job-uri a Print-Job answered work
    POSTed to the queue's path and to the job-uri's own path, as a Send-Document to a
    Create-Job's job-uri does; at a job's path a printer operation, another job's job-uri or
    a path that is no job is refused and changes nothing."""
    app, queue = ipp_app
    held = await queue.print_job(
        make_pdf("by uri"), job=[attr("job-hold-until", Tag.KEYWORD, "indefinite")]
    )
    job_uri = held.value(GroupTag.JOB, "job-uri")
    assert isinstance(job_uri, str)
    job_path = urlsplit(job_uri).path
    assert job_path == f"/ipp/print/lobby/{job_id(held)}"
    for path in (None, job_path):
        _, raw = await queue.post(
            _by_job_uri(queue, Operation.GET_JOB_ATTRIBUTES, job_uri).encode(), path=path
        )
        answer = codec.parse(raw)
        assert answer.status_code == Status.SUCCESSFUL_OK, (path, status_message(answer))
        assert answer.value(GroupTag.JOB, "job-id") == job_id(held)
        assert answer.value(GroupTag.JOB, "job-state") == IppJobState.PENDING_HELD
    before = app.snapshot()
    fmt = attr("document-format", Tag.MIME_MEDIA_TYPE, "application/pdf")
    other = job_uri.rsplit("/", 1)[0] + f"/{job_id(held) + 1}"
    refused = [
        (job_path, _raw_request(queue, Operation.PRINT_JOB, fmt, data=make_pdf("x")),
         Status.CLIENT_ERROR_BAD_REQUEST,
         "Print-Job is a printer operation: send it to the printer-uri"),
        (job_path, _by_job_uri(queue, Operation.CANCEL_JOB, other).encode(),
         Status.CLIENT_ERROR_BAD_REQUEST,
         f"the request names job {job_id(held) + 1} but went to the URI of job {job_id(held)}"),
        ("/ipp/print/lobby/first", _by_job_uri(queue, Operation.CANCEL_JOB, job_uri).encode(),
         Status.CLIENT_ERROR_NOT_FOUND, "no job 'first' on this queue; job-uris end in a job-id"),
    ]  # fmt: skip
    for path, body, status, message in refused:
        http_status, raw = await queue.post(body, path=path)
        answer = codec.parse(raw)
        assert (http_status, answer.status_code, status_message(answer)) == (200, status, message)
    assert app.snapshot() == before
    _, raw = await queue.post(
        _by_job_uri(queue, Operation.CANCEL_JOB, job_uri).encode(), path=job_path
    )
    assert codec.parse(raw).status_code == Status.SUCCESSFUL_OK
    job = await app.get(f"/v1/jobs/{edgeprint_id(held)}", token=TECH_TOKEN)
    assert (await job.json())["state"] == "CANCELLED"
    created = await queue.send(queue.request(Operation.CREATE_JOB))
    created_uri = created.value(GroupTag.JOB, "job-uri")
    assert isinstance(created_uri, str)
    send = queue.request(
        Operation.SEND_DOCUMENT,
        attr("job-id", Tag.INTEGER, job_id(created)),
        attr("document-format", Tag.MIME_MEDIA_TYPE, "application/pdf"),
        attr("last-document", Tag.BOOLEAN, True),
        data=make_pdf("sent to the job-uri"),
    )  # printer-uri + job-id, POSTed to the job-uri: the queue's pending job
    _, raw = await queue.post(send.encode(), path=urlsplit(created_uri).path)
    sent = codec.parse(raw)
    assert sent.status_code == Status.SUCCESSFUL_OK, status_message(sent)
    assert job_id(sent) == job_id(created)


async def test_ipp_status_messages_speak_ipp_not_the_http_api(
    make_appliance: Callable[..., Any],
) -> None:
    """A job-uuid reused with another document and a client over the rate limit get
    status-messages in IPP's terms (job-uuid, this client), not the HTTP API's
    (Idempotency-Key, token), and store nothing."""
    async with make_appliance(rate_limit="3/minute") as app:
        queue = IppQueue(app.http, app.url, "lobby")
        job_uuid = uuid.uuid4()
        same = attr("job-uuid", Tag.URI, f"urn:uuid:{job_uuid}")
        first = await queue.print_job(make_pdf("one"), same)
        assert first.status_code == Status.SUCCESSFUL_OK, status_message(first)
        before = app.snapshot()
        reused = await queue.print_job(make_pdf("two"), same)
        assert (reused.status_code, status_message(reused)) == (
            Status.CLIENT_ERROR_BAD_REQUEST,
            f"job-uuid urn:uuid:{job_uuid} was already used for another job with a different "
            "document or attributes; use a new job-uuid",
        )
        await queue.send(queue.request(Operation.GET_PRINTER_ATTRIBUTES))  # the third request
        _, raw = await queue.post(_raw_request(queue, Operation.GET_PRINTER_ATTRIBUTES))
        busy = codec.parse(raw)
        assert busy.status_code == Status.SERVER_ERROR_BUSY
        message = status_message(busy)
        assert message.startswith(
            "too many requests from this client (limit 3 per 1 minute); retry in "
        )
        assert message.endswith(" s")
        assert app.snapshot() == before


async def test_send_document_for_another_users_job_is_refused(
    ipp_app: tuple[Appliance, IppQueue],
) -> None:
    """Send-Document to a job created by another requesting-user-name gets client-error-not-authorized and stores nothing; the owner's own Send-Document then works."""
    app, ann = ipp_app
    bob = IppQueue(ann.http, ann.url, "lobby", user="bob")
    created = await ann.send(ann.request(Operation.CREATE_JOB))
    before = app.snapshot()
    send = [
        attr("job-id", Tag.INTEGER, job_id(created)),
        attr("document-format", Tag.MIME_MEDIA_TYPE, "application/pdf"),
        attr("last-document", Tag.BOOLEAN, True),
    ]
    refused = await bob.send(bob.request(Operation.SEND_DOCUMENT, *send, data=make_pdf("bob")))
    assert refused.status_code == Status.CLIENT_ERROR_NOT_AUTHORIZED, status_message(refused)
    assert refused.get(GroupTag.UNSUPPORTED, "requesting-user-name") is not None
    assert app.snapshot() == before
    accepted = await ann.send(ann.request(Operation.SEND_DOCUMENT, *send, data=make_pdf("ann")))
    assert accepted.status_code == Status.SUCCESSFUL_OK, status_message(accepted)
    assert len(app.snapshot()["jobs"]) == 1


async def test_an_unknown_queue_is_not_found(ipp_app: tuple[Appliance, IppQueue]) -> None:
    """A request to /ipp/print/<not a printer or pool> gets client-error-not-found."""
    _app, queue = ipp_app
    nowhere = IppQueue(queue.http, queue.url, "nowhere")
    answer = await nowhere.send(nowhere.request(Operation.GET_PRINTER_ATTRIBUTES))
    assert answer.status_code == Status.CLIENT_ERROR_NOT_FOUND
    assert "no queue 'nowhere'" in status_message(answer)


async def test_addresses_outside_allowed_networks_are_refused(
    make_appliance: Callable[..., Any],
) -> None:
    """A client outside [ipp] allowed_networks gets HTTP 403 with client-error-not-authorized, and nothing is stored."""
    async with make_appliance(sections={"ipp": {"allowed_networks": ["10.0.0.0/8"]}}) as app:
        queue = IppQueue(app.http, app.url, "lobby")
        before = app.snapshot()
        body = queue.request(Operation.PRINT_JOB, data=make_pdf("outsider")).encode()
        status, raw = await queue.post(body)
        assert status == 403
        assert codec.parse(raw).status_code == Status.CLIENT_ERROR_NOT_AUTHORIZED
        assert app.snapshot() == before


async def test_basic_auth_takes_the_token_name_and_token(
    make_appliance: Callable[..., Any],
) -> None:
    """With [ipp] auth = "basic", no or wrong credentials get HTTP 401 (WWW-Authenticate Basic); token name + token print as that token, owner = the token name."""
    async with make_appliance(sections={"ipp": {"auth": "basic"}}) as app:
        queue = IppQueue(app.http, app.url, "lobby")
        before = app.snapshot()
        body = queue.request(
            Operation.PRINT_JOB,
            attr("document-format", Tag.MIME_MEDIA_TYPE, "application/pdf"),
            data=make_pdf("auth"),
        ).encode()

        def basic(user: str, password: str) -> str:
            return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

        for headers in (
            {},
            {"Authorization": basic("kiosk-1", "wrong")},
            {"Authorization": basic("tech-1", KIOSK_TOKEN)},
        ):
            status, raw = await queue.post(body, **headers)
            assert status == 401, headers
            assert codec.parse(raw).status_code == Status.CLIENT_ERROR_NOT_AUTHENTICATED
        assert app.snapshot() == before
        answer = await queue.send(codec.parse(body), Authorization=basic("kiosk-1", KIOSK_TOKEN))
        assert answer.status_code == Status.SUCCESSFUL_OK, status_message(answer)
        job = await app.get(f"/v1/jobs/{edgeprint_id(answer)}", token=TECH_TOKEN)
        assert (await job.json())["owner"] == "kiosk-1"


async def test_printer_attributes_describe_the_queue(ipp_app: tuple[Appliance, IppQueue]) -> None:
    """Get-Printer-Attributes answers what the queue takes (PDF), its stable printer-uuid and requested-attributes filtering."""
    _app, queue = ipp_app
    attrs = await queue.send(queue.request(Operation.GET_PRINTER_ATTRIBUTES))
    printer = GroupTag.PRINTER
    formats = strings(attrs.get(printer, "document-format-supported"))
    assert list(formats) == [
        "application/pdf", "image/pwg-raster", "image/urf", "image/jpeg",
        "application/vnd.zebra-zpl", "application/octet-stream",
    ]  # fmt: skip
    assert attrs.value(printer, "printer-uri-supported") == queue.uri
    assert (
        attrs.value(printer, "printer-uuid")
        == f"urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, 'edgeprint:ipp/print/lobby')}"
    )
    assert attrs.value(printer, "job-hold-until-default") == "no-hold"
    some = await queue.send(
        queue.request(
            Operation.GET_PRINTER_ATTRIBUTES,
            attr("requested-attributes", Tag.KEYWORD, "printer-state", "queued-job-count"),
        )
    )
    assert some.group(printer).names() == ["printer-state", "queued-job-count"]  # type: ignore[union-attr]


async def test_non_ipp_content_type_is_refused(ipp_app: tuple[Appliance, IppQueue]) -> None:
    """A POST to a queue that is not application/ipp gets 415 problem+json."""
    _app, queue = ipp_app
    async with queue.http.post(
        f"{queue.url}/ipp/print/lobby", data=b"{}", headers={"Content-Type": "application/json"}
    ) as r:
        assert r.status == 415
        assert r.content_type == "application/problem+json"


async def test_ipp_can_be_turned_off(make_appliance: Callable[..., Any]) -> None:
    """[ipp] enabled = false: the queues do not exist (404)."""
    async with make_appliance(sections={"ipp": {"enabled": False}}) as app:
        queue = IppQueue(app.http, app.url, "lobby")
        status, _ = await queue.post(queue.request(Operation.GET_PRINTER_ATTRIBUTES).encode())
        assert status == 404


async def test_create_job_ids_survive_a_restart(make_appliance: Callable[..., Any]) -> None:
    """After a restart, the id a Create-Job gave still names its stored job, and one whose document never came answers server-error-service-unavailable, pending-held job-incoming (what makes CUPS send the job again), never a finished job."""
    send = [
        attr("document-format", Tag.MIME_MEDIA_TYPE, "application/pdf"),
        attr("last-document", Tag.BOOLEAN, True),
    ]
    async with make_appliance() as app:
        queue = IppQueue(app.http, app.url, "lobby")
        created = await queue.send(queue.request(Operation.CREATE_JOB))
        sent = await queue.send(
            queue.request(
                Operation.SEND_DOCUMENT,
                attr("job-id", Tag.INTEGER, job_id(created)),
                *send,
                data=make_pdf("restart"),
            )
        )
        assert sent.status_code == Status.SUCCESSFUL_OK, status_message(sent)
        orphan = await queue.send(queue.request(Operation.CREATE_JOB))
    async with make_appliance() as app:
        queue = IppQueue(app.http, app.url, "lobby")
        found = await queue.job_attributes(job_id(created))
        assert found.status_code == Status.SUCCESSFUL_OK, status_message(found)
        assert edgeprint_id(found) == edgeprint_id(sent)
        assert found.value(GroupTag.JOB, "job-state") == IppJobState.PENDING
        lost = await queue.job_attributes(job_id(orphan))
        assert lost.status_code == Status.SERVER_ERROR_SERVICE_UNAVAILABLE
        assert "nothing was printed" in status_message(lost)
        assert lost.value(GroupTag.JOB, "job-state") == IppJobState.PENDING_HELD
        assert lost.value(GroupTag.JOB, "job-state-reasons") == "job-incoming"
        late = await queue.send(
            queue.request(
                Operation.SEND_DOCUMENT,
                attr("job-id", Tag.INTEGER, job_id(orphan)),
                *send,
                data=make_pdf("late"),
            )
        )
        assert late.status_code == Status.CLIENT_ERROR_NOT_FOUND
        fresh = await queue.send(queue.request(Operation.CREATE_JOB))
        assert job_id(fresh) not in (job_id(created), job_id(orphan))


@pytest.mark.parametrize("fmt", ["image/pwg-raster", "image/urf", "image/jpeg"])
async def test_a_raster_or_jpeg_from_a_phone_prints_once(
    lobby: tuple[IppQueue, Any, Rig], tmp_path: Path, fmt: str
) -> None:
    """What AirPrint, Mopria and IPP Everywhere clients send (PWG raster, Apple raster, JPEG)
    becomes an ordinary job (kept as a PDF of its pages) and prints exactly once."""
    queue, client, rig = lobby
    document = await _rendered_badge(tmp_path, fmt)
    answer = await queue.send(
        queue.request(
            Operation.PRINT_JOB, attr("document-format", Tag.MIME_MEDIA_TYPE, fmt), data=document
        )
    )
    assert answer.status_code == Status.SUCCESSFUL_OK, status_message(answer)
    await wait_job_state(queue, job_id(answer), {IppJobState.COMPLETED})
    job = await client.job(edgeprint_id(answer))
    assert job["state"] == "DONE"
    assert job["document"]["pages"] == 1
    assert_each_printed_once(rig, [job["id"]])


async def _rendered_badge(tmp_path: Path, fmt: str) -> bytes:
    """A badge as a phone would send it: rendered by PDFium into ``fmt`` (our encoders)."""
    from edgeprint.documents import ladder
    from edgeprint.documents.capabilities import Media, Resolution
    from edgeprint.documents.render import RenderPool
    from testbed.pdfs import make_badge_pdf

    pdf = tmp_path / "phone.pdf"
    pdf.write_bytes(make_badge_pdf("Phone Photo"))
    pool = RenderPool(workers=1)
    try:
        facts = await pool.facts(str(pdf))
        choice = ladder.Choice(
            fmt, "sgray_8" if fmt != "image/jpeg" else "srgb_8", Resolution(300, 300),
            Media("oe_4x3-label_4x3in", 10160, 7620),
        )  # fmt: skip
        return b"".join([c async for c in pool.stream(str(pdf), choice, facts)])
    finally:
        await pool.close()


# --- IPP Everywhere extras: page-ranges, overrides, icons, supplies -------------------------


def _ranges(*pairs: tuple[int, int]) -> Attribute:
    return attr("page-ranges", Tag.RANGE_OF_INTEGER, *[Range(lo, hi) for lo, hi in pairs])


@pytest.mark.parametrize("operation", ["Print-Job", "Create-Job"])
async def test_page_ranges_print_only_those_pages(
    lobby: tuple[IppQueue, Any, Rig], operation: str
) -> None:
    """page-ranges 2-3,5 of a 5-page PDF stores and prints exactly those three pages, in order, once (by the printer's log and the document it kept)."""
    import pypdf

    from tests.ipp_samples import pages_pdf

    queue, client, rig = lobby
    pdf = pages_pdf([f"sheet {n}" for n in range(1, 6)])
    ranges = _ranges((2, 3), (5, 5))
    if operation == "Print-Job":
        answer = await queue.print_job(pdf, job=[ranges])
    else:
        created = await queue.send(queue.request(Operation.CREATE_JOB, job=[ranges]))
        assert created.status_code == Status.SUCCESSFUL_OK, status_message(created)
        answer = await queue.send(
            queue.request(
                Operation.SEND_DOCUMENT,
                attr("job-id", Tag.INTEGER, job_id(created)),
                attr("document-format", Tag.MIME_MEDIA_TYPE, "application/pdf"),
                attr("last-document", Tag.BOOLEAN, True),
                data=pdf,
            )
        )
    assert answer.status_code == Status.SUCCESSFUL_OK, status_message(answer)
    job = await client.job(edgeprint_id(answer))
    assert job["document"]["pages"] == 3
    await wait_job_state(queue, job_id(answer), {IppJobState.COMPLETED})
    assert_each_printed_once(rig, [job["id"]])
    ((where, line),) = [(printer, p) for printer in rig for p in rig.printed(printer.name)]
    assert line.pages == 3
    (kept,) = where.spool.glob(f"{line.job_id}-*.pdf")
    texts = [page.extract_text() for page in pypdf.PdfReader(io.BytesIO(kept.read_bytes())).pages]
    assert [t.strip() for t in texts] == ["sheet 2", "sheet 3", "sheet 5"]


async def test_bad_page_ranges_and_overrides_are_refused_and_store_nothing(
    make_appliance: Callable[..., Any],
) -> None:
    """page-ranges that are not ascending, overlap, start below 1, have the wrong syntax or select no page, and overrides that would change an attribute, each get their IPP status and the attribute back; page-ranges of a PDF with a cyclic page tree get document-format-error; nothing is stored; selector-only overrides are accepted."""
    from tests.ipp_samples import pages_pdf

    pdf = pages_pdf(["one", "two"])
    media = Value(
        Tag.BEG_COLLECTION,
        [attr("pages", Tag.RANGE_OF_INTEGER, Range(1, 1)), attr("media", Tag.KEYWORD, "x")],
    )
    only_pages = Value(Tag.BEG_COLLECTION, [attr("pages", Tag.RANGE_OF_INTEGER, Range(1, 1))])
    unsupported = Status.CLIENT_ERROR_ATTRIBUTES_OR_VALUES_NOT_SUPPORTED
    cases: list[tuple[str, Attribute, int]] = [
        ("descending", _ranges((3, 4), (1, 2)), unsupported),
        ("overlapping", _ranges((1, 3), (2, 4)), unsupported),
        ("from page 0", _ranges((0, 1)), unsupported),
        ("upper below lower", _ranges((2, 1)), unsupported),
        ("an integer", attr("page-ranges", Tag.INTEGER, 2), Status.CLIENT_ERROR_BAD_REQUEST),
        ("past the last page", _ranges((3, 9)), unsupported),
        ("an override of media", Attribute("overrides", [media]), unsupported),
    ]
    async with make_appliance() as app:
        queue = IppQueue(app.http, app.url, "lobby")
        before = app.snapshot()
        for why, bad, status in cases:
            answer = await queue.print_job(pdf, job=[bad])
            assert answer.status_code == status, (why, status_message(answer))
            assert answer.group(GroupTag.UNSUPPORTED) is not None, why
            assert answer.group(GroupTag.UNSUPPORTED).names() == [bad.name], why  # type: ignore[union-attr]
        hostile = await queue.print_job(make_page_tree_cycle_pdf(), job=[_ranges((1, 1))])
        assert hostile.status_code == Status.CLIENT_ERROR_DOCUMENT_FORMAT_ERROR
        assert app.snapshot() == before
        fine = await queue.send(
            queue.request(
                Operation.VALIDATE_JOB,
                attr("document-format", Tag.MIME_MEDIA_TYPE, "application/pdf"),
                job=[Attribute("overrides", [only_pages]), _ranges((1, 1))],
            )
        )
        assert fine.status_code == Status.SUCCESSFUL_OK, status_message(fine)


async def test_printer_icons_are_served_pngs(app: Appliance) -> None:
    """printer-icons lists three URLs on the API port, and each serves a square PNG of its size."""
    from PIL import Image

    queue = IppQueue(app.http, app.url, "lobby")
    answer = await queue.send(
        queue.request(
            Operation.GET_PRINTER_ATTRIBUTES,
            attr("requested-attributes", Tag.KEYWORD, "printer-icons"),
        )
    )
    icons = answer.get(GroupTag.PRINTER, "printer-icons")
    assert icons is not None
    urls = list(strings(icons))
    assert [u.rsplit("/", 1)[-1] for u in urls] == ["48.png", "128.png", "512.png"]
    for url, size in zip(urls, (48, 128, 512), strict=True):
        async with app.http.get(url) as r:
            assert r.status == 200
            assert r.content_type == "image/png"
            image = Image.open(io.BytesIO(await r.read()))
            assert (image.format, image.size) == ("PNG", (size, size))


def test_one_ipp_endpoint_per_app_serves_every_ipp_route() -> None:
    """build_app makes one IppEndpoint and binds the queue, job-uri and icon routes to it
    (one IppServer per app: a Create-Job's pending id is known to every IPP route)."""
    application = build_app(Deps(*([cast(Any, None)] * 5)))  # the routes only
    endpoint = application[ipp.ENDPOINT]
    owners: list[object] = []
    for route in application.router.routes():
        if route.method == "HEAD" or not route.resource.canonical.startswith("/ipp/"):  # type: ignore[union-attr]
            continue
        handler: Any = route.handler
        cells = [c.cell_contents for c in handler.__closure__ or ()]
        owners.append(getattr(handler, "__self__", None) or next(
            c for c in cells if isinstance(c, ipp.IppEndpoint)
        ))  # fmt: skip
    assert len(owners) == 2 + len(A.ICON_SIZES)  # the queue, a job-uri, the icons
    assert all(owner is endpoint for owner in owners)


def _snapshot(name: str, said: supplies.Supplies | None) -> PrinterSnapshot:
    return PrinterSnapshot(
        name=name, uri=f"ipp://127.0.0.1/{name}", pool="lobby", healthy=True,
        health_reason=None, reachable=True, paused=False, printer_state="idle",
        printer_state_reasons=(), printer_state_message="", queued_job_count=0,
        printing_job=None, last_error=None, supplies=said,
    )  # fmt: skip


def test_supplies_are_relayed_as_the_printers_said_or_unknown() -> None:
    """A pool queue relays its printers' printer-supply (renumbered, described with each printer's name) and marker-*; a printer queue relays its printer's own, with its supply page; with nothing reported, one supply of unknown level (-2)."""
    said = supplies.from_attributes(
        {
            "printer-supply": ["index=1;type=toner;level=40;", "index=2;type=wasteToner;level=5;"],
            "printer-supply-description": ["Black Toner", "Waste"],
            "printer-supply-info-uri": "http://printer/supplies",
            "marker-names": ["Black Toner"], "marker-colors": ["#000000"],
            "marker-types": ["toner"], "marker-levels": [40],
            "marker-low-levels": [10], "marker-high-levels": [100],
        }
    )  # fmt: skip
    assert said is not None

    def queue(name: str, kind: str, members: tuple[str, ...]) -> A.Queue:
        return A.Queue(name, kind, members, False, "ipp://h:1", "http://h:1/", "none", 1024)

    pool = {a.name: a for a in A.supply_attributes(
        queue("lobby", "pool", ("p1", "p2")), [_snapshot("p1", said), _snapshot("p2", said)]
    )}  # fmt: skip
    assert list(strings(pool["printer-supply-description"])) == [
        "p1: Black Toner", "p1: Waste", "p2: Black Toner", "p2: Waste",
    ]  # fmt: skip
    assert [v.value for v in pool["printer-supply"].values] == [
        b"index=1;type=toner;level=40;", b"index=2;type=wasteToner;level=5;",
        b"index=3;type=toner;level=40;", b"index=4;type=wasteToner;level=5;",
    ]  # fmt: skip
    assert pool["printer-supply-info-uri"].value == "http://h:1/"
    assert [v.value for v in pool["marker-levels"].values] == [40, 40]
    assert list(strings(pool["marker-names"])) == ["p1: Black Toner", "p2: Black Toner"]
    one = {a.name: a for a in A.supply_attributes(queue("p1", "printer", ("p1",)), [
        _snapshot("p1", said), _snapshot("p2", None)])}  # fmt: skip
    assert list(strings(one["printer-supply-description"])) == ["Black Toner", "Waste"]
    assert one["printer-supply-info-uri"].value == "http://printer/supplies"
    none = {a.name: a for a in A.supply_attributes(queue("p2", "printer", ("p2",)), [
        _snapshot("p1", said), _snapshot("p2", None)])}  # fmt: skip
    assert [v.value for v in none["printer-supply"].values] == [A.UNKNOWN_SUPPLY.encode()]
    assert "level=-2;" in A.UNKNOWN_SUPPLY
    assert "marker-levels" not in none


async def test_a_pool_queue_relays_its_printers_supplies(
    lobby: tuple[IppQueue, Any, Rig],
) -> None:
    """Get-Printer-Attributes of the pool queue lists the supplies both real printers report in their probes, each described with its printer's name."""
    queue, _client, _rig = lobby

    async def descriptions() -> list[str]:
        answer = await queue.send(
            queue.request(
                Operation.GET_PRINTER_ATTRIBUTES,
                attr("requested-attributes", Tag.KEYWORD, "printer-supply-description"),
            )
        )
        found = answer.get(GroupTag.PRINTER, "printer-supply-description")
        return list(strings(found)) if found is not None else []

    async def both_probed() -> list[str] | None:
        found = await descriptions()
        return found if {d.split(":")[0] for d in found} >= {"printer-01", "printer-02"} else None

    by_printer: dict[str, list[str]] = {}
    for d in await eventually(both_probed, "both printers probed", timeout_s=20, every_s=0.05):
        printer, _, what = d.partition(": ")
        by_printer.setdefault(printer, []).append(what)
    assert set(by_printer) == {"printer-01", "printer-02"}
    assert by_printer["printer-01"] == by_printer["printer-02"] != []  # the same model twice


async def test_a_create_job_lost_in_a_restart_aborts_after_the_resend_window(
    app: Appliance,
) -> None:
    """Get-Job-Attributes of a Create-Job id from an earlier life answers service-unavailable (resend) within LOST_RESEND_WINDOW_S of the start, and aborted (nothing printed) after it."""
    from edgeprint.ipp_server.pending import LOST_RESEND_WINDOW_S, PENDING_BASE
    from edgeprint.ipp_server.server import IppServer
    from edgeprint.service import Caller

    now = [0.0]
    server = IppServer(app.running.service, list, clock=lambda: now[0], timer=lambda: now[0])
    queue = server.queue("lobby", "ipp://h:1", "http://h:1/")
    assert queue is not None
    ctx = Context(queue, Caller("ipp:test", "kiosk", "cid"))
    ask = IppQueue(app.http, app.url, "lobby").request(
        Operation.GET_JOB_ATTRIBUTES, attr("job-id", Tag.INTEGER, PENDING_BASE + 7)
    )
    soon = codec.parse(await server.handle(ask.encode(), ctx))
    assert soon.status_code == Status.SERVER_ERROR_SERVICE_UNAVAILABLE
    assert soon.value(GroupTag.JOB, "job-state") == IppJobState.PENDING_HELD
    now[0] = LOST_RESEND_WINDOW_S + 1
    late = codec.parse(await server.handle(ask.encode(), ctx))
    assert late.status_code == Status.SUCCESSFUL_OK
    assert late.value(GroupTag.JOB, "job-state") == IppJobState.ABORTED
    assert late.value(GroupTag.JOB, "job-state-reasons") == "aborted-by-system"


async def test_a_client_gone_mid_document_stores_nothing(
    make_appliance: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    """A client that drops the connection halfway through a Print-Job's document leaves nothing stored and is logged as ipp_client_gone, not as an internal error."""
    import logging

    caplog.set_level(logging.INFO, logger="edgeprint")
    async with make_appliance() as app:
        queue = IppQueue(app.http, app.url, "lobby")
        before = app.snapshot()
        body = queue.request(
            Operation.PRINT_JOB,
            attr("document-format", Tag.MIME_MEDIA_TYPE, "application/pdf"),
            data=make_pdf("cut short", pad_to=200_000),
        ).encode()
        _reader, writer = await asyncio.open_connection(app.running.host, app.running.port)
        writer.write(
            f"POST /ipp/print/lobby HTTP/1.1\r\nHost: {app.running.host}\r\n"
            f"Content-Type: application/ipp\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body[: len(body) // 2]
        )
        await writer.drain()
        writer.close()
        await writer.wait_closed()

        def events() -> list[str]:
            return [str(getattr(r, "event", "")) for r in caplog.records]

        await eventually(
            lambda: "ipp_client_gone" in events(), lambda: f"ipp_client_gone in {events()}"
        )
        assert "internal_error" not in events()
        assert app.snapshot() == before
