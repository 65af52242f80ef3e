"""Jobs on the wire: a submission, a job as the API shows it (model and fast path), lists,
the single calls' bodies and the dead-letter queue."""

from __future__ import annotations

import json
from collections.abc import Sequence
from json.encoder import encode_basestring as _quote

from pydantic import (
    BaseModel,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    model_validator,
)

from edgeprint import evidence
from edgeprint.models.base import TITLE_PATTERN, Owner, Pin, StrictModel, TargetModel, iso_or_null
from edgeprint.records import JobRecord
from edgeprint.states import JobState
from edgeprint.stock import PageSizes
from edgeprint.timefmt import rfc3339_ms
from edgeprint.titles import MAX_TITLE_CHARS


class SubmitMetadata(TargetModel):
    """The ``metadata`` part of ``POST /v1/jobs`` (JSON)."""

    owner: Owner
    title: StrictStr | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_TITLE_CHARS,
        pattern=TITLE_PATTERN,
        description="what the person knows the job by, shown on the release page (a badge: "
        "the attendee's name); when absent, the PDF's own /Title if it has one",
    )
    priority: StrictInt = Field(default=100, ge=0, le=1000, description="lower prints first")
    hold: StrictBool = Field(default=True, description="false: printable at once")
    copies: StrictInt = Field(default=1, ge=1, le=99)
    release_pin: Pin | None = Field(
        default=None,
        description="if set, the release must present it as pin; stored only as a salted hash",
    )

    @model_validator(mode="after")
    def _released_needs_target(self) -> SubmitMetadata:
        if not self.hold and self.printer is None and self.pool is None:
            raise ValueError("a job with hold=false must name a printer or a pool")
        return self


class ReleaseRequest(TargetModel):
    """Optional JSON body of ``POST /v1/jobs/{id}/release``: where to print, and the PIN."""

    pin: Pin | None = Field(
        default=None, description="the job's release PIN (required when it was given one)"
    )


class CancelRequest(StrictModel):
    """Optional JSON body of ``POST /v1/jobs/{id}/cancel``."""

    pin: Pin | None = Field(
        default=None,
        description="the release PIN: a kiosk cancelling a HELD job that has one must give it",
    )


class DocumentOut(BaseModel):
    """The stored document of a job."""

    sha256: str = Field(description="hex SHA-256 of the document")
    bytes: int = Field(description="size in bytes")
    pages: int | None = Field(
        description="pages, as counted at submission (for ZPL: the labels it makes)"
    )
    format: str = Field(
        default="application/pdf",
        description="application/pdf, or application/vnd.zebra-zpl (sent unchanged)",
    )  # issue 23 (zpl)
    page_size: PageSizeOut | None = Field(
        default=None, description="its pages' size, read at submission (null: not known)"
    )


class PageSizeOut(BaseModel):
    """The size of a document's pages (its largest page when they differ)."""

    size: str = Field(description="as people name it: 4×3 in, 210×297 mm")
    width_mm: float = Field(description="short edge")
    length_mm: float = Field(description="long edge")
    uniform: bool = Field(description="every page has this size")

    @classmethod
    def of(cls, sizes: PageSizes | None) -> PageSizeOut | None:
        if sizes is None:
            return None
        return cls.model_construct(
            size=sizes.describe(),
            width_mm=sizes.short_max / 100,
            length_mm=sizes.long_max / 100,
            uniform=sizes.uniform,
        )


def _page_size_json(sizes: PageSizes | None) -> str:
    if sizes is None:
        return "null"
    return "".join(
        (
            '{"size":',
            _quote(sizes.describe()),
            ',"width_mm":',
            _encode_compact(sizes.short_max / 100),
            ',"length_mm":',
            _encode_compact(sizes.long_max / 100),
            ',"uniform":',
            "true" if sizes.uniform else "false",
            "}",
        )
    )


def _unverified(job: JobRecord) -> str | None:
    """What is known of a DONE job whose printer never confirmed the paper (None: it did)."""
    if job.state is not JobState.DONE or job.settled_by is None:
        return None
    return evidence.unverified_words(job.settled_by, job.printed_on)


def _waiting(job: JobRecord) -> str | None:
    """Why a RELEASED job waits for stock (a note left on a job that has moved on is not shown)."""
    return job.waiting_reason if job.state is JobState.RELEASED else None


class JobOut(BaseModel):
    """A job as the API shows it. Times are RFC 3339 UTC strings."""

    id: str
    state: JobState
    owner: str
    title: str | None = Field(
        default=None,
        description="what the person knows the job by: given with it, else its PDF's /Title, "
        "its IPP job-name or its uploaded file's name (null: none)",
    )
    printer: str | None = Field(description="requested printer, if any")
    pool: str | None = Field(description="requested pool, if any")
    priority: int
    copies: int
    attempts: int = Field(description="print attempts so far")
    created_at: str
    updated_at: str
    released_at: str | None
    finished_at: str | None
    printed_on: str | None = Field(description="printer that holds or printed the job")
    last_error: str | None
    dead_reason: str | None
    cancel_requested: bool = Field(
        description="a cancel is pending at the printer (PRINTING jobs only)"
    )
    truncated_copies: int = Field(
        description="copies the printer made from a broken-off upload (not counted as printed)"
    )
    settled_by: str | None = Field(
        description="the printer's answer that settled the job's present state, one of the "
        "evidence table's (DESIGN §3): completed_acknowledged, completed_impressions, "
        "forgotten_after_acknowledged, stopped_after_pages, vanished, …; person when a "
        "technician resolved it; null while nothing settled it"
    )
    printed_unverified: str | None = Field(
        description="a DONE job whose paper the printer never confirmed: what is known, in "
        "words (null when the printer said the copy completed whole, or not DONE)"
    )
    pages_printed: int | None = Field(
        description="impressions that came out of a copy that stopped part-way (null: none)"
    )
    waiting_reason: str | None = Field(
        default=None,
        description="RELEASED, and no printer of its target has stock its pages fit ready: "
        "why, in words a person can act on (it prints as soon as fitting stock is loaded)",
    )
    pin_required: bool = Field(description="the release must present the job's PIN")
    rehearsal: bool = Field(
        default=False,
        description="made while the event was in rehearsal (POST /v1/event/rehearsal): a test, "
        "never counted in the live figures; cancelled by go-live while still waiting",
    )
    document: DocumentOut
    reprint_of: str | None = Field(
        default=None,
        description="a reprint (POST /v1/jobs/{id}/reprint): the DONE job it was made from "
        "(a reprint of a reprint names the first original)",
    )
    reprints: list[str] = Field(
        default=[],
        description="the reprints made from this job, oldest first (only a DONE job has any)",
    )

    @classmethod
    def from_record(cls, job: JobRecord, reprints: Sequence[str] = ()) -> JobOut:
        # Trusted data from the store: build without re-validating (the hot path).
        return cls.model_construct(
            id=job.id,
            state=job.state,
            owner=job.owner,
            title=job.title,
            printer=job.printer,
            pool=job.pool,
            priority=job.priority,
            copies=job.copies,
            attempts=job.attempts,
            created_at=iso_or_null(job.created_at) or "",
            updated_at=iso_or_null(job.updated_at) or "",
            released_at=iso_or_null(job.released_at),
            finished_at=iso_or_null(job.finished_at),
            printed_on=job.printed_on,
            last_error=job.last_error,
            dead_reason=job.dead_reason,
            cancel_requested=bool(job.cancel_requested),
            truncated_copies=job.truncated_copies,
            settled_by=job.settled_by,
            printed_unverified=_unverified(job),
            pages_printed=job.pages_printed,
            waiting_reason=_waiting(job),
            pin_required=job.release_pin_hash is not None,
            rehearsal=bool(job.rehearsal),
            document=DocumentOut.model_construct(
                sha256=job.document_sha256,
                bytes=job.document_bytes,
                pages=job.document_pages,
                format=job.document_format,
                page_size=PageSizeOut.of(job.page_sizes),
            ),
            reprint_of=job.reprint_of,
            reprints=list(reprints),
        )


_encode_compact = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _text(value: object) -> str:
    """A JSON value as ``_encode_compact`` writes it: strings and null without the encoder."""
    if type(value) is str:
        return _quote(value)
    return "null" if value is None else _encode_compact(value)


def _number(value: object) -> str:
    if type(value) is int:
        return int.__repr__(value)
    return "null" if value is None else _encode_compact(value)


def _time(ts: float | None) -> str:
    return "null" if ts is None else f'"{rfc3339_ms(ts)}"'


def job_json(job: JobRecord, reprints: Sequence[str] = ()) -> bytes:
    """``JobOut.from_record(job).model_dump_json()``, byte for byte, without building the model.

    A job is the answer of every job request; building the pydantic model to
    serialise it was a tenth of a release's CPU, and building a dict for the json
    encoder half of what was left. tests/test_api_jobs.py checks the bytes against
    the model's.
    """
    return "".join(
        (
            '{"id":',
            _text(job.id),
            ',"state":"',
            job.state.value,
            '","owner":',
            _text(job.owner),
            ',"title":',
            _text(job.title),
            ',"printer":',
            _text(job.printer),
            ',"pool":',
            _text(job.pool),
            ',"priority":',
            _number(job.priority),
            ',"copies":',
            _number(job.copies),
            ',"attempts":',
            _number(job.attempts),
            ',"created_at":"',
            iso_or_null(job.created_at) or "",
            '","updated_at":"',
            iso_or_null(job.updated_at) or "",
            '","released_at":',
            _time(job.released_at),
            ',"finished_at":',
            _time(job.finished_at),
            ',"printed_on":',
            _text(job.printed_on),
            ',"last_error":',
            _text(job.last_error),
            ',"dead_reason":',
            _text(job.dead_reason),
            ',"cancel_requested":',
            "true" if job.cancel_requested else "false",
            ',"truncated_copies":',
            _number(job.truncated_copies),
            ',"settled_by":',
            _text(job.settled_by),
            ',"printed_unverified":',
            _text(_unverified(job)),
            ',"pages_printed":',
            _number(job.pages_printed),
            ',"waiting_reason":',
            _text(_waiting(job)),
            ',"pin_required":',
            "false" if job.release_pin_hash is None else "true",
            ',"rehearsal":',
            "true" if job.rehearsal else "false",
            ',"document":{"sha256":',
            _text(job.document_sha256),
            ',"bytes":',
            _number(job.document_bytes),
            ',"pages":',
            _number(job.document_pages),
            ',"format":',
            _text(job.document_format),
            ',"page_size":',
            _page_size_json(job.page_sizes),
            "}",
            ',"reprint_of":',
            _text(job.reprint_of),
            ',"reprints":[',
            ",".join(_quote(r) for r in reprints),
            "]}",
        )
    ).encode()


class JobListOut(BaseModel):
    """A page of jobs, newest first; pass ``next_cursor`` as ``cursor`` for the next page."""

    jobs: list[JobOut]
    next_cursor: str | None


class DeadLetterOut(BaseModel):
    """``GET /v1/dead-letter``: DEAD jobs, oldest first."""

    jobs: list[JobOut]
    count: int = Field(description="DEAD jobs in all")
    next_cursor: str | None


class ResolveRequest(StrictModel):
    """JSON body of ``POST /v1/jobs/{id}/resolve``: did the copy come out?"""

    printed: StrictBool | None = Field(
        default=None,
        description="true: it printed (→ DONE); false: it did not (→ RELEASED, printed once more)",
    )
    rest: StrictBool | None = Field(
        default=None,
        description="true: print only the pages that did not come out (a one-copy job whose "
        "copy stopped part-way: → RELEASED, from the page after pages_printed)",
    )
