"""Hypothesis fuzzing of the request parsers, over real HTTP against a live appliance.

Hostile raw bodies (random bytes; valid multipart mutated: truncated, boundaries
mangled, parts duplicated, dropped or unknown, odd part headers; random JSON for
the metadata and the release body; odd unicode) are sent with explicit
Content-Type headers. Every answer must come within :data:`ANSWER_S`, be 2xx or
4xx (never 5xx), every 4xx an ``application/problem+json`` with an
``urn:edgeprint:problem:`` type; and the store must stay consistent: a 4xx
stores nothing (job rows, spool files, nothing left in ``spool/tmp``), a 201
exactly one job and its document.

One appliance per test function; the examples of a test share it. The tests are
synchronous ``@given`` tests: the appliance runs on its own loop thread
(tests/live.py) and each request is sent there.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edgeprint.ipp import codec
from edgeprint.ipp.names import GroupTag, Operation, Status, Tag
from edgeprint.ipp.values import Attribute, AttributeGroup, Value, attr
from edgeprint.server import DB_FILE
from testbed.pdfs import make_pdf
from tests.conftest import KIOSK_TOKEN
from tests.live import Live, live_appliance, unlimited_config
from tests.polling import eventually_sync

PROBLEM_TYPE = "urn:edgeprint:problem:"
#: Every answer within this (no hang on any input).
ANSWER_S = 5.0
MAX_DOC = 32 * 1024
MAX_META = 1024
PDF = make_pdf("fuzz")
BIG_PDF = make_pdf("fuzz big", pad_to=MAX_DOC + 4096)
BOUNDARY = b"edgeprint-fuzz-0d9c"
GOOD_META: dict[str, Any] = {"owner": "ann", "pool": "lobby"}

FUZZ = settings(
    max_examples=500,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[
        # One appliance per test function, shared by its examples: on purpose.
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
)


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    cfg = unlimited_config(
        tmp_path / "data", max_document_bytes=MAX_DOC, max_metadata_bytes=MAX_META
    )
    with live_appliance(cfg) as running:
        yield running


# --- the store: what a request may change --------------------------------------------------


@dataclass(frozen=True)
class Stored:
    jobs: int
    documents: int
    staging: list[str]


def stored(live: Live) -> Stored:
    data_dir = live.appliance.data_dir
    with contextlib.closing(sqlite3.connect(data_dir / DB_FILE)) as db:
        (jobs,) = db.execute("SELECT count(*) FROM jobs").fetchone()
    spool = data_dir / "spool"
    tmp = spool / "tmp"
    documents = sum(1 for p in spool.rglob("*") if p.is_file() and tmp not in p.parents)
    staging = sorted(p.name for p in tmp.rglob("*") if p.is_file()) if tmp.exists() else []
    return Stored(jobs, documents, staging)


# --- sending ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    status: int
    content_type: str
    body: bytes
    headers: dict[str, str]


async def _send(live: Live, path: str, body: bytes, headers: dict[str, str]) -> Answer:
    http = live.appliance.http
    async with (
        asyncio.timeout(ANSWER_S),
        http.post(
            f"{live.url}{path}",
            data=body,
            headers=headers,
            skip_auto_headers=("Content-Type",),
        ) as resp,
    ):
        raw = await resp.read()
        return Answer(resp.status, resp.content_type, raw, dict(resp.headers))


def send(live: Live, path: str, body: bytes, headers: dict[str, str]) -> Answer:
    """POST ``body`` with exactly ``headers`` (plus Content-Length); the answer, checked."""
    try:
        answer = live.run(_send(live, path, body, headers), timeout=ANSWER_S + 5)
    except TimeoutError:
        pytest.fail(f"no answer within {ANSWER_S} s: POST {path} {headers!r} {body[:200]!r}")
    check_answer(answer)
    return answer


def check_answer(answer: Answer) -> None:
    assert answer.status < 500, (answer.status, answer.body[:500])
    assert 200 <= answer.status < 300 or 400 <= answer.status < 500, answer.status
    assert answer.headers.get("X-Correlation-ID"), answer.headers
    if answer.status >= 400:
        assert answer.content_type == "application/problem+json", (answer, answer.body[:300])
        problem = json.loads(answer.body)
        assert isinstance(problem, dict), problem
        assert isinstance(problem.get("type"), str), problem
        assert problem["type"].startswith(PROBLEM_TYPE), problem
        assert problem["status"] == answer.status, problem
        assert isinstance(problem.get("detail"), str), problem
    else:
        assert answer.content_type == "application/json", answer
        json.loads(answer.body)


def check_store(live: Live, before: Stored, answer: Answer) -> None:
    after = stored(live)
    assert after.staging == [], f"left in spool/tmp after {answer.status}: {after.staging}"
    if answer.status == 201:
        assert (after.jobs, after.documents) == (before.jobs + 1, before.documents + 1), answer
    else:
        assert (after.jobs, after.documents) == (before.jobs, before.documents), (
            answer.status,
            answer.body[:300],
        )


# --- strategies ---------------------------------------------------------------------------

_keys = itertools.count()


def fresh_key() -> str:
    return f"fuzz-key-{next(_keys):08d}"


#: Odd unicode: controls, bidi and invisible characters, surrogates (escaped in JSON),
#: combining marks, astral planes, NUL.
odd_text = st.one_of(
    st.text(max_size=40),
    st.text(st.characters(codec="utf-8"), max_size=40),
    st.text(st.characters(categories=["Cc", "Cf", "Cs", "Co", "Mn", "Zl", "Zp"]), max_size=10),
    st.sampled_from(["", " ", "\u202eevil", "a\u200bb", "\x00", "\ud800", "😀" * 50, "x" * 300]),
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | odd_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(odd_text, inner, max_size=4),
    max_leaves=12,
)

_META_KEYS = ["owner", "printer", "pool", "priority", "hold", "copies", "release_pin"]

#: Metadata-shaped objects: the known keys (and others) with valid or hostile values.
metadata_objects = st.fixed_dictionaries(
    {},
    optional={
        "owner": st.one_of(st.just("ann"), odd_text, json_values),
        "printer": st.sampled_from(["printer-01", "printer-03", "nope", "", "PRINTER-01"])
        | json_values,
        "pool": st.sampled_from(["lobby", "nope", ""]) | json_values,
        "priority": st.integers(-(2**70), 2**70) | json_values,
        "hold": st.booleans() | json_values,
        "copies": st.integers(-5, 200) | json_values,
        "release_pin": st.sampled_from(["1234", "12", "123456789012345678", "abcd"]) | json_values,
        "extra": json_values,
    },
)


def _dump(value: Any) -> bytes:
    return json.dumps(value, allow_nan=True).encode()


metadata_bytes = st.one_of(
    st.just(_dump(GOOD_META)),
    metadata_objects.map(_dump),
    json_values.map(_dump),
    odd_text.map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.binary(max_size=64),
    st.just(b"x" * (MAX_META + 1)),
    st.just(_dump(GOOD_META)[:-1]),
)

document_bytes = st.one_of(
    st.just(PDF),
    st.just(PDF[: len(PDF) // 2]),
    st.just(BIG_PDF),
    st.just(b""),
    st.just(b"%PDF-1.7\n"),
    st.binary(max_size=256),
    st.binary(max_size=64).map(lambda b: b"%PDF-1.4\n" + b),
    st.tuples(st.integers(0, len(PDF) - 1), st.binary(min_size=1, max_size=8)).map(
        lambda t: PDF[: t[0]] + t[1] + PDF[t[0] + len(t[1]) :]
    ),
)

_header_names = st.sampled_from(
    [b"Content-Type", b"Content-Disposition", b"X-Odd", b"Content-Transfer-Encoding",
     b"Content-Length", b"content-disposition", b"Content-Type "]
)  # fmt: skip
_header_values = st.one_of(
    st.binary(max_size=40).map(lambda b: b.replace(b"\r", b"").replace(b"\n", b"")),
    st.sampled_from([b"base64", b"quoted-printable", b"0", b"999999999", b"", b"\xff\xfe"]),
    st.integers(1, 100_000).map(lambda n: b"a" * n),
)
_dispositions = {
    "metadata": [
        b'form-data; name="metadata"', b"form-data; name=metadata",
        b'form-data; name="metadata"; filename="m.json"',
        b"form-data; name*=UTF-8''metadata", b'attachment; name="metadata"',
        b'form-data; name="metadata"; name="document"', b'form-data; name="meta\\"data"',
        b"form-data", b'form-data; name=""',
    ],
    "document": [
        b'form-data; name="document"; filename="badge.pdf"', b'form-data; name="document"',
        b"form-data; name=document; filename*=UTF-8''b%C3%A4dge.pdf",
        b'form-data; name="document"; filename="\xff\xfe.pdf"',
    ],
}  # fmt: skip
_part_types = {
    "metadata": [b"application/json", b"application/json; charset=utf-8", b"text/plain", None,
                 b"application/json; charset=latin-1", b"garbage"],
    "document": [b"application/pdf", b"application/octet-stream", None, b"text/plain",
                 b"application/PDF", b"image/png", b"application/pdf; x=" + b"y" * 5000],
}  # fmt: skip


@dataclass
class Part:
    headers: list[tuple[bytes, bytes]]
    body: bytes

    def encode(self) -> bytes:
        head = b"".join(name + b": " + value + b"\r\n" for name, value in self.headers)
        return head + b"\r\n" + self.body


@st.composite
def parts(draw: st.DrawFn, name: str) -> Part:
    headers: list[tuple[bytes, bytes]] = []
    disposition = draw(st.sampled_from([*_dispositions[name], None]))
    if disposition is not None:
        headers.append((b"Content-Disposition", disposition))
    ctype = draw(st.sampled_from(_part_types[name]))
    if ctype is not None:
        headers.append((b"Content-Type", ctype))
    headers += draw(st.lists(st.tuples(_header_names, _header_values), max_size=2))
    headers = draw(st.permutations(headers))
    body = draw(metadata_bytes if name == "metadata" else document_bytes)
    return Part(list(headers), body)


def good_part(name: str, body: bytes) -> Part:
    ctype = b"application/json" if name == "metadata" else b"application/pdf"
    disposition = b'form-data; name="' + name.encode() + b'"'
    if name == "document":
        disposition += b'; filename="badge.pdf"'
    return Part([(b"Content-Disposition", disposition), (b"Content-Type", ctype)], body)


def encode_multipart(parts_: list[Part], boundary: bytes, *, close: bool = True) -> bytes:
    out = b"".join(b"--" + boundary + b"\r\n" + p.encode() + b"\r\n" for p in parts_)
    return out + (b"--" + boundary + b"--\r\n" if close else b"")


@dataclass(frozen=True)
class Submission:
    body: bytes
    content_type: str
    #: The document part's bytes as framed (before any mutation of the whole body).
    document: bytes
    #: The body stops before its closing delimiter: it can never be accepted.
    cut: bool
    #: No mutation of the framed body: a 201 must store exactly ``document``.
    pristine: bool


@st.composite
def mutated_multipart(draw: st.DrawFn) -> Submission:
    """A submission body and its Content-Type: mostly multipart, variously broken."""
    meta = draw(st.one_of(st.just(good_part("metadata", _dump(GOOD_META))), parts("metadata")))
    doc = draw(st.one_of(st.just(good_part("document", PDF)), parts("document")))
    found = [meta, doc]
    shape = draw(st.sampled_from(["as-is", "as-is", "as-is", "swap", "dup-meta", "dup-doc", "no-meta", "no-doc",
                                  "extra", "unnamed", "none", "nested"]))  # fmt: skip
    if shape == "swap":
        found = [doc, meta]
    elif shape == "dup-meta":
        found = [meta, doc, meta]
    elif shape == "dup-doc":
        found = [meta, doc, doc]
    elif shape == "no-meta":
        found = [doc]
    elif shape == "no-doc":
        found = [meta]
    elif shape == "extra":
        extra_name = draw(odd_text).encode("utf-8", "surrogatepass").replace(b'"', b"")
        extra = Part([(b"Content-Disposition", b'form-data; name="' + extra_name + b'"')], b"x")
        found.insert(draw(st.integers(0, 2)), extra)
    elif shape == "unnamed":
        found.insert(1, Part([(b"Content-Type", b"text/plain")], b"who am I"))
    elif shape == "none":
        found = []
    elif shape == "nested":
        inner = encode_multipart([meta, doc], b"inner-boundary")
        found = [Part([(b"Content-Disposition", b'form-data; name="metadata"'),
                       (b"Content-Type", b"multipart/mixed; boundary=inner-boundary")], inner)]  # fmt: skip

    boundary = draw(st.sampled_from([BOUNDARY, b"b" * 70, b"b" * 71, b"a'()+_,-./:=? z", b"x"]))
    close = draw(st.booleans())
    body = encode_multipart(found, boundary, close=close)
    cut = not close
    mutation = draw(
        st.sampled_from(["none", "none", "none", "truncate", "mangle", "lf", "insert", "nul"])
    )
    if mutation == "truncate" and body:
        at = draw(st.integers(0, len(body) - 1))
        cut = cut or at < len(body) - 2  # only the CRLF after the closing delimiter may go
        body = body[:at]
    elif mutation == "mangle":
        bad = draw(st.sampled_from([b"", b"-", boundary[:-1], boundary + b"x", b"\r\n"]))
        count = draw(st.integers(1, 3))
        body = body.replace(b"--" + boundary, b"--" + bad, count)
    elif mutation == "lf":
        body = body.replace(b"\r\n", b"\n")
    elif mutation == "insert" and body:
        at = draw(st.integers(0, len(body)))
        body = body[:at] + draw(st.binary(min_size=1, max_size=32)) + body[at:]
    elif mutation == "nul":
        body = body.replace(b"\r\n\r\n", b"\r\n\x00\r\n", 1)

    quoted = boundary.decode("latin-1")
    header_boundary = draw(st.sampled_from([quoted, quoted, f'"{quoted}"', "other", "", None]))
    ctype = "multipart/form-data"
    if header_boundary is not None:
        ctype += f"; boundary={header_boundary}"
    ctype = draw(st.sampled_from([ctype, ctype, "multipart/mixed; boundary=" + quoted,
                                  ctype + "; charset=utf-8", "MULTIPART/FORM-DATA; boundary="
                                  + quoted]))  # fmt: skip
    return Submission(body, ctype, doc.body, cut, mutation == "none")


#: What a client can put in a header value: no controls (aiohttp refuses to send them).
latin1_text = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0x7E)
    | st.characters(min_codepoint=0xA0, max_codepoint=0xFF),
    max_size=60,
)

#: Content-Type header values for random bodies.
content_types = st.one_of(
    st.sampled_from([
        "multipart/form-data; boundary=" + BOUNDARY.decode(), "multipart/form-data",
        "multipart/form-data; boundary=", "multipart/form-data; boundary=\"unterminated",
        "application/json", "application/pdf", "text/plain", "application/octet-stream",
        "", ";", "multipart/", "multipart/form-data; boundary=" + "z" * 300,
    ]),
    latin1_text,
)  # fmt: skip


def submit_headers(ctype: str | None, key: str | None) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {KIOSK_TOKEN}"}
    if ctype is not None:
        headers["Content-Type"] = ctype
    if key is not None:
        headers["Idempotency-Key"] = key
    return headers


# --- the tests ----------------------------------------------------------------------------


@FUZZ
@given(body=st.binary(max_size=4096), ctype=st.none() | content_types)
def test_submit_random_bytes(live: Live, body: bytes, ctype: str | None) -> None:
    before = stored(live)
    answer = send(live, "/v1/jobs", body, submit_headers(ctype, fresh_key()))
    assert answer.status >= 400, answer
    check_store(live, before, answer)


@FUZZ
@given(
    sub=mutated_multipart(),
    key=st.one_of(
        st.builds(fresh_key),
        st.builds(fresh_key),
        st.builds(fresh_key),
        st.sampled_from([None, "short", "fuzz-key-00000000", "key with spaces"]),
    ),
)
def test_submit_mutated_multipart(live: Live, sub: Submission, key: str | None) -> None:
    before = stored(live)
    answer = send(live, "/v1/jobs", sub.body, submit_headers(sub.content_type, key))
    check_store(live, before, answer)
    if answer.status == 201:
        assert not sub.cut, "a body cut off before its closing delimiter was accepted"
        if sub.pristine:
            document = json.loads(answer.body)["document"]
            assert document["sha256"] == hashlib.sha256(sub.document).hexdigest()
            assert document["bytes"] == len(sub.document)


@FUZZ
@given(
    meta=st.one_of(metadata_objects.map(_dump), metadata_objects.map(_dump), metadata_bytes),
    doc=st.one_of(st.just(PDF), document_bytes),
)
def test_submit_metadata_and_document(live: Live, meta: bytes, doc: bytes) -> None:
    """Well-framed multipart, hostile content: the parsers and validators behind the framing."""
    body = encode_multipart([good_part("metadata", meta), good_part("document", doc)], BOUNDARY)
    ctype = "multipart/form-data; boundary=" + BOUNDARY.decode()
    before = stored(live)
    answer = send(live, "/v1/jobs", body, submit_headers(ctype, fresh_key()))
    check_store(live, before, answer)
    if answer.status == 201:
        job = json.loads(answer.body)
        assert job["document"]["bytes"] == len(doc)


release_bodies = st.one_of(
    json_values.map(_dump),
    st.fixed_dictionaries(
        {},
        optional={
            "printer": st.sampled_from(["printer-01", "nope"]) | json_values,
            "pool": st.sampled_from(["lobby", "nope"]) | json_values,
            "pin": st.sampled_from(["1234", "0000", ""]) | json_values,
            "extra": json_values,
        },
    ).map(_dump),
    st.binary(max_size=256),
    odd_text.map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.just(b"{" * 5000),
    st.just(b"[" * 100_000),
    st.just(b" " * 70_000),
)


@FUZZ
@given(
    body=release_bodies,
    ctype=st.sampled_from(["application/json", "application/octet-stream", None]) | content_types,
    target=st.sampled_from(["held", "pinned", "missing", "bad-id"]),
)
def test_release_body(
    live: Live, held: dict[str, str], body: bytes, ctype: str | None, target: str
) -> None:
    ids = {"held": release_target(live, held, "held"),
           "pinned": release_target(live, held, "pinned"),
           "missing": "f" * 32, "bad-id": "../../etc"}  # fmt: skip
    before = stored(live)
    headers = {"Authorization": f"Bearer {KIOSK_TOKEN}"}
    if ctype is not None:
        headers["Content-Type"] = ctype
    answer = send(live, f"/v1/jobs/{ids[target]}/release", body, headers)
    check_store(live, before, answer)
    if answer.status == 200:
        assert json.loads(answer.body)["state"] == "RELEASED"
        held.pop(target)  # released: the next example needs a HELD one


@pytest.fixture
def held() -> dict[str, str]:
    """ "held"/"pinned" → a HELD job of this test's appliance, for the release fuzzer."""
    return {}


def release_target(live: Live, held: dict[str, str], kind: str) -> str:
    """A HELD job to release ("pinned": PIN 1234), made when the last one was released."""
    if kind not in held:
        meta: dict[str, Any] = {"owner": "fuzz", "pool": "lobby"}
        if kind == "pinned":
            meta["release_pin"] = "1234"
        resp = live.run(live.appliance.submit(meta, PDF, key=fresh_key()))
        assert resp.status == 201
        held[kind] = live.run(resp.json())["id"]
    return held[kind]


async def _truncated_upload(live: Live, body: bytes, cut: int) -> bytes:
    """Send the head and ``cut`` bytes of a ``len(body)`` body, half-close, read what comes."""
    reader, writer = await asyncio.open_connection(live.appliance.running.host,
                                                   live.appliance.running.port)  # fmt: skip
    try:
        head = (
            "POST /v1/jobs HTTP/1.1\r\n"
            f"Host: {live.appliance.running.host}\r\n"
            f"Authorization: Bearer {KIOSK_TOKEN}\r\n"
            f"Idempotency-Key: {fresh_key()}\r\n"
            f"Content-Type: multipart/form-data; boundary={BOUNDARY.decode()}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        writer.write(head.encode() + body[:cut])
        await writer.drain()
        writer.write_eof()
        async with asyncio.timeout(ANSWER_S):
            return await reader.read()
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


@FUZZ
@given(data=st.data())
def test_upload_cut_off(live: Live, data: st.DataObject) -> None:
    """The client stops sending mid-body (Content-Length promised more): nothing is stored."""
    body = encode_multipart(
        [good_part("metadata", _dump(GOOD_META)), good_part("document", PDF)], BOUNDARY
    )
    cut = data.draw(st.integers(0, len(body) - 1), label="cut")
    before = stored(live)
    try:
        raw = live.run(_truncated_upload(live, body, cut), timeout=ANSWER_S + 5)
    except TimeoutError:
        pytest.fail(f"no answer nor close within {ANSWER_S} s for a body cut at {cut}")
    if raw:  # aiohttp usually just closes: the client is gone
        status = int(raw.split(b" ", 2)[1])
        assert 400 <= status < 500, raw[:300]
        assert b"application/problem+json" in raw.split(b"\r\n\r\n", 1)[0], raw[:300]
    # The handler may still be unwinding after the connection closed: a bounded wait.
    eventually_sync(
        lambda: not stored(live).staging, "the staging area emptied", timeout_s=ANSWER_S
    )
    check_store(live, before, Answer(400, "", raw, {}))


def test_fuzz_appliance_still_works(live: Live) -> None:
    """Sanity: the fixture's appliance takes a normal submission (the fuzzers would pass
    vacuously against an appliance that refuses everything)."""
    before = stored(live)
    resp = live.run(live.appliance.submit(GOOD_META, PDF, key=fresh_key()))
    assert resp.status == 201
    assert stored(live).jobs == before.jobs + 1


# --- the IPP queues (POST /ipp/print/<queue>) ---------------------------------------------------

_IPP_PATH = "/ipp/print/lobby"
_IPP_URI = "ipp://127.0.0.1/ipp/print/lobby"


def _good_ipp(operation: int = Operation.PRINT_JOB, data: bytes = PDF) -> bytes:
    return codec.request(
        operation,
        7,
        printer_uri=_IPP_URI,
        attributes=[
            attr("requesting-user-name", Tag.NAME, "ann"),
            attr("job-name", Tag.NAME, "fuzz"),
            attr("document-format", Tag.MIME_MEDIA_TYPE, "application/pdf"),
        ],
        data=data,
    ).encode()


def _ipp_values() -> st.SearchStrategy[Value]:
    """Any value tag (known or not) with raw or typed values, including wrong syntaxes."""
    # Tags the codec carries as bytes (out-of-band, octetString, unassigned): wrong lengths
    # of typed values are the mutation test's job.
    bytes_tags = [*range(0x10, 0x21), *range(0x24, 0x31), *range(0x38, 0x40), *range(0x60, 0x7F)]
    raw = st.builds(
        Value,
        st.sampled_from(bytes_tags),
        st.binary(max_size=12),
    )
    return (
        raw
        | st.builds(
            Value,
            st.sampled_from([Tag.INTEGER, Tag.ENUM]),
            st.integers(-(2**31), 2**31 - 1),
        )
        | st.builds(
            Value,
            st.sampled_from([Tag.KEYWORD, Tag.NAME, Tag.URI, Tag.MIME_MEDIA_TYPE]),
            odd_text.filter(
                lambda s: "\ud800" not in s and all(not 0xD800 <= ord(c) <= 0xDFFF for c in s)
            ),
        )
    )


_IPP_NAMES = st.sampled_from([
    "attributes-charset", "attributes-natural-language", "printer-uri", "job-id", "job-uri",
    "requesting-user-name", "document-format", "job-hold-until", "copies", "job-uuid",
    "last-document", "which-jobs", "requested-attributes", "my-jobs", "limit", "compression",
    "page-ranges", "overrides",
]) | st.text(min_size=1, max_size=12).filter(lambda s: all(not 0xD800 <= ord(c) <= 0xDFFF for c in s))  # fmt: skip

ipp_messages = st.builds(
    codec.IppMessage,
    st.sampled_from([(1, 1), (2, 0), (2, 2), (0, 0), (3, 0)]),
    st.sampled_from([int(o) for o in Operation]) | st.integers(0, 0xFFFF),
    st.integers(-(2**31), 2**31 - 1),
    st.lists(
        st.builds(
            AttributeGroup,
            st.sampled_from([1, 2, 4, 5]),
            st.lists(
                st.builds(Attribute, _IPP_NAMES, st.lists(_ipp_values(), min_size=1, max_size=2)),
                max_size=6,
            ),
        ),
        max_size=3,
    ),
    st.sampled_from([b"", PDF, b"not a pdf"]),
)


def check_ipp_answer(answer: Answer, request: bytes) -> codec.IppMessage | None:
    """An IPP response (HTTP 200, application/ipp) that parses, echoes a readable request-id,
    and is never server-error-internal-error; None for a non-IPP refusal (problem+json)."""
    assert answer.status < 500, (answer.status, answer.body[:300])
    if answer.content_type != "application/ipp":
        check_answer(answer)
        return None
    assert answer.status == 200, answer
    parsed = codec.parse(answer.body)
    assert parsed.status_code != Status.SERVER_ERROR_INTERNAL_ERROR, parsed
    if len(request) >= 8 and request[0] in (1, 2):
        assert parsed.request_id == int.from_bytes(request[4:8], "big", signed=True)
    return parsed


def _check_ipp_store(
    live: Live, before: Stored, parsed: codec.IppMessage | None, request: bytes
) -> None:
    after = stored(live)
    assert after.staging == []
    created = (
        parsed is not None
        and parsed.status_code == Status.SUCCESSFUL_OK
        and request[2:4] == b"\x00\x02"  # a Print-Job that succeeded stores one job
        and parsed.get(GroupTag.JOB, "job-id") is not None
    )
    grown = 1 if created else 0
    assert (after.jobs, after.documents) == (before.jobs + grown, before.documents + grown), parsed


IPP_HEADERS = {"Content-Type": "application/ipp"}


@FUZZ
@given(body=st.binary(max_size=300))
def test_ipp_random_bytes(live: Live, body: bytes) -> None:
    """Random bytes to an IPP queue: an IPP error response, nothing stored."""
    before = stored(live)
    answer = send_ipp(live, body)
    parsed = check_ipp_answer(answer, body)
    assert parsed is not None
    assert parsed.status_code >= 0x0400
    _check_ipp_store(live, before, parsed, body)


@FUZZ
@given(message=ipp_messages)
def test_ipp_generated_requests(live: Live, message: codec.IppMessage) -> None:
    """Generated IPP requests (any operation, versions, groups, names, tags, wrong syntaxes): a valid IPP answer, and a job only for a successful Print-Job."""
    body = message.encode()
    before = stored(live)
    parsed = check_ipp_answer(send_ipp(live, body), body)
    _check_ipp_store(live, before, parsed, body)


@FUZZ
@given(data=st.data())
def test_ipp_mutated_print_job(live: Live, data: st.DataObject) -> None:
    """A valid Print-Job truncated or with bytes overwritten: a valid IPP answer, nothing stored unless it still succeeds."""
    body = bytearray(_good_ipp())
    if data.draw(st.booleans(), label="truncate"):
        body = body[: data.draw(st.integers(0, len(body) - 1), label="cut")]
    else:
        for _ in range(data.draw(st.integers(1, 4), label="n")):
            at = data.draw(st.integers(0, len(body) - len(PDF) - 1), label="at")
            body[at] = data.draw(st.integers(0, 255), label="byte")
    before = stored(live)
    parsed = check_ipp_answer(send_ipp(live, bytes(body)), bytes(body))
    _check_ipp_store(live, before, parsed, bytes(body))


def send_ipp(live: Live, body: bytes) -> Answer:
    try:
        return live.run(_send(live, _IPP_PATH, body, IPP_HEADERS), timeout=ANSWER_S + 5)
    except TimeoutError:
        pytest.fail(f"no answer within {ANSWER_S} s: POST {_IPP_PATH} {body[:200]!r}")


def test_ipp_fuzz_queue_still_prints(live: Live) -> None:
    """Sanity: the fuzzed queue takes a valid Print-Job (one job stored)."""
    before = stored(live)
    body = _good_ipp()
    parsed = check_ipp_answer(send_ipp(live, body), body)
    assert parsed is not None
    assert parsed.status_code == Status.SUCCESSFUL_OK, parsed
    assert stored(live).jobs == before.jobs + 1
