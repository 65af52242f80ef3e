"""IPP values and RFC 8011 §5.1's limits, counted in octets (issue 26): a request's value
longer than its syntax allows is refused with client-error-request-value-too-long and
nothing stored, except a job-name (or document-name), which is cut at a UTF-8 boundary and
stored and echoed cut; every value the queues answer with fits its limit.

The cut itself is pure (hypothesis over any Unicode); the rest over real HTTP against a
running appliance (SQLite file), which a test snapshots to show nothing else changed.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edgeprint.ipp import codec
from edgeprint.ipp.names import GroupTag, Operation, Status, Tag
from edgeprint.ipp.values import Attribute, AttributeGroup, StringWithLanguage, Value, attr
from edgeprint.ipp_server import attributes as A
from edgeprint.ipp_server import limits
from edgeprint.printers.health import PrinterSnapshot
from edgeprint.records import JobRecord
from edgeprint.states import JobState
from testbed.pdfs import make_pdf
from tests.conftest import Appliance
from tests.ipp_client import IppQueue, status_message
from tests.test_ipp_conformance import ipptool  # noqa: F401 (the fixture: skips without it)
from tests.test_ipp_server import edgeprint_id, job_id
from tests.test_job_titles import titled_pdf

HOLD = [attr("job-hold-until", Tag.KEYWORD, "indefinite")]
TOO_LONG = Status.CLIENT_ERROR_REQUEST_VALUE_TOO_LONG

# --- pure: fit never exceeds, never splits, is a prefix -----------------------------------

#: Characters of every UTF-8 length, combining marks, joiners, variation selectors, emoji
#: modifiers, and bytes the codec keeps from invalid UTF-8 (surrogateescape).
_chars = st.one_of(
    st.characters(max_codepoint=0x7F),
    st.characters(min_codepoint=0x80, max_codepoint=0x7FF),
    st.characters(min_codepoint=0x800, max_codepoint=0xFFFF, exclude_categories=["Cs"]),
    st.characters(min_codepoint=0x10000),
    st.characters(categories=["Mn", "Mc", "Me"]),
    st.sampled_from(["\u200d", "\ufe0f", "\U0001f3fd", "\U0001f468", "e\u0301"]),
    st.integers(0x80, 0xFF).map(lambda b: bytes([b]).decode("utf-8", "surrogateescape")),
)
#: As the codec decodes them: invalid bytes that happen to spell a character together are it.
_strings = st.lists(_chars, max_size=400).map(
    lambda cs: "".join(cs).encode("utf-8", "surrogateescape").decode("utf-8", "surrogateescape")
)


def _codepoint_cut(value: str, most: int) -> str:
    """The longest prefix of whole code points within ``most`` octets."""
    total = 0
    for i, ch in enumerate(value):
        total += limits.octets(ch)
        if total > most:
            return value[:i]
    return value


@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow])
@given(_strings, st.sampled_from([4, 5, 63, 127, 255, 1023]))
def test_fit_never_exceeds_never_splits_a_character_and_is_a_prefix(value: str, most: int) -> None:
    """fit(value, n) is a prefix of value within n octets, whole characters only, the value
    itself when it fits, and shorter than the plain code-point cut only by the one
    character cluster (a letter and its marks, an emoji sequence) that cut went through."""
    cut = limits.fit(value, most)
    assert value.startswith(cut)
    assert limits.octets(cut) <= most
    encoded = cut.encode("utf-8", "surrogateescape")  # whole characters: it encodes …
    assert value.encode("utf-8", "surrogateescape").startswith(encoded)  # … as a prefix
    assert encoded.decode("utf-8", "surrogateescape") == cut
    if limits.octets(value) <= most:
        assert cut == value
    plain = _codepoint_cut(value, most)
    assert plain.startswith(cut)
    if value and limits.octets(value[0]) <= most:
        assert cut  # never empty when the first character fits
    if len(cut) < len(plain):  # dropped back over one cluster: only its continuations
        assert all(limits._continues(value, i) for i in range(len(cut) + 1, len(plain) + 1))


def test_fit_cuts_in_octets_not_characters() -> None:
    """150 two-octet characters are 300 octets: 127 of them fit in a name; a 4-octet
    emoji is kept whole or not at all; a letter is not left without its accent."""
    assert limits.fit("é" * 150, 255) == "é" * 127
    assert limits.fit("🖨" * 64, 255) == "🖨" * 63
    assert limits.fit("a" * 254 + "é", 255) == "a" * 254
    assert limits.fit("a" * 254 + "e\u0301", 255) == "a" * 254  # not a bare "e"
    assert limits.fit("ab" + "\U0001f44d\U0001f3fd", 7) == "ab"  # not a thumb without its tone
    assert limits.fit("x" * 255, 255) == "x" * 255


# --- pure: the table, at each syntax's boundary --------------------------------------------


def _value(tag: int, size: int) -> Value:
    """A value of ``size`` octets under ``tag`` (2-octet characters where text may be)."""
    if tag == Tag.OCTET_STRING:
        return Value(tag, b"\x01" * size)
    if tag in (Tag.TEXT_WITH_LANGUAGE, Tag.NAME_WITH_LANGUAGE):
        return Value(tag, StringWithLanguage("en", "é" * (size // 2) + "a" * (size % 2)))
    if tag in (Tag.TEXT, Tag.NAME):
        return Value(tag, "é" * (size // 2) + "a" * (size % 2))
    return Value(tag, "a" * size)


@pytest.mark.parametrize("tag", sorted(limits.MAX_OCTETS), ids=lambda t: Tag(t).name.lower())
def test_a_request_value_over_its_syntax_limit_is_named(tag: int) -> None:
    """Each syntax's MAX in octets is taken; one octet more names the attribute, unless it
    is a job-name or document-name (cut, never refused)."""
    most = limits.MAX_OCTETS[tag]
    assert most == {
        Tag.TEXT: 1023,
        Tag.TEXT_WITH_LANGUAGE: 1023,
        Tag.URI: 1023,
        Tag.OCTET_STRING: 1023,
        Tag.URI_SCHEME: 63,
        Tag.CHARSET: 63,
        Tag.NATURAL_LANGUAGE: 63,
    }.get(Tag(tag), 255)

    def message(size: int, name: str = "x-attribute") -> codec.IppMessage:
        request = codec.request(Operation.PRINT_JOB, 1, printer_uri="ipp://h/ipp/print/lobby")
        request.groups.append(AttributeGroup(GroupTag.JOB, [Attribute(name, [_value(tag, size)])]))
        return request

    assert limits.too_long(message(most)) == []
    assert limits.too_long(message(most + 1)) == ["x-attribute"]
    assert limits.too_long(message(most + 1, "job-name")) == []


def test_a_collection_member_and_a_language_are_checked_too() -> None:
    """A member value inside a collection, a member name over 255 octets, and the language
    of a nameWithLanguage over 63 octets each name their top-level attribute."""

    def request(*job: Attribute) -> codec.IppMessage:
        message = codec.request(Operation.PRINT_JOB, 1, printer_uri="ipp://h/ipp/print/lobby")
        message.groups.append(AttributeGroup(GroupTag.JOB, list(job)))
        return message

    member = attr("media-col", Tag.BEG_COLLECTION, [attr("media-type", Tag.KEYWORD, "k" * 256)])
    name = attr("media-col", Tag.BEG_COLLECTION, [attr("m" * 256, Tag.KEYWORD, "k")])
    language = attr("x-name", Tag.NAME_WITH_LANGUAGE, StringWithLanguage("l" * 64, "n"))
    fine = attr("media-col", Tag.BEG_COLLECTION, [attr("media-type", Tag.KEYWORD, "k" * 255)])
    assert limits.too_long(request(member)) == ["media-col"]
    assert limits.too_long(request(name)) == ["media-col"]
    assert limits.too_long(request(language)) == ["x-name"]
    assert limits.too_long(request(fine)) == []


# --- pure: what edgeprint answers with fits -------------------------------------------------


def _job(**changes: Any) -> JobRecord:
    values: dict[str, Any] = dict.fromkeys(JobRecord._fields)
    values.update(
        seq=7,
        id=uuid.uuid4().hex,
        idempotency_key="k" * 8,
        request_sha256="0" * 64,
        state=JobState.DEAD,
        owner="ann",
        printer=None,
        pool="lobby",
        priority=100,
        copies=1,
        document_sha256="f" * 64,
        document_bytes=1000,
        attempts=1,
        not_before=0.0,
        created_at=1.0e9,
        updated_at=1.0e9,
        token_name="kiosk",
        actor="kiosk",
        pin_failures=0,
        claims=1,
        cancel_requested=False,
        truncated_copies=0,
        document_format="application/pdf",
        dead_reason="poison",
        created_run=None,
        finished_run=None,
        released_run=None,
    )
    values.update(changes)
    return JobRecord(**values)


def _queue() -> A.Queue:
    return A.Queue("lobby", "pool", ("p1",), False, "ipp://h:1", "http://h:1/", "none", 1024)


def _all_within(message: codec.IppMessage) -> None:
    """Every value of every group within its attribute's limit."""
    for group in message.groups:
        for a in group.attributes:
            for v in a.values:
                most, x = limits.limit(a.name, v.tag), v.value
                if isinstance(x, StringWithLanguage):
                    x = x.text
                size = (
                    len(x)
                    if isinstance(x, bytes)
                    else limits.octets(x)
                    if isinstance(x, str)
                    else None
                )
                if most is not None and size is not None:
                    assert size <= most, (a.name, size, most)


def test_edgeprints_own_answers_are_cut_to_their_limits() -> None:
    """A job's PDF /Title of 200 four-octet characters (800 octets), a printer's 5,000-octet
    error in job-state-message, a printer's long state reason in printer-state-message and
    supply description, and a long status-message: each is cut to its attribute's limit at
    a character boundary, a prefix of what was said."""
    error = "ü" * 2500
    job = _job(title="😀" * 200, last_error=error)
    response = codec.response(Status.SUCCESSFUL_OK, 1, status_message="ß" * 300)
    response.groups.append(
        AttributeGroup(GroupTag.JOB, A.job_attributes(_queue(), job, 7, job.title))
    )
    snapshot = PrinterSnapshot(
        name="p1",
        uri="ipp://127.0.0.1/p1",
        pool="lobby",
        healthy=False,
        health_reason="Ω" * 700,
        reachable=True,
        paused=False,
        printer_state="stopped",
        printer_state_reasons=(),
        printer_state_message="",
        queued_job_count=0,
        printing_job=None,
        last_error=None,
        supplies=None,
    )
    response.groups.append(
        AttributeGroup(
            GroupTag.PRINTER, A.printer_attributes(_queue(), [snapshot], 0, 1.0e9, 1.0e9)
        )
    )
    said = {(g.tag, a.name): a.value for g in response.groups for a in g.attributes}
    fitted = codec.parse(limits.fit_message(response).encode())
    _all_within(fitted)
    assert fitted.value(GroupTag.JOB, "job-name") == "😀" * 63  # 252 octets: 64 are 256
    assert fitted.value(GroupTag.OPERATION, "status-message") == "ß" * 127
    assert fitted.value(GroupTag.PRINTER, "printer-info") == "edgeprint pool lobby"  # as it was
    for group, name in [
        (GroupTag.JOB, "job-state-message"),
        (GroupTag.PRINTER, "printer-state-message"),
    ]:
        cut, whole = fitted.value(group, name), said[(group, name)]
        assert isinstance(cut, str), name
        assert isinstance(whole, str), name
        assert whole.startswith(cut), name
        assert 1022 <= limits.octets(cut) <= 1023, name


# --- over real HTTP: job-name is cut, stored and echoed the same ----------------------------


@pytest.fixture
async def ipp_app(make_appliance: Callable[..., Any]) -> AsyncIterator[tuple[Appliance, IppQueue]]:
    async with make_appliance() as app:
        yield app, IppQueue(app.http, app.url, "lobby")


async def _rest_job(app: Appliance, job: str) -> dict[str, Any]:
    async with app.http.get(f"{app.url}/v1/jobs/{job}", headers=app.headers()) as resp:
        assert resp.status == 200
        body: dict[str, Any] = await resp.json()
        return body


async def _listed_names(queue: IppQueue) -> dict[int, object]:
    answer = await queue.send(
        queue.request(
            Operation.GET_JOBS,
            attr("which-jobs", Tag.KEYWORD, "all"),
            attr("requested-attributes", Tag.KEYWORD, "job-id", "job-name"),
        )
    )
    assert answer.status_code == Status.SUCCESSFUL_OK, status_message(answer)
    groups = answer.groups_of(GroupTag.JOB)
    return {g.get("job-id").value: g.get("job-name").value for g in groups}  # type: ignore[union-attr]


async def test_a_300_octet_job_name_of_150_characters_is_cut_stored_and_echoed(
    ipp_app: tuple[Appliance, IppQueue],
) -> None:
    """A Print-Job whose job-name is 150 two-octet characters (under 255 characters, over
    255 octets) makes its job; Get-Job-Attributes, Get-Jobs and GET /v1/jobs/{id} all show
    the same 127 characters (254 octets); the job is otherwise as asked (owner, held, one
    copy); so does a Create-Job + Send-Document with 64 four-octet characters (63 kept)."""
    app, queue = ipp_app
    before = app.snapshot()
    printed = await queue.print_job(
        make_pdf("long name"),
        attr("job-name", Tag.NAME, "é" * 150),
        attr("document-name", Tag.NAME, "é" * 150),  # also descriptive: taken, not refused
        job=HOLD,
    )
    assert printed.status_code == Status.SUCCESSFUL_OK, status_message(printed)
    cut = "é" * 127
    echoed = await queue.job_attributes(job_id(printed))
    assert echoed.value(GroupTag.JOB, "job-name") == cut
    assert (await _listed_names(queue))[job_id(printed)] == cut
    job = await _rest_job(app, edgeprint_id(printed))
    assert (job["title"], job["owner"], job["state"], job["copies"], job["pool"]) == (
        cut,
        "ann",
        "HELD",
        1,
        "lobby",
    )
    assert len(app.snapshot()["jobs"]) == len(before["jobs"]) + 1

    created = await queue.send(
        queue.request(
            Operation.CREATE_JOB,
            attr("job-name", Tag.NAME_WITH_LANGUAGE, StringWithLanguage("en", "🖨" * 64)),
            job=HOLD,
        )
    )
    assert created.status_code == Status.SUCCESSFUL_OK, status_message(created)
    waiting = await queue.job_attributes(job_id(created))
    assert waiting.value(GroupTag.JOB, "job-name") == "🖨" * 63
    sent = await queue.send(
        queue.request(
            Operation.SEND_DOCUMENT,
            attr("job-id", Tag.INTEGER, job_id(created)),
            attr("document-format", Tag.MIME_MEDIA_TYPE, "application/pdf"),
            attr("last-document", Tag.BOOLEAN, True),
            data=make_pdf("created"),
        )
    )
    assert sent.status_code == Status.SUCCESSFUL_OK, status_message(sent)
    assert (await queue.job_attributes(job_id(sent))).value(GroupTag.JOB, "job-name") == ("🖨" * 63)
    assert (await _rest_job(app, edgeprint_id(sent)))["title"] == "🖨" * 63


async def test_a_long_title_from_the_api_or_a_pdf_is_cut_in_ipp_answers(
    ipp_app: tuple[Appliance, IppQueue],
) -> None:
    """A job submitted over the API titled with 200 two-octet characters (400 octets, a
    valid title), and one whose PDF /Title is 200 four-octet characters, keep their whole
    title in the API; IPP names them by the first 127 and 63 characters."""
    app, queue = ipp_app
    given = await app.submit(
        {"owner": "ann", "pool": "lobby", "title": "ü" * 200}, key="key-title-1"
    )
    assert given.status == 201
    from_pdf = await app.submit(None, titled_pdf("😀" * 200), key="key-title-2")
    assert from_pdf.status == 201
    ids = [(await r.json())["id"] for r in (given, from_pdf)]
    assert [(await _rest_job(app, i))["title"] for i in ids] == ["ü" * 200, "😀" * 200]
    answer = await queue.send(
        queue.request(
            Operation.GET_JOBS,
            attr("which-jobs", Tag.KEYWORD, "all"),
            attr("requested-attributes", Tag.KEYWORD, "job-uuid", "job-name"),
        )
    )
    names = {
        uuid.UUID(
            str(g.get("job-uuid").value).removeprefix("urn:uuid:")
        ).hex:  # type: ignore[union-attr]
        g.get("job-name").value  # type: ignore[union-attr]
        for g in answer.groups_of(GroupTag.JOB)
    }
    assert [names[i] for i in ids] == ["ü" * 127, "😀" * 63]


# --- over real HTTP: any other value too long is refused, nothing stored ---------------------


def _refused_cases(queue: IppQueue) -> list[tuple[str, codec.IppMessage, str]]:
    pdf = make_pdf("refused")
    fmt = attr("document-format", Tag.MIME_MEDIA_TYPE, "application/pdf")

    def print_job(*ops: Attribute, job: list[Attribute] | None = None) -> codec.IppMessage:
        return queue.request(Operation.PRINT_JOB, fmt, *ops, job=job or HOLD, data=pdf)

    long_user = queue.request(Operation.PRINT_JOB, fmt, job=HOLD, data=pdf)
    long_user.groups[0].set(attr("requesting-user-name", Tag.NAME, "ä" * 150))
    return [
        ("requesting-user-name of 150 two-octet characters", long_user, "requesting-user-name"),
        (
            "a 1101-octet text",
            print_job(job=[*HOLD, attr("job-message-to-operator", Tag.TEXT, "€" * 367)]),
            "job-message-to-operator",
        ),
        (
            "a 256-octet keyword",
            print_job(job=[attr("job-hold-until", Tag.KEYWORD, "indefinite" + "x" * 246)]),
            "job-hold-until",
        ),
        (
            "a 1024-octet uri",
            print_job(attr("job-uuid", Tag.URI, "urn:uuid:" + "0" * 1015)),
            "job-uuid",
        ),
        (
            "a 256-octet mimeMediaType",
            queue.request(
                Operation.PRINT_JOB,
                attr("document-format", Tag.MIME_MEDIA_TYPE, "application/" + "p" * 244),
                data=pdf,
            ),
            "document-format",
        ),
        (
            "a Create-Job with a 1100-octet textWithLanguage",
            queue.request(
                Operation.CREATE_JOB,
                job=[
                    attr(
                        "job-message-to-operator",
                        Tag.TEXT_WITH_LANGUAGE,
                        StringWithLanguage("en", "ж" * 550),
                    )
                ],
            ),
            "job-message-to-operator",
        ),
        (
            "a Get-Jobs with a 256-octet which-jobs",
            queue.request(Operation.GET_JOBS, attr("which-jobs", Tag.KEYWORD, "a" * 256)),
            "which-jobs",
        ),
    ]


async def test_values_over_their_limit_are_refused_and_nothing_is_stored(
    ipp_app: tuple[Appliance, IppQueue],
) -> None:
    """A requesting-user-name over 255 octets (but 150 characters), a 1101-octet text, a
    256-octet keyword, a 1024-octet uri, a 256-octet mimeMediaType (Print-Job, Create-Job,
    Get-Jobs): each answers client-error-request-value-too-long (0x0409) naming that
    attribute, alone, in the unsupported-attributes group (its value cut to the limit), and
    stores nothing: no job row, no event, no spool file, no Create-Job waiting."""
    app, queue = ipp_app
    before = app.snapshot()
    listed = await _listed_names(queue)
    for label, request, name in _refused_cases(queue):
        answer = await queue.send(request)
        assert answer.status_code == TOO_LONG, (label, hex(answer.status_code))
        assert name in status_message(answer), label
        assert "RFC 8011 §5.1" in status_message(answer)
        unsupported = answer.group(GroupTag.UNSUPPORTED)
        assert unsupported is not None, label
        assert unsupported.names() == [name], label
        assert not answer.groups_of(GroupTag.JOB), label
        _all_within(answer)
    assert app.snapshot() == before
    assert await _listed_names(queue) == listed  # no Create-Job waits for a document


async def test_values_at_their_limit_are_taken(ipp_app: tuple[Appliance, IppQueue]) -> None:
    """The same attributes at exactly their limit in octets are taken: a 255-octet owner of
    128 characters, a 1023-octet text of 341 three-octet characters, a 255-octet job-name;
    one job each, stored as sent."""
    app, queue = ipp_app
    before = app.snapshot()
    owner = "ä" * 127 + "a"
    at_limit = queue.request(
        Operation.PRINT_JOB,
        attr("document-format", Tag.MIME_MEDIA_TYPE, "application/pdf"),
        attr("job-name", Tag.NAME, "n" * 255),
        job=[*HOLD, attr("job-message-to-operator", Tag.TEXT, "€" * 341)],
        data=make_pdf("at"),
    )
    at_limit.groups[0].set(attr("requesting-user-name", Tag.NAME, owner))
    answer = await queue.send(at_limit)
    assert answer.status_code == Status.SUCCESSFUL_OK, status_message(answer)
    job = await _rest_job(app, edgeprint_id(answer))
    assert (job["owner"], job["state"]) == (owner, "HELD")
    echoed = await queue.job_attributes(job_id(answer))
    assert echoed.value(GroupTag.JOB, "job-name") == "n" * 255
    assert echoed.value(GroupTag.JOB, "job-originating-user-name") == owner
    assert len(app.snapshot()["jobs"]) == len(before["jobs"]) + 1


# --- CUPS's ipptool: a real client, which also checks every answer against RFC 8011 -------

_IPPTOOL_TEST = """
{
  NAME "Print-Job with a job-name of 150 two-octet characters (300 octets)"
  OPERATION Print-Job
  GROUP operation-attributes-tag
  ATTR charset attributes-charset utf-8
  ATTR naturalLanguage attributes-natural-language en
  ATTR uri printer-uri $uri
  ATTR name requesting-user-name ann
  ATTR name job-name "LONG_NAME"
  ATTR mimeMediaType document-format application/pdf
  GROUP job-attributes-tag
  ATTR keyword job-hold-until indefinite
  FILE $filename
  STATUS successful-ok
  EXPECT job-id OF-TYPE integer WITH-VALUE >0
}
{
  NAME "Get-Job-Attributes echoes the job-name cut to 127 characters (254 octets)"
  OPERATION Get-Job-Attributes
  GROUP operation-attributes-tag
  ATTR charset attributes-charset utf-8
  ATTR naturalLanguage attributes-natural-language en
  ATTR uri printer-uri $uri
  ATTR integer job-id $job-id
  ATTR name requesting-user-name ann
  STATUS successful-ok
  EXPECT job-name OF-TYPE name WITH-VALUE "CUT_NAME"
}
{
  NAME "Print-Job with a requesting-user-name of 300 octets is refused"
  OPERATION Print-Job
  GROUP operation-attributes-tag
  ATTR charset attributes-charset utf-8
  ATTR naturalLanguage attributes-natural-language en
  ATTR uri printer-uri $uri
  ATTR name requesting-user-name "LONG_USER"
  ATTR mimeMediaType document-format application/pdf
  FILE $filename
  STATUS client-error-request-value-too-long
  EXPECT requesting-user-name IN-GROUP unsupported-attributes-tag
}
{
  NAME "Get-Jobs lists every job's name within RFC 8011's limits"
  OPERATION Get-Jobs
  GROUP operation-attributes-tag
  ATTR charset attributes-charset utf-8
  ATTR naturalLanguage attributes-natural-language en
  ATTR uri printer-uri $uri
  ATTR keyword which-jobs all
  ATTR keyword requested-attributes job-id,job-name,job-state-message
  STATUS successful-ok
  EXPECT job-name OF-TYPE name
}
"""


@pytest.mark.usefixtures("ipptool")
async def test_ipptool_sees_the_cut_and_the_refusal_and_every_answer_valid(
    ipp_app: tuple[Appliance, IppQueue], tmp_path: Path
) -> None:
    """CUPS's ipptool, which checks every attribute of every answer against RFC 8011's
    syntaxes and lengths: a 300-octet job-name is taken and echoed cut to 127 characters,
    a 300-octet requesting-user-name is refused (0x0409, in unsupported-attributes), and
    Get-Jobs over a job titled with 200 emoji (800 octets) through the API is valid; the
    store holds the two jobs and nothing of the refused one."""
    app, queue = ipp_app
    titled = await app.submit(
        {"owner": "ann", "pool": "lobby", "title": "😀" * 200}, key="key-emoji"
    )
    assert titled.status == 201
    before = len(app.snapshot()["jobs"])
    script = tmp_path / "limits.test"
    script.write_text(
        _IPPTOOL_TEST.replace("LONG_NAME", "é" * 150)
        .replace("CUT_NAME", "é" * 127)
        .replace("LONG_USER", "ä" * 150)
    )
    document = tmp_path / "badge.pdf"
    document.write_bytes(make_pdf("ipptool"))
    proc = await asyncio.create_subprocess_exec(
        "ipptool",
        "-t",
        "-T",
        "30",
        "-f",
        str(document),
        queue.uri,
        str(script),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 120)
    text = out.decode(errors="replace")
    assert proc.returncode == 0, text
    assert text.count("[PASS]") == 4, text
    assert len(app.snapshot()["jobs"]) == before + 1
