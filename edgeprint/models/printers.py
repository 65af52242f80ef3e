"""Printers and pools as technicians see them: capabilities, stock, supplies, problems,
drain, identify and a printer checked now."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import (
    BaseModel,
    Field,
)

from edgeprint.models.base import StrictModel
from edgeprint.stock import StockView


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
            cls(
                name=s.name,
                size=s.describe(),
                width_mm=s.short / 100,
                length_mm=s.long / 100,
                label=s.label,
                tray=s.source,
                fit=view.fit_of(s),
            )
            for s in view.stocks
        ]


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


class IdentifyRequest(StrictModel):
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
