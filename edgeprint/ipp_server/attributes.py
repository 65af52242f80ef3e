"""What an edgeprint queue says about itself and its jobs, in IPP attributes (RFC 8011 §5).

Pure functions of the queue, its printers' published view and the job records:
no I/O here. The job state mapping (DESIGN §11) is the table :data:`JOB_STATES`.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from edgeprint.documents import formats
from edgeprint.ipp.names import JobState as IppJobState
from edgeprint.ipp.names import Operation, PrinterState, Tag
from edgeprint.ipp.values import Attribute, DateTime, Range, Resolution, Value, attr
from edgeprint.printers.health import PrinterSnapshot
from edgeprint.printers.supplies import Marker
from edgeprint.records import JobRecord
from edgeprint.states import JobState

#: edgeprint state → (IPP job-state, job-state-reasons).
JOB_STATES: dict[JobState, tuple[IppJobState, tuple[str, ...]]] = {
    JobState.HELD: (IppJobState.PENDING_HELD, ("job-hold-until-specified",)),
    JobState.RELEASED: (IppJobState.PENDING, ("job-queued",)),
    JobState.PRINTING: (IppJobState.PROCESSING, ("job-printing",)),
    JobState.DONE: (IppJobState.COMPLETED, ("job-completed-successfully",)),
    JobState.CANCELLED: (IppJobState.CANCELED, ("job-canceled-by-user",)),
    JobState.EXPIRED: (IppJobState.CANCELED, ("job-canceled-by-operator",)),
    JobState.DEAD: (IppJobState.ABORTED, ("aborted-by-system",)),
}
#: Not completed in Get-Jobs' sense (which-jobs=not-completed).
NOT_COMPLETED = frozenset({JobState.HELD, JobState.RELEASED, JobState.PRINTING})

#: The IPP versions a queue speaks (ipp-versions-supported); a request at any other version
#: is answered server-error-version-not-supported (RFC 8011 §4.1.8).
VERSIONS = ((1, 1), (2, 0))

#: Operations every queue serves, in operations-supported order.
OPERATIONS = (
    Operation.PRINT_JOB,
    Operation.VALIDATE_JOB,
    Operation.CREATE_JOB,
    Operation.SEND_DOCUMENT,
    Operation.CANCEL_JOB,
    Operation.GET_JOB_ATTRIBUTES,
    Operation.GET_JOBS,
    Operation.GET_PRINTER_ATTRIBUTES,
    Operation.CANCEL_MY_JOBS,
    Operation.CLOSE_JOB,
    Operation.IDENTIFY_PRINTER,
)
#: What the queues take as Apple raster (urf-supported, and the URF key of the DNS-SD record).
URF_SUPPORTED = ("V1.4", "CP1", "W8", "SRGB24", "RS300-600", "DM1")
#: The PWG raster a queue takes (pwg-raster-document-resolution-supported, -type-supported).
PWG_RASTER_DPI = (300, 600)
PWG_RASTER_TYPES = ("black_1", "sgray_8", "srgb_8")
MAX_COPIES = 99
#: printer-icons sizes in pixels (square PNGs in ipp_server/icons/).
ICON_SIZES = (48, 128, 512)
#: printer-supply of a queue whose printers report no supplies: level -2, "unknown"
#: (RFC 3805 prtMarkerSuppliesLevel, as PWG 5100.13 carries it).
UNKNOWN_SUPPLY = "index=1;class=other;type=other;unit=percent;maxcapacity=100;level=-2;"
#: overrides-supported: the selectors only. edgeprint changes no attribute per page, so an
#: ``overrides`` collection may hold nothing else (DESIGN §11).
OVERRIDES_SUPPORTED = ("document-number", "pages")
MULTIPLE_OPERATION_TIME_OUT_S = 60
_MEDIA = ("na_letter_8.5x11in", "iso_a4_210x297mm", "na_index-4x6_4x6in")
_MEDIA_SIZES = {  # hundredths of a millimetre (PWG 5101.1)
    "na_letter_8.5x11in": (21590, 27940),
    "iso_a4_210x297mm": (21000, 29700),
    "na_index-4x6_4x6in": (10160, 15240),
}

#: requested-attributes group names (RFC 8011 §4.2.5.1).
JOB_TEMPLATE = frozenset(
    [
        "copies-default",
        "copies-supported",
        "finishings-default",
        "finishings-supported",
        "job-hold-until-default",
        "job-hold-until-supported",
        "media-default",
        "media-ready",
        "media-supported",
        "media-col-default",
        "media-col-ready",
        "media-col-supported",
        "media-size-supported",
        "orientation-requested-default",
        "orientation-requested-supported",
        "output-bin-default",
        "output-bin-supported",
        "print-quality-default",
        "print-quality-supported",
        "printer-resolution-default",
        "printer-resolution-supported",
        "sides-default",
        "sides-supported",
        "multiple-document-handling-supported",
        "job-sheets-default",
        "job-sheets-supported",
    ]
)


@dataclass(frozen=True)
class Queue:
    """One IPP queue: a printer or a pool, and where clients reach it."""

    name: str
    kind: str  # "printer" or "pool"
    members: tuple[str, ...]
    hold_by_default: bool
    base_uri: str  # ipp://host:port (ipps:// over TLS)
    status_uri: str  # http://host:port/ (https://)
    auth: str  # "none" or "basic"
    max_document_bytes: int

    @property
    def uri(self) -> str:
        return f"{self.base_uri}/ipp/print/{self.name}"

    @property
    def security(self) -> str:
        """uri-security-supported: "tls" for an ipps:// queue (RFC 8011 §5.4.3)."""
        return "tls" if self.base_uri.startswith("ipps:") else "none"

    @property
    def icon_uris(self) -> list[str]:
        """printer-icons: small, normal, large (PWG 5100.13), served beside the queues."""
        return [f"{self.status_uri}ipp/icons/{size}.png" for size in ICON_SIZES]

    @property
    def uuid(self) -> str:
        """Stable across restarts: derived from the queue's name."""
        return f"urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, f'edgeprint:ipp/print/{self.name}')}"


def _dt(unix: float) -> DateTime:
    return DateTime.from_datetime(datetime.fromtimestamp(unix, UTC))


def queue_state(queue: Queue, printers: Sequence[PrinterSnapshot]) -> tuple[int, list[str], str]:
    """(printer-state, printer-state-reasons, printer-state-message) from the printers behind."""
    mine = [p for p in printers if p.name in queue.members]
    usable = [p for p in mine if p.healthy and not p.paused]
    if mine and not usable:
        reasons = ["paused"] if all(p.paused for p in mine) else ["other-error"]
        why = "; ".join(f"{p.name}: {p.health_reason or 'paused'}" for p in mine)
        return (
            PrinterState.STOPPED,
            reasons,
            f"no printer behind this queue can print now ({why}); jobs wait",
        )
    if any(p.printing_job for p in mine):
        return PrinterState.PROCESSING, ["none"], "Printing."
    return PrinterState.IDLE, ["none"], "Idle."


def printer_attributes(
    queue: Queue, printers: Sequence[PrinterSnapshot], queued: int, up_since: float, now: float
) -> list[Attribute]:
    """Every printer attribute of ``queue`` (Get-Printer-Attributes with 'all')."""
    state, reasons, message = queue_state(queue, printers)
    hold_default = "indefinite" if queue.hold_by_default else "no-hold"
    kb = max(1, queue.max_document_bytes // 1024)

    def media_col(media: str) -> list[Attribute]:
        x, y = _MEDIA_SIZES[media]
        size = [attr("x-dimension", Tag.INTEGER, x), attr("y-dimension", Tag.INTEGER, y)]
        return [Attribute("media-size", [Value(Tag.BEG_COLLECTION, size)])]

    return [
        attr("charset-configured", Tag.CHARSET, "utf-8"),
        attr("charset-supported", Tag.CHARSET, "us-ascii", "utf-8"),
        attr("color-supported", Tag.BOOLEAN, False),
        attr("compression-supported", Tag.KEYWORD, "none"),
        attr("copies-default", Tag.INTEGER, 1),
        attr("copies-supported", Tag.RANGE_OF_INTEGER, Range(1, MAX_COPIES)),
        attr("document-format-default", Tag.MIME_MEDIA_TYPE, "application/pdf"),
        attr("document-format-supported", Tag.MIME_MEDIA_TYPE, *formats.DOCUMENT_FORMATS),
        attr(
            "pwg-raster-document-resolution-supported",
            Tag.RESOLUTION,
            *[Resolution(dpi, dpi, 3) for dpi in PWG_RASTER_DPI],
        ),
        attr("pwg-raster-document-sheet-back", Tag.KEYWORD, "normal"),
        attr("pwg-raster-document-type-supported", Tag.KEYWORD, *PWG_RASTER_TYPES),
        attr("urf-supported", Tag.KEYWORD, *URF_SUPPORTED),
        attr("finishings-default", Tag.ENUM, 3),
        attr("finishings-supported", Tag.ENUM, 3),
        attr("generated-natural-language-supported", Tag.NATURAL_LANGUAGE, "en"),
        attr("identify-actions-default", Tag.KEYWORD, "display"),
        attr("identify-actions-supported", Tag.KEYWORD, "display"),
        attr("ipp-features-supported", Tag.KEYWORD, "ipp-everywhere"),
        attr("ipp-versions-supported", Tag.KEYWORD, *(f"{a}.{b}" for a, b in VERSIONS)),
        attr(
            "job-creation-attributes-supported",
            Tag.KEYWORD,
            "copies",
            "job-hold-until",
            "job-uuid",
            "overrides",
            "page-ranges",
        ),
        attr("job-hold-until-default", Tag.KEYWORD, hold_default),
        attr("job-hold-until-supported", Tag.KEYWORD, "no-hold", "indefinite"),
        attr("job-ids-supported", Tag.BOOLEAN, True),
        attr("job-k-octets-supported", Tag.RANGE_OF_INTEGER, Range(0, kb)),
        attr("job-sheets-default", Tag.NAME, "none"),
        attr("job-sheets-supported", Tag.NAME, "none"),
        attr("media-bottom-margin-supported", Tag.INTEGER, 0),
        attr("media-col-database", Tag.BEG_COLLECTION, *[media_col(m) for m in _MEDIA]),
        attr("media-col-default", Tag.BEG_COLLECTION, media_col(_MEDIA[0])),
        attr("media-col-ready", Tag.BEG_COLLECTION, media_col(_MEDIA[0])),
        attr("media-col-supported", Tag.KEYWORD, "media-size"),
        attr("media-default", Tag.KEYWORD, _MEDIA[0]),
        attr("media-left-margin-supported", Tag.INTEGER, 0),
        attr("media-ready", Tag.KEYWORD, _MEDIA[0]),
        attr("media-right-margin-supported", Tag.INTEGER, 0),
        attr(
            "media-size-supported",
            Tag.BEG_COLLECTION,
            *[
                [attr("x-dimension", Tag.INTEGER, x), attr("y-dimension", Tag.INTEGER, y)]
                for x, y in _MEDIA_SIZES.values()
            ],
        ),
        attr("media-source-supported", Tag.KEYWORD, "auto"),
        attr("media-supported", Tag.KEYWORD, *_MEDIA),
        attr("media-top-margin-supported", Tag.INTEGER, 0),
        attr("media-type-supported", Tag.KEYWORD, "stationery"),
        attr(
            "multiple-document-handling-supported",
            Tag.KEYWORD,
            "separate-documents-uncollated-copies",
            "separate-documents-collated-copies",
        ),
        attr("multiple-document-jobs-supported", Tag.BOOLEAN, False),
        attr("multiple-operation-time-out", Tag.INTEGER, MULTIPLE_OPERATION_TIME_OUT_S),
        attr("multiple-operation-time-out-action", Tag.KEYWORD, "abort-job"),
        attr("natural-language-configured", Tag.NATURAL_LANGUAGE, "en"),
        attr("operations-supported", Tag.ENUM, *OPERATIONS),
        attr("orientation-requested-default", Tag.ENUM, 3),
        attr("orientation-requested-supported", Tag.ENUM, 3, 4, 5, 6),
        attr("output-bin-default", Tag.KEYWORD, "face-down"),
        attr("output-bin-supported", Tag.KEYWORD, "face-down"),
        attr("overrides-supported", Tag.KEYWORD, *OVERRIDES_SUPPORTED),
        attr("page-ranges-supported", Tag.BOOLEAN, True),
        attr("pages-per-minute", Tag.INTEGER, 10),
        attr("pdl-override-supported", Tag.KEYWORD, "attempted"),
        attr("preferred-attributes-supported", Tag.BOOLEAN, False),
        attr("print-color-mode-default", Tag.KEYWORD, "monochrome"),
        attr("print-color-mode-supported", Tag.KEYWORD, "monochrome"),
        attr("print-content-optimize-default", Tag.KEYWORD, "auto"),
        attr("print-content-optimize-supported", Tag.KEYWORD, "auto"),
        attr("print-quality-default", Tag.ENUM, 4),
        attr("print-quality-supported", Tag.ENUM, 3, 4, 5),
        attr("print-rendering-intent-default", Tag.KEYWORD, "auto"),
        attr("print-rendering-intent-supported", Tag.KEYWORD, "auto"),
        attr("printer-config-change-date-time", Tag.DATE_TIME, _dt(up_since)),
        attr("printer-config-change-time", Tag.INTEGER, int(up_since)),
        attr("printer-current-time", Tag.DATE_TIME, _dt(now)),
        attr("printer-device-id", Tag.TEXT, f"MFG:edgeprint;MDL:{queue.name};CMD:PDF;"),
        attr("printer-get-attributes-supported", Tag.KEYWORD, "document-format"),
        attr("printer-geo-location", Tag.UNKNOWN, b""),
        attr("printer-icons", Tag.URI, *queue.icon_uris),
        attr("printer-info", Tag.TEXT, f"edgeprint {queue.kind} {queue.name}"),
        attr("printer-is-accepting-jobs", Tag.BOOLEAN, True),
        attr("printer-location", Tag.TEXT, ""),
        attr("printer-make-and-model", Tag.TEXT, "edgeprint queue"),
        attr("printer-more-info", Tag.URI, queue.status_uri),
        attr("printer-name", Tag.NAME, queue.name),
        attr("printer-organization", Tag.TEXT, ""),
        attr("printer-organizational-unit", Tag.TEXT, ""),
        attr("printer-resolution-default", Tag.RESOLUTION, Resolution(600, 600, 3)),
        attr("printer-resolution-supported", Tag.RESOLUTION, Resolution(600, 600, 3)),
        attr("printer-state", Tag.ENUM, state),
        attr("printer-state-change-date-time", Tag.DATE_TIME, _dt(up_since)),
        attr("printer-state-change-time", Tag.INTEGER, int(up_since)),
        attr("printer-state-message", Tag.TEXT, message),
        attr("printer-state-reasons", Tag.KEYWORD, *reasons),
        *supply_attributes(queue, printers),
        attr("printer-up-time", Tag.INTEGER, max(1, int(now))),
        attr("printer-uri-supported", Tag.URI, queue.uri),
        attr("printer-uuid", Tag.URI, queue.uuid),
        attr("queued-job-count", Tag.INTEGER, queued),
        attr("sides-default", Tag.KEYWORD, "one-sided"),
        attr("sides-supported", Tag.KEYWORD, "one-sided"),
        attr("uri-authentication-supported", Tag.KEYWORD, queue.auth),
        attr("uri-security-supported", Tag.KEYWORD, queue.security),
        attr("which-jobs-supported", Tag.KEYWORD, "completed", "not-completed", "all"),
    ]


def _reindex(supply: str, index: int) -> str:
    """A printer-supply value with its ``index`` key set to ``index`` (supplies of several
    printers are numbered through)."""
    keys = [k for k in supply.split(";") if k and not k.startswith("index=")]
    return ";".join([f"index={index}", *keys]) + ";"


def supply_attributes(queue: Queue, printers: Sequence[PrinterSnapshot]) -> list[Attribute]:
    """printer-supply, -description, -info-uri and marker-*: what the printers behind the
    queue said in their last probe (a pool's prefixed with each printer's name); one
    supply of unknown level when none said anything."""
    rows: list[tuple[str, str]] = []
    markers: list[Marker] = []
    infos: list[str] = []
    for p in printers:
        if p.name not in queue.members or p.supplies is None:
            continue
        prefix = f"{p.name}: " if queue.kind == "pool" else ""
        for value, description in p.supplies.supplies:
            rows.append((_reindex(value, len(rows) + 1), prefix + description))
        markers += [replace(m, name=prefix + m.name) for m in p.supplies.markers]
        if p.supplies.info_uri is not None:
            infos.append(p.supplies.info_uri)
    if not rows:
        rows = [(UNKNOWN_SUPPLY, "supply levels: not reported by the printers behind this queue")]
    info = infos[0] if queue.kind == "printer" and infos else queue.status_uri
    out = [
        attr("printer-supply", Tag.OCTET_STRING, *[v.encode() for v, _ in rows]),
        attr("printer-supply-description", Tag.TEXT, *[d for _, d in rows]),
        attr("printer-supply-info-uri", Tag.URI, info),
    ]
    if markers:
        out += [
            attr("marker-colors", Tag.NAME, *[m.color for m in markers]),
            attr("marker-high-levels", Tag.INTEGER, *[m.high_level for m in markers]),
            attr("marker-levels", Tag.INTEGER, *[m.level for m in markers]),
            attr("marker-low-levels", Tag.INTEGER, *[m.low_level for m in markers]),
            attr("marker-names", Tag.NAME, *[m.name for m in markers]),
            attr("marker-types", Tag.KEYWORD, *[m.type for m in markers]),
        ]
    return out


def job_uuid(job_id: str) -> str:
    """An edgeprint job id is a UUID4 in hex: its job-uuid is that UUID."""
    return f"urn:uuid:{uuid.UUID(hex=job_id)}"


def job_attributes(
    queue: Queue, job: JobRecord, ipp_job_id: int, job_name: str | None
) -> list[Attribute]:
    """Every job attribute of one edgeprint job (Get-Job-Attributes with 'all')."""
    state, reasons = JOB_STATES[job.state]
    if job.state is JobState.PRINTING and job.cancel_requested:
        reasons = ("processing-to-stop-point",)
    message = f"edgeprint job {job.id}: {job.state.value}"
    if job.state is JobState.HELD:
        message += " (release it with the API, the status page or a release station)"
    elif job.state is JobState.DEAD and job.dead_reason:
        message += f" ({job.dead_reason}: {job.last_error or 'see the appliance'})"
    processing = job.claimed_at

    def when(name: str, t: float | None) -> list[Attribute]:
        if t is None:
            return [
                Attribute(f"time-at-{name}", [Value.out_of_band(Tag.NO_VALUE)]),
                Attribute(f"date-time-at-{name}", [Value.out_of_band(Tag.NO_VALUE)]),
            ]
        return [
            attr(f"time-at-{name}", Tag.INTEGER, int(t)),
            attr(f"date-time-at-{name}", Tag.DATE_TIME, _dt(t)),
        ]

    return [
        attr("job-id", Tag.INTEGER, ipp_job_id),
        attr("job-uri", Tag.URI, f"{queue.uri}/{ipp_job_id}"),
        attr("job-uuid", Tag.URI, job_uuid(job.id)),
        attr("job-printer-uri", Tag.URI, queue.uri),
        attr("job-name", Tag.NAME, job_name or f"edgeprint job {job.id}"),
        attr("job-originating-user-name", Tag.NAME, job.owner),
        attr("job-state", Tag.ENUM, state),
        attr("job-state-reasons", Tag.KEYWORD, *reasons),
        attr("job-state-message", Tag.TEXT, message),
        attr(
            "job-hold-until", Tag.KEYWORD, "indefinite" if job.state is JobState.HELD else "no-hold"
        ),
        attr("job-k-octets", Tag.INTEGER, math.ceil(job.document_bytes / 1024)),
        attr("copies", Tag.INTEGER, job.copies),
        attr("number-of-documents", Tag.INTEGER, 1),
        attr("job-printer-up-time", Tag.INTEGER, max(1, int(job.updated_at))),
        *when("creation", job.created_at),
        *when("processing", processing),
        *when("completed", job.finished_at),
    ]


def pending_job_attributes(
    queue: Queue, ipp_job_id: int, name: str | None, owner: str, created_at: float
) -> list[Attribute]:
    """A Create-Job whose document has not arrived: pending, job-incoming."""
    return [
        attr("job-id", Tag.INTEGER, ipp_job_id),
        attr("job-uri", Tag.URI, f"{queue.uri}/{ipp_job_id}"),
        attr("job-printer-uri", Tag.URI, queue.uri),
        attr("job-name", Tag.NAME, name or f"job {ipp_job_id}"),
        attr("job-originating-user-name", Tag.NAME, owner),
        attr("job-state", Tag.ENUM, IppJobState.PENDING_HELD),
        attr("job-state-reasons", Tag.KEYWORD, "job-incoming"),
        attr("job-state-message", Tag.TEXT, "waiting for the document (Send-Document)"),
        attr("number-of-documents", Tag.INTEGER, 0),
        attr("time-at-creation", Tag.INTEGER, int(created_at)),
        attr("date-time-at-creation", Tag.DATE_TIME, _dt(created_at)),
    ]


def lost_job_attributes(queue: Queue, ipp_job_id: int, resend: bool) -> list[Attribute]:
    """A Create-Job from before a restart whose document never reached the store.

    ``resend``: the answer asks the client to send the job again (pending-held,
    job-incoming: the document never arrived), else it is aborted. See
    :data:`edgeprint.ipp_server.pending.LOST_RESEND_WINDOW_S` for why.
    """
    state, reason = (
        (IppJobState.PENDING_HELD, "job-incoming")
        if resend
        else (IppJobState.ABORTED, "aborted-by-system")
    )
    return [
        attr("job-id", Tag.INTEGER, ipp_job_id),
        attr("job-uri", Tag.URI, f"{queue.uri}/{ipp_job_id}"),
        attr("job-printer-uri", Tag.URI, queue.uri),
        attr("job-state", Tag.ENUM, state),
        attr("job-state-reasons", Tag.KEYWORD, reason),
        attr("job-state-message", Tag.TEXT, LOST_MESSAGE),
    ]


#: What a client hears of a Create-Job whose document a restart lost.
LOST_MESSAGE = (
    "edgeprint restarted before this job's document was stored: nothing was printed; "
    "send the job again"
)


def select(attributes: Iterable[Attribute], requested: set[str] | None) -> list[Attribute]:
    """The attributes a client asked for (None or 'all': every one)."""
    attrs = list(attributes)
    if requested is None or "all" in requested:
        return attrs
    want = set(requested)
    if "job-template" in want:
        want |= JOB_TEMPLATE
    if "printer-description" in want:
        want |= {a.name for a in attrs if a.name not in JOB_TEMPLATE}
    if "job-description" in want:
        want |= {a.name for a in attrs}
    return [a for a in attrs if a.name in want]
