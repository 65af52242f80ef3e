"""The IPP codec (edgeprint.ipp.codec): exact round trips, pyipp agrees, bad bytes are typed."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyipp import parser as pyipp_parser

from edgeprint import errors
from edgeprint.ipp import codec
from edgeprint.ipp.codec import IppMessage
from edgeprint.ipp.names import OUT_OF_BAND, GroupTag, Operation, Status, Tag
from edgeprint.ipp.values import (
    Attribute,
    AttributeGroup,
    DateTime,
    Range,
    Resolution,
    StringWithLanguage,
    Value,
    attr,
)
from testbed.pdfs import make_pdf
from testbed.rig import Rig
from tests.rig_fixtures import require_ippeveprinter

# --- messages from a real printer ------------------------------------------------------


async def _exchange(
    session: aiohttp.ClientSession, uri: str, message: IppMessage
) -> tuple[bytes, bytes]:
    body = message.encode()
    url = uri.replace("ipp://", "http://", 1)
    async with session.post(url, data=body, headers={"Content-Type": "application/ipp"}) as r:
        assert r.status == 200
        return body, await r.read()


async def _capture(uri: str) -> list[tuple[str, bytes]]:
    """Requests and answers of a real ippeveprinter: every operation edgeprint uses."""
    out: list[tuple[str, bytes]] = []
    user = attr("requesting-user-name", Tag.NAME, "codec-test")
    async with aiohttp.ClientSession() as s:

        async def ask(label: str, message: IppMessage) -> IppMessage:
            req, resp = await _exchange(s, uri, message)
            out.append((f"{label} request", req))
            out.append((f"{label} response", resp))
            return codec.parse(resp)

        await ask(
            "Get-Printer-Attributes",
            codec.request(Operation.GET_PRINTER_ATTRIBUTES, 1, printer_uri=uri),
        )
        created = await ask(
            "Create-Job",
            codec.request(
                Operation.CREATE_JOB,
                2,
                printer_uri=uri,
                attributes=[user, attr("job-name", Tag.NAME, "ep-codec-ünï")],
            ),
        )
        job_id = created.value(GroupTag.JOB, "job-id")
        assert isinstance(job_id, int)
        job = [attr("job-id", Tag.INTEGER, job_id), user]
        await ask(
            "Send-Document",
            codec.request(
                Operation.SEND_DOCUMENT,
                3,
                printer_uri=uri,
                attributes=[
                    *job,
                    attr("document-format", Tag.MIME_MEDIA_TYPE, "application/pdf"),
                    attr("last-document", Tag.BOOLEAN, True),
                ],
                data=make_pdf("codec"),
            ),
        )
        await ask(
            "Get-Job-Attributes",
            codec.request(Operation.GET_JOB_ATTRIBUTES, 4, printer_uri=uri, attributes=job),
        )
        await ask(
            "Get-Jobs",
            codec.request(
                Operation.GET_JOBS,
                5,
                printer_uri=uri,
                attributes=[
                    attr("which-jobs", Tag.KEYWORD, "all"),
                    attr(
                        "requested-attributes",
                        Tag.KEYWORD,
                        "job-id",
                        "job-name",
                        "job-state",
                        "job-state-reasons",
                    ),
                ],
            ),
        )
        await ask(
            "Get-Job-Attributes of no job",
            codec.request(
                Operation.GET_JOB_ATTRIBUTES,
                6,
                printer_uri=uri,
                attributes=[attr("job-id", Tag.INTEGER, 99999)],
            ),
        )
    return out


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[tuple[str, bytes]]]:
    """Messages exchanged with one real printer (captured once for the module)."""
    require_ippeveprinter()
    rig = Rig(Path(tmp_path_factory.mktemp("codec")) / "rig")
    rig.start(1)
    try:
        yield asyncio.run(_capture(rig["printer-01"].uri))
    finally:
        rig.stop()


def test_real_printer_messages_round_trip_exactly(captured: list[tuple[str, bytes]]) -> None:
    """Every request sent to and answer received from a real ippeveprinter encodes back to its bytes."""
    assert len(captured) == 12
    for label, raw in captured:
        assert codec.parse(raw).encode() == raw, label


def test_real_printer_answers_hold_what_the_printer_said(captured: list[tuple[str, bytes]]) -> None:
    """The parsed answers carry typed values: collections, ranges, resolutions, dateTimes, enums, out-of-band."""
    answers = dict(captured)
    attrs = codec.parse(answers["Get-Printer-Attributes response"])
    assert attrs.status_code == Status.SUCCESSFUL_OK
    assert attrs.request_id == 1
    printer = GroupTag.PRINTER
    assert attrs.value(printer, "copies-supported") == Range(1, 999)
    assert attrs.value(printer, "printer-resolution-default") == Resolution(600, 600, 3)
    assert attrs.get(printer, "printer-geo-location") is not None
    assert attrs.get(printer, "printer-geo-location").tag == Tag.UNKNOWN  # type: ignore[union-attr]
    when = attrs.value(printer, "printer-current-time")
    assert isinstance(when, DateTime)
    assert abs(when.to_datetime() - datetime.now(UTC)) < timedelta(minutes=5)
    media_col = attrs.value(printer, "media-col-default")
    assert isinstance(media_col, list)
    size = next(m for m in media_col if m.name == "media-size").value
    assert [m.name for m in size] == ["x-dimension", "y-dimension"]
    ops = attrs.get(printer, "operations-supported")
    assert ops is not None
    assert {v.tag for v in ops.values} == {Tag.ENUM}
    assert Operation.CREATE_JOB in [v.value for v in ops.values]

    created = codec.parse(answers["Create-Job response"])
    assert created.value(GroupTag.JOB, "job-state") in (3, 4, 5)
    missing = codec.parse(answers["Get-Job-Attributes of no job response"])
    assert missing.status_code == Status.CLIENT_ERROR_NOT_FOUND
    assert isinstance(missing.value(GroupTag.OPERATION, "status-message"), str)
    jobs = codec.parse(answers["Get-Jobs response"])
    assert set(jobs.groups_of(GroupTag.JOB)[0].names()) == {
        "job-id",
        "job-name",
        "job-state",
        "job-state-reasons",
    }
    send = codec.parse(answers["Send-Document request"])
    assert send.data == make_pdf("codec")


def _pyipp_value(v: Value) -> Any:
    """What pyipp's parser makes of one value."""
    x = v.value
    if isinstance(x, DateTime):
        return x.to_datetime()
    if isinstance(x, Range):
        return [x.lower, x.upper]
    if isinstance(x, Resolution):
        return (x.x, x.y, x.units)
    if isinstance(x, StringWithLanguage):
        return x.text
    if isinstance(x, list):
        members: dict[str, Any] = {}
        for m in x:
            members[m.name] = _pyipp_value(m.values[-1])
        return members
    if isinstance(x, bytes):
        if v.tag == 0x43 and not x:
            return None
        return x.decode("utf-8", "ignore")
    return x


def _pyipp_shape(message: IppMessage) -> dict[str, Any]:
    """Our message folded the way pyipp folds one (groups by kind, attributes by name)."""
    keys = {
        GroupTag.OPERATION: "operation-attributes",
        GroupTag.JOB: "jobs",
        GroupTag.PRINTER: "printers",
        GroupTag.UNSUPPORTED: "unsupported-attributes",
    }
    shape: dict[str, Any] = {k: [] for k in keys.values()}
    for g in message.groups:
        folded = {}
        for a in g.attributes:
            values = [_pyipp_value(v) for v in a.values]
            folded[a.name] = values[0] if len(values) == 1 else values
        if folded:
            shape[keys[GroupTag(g.tag)]].append(folded)
    shape["operation-attributes"] = shape["operation-attributes"][0]
    return shape


def test_pyipp_reads_the_same_attributes(captured: list[tuple[str, bytes]]) -> None:
    """pyipp's parser and ours agree on every attribute of the real printer's answers."""
    for label, raw in captured:
        if not label.endswith("response"):
            continue
        ours = codec.parse(raw)
        theirs = pyipp_parser.parse(raw)
        assert theirs["status-code"] == ours.status_code, label
        assert theirs["request-id"] == ours.request_id, label
        shape = _pyipp_shape(ours)
        for key in ("operation-attributes", "jobs", "printers", "unsupported-attributes"):
            assert shape[key] == theirs[key], (label, key)


def test_a_proxy_can_rewrite_a_printer_answer(captured: list[tuple[str, bytes]]) -> None:
    """get/set/remove rewrite an answer (job-name, job-k-octets, dropped jobs, status) and pyipp reads the result."""
    answers = dict(captured)
    jobs = codec.parse(answers["Get-Jobs response"])
    first = jobs.groups_of(GroupTag.JOB)[0]
    before = first.names()
    first.set(attr("job-name", Tag.NAME, "renamed"))
    first.set(attr("job-k-octets", Tag.INTEGER, 42))
    assert first.names()[: len(before)] == before  # replaced in place
    assert first.names()[-1] == "job-k-octets"  # added at the end
    jobs.status_code = Status.SUCCESSFUL_OK_IGNORED_OR_SUBSTITUTED_ATTRIBUTES
    theirs = pyipp_parser.parse(jobs.encode())
    assert theirs["status-code"] == 1
    assert theirs["jobs"][0]["job-name"] == "renamed"
    assert theirs["jobs"][0]["job-k-octets"] == 42

    jobs.groups = [g for g in jobs.groups if g.tag != GroupTag.JOB]
    assert pyipp_parser.parse(jobs.encode())["jobs"] == []

    attrs = codec.parse(answers["Get-Printer-Attributes response"])
    assert attrs.remove(GroupTag.PRINTER, "printer-geo-location")
    assert not attrs.remove(GroupTag.PRINTER, "printer-geo-location")
    assert attrs.get(GroupTag.PRINTER, "printer-geo-location") is None
    assert codec.parse(attrs.encode()).get(GroupTag.PRINTER, "printer-geo-location") is None


# --- generated messages --------------------------------------------------------------

_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
_int32 = st.integers(-(2**31), 2**31 - 1)


def _plain_values() -> st.SearchStrategy[Value]:
    return st.one_of(
        st.builds(Value, st.sampled_from([Tag.INTEGER, Tag.ENUM]), _int32),
        st.builds(Value, st.just(Tag.BOOLEAN), st.booleans()),
        st.builds(
            Value,
            st.sampled_from(
                [
                    Tag.TEXT,
                    Tag.NAME,
                    Tag.KEYWORD,
                    Tag.URI,
                    Tag.URI_SCHEME,
                    Tag.CHARSET,
                    Tag.NATURAL_LANGUAGE,
                    Tag.MIME_MEDIA_TYPE,
                ]
            ),
            _text,
        ),
        st.builds(Value, st.just(Tag.OCTET_STRING), st.binary(max_size=12)),
        st.builds(Value, st.sampled_from(sorted(OUT_OF_BAND)), st.just(b"")),
        st.builds(Value, st.just(Tag.RANGE_OF_INTEGER), st.builds(Range, _int32, _int32)),
        st.builds(
            Value,
            st.just(Tag.RESOLUTION),
            st.builds(Resolution, _int32, _int32, st.integers(-128, 127)),
        ),
        st.builds(
            Value,
            st.sampled_from([Tag.TEXT_WITH_LANGUAGE, Tag.NAME_WITH_LANGUAGE]),
            st.builds(StringWithLanguage, _text, _text),
        ),
        st.builds(
            Value,
            st.just(Tag.DATE_TIME),
            st.builds(
                DateTime,
                st.integers(0, 65535),
                *[st.integers(0, 255)] * 6,
                st.sampled_from(["+", "-"]),
                st.integers(0, 255),
                st.integers(0, 255),
            ),
        ),
    )


_names = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=10)


def _values(depth: int) -> st.SearchStrategy[Value]:
    if depth == 0:
        return _plain_values()
    members = st.lists(
        st.builds(Attribute, _names, st.lists(_values(depth - 1), min_size=1, max_size=3)),
        max_size=3,
    )
    return st.one_of(_plain_values(), st.builds(Value, st.just(Tag.BEG_COLLECTION), members))


_groups = st.lists(
    st.builds(
        AttributeGroup,
        st.sampled_from(list(GroupTag)),
        st.lists(
            st.builds(Attribute, _names, st.lists(_values(2), min_size=1, max_size=3)), max_size=4
        ),
    ),
    max_size=4,
)
_messages = st.builds(
    IppMessage,
    st.tuples(st.integers(0, 255), st.integers(0, 255)),
    st.integers(0, 0xFFFF),
    _int32,
    _groups,
    st.binary(max_size=16),
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(_messages)
def test_generated_messages_round_trip(message: IppMessage) -> None:
    """Any message built from every value kind (nested collections too) parses back equal and re-encodes to the same bytes."""
    raw = message.encode()
    back = codec.parse(raw)
    assert back == message
    assert back.encode() == raw


# deadline=None: it parses every prefix of a message; on a shared CPU that takes > 200 ms now and then
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_messages)
def test_every_truncation_of_a_generated_message_is_a_parse_error(message: IppMessage) -> None:
    """A generated message cut before its end-of-attributes tag raises IppParseError (truncated) at every byte boundary."""
    message.data = b""
    raw = message.encode()
    for cut in range(len(raw)):
        with pytest.raises(errors.IppParseError) as caught:
            codec.parse(raw[:cut])
        assert caught.value.truncated


def test_every_truncation_of_a_real_answer_is_a_parse_error(
    captured: list[tuple[str, bytes]],
) -> None:
    """Each real printer answer cut at every byte boundary raises IppParseError, never another exception."""
    for label, raw in captured:
        if not label.endswith("response"):
            continue
        for cut in range(len(raw)):
            with pytest.raises(errors.IppParseError) as caught:
                codec.parse(raw[:cut])
            assert caught.value.truncated, (label, cut)


@settings(max_examples=400)
@given(st.data())
def test_corrupted_bytes_parse_exactly_or_raise_a_parse_error(data: st.DataObject) -> None:
    """A valid message with bytes overwritten either parses (and round-trips) or raises IppParseError."""
    raw = bytearray(data.draw(_messages).encode())
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at] = data.draw(st.integers(0, 255))
    try:
        parsed = codec.parse(bytes(raw))
    except errors.IppParseError:
        return
    assert parsed.encode() == bytes(raw)


@given(st.binary(max_size=64))
def test_random_bytes_parse_exactly_or_raise_a_parse_error(raw: bytes) -> None:
    """Arbitrary bytes either parse (and round-trip) or raise IppParseError."""
    try:
        parsed = codec.parse(raw)
    except errors.IppParseError:
        return
    assert parsed.encode() == raw


# --- malformed input, case by case --------------------------------------------------------

_HEADER = b"\x02\x00\x00\x0b\x00\x00\x00\x01"


def _value(tag: int, name: bytes, value: bytes) -> bytes:
    return (
        bytes([tag]) + len(name).to_bytes(2, "big") + name + len(value).to_bytes(2, "big") + value
    )


@pytest.mark.parametrize(
    ("body", "offset", "expected"),
    [
        (b"", 8, "a delimiter or value tag (end-of-attributes-tag 0x03 missing)"),
        (_value(0x21, b"n", b"\x00\x00\x00\x01") + b"\x03", 8, "an attribute group tag"),
        (b"\x01" + _value(0x21, b"n", b"\x00\x01") + b"\x03", 13, "value-length 4 for an integer"),
        (b"\x01" + _value(0x22, b"n", b"\x02") + b"\x03", 15, "boolean 0 or 1"),
        (
            b"\x01" + _value(0x31, b"n", b"\x00" * 8 + b"x\x00\x00") + b"\x03",
            23,
            "dateTime direction",
        ),
        (b"\x01" + _value(0x44, b"", b"x") + b"\x03", 10, "an attribute name"),
        (b"\x01" + _value(0x4A, b"n", b"x") + b"\x03", 9, "only inside a collection"),
        (b"\x01" + _value(0x37, b"n", b"") + b"\x03", 9, "only inside a collection"),
        (b"\x01" + _value(0x34, b"c", b"") + b"\x03", 15, "endCollection before the next group"),
        (
            b"\x01" + _value(0x34, b"c", b"") + _value(0x44, b"", b"x"),
            15,
            "memberAttrName before a member value",
        ),
        (
            b"\x01" + _value(0x34, b"c", b"") + _value(0x4A, b"", b"m") + _value(0x37, b"", b""),
            21,
            "a value for member 'm'",
        ),
        (b"\x01" + _value(0x36, b"n", b"\x00\x02en\x00\x05ab"), 21, "text (5 bytes; only 2 left)"),
        (
            b"\x01" + _value(0x36, b"n", b"\x00\x02en\x00\x01ab") + b"\x03",
            22,
            "the end of a string-with-language value",
        ),
        (b"\x00\x03", 8, "0x00 is reserved"),
        (b"\x01" + _value(0x7F, b"n", b"\x00\x00\x00\x80") + b"\x03", 9, "extension tag"),
    ],
)
def test_malformed_messages_name_the_offset_and_what_was_expected(
    body: bytes, offset: int, expected: str
) -> None:
    """Each kind of malformed message raises IppParseError with the offset of the fault and what belonged there."""
    with pytest.raises(errors.IppParseError) as caught:
        codec.parse(_HEADER + body)
    assert caught.value.offset == offset
    assert caught.value.truncated == (
        offset == len(_HEADER + body)
    )  # only the empty body ends early
    assert expected in caught.value.expected
    assert str(caught.value).startswith(f"malformed IPP message at byte {offset}: expected ")


def test_deeply_nested_collections_are_refused() -> None:
    """More than 32 nested collections raise IppParseError instead of exhausting the stack."""
    nest = _value(0x34, b"c", b"") + (_value(0x4A, b"", b"m") + _value(0x34, b"", b"")) * 40
    with pytest.raises(errors.IppParseError, match="at most 32 nested collections"):
        codec.parse(_HEADER + b"\x01" + nest)


@pytest.mark.parametrize(
    ("value", "match"),
    [
        (Value(Tag.INTEGER, 2**31), "does not fit in 4 signed bytes"),
        (Value(Tag.TEXT, "x" * 70_000), "value of 70000 bytes does not fit"),
        (Value(Tag.INTEGER, "7"), "no encoding for a str under tag 0x21"),
        (Value(Tag.BEG_COLLECTION, b""), "must be a list of attributes"),
    ],
)
def test_unencodable_values_raise_an_encode_error(value: Value, match: str) -> None:
    """A value that cannot be put in IPP bytes raises IppEncodeError naming why."""
    message = codec.response(Status.SUCCESSFUL_OK, 1)
    message.set(GroupTag.JOB, Attribute("x", [value]))
    with pytest.raises(errors.IppEncodeError, match=match):
        message.encode()


def test_builders_put_the_operation_attributes_in_rfc_order() -> None:
    """request() starts with attributes-charset, attributes-natural-language, printer-uri; response() with status-message after them."""
    req = codec.request(
        Operation.GET_JOBS,
        9,
        printer_uri="ipp://h/ipp/print",
        attributes=[attr("which-jobs", Tag.KEYWORD, "all")],
    )
    ops = req.group(GroupTag.OPERATION)
    assert ops is not None
    assert ops.names() == [
        "attributes-charset",
        "attributes-natural-language",
        "printer-uri",
        "which-jobs",
    ]
    resp = codec.response(
        Status.CLIENT_ERROR_NOT_FOUND, 9, version=(1, 1), status_message="no such job"
    )
    raw = resp.encode()
    assert raw[:8] == b"\x01\x01\x04\x06\x00\x00\x00\x09"
    assert pyipp_parser.parse(raw)["operation-attributes"]["status-message"] == "no such job"


def test_datetime_converts_both_ways() -> None:
    """DateTime keeps tenths of a second and the UTC offset's direction both ways."""
    when = datetime(
        2026, 12, 1, 9, 30, 15, 700_000, tzinfo=timezone(-timedelta(hours=5, minutes=30))
    )
    dt = DateTime.from_datetime(when)
    assert (dt.deci_seconds, dt.direction, dt.utc_hours, dt.utc_minutes) == (7, "-", 5, 30)
    assert dt.to_datetime() == when
