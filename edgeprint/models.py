"""The v1 API contract as pydantic models (DESIGN §5).

These models validate what kiosks send and shape what edgeprint answers; the
OpenAPI document is generated from them. Unknown fields are refused.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from datetime import UTC, date, datetime
from json.encoder import encode_basestring as _quote
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    WithJsonSchema,
    model_validator,
)

from edgeprint import evidence
from edgeprint.config import NAME_PATTERN
from edgeprint.records import JobRecord
from edgeprint.states import JobState
from edgeprint.stock import PageSizes, StockView
from edgeprint.timefmt import rfc3339_ms
from edgeprint.titles import MAX_TITLE_CHARS

TargetName = Annotated[str, Field(pattern=NAME_PATTERN, description="[a-z0-9-]{1,40}")]
#: No control characters (C0, DEL or C1): the owner ends up in logs and IPP attributes.
OWNER_PATTERN = r"^[^\x00-\x1f\x7f-\x9f]+$"
#: requesting-user-name is name(MAX): at most 255 octets (RFC 8011 §5.1.4).
OWNER_MAX_OCTETS = 255
#: Unicode categories refused in an owner: format characters (bidi overrides such as
#: U+202E, zero-width joiners, BOM), surrogates, private use, unassigned, line/paragraph
#: separators (Cc is already refused by OWNER_PATTERN).
_OWNER_BAD_CATEGORIES = {"Cf": "invisible format character", "Cs": "lone surrogate",
                         "Co": "private-use character", "Cn": "unassigned code point",
                         "Zl": "line separator", "Zp": "paragraph separator"}  # fmt: skip


#: Characters that draw nothing although their category says letter or symbol: the
#: Hangul fillers, Braille blank, and the default-ignorable code points that are not
#: already refused as format characters (combining grapheme joiner, Khmer inherent
#: vowels, Mongolian and other variation selectors).
_BLANK_LOOKING = frozenset(
    "\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180f\u2800\u3164\uffa0"
    + "".join(map(chr, range(0xFE00, 0xFE10)))
    + "".join(map(chr, range(0xE0100, 0xE01F0)))
)
#: Categories that never make a character visible on their own: marks, separators,
#: other (controls and the rest are refused outright).
_INVISIBLE_CATEGORY_CLASSES = frozenset("MZC")
#: Combining marks (Mn, Me) allowed in a row: real scripts stack two or three
#: (Vietnamese ệ = e + U+0323 + U+0302); "Zalgo" text stacks dozens.
OWNER_MAX_COMBINING_RUN = 4


#: Zero-width non-joiner and joiner (format characters, Cf) are part of ordinary names:
#: Persian and Indic scripts need ZWNJ, emoji sequences (👨‍👩‍👧) are joined with ZWJ.
_JOINERS = frozenset("\u200c\u200d")


def _check_owner(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    if value != value.strip():
        raise ValueError("must not start or end with white space")
    visible = False
    marks_in_a_row = 0
    for ch in value:
        category = unicodedata.category(ch)
        what = None if ch in _JOINERS else _OWNER_BAD_CATEGORIES.get(category)
        if what is not None:
            article = "an" if what[0] in "aeiou" else "a"
            raise ValueError(f"must not contain {article} {what} (U+{ord(ch):04X})")
        if category in ("Mn", "Me"):
            marks_in_a_row += 1
            if marks_in_a_row > OWNER_MAX_COMBINING_RUN:
                raise ValueError(
                    f"too many combining marks in a row (at most {OWNER_MAX_COMBINING_RUN})"
                )
        else:
            marks_in_a_row = 0
        if category[0] not in _INVISIBLE_CATEGORY_CLASSES and ch not in _BLANK_LOOKING:
            visible = True
    if not visible:
        raise ValueError("must contain a visible character (letter, digit, punctuation, symbol)")
    if len(value.encode("utf-8")) > OWNER_MAX_OCTETS:
        raise ValueError(f"must be at most {OWNER_MAX_OCTETS} bytes in UTF-8 (IPP name(MAX))")
    return value


#: Printable, no control or invisible characters, not blank, 1–128 characters and at most
#: 255 UTF-8 bytes.
Owner = Annotated[
    str,
    Field(min_length=1, max_length=128, pattern=OWNER_PATTERN),
    AfterValidator(_check_owner),
]
#: A release PIN: 4–12 ASCII digits, as a JSON string (leading zeros count).
PIN_PATTERN = r"^[0-9]{4,12}$"
Pin = Annotated[StrictStr, Field(pattern=PIN_PATTERN, description="4–12 digits, as a string")]
#: 8–80 printable ASCII characters (Idempotency-Key header).
IDEMPOTENCY_KEY_PATTERN = r"^[\x21-\x7e]{8,80}$"
#: Job ids are 32 lowercase hex characters.
JOB_ID_PATTERN = r"^[0-9a-f]{32}$"
#: What a kiosk integrator is told instead of a bare regular expression.
PATTERN_HINTS = {
    NAME_PATTERN: "must be 1–40 characters from a-z, 0-9 and '-'",
    OWNER_PATTERN: "must not contain control characters (newline, tab, NUL, …)",
    PIN_PATTERN: "must be 4–12 digits (0-9), sent as a JSON string",
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Target(_Strict):
    printer: TargetName | None = Field(default=None, description="a configured printer")
    pool: TargetName | None = Field(default=None, description="a configured pool")

    @model_validator(mode="after")
    def _one_target(self) -> _Target:
        if self.printer is not None and self.pool is not None:
            raise ValueError("give either printer or pool, not both")
        return self


#: A job's title (issue 24): 1–200 characters, no control characters, not only spaces.
TITLE_PATTERN = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$"
PATTERN_HINTS[TITLE_PATTERN] = "must be 1–200 characters, no control characters, not blank"


class SubmitMetadata(_Target):
    """The ``metadata`` part of ``POST /v1/jobs`` (JSON)."""

    owner: Owner
    title: StrictStr | None = Field(
        default=None, min_length=1, max_length=MAX_TITLE_CHARS, pattern=TITLE_PATTERN,
        description="what the person knows the job by, shown on the release page (a badge: "
        "the attendee's name); when absent, the PDF's own /Title if it has one",
    )  # fmt: skip
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


class ReleaseRequest(_Target):
    """Optional JSON body of ``POST /v1/jobs/{id}/release``: where to print, and the PIN."""

    pin: Pin | None = Field(
        default=None, description="the job's release PIN (required when it was given one)"
    )


class CancelRequest(_Strict):
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
            size=sizes.describe(), width_mm=sizes.short_max / 100,
            length_mm=sizes.long_max / 100, uniform=sizes.uniform,
        )  # fmt: skip


def _page_size_json(sizes: PageSizes | None) -> str:
    if sizes is None:
        return "null"
    return "".join((
        '{"size":', _quote(sizes.describe()),
        ',"width_mm":', _encode_compact(sizes.short_max / 100),
        ',"length_mm":', _encode_compact(sizes.long_max / 100),
        ',"uniform":', "true" if sizes.uniform else "false", "}",
    ))  # fmt: skip


def _unverified(job: JobRecord) -> str | None:
    """What is known of a DONE job whose printer never confirmed the paper (None: it did)."""
    if job.state is not JobState.DONE or job.settled_by is None:
        return None
    return evidence.unverified_words(job.settled_by, job.printed_on)


def _waiting(job: JobRecord) -> str | None:
    """Why a RELEASED job waits for stock (a note left on a job that has moved on is not shown)."""
    return job.waiting_reason if job.state is JobState.RELEASED else None


def _iso(ts: float | None) -> str | None:
    return None if ts is None else rfc3339_ms(ts)


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
            created_at=_iso(job.created_at) or "",
            updated_at=_iso(job.updated_at) or "",
            released_at=_iso(job.released_at),
            finished_at=_iso(job.finished_at),
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
    return "".join((
        '{"id":', _text(job.id), ',"state":"', job.state.value, '","owner":', _text(job.owner),
        ',"title":', _text(job.title), ',"printer":', _text(job.printer),
        ',"pool":', _text(job.pool),
        ',"priority":', _number(job.priority), ',"copies":', _number(job.copies),
        ',"attempts":', _number(job.attempts),
        ',"created_at":"', _iso(job.created_at) or "", '","updated_at":"',
        _iso(job.updated_at) or "", '","released_at":', _time(job.released_at),
        ',"finished_at":', _time(job.finished_at), ',"printed_on":', _text(job.printed_on),
        ',"last_error":', _text(job.last_error), ',"dead_reason":', _text(job.dead_reason),
        ',"cancel_requested":', "true" if job.cancel_requested else "false",
        ',"truncated_copies":', _number(job.truncated_copies),
        ',"settled_by":', _text(job.settled_by),
        ',"printed_unverified":', _text(_unverified(job)),
        ',"pages_printed":', _number(job.pages_printed),
        ',"waiting_reason":', _text(_waiting(job)),
        ',"pin_required":', "false" if job.release_pin_hash is None else "true",
        ',"rehearsal":', "true" if job.rehearsal else "false",
        ',"document":{"sha256":', _text(job.document_sha256),
        ',"bytes":', _number(job.document_bytes), ',"pages":', _number(job.document_pages),
        ',"format":', _text(job.document_format),
        ',"page_size":', _page_size_json(job.page_sizes), "}",
        ',"reprint_of":', _text(job.reprint_of),
        ',"reprints":[', ",".join(_quote(r) for r in reprints), "]}",
    )).encode()  # fmt: skip


class JobListOut(BaseModel):
    """A page of jobs, newest first; pass ``next_cursor`` as ``cursor`` for the next page."""

    jobs: list[JobOut]
    next_cursor: str | None


class FieldError(BaseModel):
    """One invalid field: ``loc`` is dotted (``metadata.priority``)."""

    loc: str
    message: str


class Problem(BaseModel):
    """An RFC 9457 problem document (``application/problem+json``)."""

    type: str
    title: str
    status: int
    detail: str
    state: JobState | None = Field(default=None, description="current job state (409 only)")
    job_id: str | None = None
    errors: list[FieldError] | None = None
    takes: list[str] | None = Field(
        default=None,
        description="unsupported-document: the document formats the printer lists",
    )
    mode: Literal["live", "rehearsal"] | None = Field(
        default=None, description="not-in-rehearsal / already-in-rehearsal: the event's mode"
    )
    count: int | None = Field(
        default=None, description="reprint-limit: how many times the job was reprinted"
    )
    limit: int | None = Field(
        default=None, description="reprint-limit: release.max_reprints, the most allowed"
    )
    url: str | None = Field(
        default=None, description="upgrade-required: the https:// (ipps://) URL to use instead"
    )


class Health(BaseModel):
    """``/healthz`` and ``/readyz``."""

    status: Literal["ok", "unavailable"]
    detail: str | None = None


class PrinterCapabilitiesOut(BaseModel):
    """What a printer takes (IPP names: document-format-supported, pwg-raster-document-…)."""

    formats: list[str]
    pwg_raster_types: list[str]
    pwg_raster_resolutions: list[str]
    urf_supported: list[str]
    media_ready: list[str]
    copies_max: int
    create_job: bool
    ipp_versions: list[str]
    color: bool


class ReadyMediaOut(BaseModel):
    """One stock a printer has ready (media-col-ready / media-ready, or [[printers]] media)."""

    name: str | None = Field(description="PWG media name, e.g. oe_4x3-label_4x3in")
    size: str = Field(description="as people name it: 4×3 in, 210×297 mm")
    width_mm: float = Field(description="short edge")
    length_mm: float = Field(description="long edge")
    label: bool = Field(description="label or roll stock (its default fit is exact)")
    tray: str | None = Field(description="media-source: the tray it is in")
    fit: Literal["exact", "center", "scale"] = Field(
        description="how pages meet it: exact (same size only), center, scale (any size)"
    )

    @classmethod
    def of(cls, view: StockView) -> list[ReadyMediaOut]:
        return [
            cls(name=s.name, size=s.describe(), width_mm=s.short / 100, length_mm=s.long / 100,
                label=s.label, tray=s.source, fit=view.fit_of(s))
            for s in view.stocks
        ]  # fmt: skip


class PrinterReasonOut(BaseModel):
    """One ``printer-state-reasons`` value (RFC 8011 §5.4.12) with its severity."""

    value: str = Field(description="as the printer sent it, e.g. media-empty-error or other")
    keyword: str = Field(description="the value without its severity suffix")
    severity: Literal["error", "warning", "report"] = Field(
        description="from the suffix; a value without one is an error (RFC 8011 §5.4.12)"
    )
    known: bool = Field(description="a registered keyword (RFC 8011, PWG 5100.x) edgeprint knows")
    words: str = Field(description="what it means, in plain words")
    since: datetime | None = Field(
        default=None, description="since when edgeprint has seen it (this run of probes)"
    )


class SupplyOut(BaseModel):
    """One supply of a printer (``printer-supply`` or ``marker-*``, issue 23)."""

    name: str = Field(description="printer-supply-description (or marker-names)")
    kind: str = Field(description="the PWG 5100.13 supply type (toner, ink, …) or marker-types")
    level_percent: int | None = Field(description="0–100; null when the printer does not say")


class MediaLevelOut(BaseModel):
    """One input tray (``printer-input-tray``) and the media it holds (``media-col-ready``)."""

    tray: str
    media: str | None = Field(description="the PWG media name it holds; null when not said")
    level_percent: int | None = Field(description="0–100; null when the printer does not say")


class RunwayOut(BaseModel):
    """A label roll's runway: labels counted since the roll was changed (issue 23)."""

    labels_left: int = Field(description="labels_per_roll less the labels printed since")
    labels_per_roll: int
    per_minute: float = Field(description="labels a minute over the last 15 minutes")
    minutes_left: float | None = Field(
        description="when the roll runs out at that rate; null when nothing printed lately"
    )


class PrinterProblemOut(BaseModel):
    """One printer problem in plain words with its time (issue 25; edgeprint.printers.problems)."""

    kind: str = Field(
        description="a stable slug: not-answering, not-responding, media-jam, door-open, "
        "media-empty, tls-pin-changed, tls-required, tls-failed, bad-answer, "
        "cannot-report-job-state, stopped, not-accepting-jobs, quarantined, unusable-format, "
        "paused, other"
    )
    text: str = Field(
        description="one sentence with its time (the box's local time): 'paper jam since "
        "08:05:02 (printer says media-jam-error)'; an ended one: 'was: paper jam, until 08:06:40'"
    )
    since: str = Field(description="when it began (RFC 3339 UTC, as every time in the API)")
    until: str | None = Field(description="when it ended (RFC 3339 UTC); null: still going on")
    evidence: str = Field(
        description="the raw detail (reason keywords, the transport's text), control "
        "characters escaped, cut to 300 characters"
    )


class PrinterOut(BaseModel):
    """A printer as technicians see it (``GET /v1/printers``). IPP names as in RFC 8011."""

    name: str
    uri: str
    pool: str | None
    healthy: bool = Field(description="takes new work")
    health_reason: str | None = Field(description="why not healthy")
    reachable: bool
    paused: bool
    printer_state: str | None = Field(
        description="idle, processing or stopped; null before a probe"
    )
    printer_state_reasons: list[str]
    printer_state_message: str
    reasons: list[PrinterReasonOut] = Field(
        default_factory=list,
        description="each printer-state-reasons value (but none) with its severity; an error "
        "one, known or not, keeps the printer from new work",
    )
    queued_job_count: int | None = Field(description="jobs queued in the printer itself")
    waiting: int = Field(description="RELEASED jobs waiting for this printer by name")
    oldest_waiting_s: float | None = Field(description="age of the oldest of them, seconds")
    printing_job: str | None = Field(description="id of the job the printer has in hand")
    last_error: str | None = Field(
        description="the last failed request's text; null once the printer answers properly"
    )
    problems: list[PrinterProblemOut] = Field(
        default_factory=list,
        description="current problems (oldest first), then at most the 2 latest that ended "
        "within the last 5 minutes and are of no current problem's kind (latest first)",
    )
    problem: str | None = Field(
        default=None, description="the text of the first current problem; null: none"
    )
    capabilities: PrinterCapabilitiesOut | None = Field(
        default=None, description="what the printer takes, from its last probe (null before one)"
    )
    unreachable_since: datetime | None = Field(
        default=None, description="since when the printer has not answered (null: it answers)"
    )
    sends: str | None = Field(
        default=None,
        description="the document format edgeprint sends it (application/pdf, image/pwg-raster, "
        "image/urf, image/jpeg); null when it takes none edgeprint can make",
    )
    owner: str | None = Field(
        default=None,
        description="[cluster] appliance_id of the appliance driving this printer (its "
        "lease's owner); null while no appliance holds its lease",
    )
    lease_epoch: int | None = Field(
        default=None,
        description="the lease's epoch, one more at each takeover (null with the SQLite "
        "store: one appliance owns every printer)",
    )
    epoch: int | None = Field(
        default=None,
        description="the printer's epoch: its current life, one more each time it restarted "
        "or was replaced (printer-up-time went back, printer-uuid changed, …); job-ids and "
        "history are compared only within one epoch (null before the first probe)",
    )
    epoch_began_at: datetime | None = Field(default=None, description="when this epoch began")
    epoch_cause: str | None = Field(default=None, description="why it began, in words")
    media_ready: list[ReadyMediaOut] | None = Field(
        default=None,
        description="the stock it has ready, read on every probe (null before the first); "
        "pool jobs are claimed only by a printer whose stock fits their pages",
    )
    media_from: Literal["printer", "config"] | None = Field(
        default=None,
        description="printer: it reported its ready media; config: it reports none, so "
        "[[printers]] media is used; null: not known (it takes any size)",
    )
    personality: dict[str, Any] | None = Field(
        default=None,
        description="what this printer is known to keep and echo, learnt from its answers: "
        "job_name / user_name (unknown, whole, shortened, contains, replaced, absent), "
        "name_length, job_uuid, k_octets, impressions, time_at_creation (reported or not), "
        "history (unknown, none, kept), gja_unreliable, lists_live_only, up_time_moves",
    )
    # issue 23 (supplies)
    supplies: list[SupplyOut] = Field(
        default_factory=list, description="supply levels from the last probe"
    )
    media_levels: list[MediaLevelOut] = Field(
        default_factory=list, description="input tray levels from the last probe"
    )
    runway: RunwayOut | None = Field(
        default=None, description="the label roll's runway; null without labels_per_roll"
    )


class MediaLoadedOut(BaseModel):
    """``POST /v1/printers/{name}/media-loaded``: the printer's runway from a full roll."""

    printer: str
    runway: RunwayOut | None = Field(description="null when the printer has no labels_per_roll")


class PoolOut(BaseModel):
    """A pool: its printers and the jobs waiting for any of them."""

    name: str
    printers: list[str]
    waiting: int = Field(description="RELEASED jobs waiting for the pool")
    oldest_waiting_s: float | None = Field(description="age of the oldest of them, seconds")


class StockWaitOut(BaseModel):
    """Released jobs of one size that no printer of their target has fitting stock for."""

    printer: str | None = Field(description="the printer they are named for (null: a pool)")
    pool: str | None
    size: str = Field(description="their page size, as people name it: 4×3 in")
    jobs: int
    reason: str = Field(description="why they wait, in words a person can act on")


class PrintersOut(BaseModel):
    """``GET /v1/printers``."""

    printers: list[PrinterOut]
    pools: list[PoolOut]
    waiting_for_stock: list[StockWaitOut] = Field(
        default_factory=list,
        description="jobs waiting because no printer of their target has fitting stock ready "
        "(checked every second): load the stock the reason names and they print",
    )


class DrainOut(BaseModel):
    """``POST /v1/printers/{name}/drain``: the printer (now paused) and the jobs moved."""

    printer: PrinterOut
    moved: list[str]


class DeadLetterOut(BaseModel):
    """``GET /v1/dead-letter``: DEAD jobs, oldest first."""

    jobs: list[JobOut]
    count: int = Field(description="DEAD jobs in all")
    next_cursor: str | None


class ResolveRequest(_Strict):
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


class PrinterSummaryOut(BaseModel):
    """One printer in ``GET /v1/stats``: can it work, and what waits for it."""

    name: str
    pool: str | None
    healthy: bool = Field(description="takes new work")
    health_reason: str | None = Field(description="why not healthy")
    reachable: bool
    paused: bool
    waiting: int = Field(description="RELEASED jobs waiting for this printer by name")
    oldest_waiting_s: float | None = Field(description="age of the oldest of them, seconds")
    printing_job: str | None = Field(description="id of the job the printer has in hand")


class StatsOut(BaseModel):
    """``GET /v1/stats``: the numbers a technician's screen shows."""

    jobs_by_state: dict[str, int] = Field(
        description="live jobs by state, every state, zero included (never a rehearsal job: "
        "those are in GET /v1/event)"
    )
    dead_letters: int = Field(description="DEAD jobs in all (rehearsal ones too)")
    dead_letters_by_reason: dict[str, int] = Field(
        description="DEAD jobs by dead_reason (outcome_unknown, poison, attempts_exhausted, …)"
    )
    printers: list[PrinterSummaryOut]
    pools: list[PoolOut]


class WebhookDeliveryOut(BaseModel):
    """A webhook delivery given up after ``max_delivery_s`` (parked as failed)."""

    state: Literal["failed"]
    url: str = Field(description="the receiver ([[webhooks]].url, without user info or query)")
    webhook_id: str = Field(description="the webhook-id header it was sent with")
    type: str = Field(description="job.done, job.dead, …, printer.unhealthy, printer.healthy")
    job_id: str | None
    printer: str | None
    attempts: int
    first_attempt_at: str
    failed_at: str
    last_error: str = Field(description="what the last attempt got: HTTP status, time-out, …")


class WebhookDeliveriesOut(BaseModel):
    """``GET /v1/webhooks/deliveries?state=failed``: oldest first."""

    deliveries: list[WebhookDeliveryOut]
    next_cursor: str | None


def iso_time(ts: float) -> str:
    """Unix seconds as the API writes times (RFC 3339 UTC, milliseconds)."""
    return _iso(ts) or ""


class IdentifyRequest(_Strict):
    """Optional JSON body of ``POST /v1/printers/{name}/identify``."""

    how: Literal["auto", "identify", "test-page"] = Field(
        default="auto",
        description="auto: IPP Identify-Printer when the printer supports it, else a test page; "
        "identify: Identify-Printer only; test-page: a one-page test print",
    )


class IdentifyOut(BaseModel):
    """What the printer was asked to do to show itself."""

    printer: str
    action: Literal["identify-printer", "test-page"]
    printer_job_id: int | None = Field(description="the test page's IPP job-id at the printer")


# --- issue 23 (preflight): the event's mode and a printer checked now ----------------------


class AuditEntryOut(BaseModel):
    """One row of ``GET /v1/audit`` (issue 26): who did what, from where, to what, how."""

    id: int
    at: str = Field(description="when (RFC 3339 UTC)")
    actor: str = Field(
        description="who: a token's name, an IPP user, an owner (release page, upload) or "
        "`signal`; never a secret"
    )
    actor_kind: Literal["token", "ipp-user", "owner", "system"]
    source: str | None = Field(description="the client's address as the appliance saw it")
    action: str = Field(description="release, cancel, replay, resolve, reprint, pause, …")
    target_kind: str = Field(description="job, jobs (bulk), printer, place, owner, event, config")
    target: str
    outcome: Literal["done", "conflict", "refused"]
    detail: str


class AuditOut(BaseModel):
    """``GET /v1/audit``: the rows asked for, newest first."""

    entries: list[AuditEntryOut]


class EventOut(BaseModel):
    """``GET /v1/event``: rehearsal or live, since when, and the rehearsal's jobs."""

    mode: Literal["live", "rehearsal"]
    since: str | None = Field(
        description="when this mode began (RFC 3339 UTC); null: live since the store began"
    )
    actor: str = Field(description="who set it: a token's name, `config`, or `install`")
    badge_media: str | None = Field(
        description="[event] badge_media: the badge's stock, a PWG media name (null: not set)"
    )
    rehearsal_jobs_by_state: dict[str, int] = Field(
        description="rehearsal jobs by state, every state (the live figures of GET /v1/stats "
        "never count them)"
    )
    cancelled: list[str] = Field(
        default_factory=list,
        description="POST /v1/event/live: the ids of the rehearsal jobs it cancelled (HELD, "
        "RELEASED or DEAD then); empty otherwise",
    )


class ApplianceTlsOut(BaseModel):
    """``GET /v1/tls`` (issue 26): how the appliance serves TLS and what its clients pin."""

    tls: Literal["self-signed", "files", "off"] | None = Field(
        description='[server] tls: "self-signed", "files", "off", or null (absent: plain HTTP '
        "as before TLS)"
    )
    fingerprint: str | None = Field(
        description="SHA-256 of the certificate (DER), upper-case hex with colons, as "
        "`openssl x509 -noout -fingerprint -sha256` prints it; null without TLS"
    )
    pin: str | None = Field(
        description="`sha256//` and the base64 SHA-256 of the public key, as curl's "
        "`--pinnedpubkey` takes it; null without TLS"
    )
    names: list[str] | None = Field(
        description="the certificate's subject alternative names (DNS names and addresses)"
    )
    not_before: str | None = Field(description="start of validity (RFC 3339 UTC)")
    not_after: str | None = Field(description="end of validity (RFC 3339 UTC)")
    expires_soon: bool | None = Field(
        description="true within 30 days of not_after (renew, then reload)"
    )


class TlsCheckOut(BaseModel):
    """An ipps printer's certificate against its pin."""

    mode: Literal["pin", "verify"]
    pinned: str | None = Field(description="the fingerprint in force (null: none pinned yet)")
    presented: str | None = Field(description="the fingerprint the printer presents now")
    matches: bool | None = Field(description="pinned = presented (null: cannot tell)")
    error: str | None = Field(default=None, description="why no certificate was read")


class PrinterCheckOut(BaseModel):
    """``POST /v1/printers/{name}/check``: one Get-Printer-Attributes made now, timed."""

    printer: str
    checked_at: str
    reachable: bool
    round_trip_s: float | None = Field(
        description="Get-Printer-Attributes' round trip, seconds (null: it failed)"
    )
    printer_state: str | None = Field(description="idle, processing or stopped (RFC 8011)")
    printer_state_reasons: list[str]
    printer_state_message: str
    accepting_jobs: bool | None = Field(description="printer-is-accepting-jobs")
    media_ready: list[str] = Field(description="ready media, as GET /v1/printers shows it")
    stock: list[ReadyMediaOut] | None = Field(
        default=None,
        description="the ready stock as the routing reads it from this answer (size, label "
        "or sheet, tray, fit); null when the printer did not answer",
    )
    badge_media: str | None = Field(description="[event] badge_media (null: not set)")
    stock_fit: Literal["exact", "sheet", "none"] | None = Field(
        description="badge_media against the ready media: exact (the same size within 1.5 mm, "
        "either way round), sheet (only larger cut-sheet stock: scaled or centred), none (wrong "
        "stock); null when badge_media is not set or the printer reports no ready media"
    )
    error: str | None = Field(description="why the request failed, in words")
    tls: TlsCheckOut | None = Field(description="ipps printers: the certificate and its pin")


# --- release where you stand (issue 24) ----------------------------------------------------

#: A release code: 6–12 ASCII digits.
RELEASE_CODE_PATTERN = r"^[0-9]{6,12}$"
#: A card number as a reader types it: 4–64 printable ASCII characters, no spaces.
CARD_PATTERN = r"^[\x21-\x7e]{4,64}$"
PATTERN_HINTS[RELEASE_CODE_PATTERN] = "must be 6–12 digits (0-9), sent as a JSON string"
PATTERN_HINTS[CARD_PATTERN] = "must be 4–64 printable ASCII characters, no spaces"
_Typed = Annotated[StrictStr, Field(min_length=1, max_length=64)]


class OwnerCredentialsIn(_Strict):
    """``PUT /v1/owners/{owner}``: a release code and/or a card (a value not given is kept)."""

    release_code: StrictStr | None = Field(
        default=None, pattern=RELEASE_CODE_PATTERN, description="6–12 digits, as a string"
    )
    card: StrictStr | None = Field(
        default=None, pattern=CARD_PATTERN,
        description="the card number as the reader types it (4–64 printable ASCII)",
    )  # fmt: skip

    @model_validator(mode="after")
    def _something(self) -> OwnerCredentialsIn:
        if self.release_code is None and self.card is None:
            raise ValueError("give release_code, card or both")
        if self.release_code is not None and self.release_code == self.card:
            raise ValueError("release_code and card must differ (they are one namespace)")
        return self


class OwnerCredentialsOut(BaseModel):
    """An owner's release credentials: which ones are set (never their values)."""

    owner: str
    release_code: bool = Field(description="a release code is set")
    card: bool = Field(description="a card is set")


class ReleaseLookupIn(_Strict):
    """``POST /release/{name}/lookup``: ``{"code"}``, ``{"card"}`` (the same thing: one
    namespace) or ``{"pin", "job"}``."""

    code: _Typed | None = None
    card: _Typed | None = None
    pin: _Typed | None = None
    job: _Typed | None = Field(
        default=None,
        description="the job a PIN opens: its id, or its first 6+ hex characters (one HELD job)",
    )

    @model_validator(mode="after")
    def _one_credential(self) -> ReleaseLookupIn:
        given = sum(x is not None for x in (self.code, self.card, self.pin))
        if given != 1:
            raise ValueError('give one of {"code"}, {"card"} or {"pin", "job"}')
        if (self.pin is None) != (self.job is None):
            raise ValueError('a PIN comes with its job: {"pin", "job"}')
        return self


class ReleasePrintIn(ReleaseLookupIn):
    """``POST /release/{name}/print``: the credential, and ``jobs`` or ``all``."""

    jobs: list[Annotated[StrictStr, Field(pattern=JOB_ID_PATTERN)]] | None = Field(
        default=None, min_length=1, max_length=100, description="job ids, 32 lowercase hex"
    )
    all: StrictBool = Field(default=False, description="every HELD job of the person")
    printer: TargetName | None = Field(
        default=None, description="a pool's page: the printer of the pool to print on"
    )

    @model_validator(mode="after")
    def _which_jobs(self) -> ReleasePrintIn:
        if (self.jobs is None) == (not self.all):
            raise ValueError('give either {"jobs": [ids]} or {"all": true}')
        return self


class ReleasePreviewIn(ReleaseLookupIn):
    """``POST /release/{name}/preview``: the credential, and one of the person's HELD jobs."""

    job_id: StrictStr = Field(pattern=JOB_ID_PATTERN, description="a job the credential opens")


class ReleaseJobOut(BaseModel):
    """One HELD job as a release page shows it."""

    id: str
    title: str = Field(description="the job's title, else words that name it (Job and its id)")
    pages: int | None
    copies: int
    created_at: str
    has_preview: bool
    pin_required: bool = Field(description="the job has its own PIN: a code alone cannot print it")


class ReleasePrinterOut(BaseModel):
    name: str
    waiting: int = Field(description="released jobs waiting for this printer")
    ready: bool = Field(description="not paused and not known to be unhealthy")


class ReleaseLookupOut(BaseModel):
    """A person's HELD jobs at a printer or pool (an empty list: nothing is waiting)."""

    owner: str
    place: str
    kind: Literal["printer", "pool"]
    printers: list[ReleasePrinterOut]
    suggested: str | None = Field(description="the least loaded ready printer of the place")
    jobs: list[ReleaseJobOut]
    message: str


class ReleaseOutcomeOut(BaseModel):
    job: str
    outcome: Literal[
        "released", "conflict", "not-found", "pin-required", "locked", "queue-full", "refused"
    ]
    state: str | None = Field(default=None, description="the job's state (conflict, released)")
    printer: str | None = Field(
        default=None, description="released: the printer it went to (a pool's: once chosen)"
    )
    pool: str | None = Field(default=None, description="released to a pool: which")
    detail: str | None = None


class ReleasePrintOut(BaseModel):
    """Per-job outcomes of a release at a printer or pool, and the page's sentence."""

    outcomes: list[ReleaseOutcomeOut]
    released: int
    message: str


# --- many jobs at once (issue 24 part 7) -------------------------------------------------

#: The most jobs one bulk call may act on (its required ``limit`` is 1..MAX_BULK).
MAX_BULK = 500
#: A dead letter's reason as the store keeps it (``attempts_exhausted``, ``poison``, …).
DEAD_REASON_PATTERN = r"^[a-z0-9_]{1,64}$"
JobId = Annotated[StrictStr, Field(pattern=JOB_ID_PATTERN, description="32 lowercase hex")]


#: What a bulk filter's ``created_before``/``created_after`` accepts, in the refusal's words.
WHEN_ACCEPTED = (
    "a date (2030-01-01, midnight UTC) or an RFC 3339 date-time with an offset "
    "(2030-01-01T08:30:00+02:00 or 2030-01-01T06:30:00Z)"
)
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_RFC3339 = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:[Zz]|[+-]\d{2}:\d{2})$"
)


def _when(value: object) -> datetime:
    """A filter's time: a date is its midnight UTC; a date-time must carry its offset (a
    naive one could mean any of 24 hours); numbers are refused (seconds or milliseconds?)."""
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value  # built in Python, not parsed from JSON
    if isinstance(value, str):
        text = value.strip()
        try:
            if _DATE.match(text):
                return datetime.combine(date.fromisoformat(text), datetime.min.time(), UTC)
            if _RFC3339.match(text):
                return datetime.fromisoformat(text.replace("z", "Z").replace("t", "T"))
        except ValueError:
            pass  # e.g. 2030-02-30: said below
    raise ValueError(f"expected {WHEN_ACCEPTED}")


#: created_before/created_after: a date or an RFC 3339 date-time with an offset.
FilterTime = Annotated[
    datetime,
    BeforeValidator(_when),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "format": "date"},
                {"type": "string", "format": "date-time"},
            ],
            "description": WHEN_ACCEPTED,
        }
    ),
]


class BulkFilter(_Strict):
    """Which jobs a bulk call selects: every given field must match (AND), oldest first.

    ``state`` defaults to the states the action applies to; a state it does not apply to is
    refused (422) rather than silently matching nothing. An empty filter (every job) and a
    pool or printer that is not configured (a typo that would match nothing) are refused too.
    """

    owner: Owner | None = Field(default=None, description="the job's owner, exactly")
    pool: TargetName | None = Field(default=None, description="the job's pool")
    printer: TargetName | None = Field(
        default=None, description="the job's printer (requested, assigned or printed on)"
    )
    state: JobState | None = Field(default=None, description="one state the action applies to")
    dead_reason: Annotated[StrictStr, Field(pattern=DEAD_REASON_PATTERN)] | None = Field(
        default=None, description="a DEAD job's reason, e.g. attempts_exhausted"
    )
    created_after: FilterTime | None = Field(
        default=None, description=f"accepted at or after this time: {WHEN_ACCEPTED}"
    )
    created_before: FilterTime | None = Field(
        default=None, description=f"accepted before this time: {WHEN_ACCEPTED}"
    )


class _BulkRequest(_Strict):
    ids: list[JobId] | None = Field(
        default=None, min_length=1, description="the jobs, by id (at most `limit`)"
    )
    filter: BulkFilter | None = Field(default=None, description="the jobs, by what they are")
    limit: StrictInt = Field(
        ge=1, le=MAX_BULK,
        description=f"required: the most jobs to act on (1–{MAX_BULK}); a filter takes the "
        "oldest first",
    )  # fmt: skip

    dry_run: StrictBool = Field(
        default=False,
        description="true: act on nothing; the answer lists the jobs the call would take "
        "(outcome `selected`), e.g. to show the count in a confirmation first",
    )

    @model_validator(mode="after")
    def _ids_or_filter(self) -> _BulkRequest:
        if (self.ids is None) == (self.filter is None):
            raise ValueError("give either ids or filter (exactly one)")
        if self.ids is not None and len(self.ids) > self.limit:
            raise ValueError(f"{len(self.ids)} ids is more than limit ({self.limit})")
        return self


class BulkReleaseRequest(_BulkRequest, _Target):
    """``POST /v1/jobs/release``: release each selected HELD job (to ``printer`` or ``pool``
    when given, else to its own). Jobs with a release PIN answer ``pin-required``."""


class BulkCancelRequest(_BulkRequest):
    """``POST /v1/jobs/cancel``: cancel each selected job (a kiosk's token: jobs with a
    release PIN answer ``pin-required``)."""


class BulkReplayRequest(_BulkRequest):
    """``POST /v1/jobs/replay`` (tech): replay each selected DEAD job."""


class BulkResolveRequest(_BulkRequest):
    """``POST /v1/jobs/resolve`` (tech): settle each selected DEAD ``outcome_unknown`` job."""

    printed: StrictBool = Field(
        description="true: they printed (→ DONE); false: they did not (→ RELEASED, once more)"
    )


BulkOutcome = Literal[
    "released", "cancelled", "cancel-requested", "replayed", "resolved", "conflict",
    "not-found", "pin-required", "queue-full", "unsupported-document", "missing-target",
    "storage-full", "store-unavailable", "error", "selected",
]  # fmt: skip


class BulkResultOut(BaseModel):
    """What happened to one job of a bulk call."""

    id: str
    outcome: BulkOutcome = Field(
        description="the action's word when it was done to this job (released, cancelled, "
        "cancel-requested: PRINTING, the printer cancels it; replayed; resolved), else why not"
    )
    state: JobState | None = Field(description="the job's state now (null: no such job)")
    detail: str | None = Field(default=None, description="why not, in words")


class BulkOut(BaseModel):
    """The answer of a bulk call: one result per selected job, in the order selected."""

    matched: int = Field(description="jobs selected (ids given, or the filter's up to limit)")
    more: bool = Field(description="the filter matches more jobs than limit (call again)")
    results: list[BulkResultOut]


# --- issue 24: reprints and a job's story -------------------------------------------------

#: A reprint's reason: 1–200 characters, no control characters, not only spaces.
REASON_PATTERN = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$"
PATTERN_HINTS[REASON_PATTERN] = "must be 1–200 characters, no control characters, not blank"


class ReprintRequest(_Strict):
    """JSON body of ``POST /v1/jobs/{id}/reprint``."""

    reason: StrictStr = Field(
        min_length=1, max_length=200, pattern=REASON_PATTERN,
        description="why it is printed again (lost, damaged, misspelt then fixed upstream): "
        "recorded in both jobs' events",
    )  # fmt: skip


class StoryEntryOut(BaseModel):
    """One line of a job's story, in time order."""

    at: str = Field(description="when (RFC 3339 UTC)")
    kind: Literal["state", "note", "copy-made", "copy-settled"] = Field(
        description="state: a state change (job_events); note: an event that changed no state "
        "(a reprint made from this job); copy-made: a copy handed to a printer; copy-settled: "
        "what the printer's answers settled that copy as"
    )
    words: str = Field(description="the entry in words, for a person")
    actor: str | None = Field(description="who acted (a token's name, a printer worker, …)")
    reason: str | None = Field(description="why, as recorded")
    from_state: JobState | None = None
    to_state: JobState | None = None
    printer: str | None = Field(default=None, description="copies: the printer")
    printer_job_id: int | None = Field(default=None, description="copies: its IPP job-id")
    copy_id: int | None = None
    copy_state: str | None = Field(default=None, description="copies: the copy's state")
    outcome: str | None = Field(default=None, description="copy-settled: why, in words")
    settled_by: str | None = Field(
        default=None, description="copy-settled: the printer's answer that settled it (evidence)"
    )
    job_state_reasons: list[str] = Field(
        default=[], description="copy-settled: the printer's job-state-reasons, last reported"
    )


class JobStoryOut(BaseModel):
    """``GET /v1/jobs/{id}/events``: the job and everything that happened to it, oldest first."""

    job: JobOut
    entries: list[StoryEntryOut]


# --- tokens (issue 26) ----------------------------------------------------------------------


class TokenOut(BaseModel):
    """One configured token as ``GET /v1/tokens`` lists it: never its secret or digest."""

    name: str
    role: Literal["kiosk", "tech", "station", "viewer"]
    printers: list[str] = Field(description="a station's printers and pools; empty otherwise")
    expires: str | None = Field(description="RFC 3339 UTC; null: it does not expire")
    expired: bool = Field(description="`expires` has passed: the token is refused")
    last_used: str | None = Field(
        description="this appliance's last authenticated request with it (RFC 3339 UTC); "
        "null: none since `since`"
    )
    last_used_from: str | None = Field(description="that request's client address")


class TokensOut(BaseModel):
    """``GET /v1/tokens``: every configured token, in config order."""

    since: str = Field(
        description="when this appliance began counting uses (its start; RFC 3339 UTC): "
        "last uses are kept in memory, per appliance"
    )
    tokens: list[TokenOut]
