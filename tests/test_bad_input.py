"""Malformed requests: each gets a 4xx problem+json with a helpful detail and stores nothing.

Every case runs against a real appliance (SQLite file, HTTP on loopback) that
already holds a few jobs, and compares everything stored (job rows, event rows,
spool files including ``spool/tmp``) before and after the request.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
import yarl

from edgeprint.records import JobRecord
from testbed.pdfs import (
    make_deep_page_tree_pdf,
    make_encrypted_pdf,
    make_lying_count_pdf,
    make_page_tree_cycle_pdf,
    make_pages_pdf,
    make_pdf,
    make_repeated_kids_pdf,
)
from tests.conftest import KIOSK_TOKEN, TECH_TOKEN, Appliance
from tests.polling import eventually

PROBLEM = "urn:edgeprint:problem:"
BOUNDARY = "edgeprint-test-boundary-7d3f"
MULTIPART = f"multipart/form-data; boundary={BOUNDARY}"
#: The document limit of the appliance under test (the smallest the config allows).
MAX_DOC = 1024
MAX_META = 16 * 1024  # the default max_metadata_bytes
#: The page limit of the appliance under test.
MAX_PAGES = 2
#: The limits for hostile PDFs, which are bigger than MAX_DOC: 1 MiB, the default page limit.
ROOMY_DOC = 1024 * 1024
DEFAULT_PAGES = 200
ENCRYPTED_PDF = make_encrypted_pdf()
#: The seeded PIN job (its PIN is "246810").
PIN_META: dict[str, Any] = {"owner": "dee", "printer": "printer-03", "release_pin": "246810"}
KEY = "bad-input-key-0001"
PDF = make_pdf("bad input test")
GOOD_META: dict[str, Any] = {"owner": "ann", "pool": "lobby"}
#: A well-formed job id that no job has.
MISSING_ID = "f" * 32
#: Problem details are for people: short enough to read even when the input was huge.
MAX_DETAIL_CHARS = 600


# --- building request bodies ---------------------------------------------------------


@dataclass(frozen=True)
class Part:
    """One multipart part: raw header lines and body bytes."""

    headers: tuple[tuple[str, str], ...]
    body: bytes


def part(
    name: str | None, body: bytes, content_type: str | None, filename: str | None = None
) -> Part:
    headers: list[tuple[str, str]] = []
    if name is not None:
        disposition = f'form-data; name="{name}"'
        if filename is not None:
            disposition += f'; filename="{filename}"'
        headers.append(("Content-Disposition", disposition))
    if content_type is not None:
        headers.append(("Content-Type", content_type))
    return Part(tuple(headers), body)


def meta(value: Any = None) -> Part:
    """The metadata part; ``value`` is JSON-encoded unless it is already bytes."""
    value = GOOD_META if value is None else value
    body = value if isinstance(value, bytes) else json.dumps(value).encode()
    return part("metadata", body, "application/json")


def doc(body: bytes = PDF, content_type: str | None = "application/pdf") -> Part:
    return part("document", body, content_type, filename="badge.pdf")


def multipart(*parts: Part, boundary: str = BOUNDARY) -> bytes:
    out = bytearray()
    for p in parts:
        out += f"--{boundary}\r\n".encode()
        for name, value in p.headers:
            out += f"{name}: {value}\r\n".encode()
        out += b"\r\n" + p.body + b"\r\n"
    out += f"--{boundary}--\r\n".encode()
    return bytes(out)


GOOD_BODY = multipart(meta(), doc())


def exactly(size: int) -> bytes:
    """A PDF of exactly ``size`` bytes (trailing newlines after %%EOF are harmless)."""
    assert size >= len(PDF)
    return PDF + b"\n" * (size - len(PDF))


# --- the table -----------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One malformed request and the problem it must get.

    ``path`` may name seeded jobs: ``{held}``, ``{held_upper}``, ``{missing}``.
    ``headers`` override the defaults (a ``None`` value removes the header).
    """

    status: int
    slug: str
    detail: str
    body: bytes | None = None
    method: str = "POST"
    path: str = "/v1/jobs"
    headers: Mapping[str, str | tuple[str, ...] | None] = field(default_factory=dict)
    chunked: bool = False
    #: response header → a substring its value must contain
    expect_headers: Mapping[str, str] = field(default_factory=dict)
    #: a wrong PIN: the job's attempt counter (and nothing else) goes up by one
    counts_pin_attempt: bool = False
    #: the appliance's limits (server.max_document_bytes, server.max_document_pages)
    max_document_bytes: int = MAX_DOC
    max_document_pages: int = MAX_PAGES

    @property
    def is_submit(self) -> bool:
        return (self.method, self.path) == ("POST", "/v1/jobs")


def case(case_id: str, status: int, slug: str, detail: str, **kw: Any) -> Any:
    return pytest.param(Case(status, slug, detail, **kw), id=case_id)


def submit(case_id: str, body: bytes, status: int, slug: str, detail: str, **kw: Any) -> Any:
    return case(case_id, status, slug, detail, body=body, **kw)


def bad_meta(case_id: str, value: Any, status: int, slug: str, detail: str) -> Any:
    return submit(f"metadata-{case_id}", multipart(meta(value), doc()), status, slug, detail)


def bad_field(case_id: str, changes: dict[str, Any], detail: str) -> Any:
    return bad_meta(case_id, {**GOOD_META, **changes}, 422, "invalid-request", detail)


def release(case_id: str, body: bytes, status: int, slug: str, detail: str, **kw: Any) -> Any:
    headers = {"Content-Type": "application/json", **kw.pop("headers", {})}
    return case(
        f"release-{case_id}", status, slug, detail,
        path="/v1/jobs/{held}/release", body=body, headers=headers, **kw,
    )  # fmt: skip


def listing(case_id: str, query: str, detail: str, path: str = "/v1/jobs", **kw: Any) -> Any:
    return case(
        f"list-{case_id}", 422, "invalid-request", detail, method="GET", path=f"{path}?{query}",
        **kw,
    )  # fmt: skip


def hostile_pdf(case_id: str, pdf: bytes, slug: str, detail: str) -> Any:
    """A crafted PDF sent to an appliance with room for it (1 MiB, the default 200 pages)."""
    assert len(pdf) <= ROOMY_DOC
    return submit(
        f"document-{case_id}", multipart(meta(), doc(pdf)), 422, slug, detail,
        max_document_bytes=ROOMY_DOC, max_document_pages=DEFAULT_PAGES,
    )  # fmt: skip


def not_found(case_id: str, method: str, path: str, detail: str, **kw: Any) -> Any:
    return case(case_id, 404, "job-not-found", detail, method=method, path=path, **kw)


BEARER = {"WWW-Authenticate": "Bearer"}
NOT_INT = "Input should be a valid integer"
AS_TECH = {"Authorization": f"Bearer {TECH_TOKEN}"}
JSON_BODY = {"Content-Type": "application/json"}
NO_VISIBLE = "metadata.owner: must contain a visible character"
TOO_MANY_MARKS = "metadata.owner: too many combining marks in a row"
MALFORMED_TREE = "the page tree is malformed"

CASES = [
    # --- multipart structure ---
    submit("missing-document-part", multipart(meta()), 422, "invalid-request",
           "missing part(s): document"),
    submit("missing-metadata-part", multipart(doc()), 422, "invalid-request",
           "missing part(s): metadata"),
    submit("no-parts-at-all", multipart(), 422, "invalid-request",
           "missing part(s): metadata, document"),
    submit("duplicate-metadata-part", multipart(meta(), meta(), doc()), 400, "malformed-request",
           "more than one 'metadata' part"),
    submit("duplicate-document-part", multipart(meta(), doc(), doc()), 400, "malformed-request",
           "more than one 'document' part"),
    submit("unknown-part-before", multipart(part("thumbnail", b"x", "image/png"), meta(), doc()),
           422, "invalid-request", "unexpected part 'thumbnail'; only 'metadata' and 'document'"),
    submit("unknown-part-after-document", multipart(meta(), doc(), part("sig", b"x", None)),
           422, "invalid-request", "unexpected part 'sig'"),
    submit("part-without-name", multipart(part(None, b"x", "text/plain"), meta(), doc()),
           422, "invalid-request", "a part has no name"),
    submit("nested-multipart-part",
           multipart(meta(), part("document", multipart(doc(), boundary="inner"),
                                  "multipart/mixed; boundary=inner")),
           400, "malformed-request", "nested multipart bodies are not accepted"),
    submit("body-not-multipart-json", json.dumps(GOOD_META).encode(), 415,
           "unsupported-media-type", "send multipart/form-data",
           headers={"Content-Type": "application/json"}),
    submit("body-not-multipart-urlencoded", b"owner=ann&pool=lobby", 415,
           "unsupported-media-type", "send multipart/form-data",
           headers={"Content-Type": "application/x-www-form-urlencoded"}),
    submit("body-multipart-mixed", GOOD_BODY, 415, "unsupported-media-type",
           "send multipart/form-data",
           headers={"Content-Type": f"multipart/mixed; boundary={BOUNDARY}"}),
    submit("body-raw-pdf", PDF, 415, "unsupported-media-type", "send multipart/form-data",
           headers={"Content-Type": "application/pdf"}),
    submit("multipart-without-boundary", GOOD_BODY, 400, "malformed-request", "boundary",
           headers={"Content-Type": "multipart/form-data"}),
    submit("multipart-wrong-boundary", multipart(meta(), doc(), boundary="other"), 400,
           "malformed-request", "malformed or truncated multipart body"),
    submit("multipart-garbage", b"this is not multipart at all", 400, "malformed-request",
           "malformed or truncated multipart body"),
    submit("multipart-truncated-in-document", GOOD_BODY[: len(GOOD_BODY) - 200], 400,
           "malformed-request", "malformed or truncated multipart body"),
    submit("multipart-truncated-in-metadata", GOOD_BODY[:120], 400,
           "malformed-request", "malformed or truncated multipart body"),
    # --- sizes ---
    submit("document-one-byte-over-limit", multipart(meta(), doc(exactly(MAX_DOC + 1))), 413,
           "payload-too-large", f"the document exceeds the limit of {MAX_DOC} bytes"),
    submit("document-over-limit-content-length", multipart(meta(), doc(exactly(100_000))), 413,
           "payload-too-large", f"a document may have at most {MAX_DOC} bytes"),
    submit("document-over-limit-chunked", multipart(meta(), doc(exactly(100_000))), 413,
           "payload-too-large", f"the document exceeds the limit of {MAX_DOC} bytes",
           chunked=True),
    submit("metadata-over-limit", multipart(meta({**GOOD_META, "x": "y" * MAX_META}), doc()),
           413, "payload-too-large", f"the metadata part exceeds the limit of {MAX_META} bytes"),
    submit("metadata-over-limit-chunked",
           multipart(meta({**GOOD_META, "x": "y" * MAX_META}), doc()), 413,
           "payload-too-large", f"the metadata part exceeds the limit of {MAX_META} bytes",
           chunked=True),
    # --- the document ---
    submit("document-not-a-pdf", multipart(meta(), doc(b"\x89PNG\r\n\x1a\n" + b"\0" * 64)), 415,
           "unsupported-media-type", "the document is not a PDF"),
    submit("document-empty", multipart(meta(), doc(b"")), 415, "unsupported-media-type",
           "the document is not a PDF"),
    submit("document-content-type-png", multipart(meta(), doc(content_type="image/png")), 415,
           "unsupported-media-type", "Content-Type 'image/png'; send application/pdf"),
    submit("document-content-type-text", multipart(meta(), doc(content_type="text/plain")), 415,
           "unsupported-media-type", "Content-Type 'text/plain'; send application/pdf"),
    # --- metadata: not a JSON object ---
    bad_meta("not-json", b"owner=ann", 400, "malformed-json",
             "the metadata part is not valid JSON"),
    bad_meta("truncated-json", b'{"owner": "ann"', 400, "malformed-json", "not valid JSON"),
    bad_meta("empty", b"", 400, "malformed-json", "not valid JSON"),
    bad_meta("invalid-utf8", b'{"owner": "\xff\xfe"}', 400, "malformed-json", "not valid JSON"),
    bad_meta("nested-too-deep", b"[" * 5000 + b"]" * 5000, 400, "malformed-json",
             "not valid JSON"),
    bad_meta("array", ["ann"], 422, "invalid-request", "the metadata part must be a JSON object"),
    bad_meta("string", "ann", 422, "invalid-request", "must be a JSON object"),
    bad_meta("null", b"null", 422, "invalid-request", "must be a JSON object"),
    # --- metadata: fields ---
    bad_field("unknown-field", {"colour": "red"}, "metadata.colour: unknown field"),
    bad_meta("owner-missing", {"pool": "lobby"}, 422, "invalid-request",
             "metadata.owner: Field required"),
    bad_field("owner-null", {"owner": None}, "metadata.owner: Input should be a valid string"),
    bad_field("owner-empty", {"owner": ""}, "metadata.owner: String should have at least 1"),
    bad_field("owner-too-long", {"owner": "a" * 129},
              "metadata.owner: String should have at most 128"),
    bad_field("owner-newline", {"owner": "ann\nbob"}, "metadata.owner: must not contain control"),
    bad_field("owner-nul", {"owner": "ann\x00"}, "metadata.owner: must not contain control"),
    bad_field("owner-escape-sequence", {"owner": "\x1b[31mann"}, "must not contain control"),
    bad_field("owner-del", {"owner": "ann\x7f"}, "metadata.owner: must not contain control"),
    bad_field("owner-c1-control", {"owner": "ann\u0085"},
              "metadata.owner: must not contain control"),
    bad_field("priority-over-1000", {"priority": 1001},
              "metadata.priority: Input should be less than or equal to 1000"),
    bad_field("priority-negative", {"priority": -1},
              "metadata.priority: Input should be greater than or equal to 0"),
    bad_field("priority-huge", {"priority": 10**30}, "metadata.priority: Input should be less"),
    bad_field("priority-string", {"priority": "5"}, f"metadata.priority: {NOT_INT}"),
    bad_field("priority-float", {"priority": 5.5}, f"metadata.priority: {NOT_INT}"),
    bad_field("priority-whole-float", {"priority": 5.0}, f"metadata.priority: {NOT_INT}"),
    bad_field("priority-bool", {"priority": True}, f"metadata.priority: {NOT_INT}"),
    bad_field("priority-null", {"priority": None}, f"metadata.priority: {NOT_INT}"),
    bad_field("copies-0", {"copies": 0},
              "metadata.copies: Input should be greater than or equal to 1"),
    bad_field("copies-100", {"copies": 100},
              "metadata.copies: Input should be less than or equal to 99"),
    bad_field("copies-string", {"copies": "2"}, f"metadata.copies: {NOT_INT}"),
    bad_field("hold-string", {"hold": "false"}, "metadata.hold: Input should be a valid boolean"),
    bad_field("hold-int", {"hold": 0}, "metadata.hold: Input should be a valid boolean"),
    bad_field("printer-and-pool", {"printer": "printer-01", "pool": "lobby"},
              "invalid metadata: give either printer or pool, not both"),
    bad_meta("hold-false-without-target", {"owner": "ann", "hold": False}, 422, "invalid-request",
             "a job with hold=false must name a printer or a pool"),
    bad_meta("unknown-printer", {"owner": "ann", "printer": "printer-99"}, 422, "unknown-target",
             "unknown printer 'printer-99'; configured: ['printer-01', 'printer-02', "
             "'printer-03']"),
    bad_meta("unknown-pool", {"owner": "ann", "pool": "basement"}, 422, "unknown-target",
             "unknown pool 'basement'; configured: ['lobby']"),
    bad_meta("printer-name-uppercase-and-space", {"owner": "ann", "printer": "Printer 01"}, 422,
             "invalid-request",
             "metadata.printer: must be 1–40 characters from a-z, 0-9 and '-'"),
    bad_meta("printer-name-path", {"owner": "ann", "printer": "../printer-01"}, 422,
             "invalid-request", "metadata.printer: must be 1–40 characters"),
    bad_meta("pool-name-too-long", {"owner": "ann", "pool": "p" * 41}, 422, "invalid-request",
             "metadata.pool: must be 1–40 characters"),
    bad_meta("printer-not-a-string", {"owner": "ann", "printer": 1}, 422, "invalid-request",
             "metadata.printer: Input should be a valid string"),
    # --- Idempotency-Key ---
    submit("key-missing", GOOD_BODY, 400, "idempotency-key-missing",
           "the Idempotency-Key header is required", headers={"Idempotency-Key": None}),
    submit("key-empty", GOOD_BODY, 400, "idempotency-key-invalid", "8–80 printable ASCII",
           headers={"Idempotency-Key": ""}),
    submit("key-too-short", GOOD_BODY, 400, "idempotency-key-invalid", "8–80 printable ASCII",
           headers={"Idempotency-Key": "k" * 7}),
    submit("key-too-long", GOOD_BODY, 400, "idempotency-key-invalid", "8–80 printable ASCII",
           headers={"Idempotency-Key": "k" * 81}),
    submit("key-with-spaces", GOOD_BODY, 400, "idempotency-key-invalid", "no spaces",
           headers={"Idempotency-Key": "key with spaces"}),
    submit("key-non-ascii", GOOD_BODY, 400, "idempotency-key-invalid", "printable ASCII",
           headers={"Idempotency-Key": "schlüssel-0001"}),
    submit("key-twice", GOOD_BODY, 400, "idempotency-key-invalid",
           "send one Idempotency-Key header, not 2",
           headers={"Idempotency-Key": ("keyone-0001", "keytwo-0002")}),
    # --- authentication and roles ---
    submit("token-missing", GOOD_BODY, 401, "unauthorized", "missing bearer token",
           headers={"Authorization": None}, expect_headers=BEARER),
    submit("token-unknown", GOOD_BODY, 401, "unauthorized", "unknown bearer token",
           headers={"Authorization": "Bearer not-a-configured-token"}, expect_headers=BEARER),
    submit("auth-scheme-basic", GOOD_BODY, 401, "unauthorized",
           "Authorization must be 'Bearer <token>'",
           headers={"Authorization": "Basic a2lvc2s6c2VjcmV0"}, expect_headers=BEARER),
    submit("auth-bearer-without-token", GOOD_BODY, 401, "unauthorized", "'Bearer <token>'",
           headers={"Authorization": "Bearer"}, expect_headers=BEARER),
    submit("auth-token-without-scheme", GOOD_BODY, 401, "unauthorized", "'Bearer <token>'",
           headers={"Authorization": KIOSK_TOKEN}, expect_headers=BEARER),
    case("get-token-unknown", 401, "unauthorized", "unknown bearer token", method="GET",
         path="/v1/jobs/{held}", headers={"Authorization": "Bearer nope"}, expect_headers=BEARER),
    case("release-token-missing", 401, "unauthorized", "missing bearer token",
         path="/v1/jobs/{held}/release", headers={"Authorization": None}, expect_headers=BEARER),
    case("replay-as-kiosk", 403, "forbidden", "role 'kiosk' may not do this; it needs role 'tech'",
         path="/v1/jobs/{held}/replay"),
    # --- release bodies (the held job must stay HELD) ---
    release("malformed-json", b'{"printer": ', 400, "malformed-json", "the body is not valid JSON"),
    release("duplicate-key", b'{"printer": "printer-01", "printer": "printer-02"}', 400,
            "malformed-json", "duplicate key 'printer' in the body"),
    case("release-duplicate-key-pin", 400, "malformed-json", "duplicate key 'pin' in the body",
         path="/v1/jobs/{pin_held}/release", body=b'{"pin": "000000", "pin": "246810"}',
         headers=JSON_BODY),
    case("cancel-duplicate-key-pin", 400, "malformed-json", "duplicate key 'pin' in the body",
         path="/v1/jobs/{pin_held}/cancel", body=b'{"pin": "000000", "pin": "246810"}',
         headers=JSON_BODY),
    release("unknown-field", b'{"colour": "red"}', 422, "invalid-request",
            "invalid body: body.colour: unknown field"),
    release("unknown-printer", b'{"printer": "printer-99"}', 422, "unknown-target",
            "unknown printer 'printer-99'"),
    release("unknown-pool", b'{"pool": "basement"}', 422, "unknown-target",
            "unknown pool 'basement'"),
    release("printer-and-pool", b'{"printer": "printer-01", "pool": "lobby"}', 422,
            "invalid-request", "give either printer or pool, not both"),
    release("bad-printer-name", b'{"printer": "Printer 01"}', 422, "invalid-request",
            "body.printer: must be 1–40 characters"),
    release("json-array", b'["printer-01"]', 422, "invalid-request",
            "the body must be a JSON object"),
    release("json-string", b'"printer-01"', 422, "invalid-request",
            "the body must be a JSON object"),
    release("not-json-content-type", b"printer-01", 415, "unsupported-media-type",
            "send the body as application/json", headers={"Content-Type": "text/plain"}),
    release("body-too-large", b'{"printer": "' + b"p" * 70_000 + b'"}', 413,
            "payload-too-large", "the request body exceeds the limit of 65536 bytes"),
    release("body-too-large-chunked", b'{"printer": "' + b"p" * 70_000 + b'"}', 413,
            "payload-too-large", "the request body exceeds the limit of 65536 bytes",
            chunked=True),
    # --- unknown jobs ---
    not_found("get-unknown-id", "GET", "/v1/jobs/{missing}", "no job with id '{missing}'"),
    not_found("release-unknown-id", "POST", "/v1/jobs/{missing}/release", "no job with id"),
    not_found("cancel-unknown-id", "POST", "/v1/jobs/{missing}/cancel", "no job with id"),
    not_found("replay-unknown-id", "POST", "/v1/jobs/{missing}/replay", "no job with id",
              headers={"Authorization": f"Bearer {TECH_TOKEN}"}),
    # --- tricks in ids (sent verbatim: no client-side normalisation) ---
    not_found("id-encoded-traversal", "GET", "/v1/jobs/..%2F..%2Fetc%2Fpasswd",
              "no job with id '../../etc/passwd'"),
    not_found("id-encoded-dots", "GET", "/v1/jobs/%2e%2e", "no job with id '..'"),
    not_found("cancel-encoded-dots", "POST", "/v1/jobs/%2e%2e/cancel", "no job with id '..'"),
    not_found("release-traversal-to-held-job", "POST", "/v1/jobs/..%2F{held}/release",
              "no job with id '../{held}'"),
    not_found("cancel-held-id-with-suffix", "POST", "/v1/jobs/{held}%2F..%2F/cancel",
              "no job with id '{held}/../'"),
    not_found("id-with-nul", "GET", "/v1/jobs/{held}%00", "no job with id"),
    not_found("id-uppercase", "GET", "/v1/jobs/{held_upper}", "no job with id"),
    not_found("id-very-long", "GET", "/v1/jobs/" + "a" * 4000, "no job with id 'aaaa"),
    not_found("id-unicode", "GET", "/v1/jobs/%C3%BCn%C3%AFc%C3%B8d%C3%A9",
              "no job with id 'ünïcødé'"),
    not_found("cancel-id-unicode", "POST", "/v1/jobs/%E2%80%AE{held}/cancel", "no job with id"),
    case("raw-dot-segments-are-not-collapsed", 404, "not-found",
         "no such resource: POST /v1/jobs/../jobs", path="/v1/jobs/../jobs", body=GOOD_BODY,
         headers={"Idempotency-Key": KEY, "Content-Type": MULTIPART}),
    # --- routes and methods ---
    case("unknown-route", 404, "not-found", "no such resource: GET /v2/jobs", method="GET",
         path="/v2/jobs"),
    case("trailing-slash", 404, "not-found", "no such resource: GET /v1/jobs/", method="GET",
         path="/v1/jobs/"),
    case("unknown-job-action", 404, "not-found", "no such resource: POST /v1/jobs/{held}/print",
         path="/v1/jobs/{held}/print"),
    case("delete-job", 405, "method-not-allowed", "method DELETE is not allowed on /v1/jobs/",
         method="DELETE", path="/v1/jobs/{held}", expect_headers={"Allow": "GET"}),
    case("put-jobs", 405, "method-not-allowed", "allowed: GET, HEAD, POST", method="PUT",
         path="/v1/jobs", body=GOOD_BODY, expect_headers={"Allow": "POST"}),
    case("get-release", 405, "method-not-allowed", "method GET is not allowed", method="GET",
         path="/v1/jobs/{held}/release", expect_headers={"Allow": "POST"}),
    # --- listing ---
    listing("state-unknown", "state=BOGUS", "query.state: one of HELD, RELEASED"),
    listing("state-lowercase", "state=held", "query.state: one of HELD"),
    listing("limit-0", "limit=0", "query.limit: an integer from 1 to 500"),
    listing("limit-501", "limit=501", "query.limit: an integer from 1 to 500"),
    listing("limit-negative", "limit=-1", "query.limit: an integer from 1 to 500"),
    listing("limit-word", "limit=ten", "query.limit: an integer from 1 to 500"),
    listing("limit-empty", "limit=", "query.limit: an integer from 1 to 500"),
    listing("limit-float", "limit=1.5", "query.limit: an integer from 1 to 500"),
    listing("limit-superscript-digit", "limit=%C2%B2", "query.limit: an integer from 1 to 500"),
    listing("limit-arabic-digits", "limit=%D9%A1%D9%A2", "query.limit: an integer from 1 to 500"),
    listing("cursor-word", "cursor=abc", "query.cursor: a cursor from next_cursor"),
    listing("cursor-negative", "cursor=-5", "query.cursor: a cursor from next_cursor"),
    listing("cursor-superscript-digit", "cursor=%C2%B2", "query.cursor: a cursor from next_cursor"),
    listing("cursor-too-large", "cursor=" + "9" * 19, "query.cursor: a cursor from next_cursor"),
    listing("unknown-parameter", "colour=red", "query.colour: unknown parameter"),
    listing("state-twice", "state=DONE&state=HELD", "query.state: given more than once"),
    listing("state-twice-same", "state=HELD&state=HELD", "query.state: given more than once"),
    listing("limit-twice", "limit=5&limit=10", "query.limit: given more than once"),
    listing("limit-twice-one-bad", "limit=0&limit=10", "query.limit: given more than once"),
    listing("cursor-twice", "cursor=5&cursor=10", "query.cursor: given more than once"),
    listing("owner-twice", "owner=ann&owner=bob", "query.owner: given more than once"),
    listing("printer-twice", "printer=printer-03&printer=printer-01",
            "query.printer: given more than once"),
    listing("two-repeated", "state=HELD&owner=ann&state=DONE&owner=ann",
            "query.owner: given more than once; query.state: given more than once"),
    listing("dead-letter-limit-twice", "limit=5&limit=6", "query.limit: given more than once",
            path="/v1/dead-letter", headers=AS_TECH),
    listing("dead-letter-cursor-twice", "cursor=1&cursor=2", "query.cursor: given more than once",
            path="/v1/dead-letter", headers=AS_TECH),
    # --- hostile multipart framing ---
    submit("part-header-huge", multipart(meta(), Part(
               (("Content-Disposition", 'form-data; name="document"'),
                ("X-Padding", "a" * 100_000)), PDF)),
           400, "malformed-request", "malformed or truncated multipart body", chunked=True),
    submit("part-headers-many", multipart(Part(
               (("Content-Disposition", 'form-data; name="metadata"'),
                *((f"X-H{i}", "v") for i in range(5000))), json.dumps(GOOD_META).encode()),
               doc()),
           400, "malformed-request", "malformed or truncated multipart body", chunked=True),
    submit("part-content-disposition-two-names", multipart(meta(), Part(
               (("Content-Disposition", 'form-data; name="metadata"; name="document"'),
                ("Content-Type", "application/pdf")), PDF)),
           400, "malformed-request", "a part has a malformed Content-Disposition header"),
    submit("part-content-disposition-unclosed-quote", multipart(Part(
               (("Content-Disposition", 'form-data; name="metadata'),), b"{}"), doc()),
           400, "malformed-request", "a part has a malformed Content-Disposition header"),
    submit("document-pdf-declared-as-json", multipart(meta(), doc(PDF, "application/json")), 415,
           "unsupported-media-type", "the document part has Content-Type 'application/json'"),
    submit("document-part-content-type-garbage", multipart(meta(), doc(PDF, ";;;")), 415,
           "unsupported-media-type", "send application/pdf"),
    # --- documents that claim to be PDFs ---
    submit("document-encrypted", multipart(meta(), doc(ENCRYPTED_PDF)), 422, "document-encrypted",
           "the PDF is encrypted"),
    submit("document-encrypted-empty-password", multipart(meta(), doc(make_encrypted_pdf(""))),
           422, "document-encrypted", "send it without encryption"),
    submit("document-too-many-pages", multipart(meta(), doc(make_pages_pdf(MAX_PAGES + 1))), 422,
           "too-many-pages", f"the PDF has more than {MAX_PAGES} pages; at most {MAX_PAGES}"),
    submit("document-no-pages", multipart(meta(), doc(make_pages_pdf(0))), 422,
           "document-unreadable", "the PDF has no pages"),
    submit("document-header-then-garbage", multipart(meta(), doc(b"%PDF-1.7\n" + bytes(range(256)))),
           422, "document-unreadable", "the PDF cannot be read"),
    submit("document-truncated-pdf", multipart(meta(), doc(PDF[: len(PDF) // 2])), 422,
           "document-unreadable", "the PDF cannot be read"),
    submit("document-html-as-pdf", multipart(meta(), doc(b"<html><body>%PDF-</body></html>")),
           422, "document-unreadable", "the PDF cannot be read"),
    # --- crafted page trees: counting stops early, whatever the file claims ---
    hostile_pdf("same-page-100000-times", make_repeated_kids_pdf(100_000), "document-unreadable",
                f"{MALFORMED_TREE} (a page or node appears twice)"),
    hostile_pdf("page-tree-cycle", make_page_tree_cycle_pdf(), "document-unreadable",
                f"{MALFORMED_TREE} (a page or node appears twice)"),
    hostile_pdf("page-tree-5000-deep", make_deep_page_tree_pdf(5000), "document-unreadable",
                f"{MALFORMED_TREE} (nested more than 64 levels deep)"),
    hostile_pdf("page-count-lies-low", make_lying_count_pdf(DEFAULT_PAGES + 1, 1),
                "too-many-pages", f"the PDF has more than {DEFAULT_PAGES} pages; at most "
                f"{DEFAULT_PAGES} are accepted"),
    submit("document-page-count-lies-low-small", multipart(meta(), doc(make_lying_count_pdf(
           MAX_PAGES + 1, 1))), 422, "too-many-pages", f"the PDF has more than {MAX_PAGES} pages"),
    # --- unicode edge cases in owner (it reaches logs and IPP requesting-user-name) ---
    bad_field("owner-bidi-override", {"owner": "\u202eadmin"},
              "metadata.owner: must not contain an invisible format character (U+202E)"),
    bad_field("owner-bidi-isolate", {"owner": "ann\u2066x"}, "(U+2066)"),
    bad_field("owner-zero-width-space", {"owner": "an\u200bn"}, "(U+200B)"),
    bad_field("owner-byte-order-mark", {"owner": "\ufeffann"}, "(U+FEFF)"),
    bad_field("owner-blank", {"owner": "   "}, "metadata.owner: must not be blank"),
    bad_field("owner-leading-space", {"owner": " ann"},
              "metadata.owner: must not start or end with white space"),
    bad_field("owner-trailing-nbsp", {"owner": "ann\u00a0"}, "must not start or end with white"),
    bad_field("owner-line-separator", {"owner": "a\u2028b"}, "line separator (U+2028)"),
    bad_field("owner-private-use", {"owner": "\ue000"}, "private-use character (U+E000)"),
    bad_field("owner-unassigned", {"owner": "a\u0378"}, "unassigned code point (U+0378)"),
    bad_meta("owner-lone-surrogate", b'{"owner": "\\ud800", "pool": "lobby"}', 400,
             "malformed-json", "the metadata part is not valid JSON"),
    bad_field("owner-over-255-utf8-bytes", {"owner": "ä" * 128},
              "metadata.owner: must be at most 255 bytes in UTF-8"),
    bad_field("owner-emoji-over-255-bytes", {"owner": "🖨" * 64}, "at most 255 bytes in UTF-8"),
    bad_field("owner-hangul-filler", {"owner": "\u3164"}, NO_VISIBLE),
    bad_field("owner-hangul-fillers-around-a-space", {"owner": "\u3164 \u3164"}, NO_VISIBLE),
    bad_field("owner-hangul-choseong-filler", {"owner": "\u115f"}, NO_VISIBLE),
    bad_field("owner-hangul-jungseong-filler", {"owner": "\u1160"}, NO_VISIBLE),
    bad_field("owner-halfwidth-hangul-filler", {"owner": "\uffa0"}, NO_VISIBLE),
    bad_field("owner-braille-blank", {"owner": "\u2800\u2800"}, NO_VISIBLE),
    bad_field("owner-combining-marks-only", {"owner": "\u0301\u0308"}, NO_VISIBLE),
    bad_field("owner-variation-selector-only", {"owner": "\ufe0f"}, NO_VISIBLE),
    bad_field("owner-combining-grapheme-joiner", {"owner": "\u034f"}, NO_VISIBLE),
    bad_field("owner-5-combining-marks", {"owner": "a\u0300\u0301\u0302\u0303\u0304"},
              TOO_MANY_MARKS),
    bad_field("owner-zalgo", {"owner": "ann" + "\u0336\u0337\u0338" * 10}, TOO_MANY_MARKS),
    bad_field("owner-5-enclosing-marks", {"owner": "x" + "\u20dd" * 5}, TOO_MANY_MARKS),
    # --- negative and huge numbers ---
    bad_field("copies-negative", {"copies": -1}, "metadata.copies: Input should be greater than"),
    bad_field("copies-huge", {"copies": 10**30}, "metadata.copies: Input should be less than"),
    bad_meta("copies-5000-digits", b'{"owner": "ann", "copies": 1' + b"0" * 5000 + b"}", 400,
             "malformed-json", "the metadata part is not valid JSON"),
    bad_meta("priority-nan", b'{"owner": "ann", "pool": "lobby", "priority": NaN}', 422,
             "invalid-request", "metadata.priority: " + NOT_INT),
    bad_meta("priority-infinity", b'{"owner": "ann", "pool": "lobby", "priority": Infinity}',
             422, "invalid-request", "metadata.priority: " + NOT_INT),
    bad_field("priority-exponent", {"priority": 1e3}, "metadata.priority: " + NOT_INT),
    bad_field("priority-negative-zero-float", {"priority": -0.0}, "metadata.priority: " + NOT_INT),
    # --- a key given twice: parsers disagree on which one wins, so neither does ---
    bad_meta("duplicate-key-owner", b'{"owner": "alice", "pool": "lobby", "owner": "bob"}', 400,
             "malformed-json", "duplicate key 'owner' in the metadata part"),
    bad_meta("duplicate-key-same-value", b'{"owner": "ann", "pool": "lobby", "pool": "lobby"}',
             400, "malformed-json", "duplicate key 'pool' in the metadata part"),
    bad_meta("duplicate-key-escaped", b'{"owner": "alice", "\\u006fwner": "bob"}', 400,
             "malformed-json", "duplicate key 'owner' in the metadata part"),
    bad_meta("duplicate-key-pin", b'{"owner": "ann", "release_pin": "1234", '
             b'"release_pin": "5678"}', 400, "malformed-json", "duplicate key 'release_pin'"),
    bad_meta("duplicate-key-nested", b'{"owner": "ann", "x": {"a": 1, "a": 2}}', 400,
             "malformed-json", "duplicate key 'a' in the metadata part"),
    bad_meta("duplicate-key-long", b'{"owner": "ann", "' + b"k" * 5000 + b'": 1, "' + b"k" * 5000
             + b'": 2}', 400, "malformed-json", "duplicate key 'kkkkkkkkkk"),
    # --- release PINs in metadata ---
    bad_field("release-pin-too-short", {"release_pin": "123"},
              "metadata.release_pin: must be 4–12 digits"),
    bad_field("release-pin-too-long", {"release_pin": "1" * 13}, "must be 4–12 digits"),
    bad_field("release-pin-number", {"release_pin": 1234}, "Input should be a valid string"),
    bad_field("release-pin-letters", {"release_pin": "12a4"}, "must be 4–12 digits"),
    bad_field("release-pin-arabic-digits", {"release_pin": "١٢٣٤"}, "must be 4–12 digits"),
    bad_field("release-pin-spaces", {"release_pin": " 1234"}, "must be 4–12 digits"),
    # --- one Idempotency-Key, changed bytes ---
    submit("key-reused-other-document", multipart(meta({"owner": "ann", "printer": "printer-03"}),
           doc(make_pdf("changed"))), 422, "idempotency-key-reused",
           "Idempotency-Key 'seed-key-held' was already used for job {held}",
           headers={"Idempotency-Key": "seed-key-held"}),
    submit("key-reused-other-metadata", multipart(meta({"owner": "ann", "printer": "printer-03",
           "copies": 2}), doc()), 422, "idempotency-key-reused", "seed-key-held",
           headers={"Idempotency-Key": "seed-key-held"}),
    submit("key-reused-other-pin", multipart(meta({**PIN_META, "release_pin": "999999"}),
           doc(make_pdf("dee"))), 422, "idempotency-key-reused", "seed-key-pin",
           headers={"Idempotency-Key": "seed-key-pin"}),
    submit("key-reused-pin-dropped", multipart(meta({k: v for k, v in PIN_META.items()
           if k != "release_pin"}), doc(make_pdf("dee"))), 422, "idempotency-key-reused",
           "seed-key-pin", headers={"Idempotency-Key": "seed-key-pin"}),
    # --- releasing someone else's PIN job ---
    case("release-pin-job-without-pin", 403, "pin-required", "needs its release PIN",
         path="/v1/jobs/{pin_held}/release"),
    case("release-pin-job-empty-body-object", 403, "pin-required", "needs its release PIN",
         path="/v1/jobs/{pin_held}/release", body=b"{}",
         headers={"Content-Type": "application/json"}),
    case("release-other-owners-pin-job", 403, "pin-mismatch",
         "wrong release PIN for job {pin_held}; 4 more wrong PIN(s) lock its release",
         path="/v1/jobs/{pin_held}/release", body=b'{"pin": "000000"}',
         headers={"Content-Type": "application/json"}, counts_pin_attempt=True),
    case("release-pin-as-number", 422, "invalid-request", "body.pin: Input should be a valid",
         path="/v1/jobs/{pin_held}/release", body=b'{"pin": 246810}',
         headers={"Content-Type": "application/json"}),
    case("release-pin-malformed", 422, "invalid-request", "body.pin: must be 4–12 digits",
         path="/v1/jobs/{pin_held}/release", body=b'{"pin": "24681O"}',
         headers={"Content-Type": "application/json"}),
    # --- roles: a kiosk token cannot reach technicians' routes ---
    case("printers-as-kiosk", 403, "forbidden", "needs role 'tech'", method="GET",
         path="/v1/printers"),
    case("dead-letter-as-kiosk", 403, "forbidden", "needs role 'tech'", method="GET",
         path="/v1/dead-letter"),
    case("pause-as-kiosk", 403, "forbidden", "needs role 'tech'",
         path="/v1/printers/printer-01/pause"),
    case("drain-as-kiosk", 403, "forbidden", "needs role 'tech'",
         path="/v1/printers/printer-01/drain"),
    case("tech-token-wrong-case", 401, "unauthorized", "unknown bearer token", method="GET",
         path="/v1/printers", headers={"Authorization": f"Bearer {TECH_TOKEN.upper()}"},
         expect_headers=BEARER),
    case("pause-unknown-printer-traversal", 404, "printer-not-found", "no printer named",
         path="/v1/printers/..%2Fprinter-01/pause",
         headers={"Authorization": f"Bearer {TECH_TOKEN}"}),
]  # fmt: skip


# --- running the table ---------------------------------------------------------------


@pytest.fixture
async def small_app(make_appliance: Callable[..., Any]) -> AsyncIterator[Appliance]:
    """An appliance with a 1 KiB document limit."""
    async with make_appliance(max_document_bytes=MAX_DOC, max_document_pages=MAX_PAGES) as a:
        yield a


async def seed(app: Appliance) -> dict[str, str]:
    """Two HELD jobs (printer-03; pool lobby) and a CANCELLED one; the ids the cases use.

    No RELEASED job: a printer worker may change one at any moment, which is not the
    request under test changing it.
    """
    held = await app.submit({"owner": "ann", "printer": "printer-03"}, key="seed-key-held")
    pooled = await app.submit({"owner": "bob", "pool": "lobby"}, make_pdf("bob"), key="seed-key-2")
    gone = await app.submit({"owner": "cy"}, make_pdf("cy"), key="seed-key-cancelled")
    pinned = await app.submit(PIN_META, make_pdf("dee"), key="seed-key-pin")
    assert (held.status, pooled.status, gone.status, pinned.status) == (201, 201, 201, 201)
    gone_id = (await gone.json())["id"]
    assert (await app.post(f"/v1/jobs/{gone_id}/cancel")).status == 200
    held_id = (await held.json())["id"]
    return {
        "held": held_id, "held_upper": held_id.upper(), "missing": MISSING_ID,
        "pin_held": (await pinned.json())["id"],
    }  # fmt: skip


_JOB_COLUMNS = JobRecord._fields
_PIN_FAILURES = _JOB_COLUMNS.index("pin_failures")
_PIN_LOCKED_UNTIL = _JOB_COLUMNS.index("pin_locked_until")


def _pin_failures(snapshot: dict[str, Any], job_id: str) -> int:
    row = next(r for r in snapshot["jobs"] if r[_JOB_COLUMNS.index("id")] == job_id)
    return int(row[_PIN_FAILURES])


def _without_pin_counters(snapshot: dict[str, Any]) -> dict[str, Any]:
    drop = {_PIN_FAILURES, _PIN_LOCKED_UNTIL}
    rows = [tuple(v for i, v in enumerate(r) if i not in drop) for r in snapshot["jobs"]]
    return {**snapshot, "jobs": rows}


async def _chunks(body: bytes, size: int = 4096) -> AsyncIterator[bytes]:
    for i in range(0, len(body), size):
        yield body[i : i + size]


async def send(app: Appliance, c: Case, ids: Mapping[str, str]) -> aiohttp.ClientResponse:
    headers: dict[str, str | tuple[str, ...] | None] = {"Authorization": f"Bearer {KIOSK_TOKEN}"}
    if c.is_submit:
        headers |= {"Idempotency-Key": KEY, "Content-Type": MULTIPART}
    headers |= c.headers
    data: Any = c.body
    if c.chunked:
        assert c.body is not None
        data = _chunks(c.body)
    # encoded=True: the path goes out byte for byte, with no dot-segment or %-normalisation.
    url = yarl.URL(app.url + c.path.format(**ids), encoded=True)
    pairs = [  # a tuple value: the header sent once per item
        (k, item)
        for k, v in headers.items()
        if v is not None
        for item in (v if isinstance(v, tuple) else (v,))
    ]
    resp = await app.http.request(c.method, url, data=data, headers=pairs)
    await resp.read()
    if c.chunked:
        assert "Content-Length" not in resp.request_info.headers
        assert resp.request_info.headers["Transfer-Encoding"] == "chunked"
    return resp


@pytest.mark.parametrize("c", CASES)
async def test_malformed_request_is_refused_and_stores_nothing(
    make_appliance: Callable[..., Any], c: Case
) -> None:
    """A malformed request gets its 4xx problem+json with a clear detail; nothing stored changes."""
    limits = {
        "max_document_bytes": c.max_document_bytes,
        "max_document_pages": c.max_document_pages,
    }
    async with make_appliance(**limits) as app:
        await _refused_and_nothing_stored(app, c)


async def _refused_and_nothing_stored(app: Appliance, c: Case) -> None:
    ids = await seed(app)
    before = app.snapshot()

    resp = await send(app, c, ids)

    assert resp.content_type == "application/problem+json", await resp.text()
    problem = await resp.json(content_type=None)
    assert (resp.status, problem["type"]) == (c.status, PROBLEM + c.slug), problem
    assert problem["status"] == c.status
    assert problem["title"]
    assert c.detail.format(**ids) in problem["detail"], problem["detail"]
    assert len(problem["detail"]) <= MAX_DETAIL_CHARS, problem["detail"]
    for name, value in c.expect_headers.items():
        assert value in resp.headers.get(name, ""), (name, resp.headers.get(name))
    after = app.snapshot()
    if c.counts_pin_attempt:
        assert _pin_failures(after, ids["pin_held"]) == _pin_failures(before, ids["pin_held"]) + 1
        after, before = _without_pin_counters(after), _without_pin_counters(before)
    assert after == before
    assert not any((app.data_dir / "spool" / "tmp").iterdir())

    held = await app.get(f"/v1/jobs/{ids['held']}")
    assert (await held.json())["state"] == "HELD"
    if c.is_submit and "Idempotency-Key" not in c.headers:
        # The refused request did not use up its key: a good request with it makes a job.
        retry = await app.submit(key=KEY)
        assert retry.status == 201, await retry.text()


@pytest.mark.parametrize(
    ("document", "changes", "key"),
    [
        pytest.param(PDF, {}, KEY, id="baseline"),
        pytest.param(exactly(MAX_DOC), {}, KEY, id="document-exactly-at-limit"),
        pytest.param(PDF, {"priority": 0, "copies": 1}, KEY, id="priority-0-copies-1"),
        pytest.param(PDF, {"priority": 1000, "copies": 99}, KEY, id="priority-1000-copies-99"),
        pytest.param(PDF, {"owner": "ä" * 127 + "a"}, KEY, id="owner-128-chars-255-bytes"),
        pytest.param(PDF, {"pool": None, "printer": "printer-03"}, KEY, id="printer-not-pool"),
        pytest.param(PDF, {}, "k" * 8, id="key-8-chars"),
        pytest.param(PDF, {}, "~" * 80, id="key-80-chars"),
        pytest.param(PDF, {"owner": "Jose\u0301"}, KEY, id="owner-e-and-combining-acute"),
        pytest.param(
            PDF,
            {"owner": "Nguyê\u0303n Thi\u0323 Hu\u031bo\u031b\u0300ng"},
            KEY,
            id="owner-vietnamese-decomposed",
        ),
        pytest.param(PDF, {"owner": "Nguyễn Thị Hường"}, KEY, id="owner-vietnamese"),
        pytest.param(
            PDF, {"owner": "a\u0300\u0301\u0302\u0303"}, KEY, id="owner-4-combining-marks"
        ),
        pytest.param(PDF, {"owner": "김민준"}, KEY, id="owner-hangul"),
        pytest.param(PDF, {"owner": "\u1100\u1161\u11a8"}, KEY, id="owner-hangul-jamo"),
        pytest.param(PDF, {"owner": "مُحَمَّد"}, KEY, id="owner-arabic-with-harakat"),
        pytest.param(PDF, {"owner": "\u2764\ufe0f Ann"}, KEY, id="owner-emoji-with-vs16"),
        pytest.param(PDF, {"owner": "🖨"}, KEY, id="owner-one-emoji"),
        pytest.param(
            PDF,
            {"owner": "\U0001f468\u200d\U0001f469\u200d\U0001f467"},
            KEY,
            id="owner-emoji-zwj-sequence",
        ),
        pytest.param(
            PDF,
            {"owner": "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"},
            KEY,
            id="owner-persian-with-zwnj",
        ),
        pytest.param(make_lying_count_pdf(1, 10**6), {}, KEY, id="pdf-count-lies-high"),
        pytest.param(make_pages_pdf(MAX_PAGES), {}, KEY, id="pdf-pages-at-limit"),
    ],
)
async def test_edges_of_the_limits_are_accepted(
    small_app: Appliance, document: bytes, changes: dict[str, Any], key: str
) -> None:
    """The values right at each limit are accepted, so the refusals above are about the limit."""
    body = multipart(meta({**GOOD_META, **changes}), doc(document))
    resp = await send(small_app, Case(201, "", "", body=body, headers={"Idempotency-Key": key}), {})
    assert resp.status == 201, await resp.text()
    job = await resp.json()
    assert job["document"]["bytes"] == len(document)
    assert job["owner"] == {**GOOD_META, **changes}["owner"]


# --- streaming enforcement and disconnects --------------------------------------------


def _head(document: Part) -> bytes:
    """The multipart body up to and including the document part's headers."""
    whole = multipart(meta(), document)
    return whole[: whole.index(document.body)]


async def test_oversize_chunked_document_is_refused_while_still_streaming(
    small_app: Appliance,
) -> None:
    """Without Content-Length, the 413 comes while the client still holds back the body's end."""
    app = small_app
    await seed(app)
    before = app.snapshot()
    answered = asyncio.Event()
    big = exactly(256 * 1024)  # far past the limit plus the parser's one-chunk look-ahead

    async def body() -> AsyncIterator[bytes]:
        yield _head(doc(big))
        yield big
        await answered.wait()  # the rest only after the appliance has answered
        yield f"\r\n--{BOUNDARY}--\r\n".encode()

    headers = {
        "Authorization": f"Bearer {KIOSK_TOKEN}",
        "Idempotency-Key": KEY,
        "Content-Type": MULTIPART,
    }
    async with asyncio.timeout(10):
        resp = await app.http.post(f"{app.url}/v1/jobs", data=body(), headers=headers)
        answered.set()
        problem = await resp.json(content_type=None)
    assert "Content-Length" not in resp.request_info.headers
    assert resp.status == 413
    assert problem["type"] == PROBLEM + "payload-too-large"
    assert f"the document exceeds the limit of {MAX_DOC} bytes" in problem["detail"]
    assert app.snapshot() == before


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in filter(None, lines):
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return int(status_line.split()[1]), headers, body


def _request_head(content_length: int) -> bytes:
    return (
        "POST /v1/jobs HTTP/1.1\r\n"
        "Host: edgeprint\r\n"
        f"Authorization: Bearer {KIOSK_TOKEN}\r\n"
        f"Idempotency-Key: {KEY}\r\n"
        f"Content-Type: {MULTIPART}\r\n"
        f"Content-Length: {content_length}\r\n"
        "\r\n"
    ).encode()


async def test_declared_oversize_body_is_refused_before_it_is_sent(small_app: Appliance) -> None:
    """A Content-Length beyond any valid submission gets 413 before a single body byte is sent."""
    app = small_app
    await seed(app)
    before = app.snapshot()
    reader, writer = await asyncio.open_connection(app.running.host, app.running.port)
    try:
        writer.write(_request_head(10 * 1024**3))
        await writer.drain()
        async with asyncio.timeout(10):
            status, headers, body = await _read_response(reader)
    finally:
        writer.close()
        await writer.wait_closed()
    assert status == 413
    assert headers["content-type"] == "application/problem+json"
    problem = json.loads(body)
    assert problem["type"] == PROBLEM + "payload-too-large"
    assert f"a document may have at most {MAX_DOC} bytes" in problem["detail"]
    assert app.snapshot() == before


async def test_client_disconnect_mid_upload_leaves_no_job_and_no_file(app: Appliance) -> None:
    """A kiosk that drops off mid-upload leaves no job, no spool file, no staging file, no 5xx."""
    await seed(app)
    before = app.snapshot()
    staging = app.data_dir / "spool" / "tmp"
    registry = app.running.service.metrics.registry

    def handled(status: str) -> float:
        sample = registry.get_sample_value(
            "edgeprint_http_request_duration_seconds_count", {"route": "/v1/jobs", "status": status}
        )
        return sample or 0.0

    handled_before = {s: handled(s) for s in ("2xx", "4xx", "5xx")}
    document = exactly(2 * 1024 * 1024)
    whole = multipart(meta(), doc(document))
    half = whole[: len(_head(doc(document))) + len(document) // 2]

    _, writer = await asyncio.open_connection(app.running.host, app.running.port)
    writer.write(_request_head(len(whole)) + half)
    await writer.drain()
    # The appliance is mid-upload: it has started staging the document.
    await eventually(lambda: any(staging.iterdir()), "the document to be staged")
    writer.close()
    await writer.wait_closed()

    # The appliance has finished with the request: it counted it and emptied the staging area.
    await eventually(
        lambda: sum(handled(s) for s in handled_before) > sum(handled_before.values()),
        "the appliance to finish handling the dropped request",
    )
    await eventually(lambda: not any(staging.iterdir()), "the staging folder to be emptied")
    assert handled("5xx") == handled_before["5xx"], "a client disconnect is not a server error"
    assert handled("2xx") == handled_before["2xx"]
    assert app.snapshot() == before
    # …and it still takes jobs, with the same key the dropped upload used.
    assert (await app.submit(key=KEY)).status == 201
