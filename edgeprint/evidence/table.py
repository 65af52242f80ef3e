"""What each printer answer proves (the table DESIGN §3 prints), the printer's
answers as edgeprint reads them, and what a copy is now (:class:`Observation`)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from edgeprint.copies import (
    DOCUMENT_ERROR_REASONS,
    CopyState,
)
from edgeprint.personality import Traits

#: IPP job-state values (RFC 8011 §5.3.7).
JOB_PENDING, JOB_HELD, JOB_PROCESSING, JOB_STOPPED = 3, 4, 5, 6
JOB_CANCELED, JOB_ABORTED, JOB_COMPLETED = 7, 8, 9
JOB_TERMINAL = frozenset({JOB_CANCELED, JOB_ABORTED, JOB_COMPLETED})
JOB_LIVE = frozenset({JOB_PENDING, JOB_HELD, JOB_PROCESSING, JOB_STOPPED})

C = CopyState
#: Seconds of slack between printer-up-time read at a probe and time-at-creation.
UP_TIME_SLACK_S = 2

#: printer-state-reasons keywords (any severity) under which a printer may end a job it
#: could not finish (a jam, a cover opened mid-job, going offline): seen when a copy
#: disappears, they rule out "it printed and was forgotten". A printer waiting for paper,
#: toner or an emptied output bin holds the job it cannot go on with instead (RFC 8011
#: §5.4.12: media-empty, media-needed, toner-empty … say what it waits for), so those
#: say nothing of a job already gone.
JOB_ENDING_REASONS = frozenset(
    {
        "media-jam",
        "cover-open",
        "door-open",
        "interlock-open",
        "offline",
        "shutdown",
        "stopped-partly",
        "fuser-over-temp",
        "other",
    }
)
#: Of those, the keywords that name no cause: they say a job may have ended only at error
#: severity (``other-error`` or bare ``other``: the printer stopped, RFC 8011 §5.4.12). As a
#: -warning or -report a printer may show one all the time (a Xerox's "other-report"), and
#: it then says nothing of a job gone.
UNSPECIFIC_REASONS = frozenset({"other"})
#: job-state-reasons that say the job did not finish normally.
JOB_STOPPED_REASONS = frozenset(
    {
        "aborted-by-system",
        "job-stopped",
        "printer-stopped",
        "job-interpreting-error",
        "job-canceled-by-user",
        "job-canceled-by-operator",
        "job-canceled-at-device",
        "job-completed-with-errors",
        "job-completed-with-warnings",
        "processing-to-stop-point",
    }
    | DOCUMENT_ERROR_REASONS
)


def printer_job_name(job_id: str) -> str:
    """The IPP job-name for an edgeprint job: contains the id verbatim (DESIGN §3)."""
    return f"edgeprint-{job_id}"


@dataclass(frozen=True)
class PrinterJob:
    """A job as the printer reports it (RFC 8011 §5.3; PWG 5100.13 for job-uuid)."""

    job_id: int
    name: str
    state: int  # job-state (JOB_*), 0 when the answer had none
    reasons: tuple[str, ...]
    message: str
    k_octets: int | None  # job-k-octets: document size received, KiB rounded up
    created_s: int | None = None  # time-at-creation: printer-up-time seconds at creation
    user: str = ""  # job-originating-user-name ("" when the printer does not say)
    impressions_completed: int | None = None  # job-impressions-completed
    uuid: str | None = None  # job-uuid
    impressions: int | None = None  # job-impressions: the printer's own count of the job's
    sheets_completed: int | None = None  # job-media-sheets-completed
    created_dt: str | None = None  # date-time-at-creation (text): a wall-clock identity

    @property
    def terminal(self) -> bool:
        return self.state in JOB_TERMINAL

    @property
    def live(self) -> bool:
        return self.state in JOB_LIVE

    @property
    def pages_out(self) -> int | None:
        """Impressions that came out, as far as the printer says (None: it does not)."""
        if self.impressions_completed is not None:
            return self.impressions_completed
        return self.sheets_completed


class Listing(StrEnum):
    """What a Get-Jobs answer covers."""

    ALL = "all"  # which-jobs=all honoured: every job the printer still keeps
    LIVE = "live"  # only jobs not yet finished (the printer ignored which-jobs)


@dataclass(frozen=True)
class Sighting:
    """What the printer answered about one copy.

    ``direct`` is Get-Job-Attributes' answer for the copy's job-id (None: it said
    not-found, or was not asked: ``asked`` says which); ``listed`` a Get-Jobs
    answer (None: not asked, or unusable) covering ``listing``.
    """

    direct: PrinterJob | None = None
    asked: bool = False
    listed: tuple[PrinterJob, ...] | None = None
    listing: Listing = Listing.ALL


@dataclass(frozen=True)
class Context:
    """What else the answer is read with: the printer's epoch now, its traits, its reasons."""

    epoch: int
    traits: Traits
    printer_reasons: tuple[str, ...] = ()


class Evidence(StrEnum):
    """What settled a copy (``settled_by``), or what an answer showed."""

    COMPLETED_ACKNOWLEDGED = "completed_acknowledged"
    COMPLETED_K_OCTETS = "completed_k_octets"
    COMPLETED_IMPRESSIONS = "completed_impressions"
    CANCELLED_AFTER_PRINTING = "cancelled_after_printing"
    ABORTED_AFTER_PRINTING = "aborted_after_printing"
    FORGOTTEN_AFTER_ACKNOWLEDGED = "forgotten_after_acknowledged"
    COMPLETED_UNVERIFIED = "completed_unverified"
    COMPLETED_WITH_DOCUMENT_ERRORS = "completed_with_document_errors"
    STOPPED_AFTER_PAGES = "stopped_after_pages"
    ABORTED_PAGES_UNKNOWN = "aborted_pages_unknown"
    DOCUMENT_ERROR = "document_error"
    ABORTED = "aborted"
    COMPLETED_WITHOUT_DOCUMENT = "completed_without_document"
    CANCELLED_AS_ASKED = "cancelled_as_asked"
    CANCELLED_ELSEWHERE = "cancelled_elsewhere"
    VANISHED = "vanished"
    VANISHED_NEW_EPOCH = "vanished_new_epoch"
    ORPHAN_ABSENT = "orphan_absent"
    ORPHAN_AMBIGUOUS = "orphan_ambiguous"
    REFUSED = "refused"
    MONITORING_FAILED = "monitoring_failed"
    NO_DOCUMENT = "no_document"
    PERSON = "person"
    # answers that settle nothing
    LISTED_LIVE = "listed_live"
    NOT_CONFIRMED = "not_confirmed"


@dataclass(frozen=True)
class Proof:
    """One row of the evidence table."""

    answer: str  # the printer answer (or its absence)
    proves: str  # what it proves, about which copy
    not_proven: str  # what it does not prove
    settles: CopyState | None  # what the copy becomes (None: nothing settles)
    verified: bool = False  # the printer says this copy completed whole


E = Evidence
#: The evidence table (DESIGN §3). Every copy's ``settled_by`` is one of these.
EVIDENCE: dict[Evidence, Proof] = {
    E.COMPLETED_ACKNOWLEDGED: Proof(
        "job-state completed, no document-error reason; the upload was acknowledged",
        "this copy (job-id, time-at-creation and job-uuid as known, same epoch) printed whole",
        "that the paper is good (a printer may complete a job it could not render well)",
        C.PRINTED,
        verified=True,
    ),
    E.COMPLETED_K_OCTETS: Proof(
        "job-state completed; job-k-octets ≥ the document's size (upload not acknowledged)",
        "the printer had every byte of this copy and completed it",
        "more than the printer's own count of what it received",
        C.PRINTED,
        verified=True,
    ),
    E.COMPLETED_IMPRESSIONS: Proof(
        "job-state completed; job-impressions-completed ≥ pages × copies",
        "every impression of this copy came out",
        "that the upload was whole (only that every page came out)",
        C.PRINTED,
        verified=True,
    ),
    E.CANCELLED_AFTER_PRINTING: Proof(
        "job-state canceled after edgeprint's own Cancel-Job; impressions completed ≥ "
        "pages × copies",
        "the cancel came too late: every impression of this copy came out",
        "—",
        C.PRINTED,
        verified=True,
    ),
    E.ABORTED_AFTER_PRINTING: Proof(
        "job-state aborted, and impressions completed ≥ pages × copies",
        "every impression of this copy came out before the printer gave up on it",
        "why it aborted (finishing, say); the reasons are recorded",
        C.PRINTED,
        verified=True,
    ),
    E.FORGOTTEN_AFTER_ACKNOWLEDGED: Proof(
        "the job is in no answer any more (Get-Job-Attributes and a Get-Jobs list), same epoch; "
        "the upload was acknowledged; no error seen, and the printer reports nothing under "
        "which it ends jobs (a jam, a cover open; an empty tray it waits at); no finished job "
        "older than it is listed",
        "the printer had the whole document, reported no error while edgeprint watched, and "
        "then forgot the job the way it forgets every finished job",
        "that it came out: a silent abort or a cancel at the panel, then forgotten, looks the "
        "same ([[printers]] on_forgotten says how such copies settle)",
        C.UNVERIFIED,
    ),
    E.COMPLETED_UNVERIFIED: Proof(
        "job-state completed; the upload was not acknowledged and no figure shows it whole",
        "the printer completed whatever it received of this copy",
        "that it received all of it (a cut upload may have printed short)",
        C.INCOMPLETE,
    ),
    E.COMPLETED_WITH_DOCUMENT_ERRORS: Proof(
        "job-state completed with a document-error reason, and pages came out (or it does not say)",
        "the printer completed this copy but could not print all of it as sent",
        "what came out: a person has to look",
        C.INCOMPLETE,
    ),
    E.STOPPED_AFTER_PAGES: Proof(
        "job-state aborted or canceled with impressions (or sheets) completed > 0, or "
        "completed with fewer than pages × copies (an upload that was not acknowledged)",
        "this copy stopped part-way: that many impressions came out",
        "which pages are usable",
        C.PARTIAL,
    ),
    E.ABORTED_PAGES_UNKNOWN: Proof(
        "job-state aborted after the document was sent, and no count of what came out",
        "the printer stopped this copy",
        "that nothing came out (it does not count impressions)",
        C.PARTIAL,
    ),
    E.DOCUMENT_ERROR: Proof(
        "job-state aborted or completed with a document-error reason, nothing came out",
        "the printer could not print the document it received",
        "that the document is bad for every printer (another format, or printer, may take it)",
        C.DOCUMENT_ERROR,
    ),
    E.ABORTED: Proof(
        "job-state aborted, no impression came out (counted 0, or no document was sent)",
        "this copy did not print",
        "why (the printer's reasons are recorded)",
        C.ABORTED,
    ),
    E.COMPLETED_WITHOUT_DOCUMENT: Proof(
        "job-state completed, but no document was ever sent",
        "an empty printer job ended: nothing printed",
        "—",
        C.ABORTED,
    ),
    E.CANCELLED_AS_ASKED: Proof(
        "job-state canceled after edgeprint's Cancel-Job, no impression came out",
        "this copy did not print",
        "—",
        C.CANCELLED,
    ),
    E.CANCELLED_ELSEWHERE: Proof(
        "job-state canceled, edgeprint never asked (job-canceled-at-device, -by-operator, "
        "-by-user)",
        "a person cancelled this copy at the printer",
        "that nothing came out (the count is recorded when the printer gives it)",
        C.CANCELLED_ELSEWHERE,
    ),
    E.VANISHED: Proof(
        "the job is in no answer (Get-Job-Attributes and Get-Jobs), same epoch, and it was not "
        "an acknowledged copy forgotten the way the printer forgets",
        "the printer no longer has this copy",
        "whether it printed",
        C.VANISHED,
    ),
    E.VANISHED_NEW_EPOCH: Proof(
        "the printer restarted or was replaced since the copy was made, and nothing that "
        "survives a restart (job-uuid, date-time-at-creation) matches it",
        "this copy is not in the printer's present life",
        "whether it printed before the restart",
        C.VANISHED,
    ),
    E.ORPHAN_ABSENT: Proof(
        "a copy whose job-id was never learnt: no listed job can be it",
        "the printer holds no job that is this copy",
        "whether Create-Job reached it (if it did, the job is gone)",
        C.VANISHED,
    ),
    E.ORPHAN_AMBIGUOUS: Proof(
        "a copy whose job-id was never learnt: several listed jobs could each be it",
        "one of them may be this copy",
        "which one",
        C.LOST,
    ),
    E.REFUSED: Proof(
        "Create-Job, Send-Document or Print-Job answered with an error status (or the upload's "
        "connection was refused)",
        "the printer did not take this copy's document: nothing of it printed",
        "whose fault it is (the refusal's status decides: poison, busy, retry)",
        C.REFUSED,
    ),
    E.MONITORING_FAILED: Proof(
        "Get-Job-Attributes and Get-Jobs both unusable for in_hand_timeout_s",
        "nothing about this copy",
        "anything: its outcome is unknown",
        C.LOST,
    ),
    E.NO_DOCUMENT: Proof(
        "the copy was never sent a document (edgeprint's own record)",
        "nothing of this copy can have printed",
        "—",
        C.REFUSED,
    ),
    E.PERSON: Proof(
        "a technician's answer (resolve) or cancel",
        "what the person decided",
        "—",
        None,
    ),
    E.LISTED_LIVE: Proof(
        "job-state pending, pending-held, processing or processing-stopped",
        "the printer holds this copy now (its figures are recorded)",
        "that it will print",
        None,
    ),
    E.NOT_CONFIRMED: Proof(
        "Get-Job-Attributes answered not-found (or nothing usable) and Get-Jobs could not be "
        "read; or, before the printer's printer-up-time was seen to move, the copy is in no "
        "answer or its job-id names a job made earlier by that clock",
        "nothing: some printers answer not-found for a job they still list; a clock that "
        "never moves dates nothing",
        "that the copy is gone, or that it is another job",
        None,
    ),
}


def unverified_words(settled_by: str, printer: str | None) -> str | None:
    """For a DONE job settled by weaker evidence than "the printer says this copy completed
    whole": what is known, in words (None: it was verified, or a person said so)."""
    try:
        ev = Evidence(settled_by)
    except ValueError:
        return None
    proof = EVIDENCE[ev]
    if proof.verified or ev is E.PERSON or proof.settles is None:
        return None
    where = printer or "the printer"
    if ev is E.FORGOTTEN_AFTER_ACKNOWLEDGED:
        return (
            f"{where} acknowledged the whole document and reported no error, then forgot the "
            "job (it keeps no job history): not confirmed on paper"
        )
    return f"{where}: {proof.proves}; not proven: {proof.not_proven}"


def table_markdown() -> str:
    """The evidence table as DESIGN §3 prints it."""
    rows = [
        "| settled_by | the printer's answer | proves | does not prove | copy becomes |",
        "|---|---|---|---|---|",
    ]
    for ev, p in EVIDENCE.items():
        settles = p.settles.value if p.settles is not None else "—"
        if p.verified:
            settles += " (verified)"
        rows.append(f"| `{ev.value}` | {p.answer} | {p.proves} | {p.not_proven} | {settles} |")
    return "\n".join(rows)


@dataclass(frozen=True)
class Observation:
    """What a copy is now: still live (with the printer's figures) or settled, and by what."""

    settled: CopyState | None  # None: still live at the printer (or nothing proven)
    evidence: Evidence
    pj: PrinterJob | None
    outcome: str | None = None  # in words

    @property
    def pages_out(self) -> int | None:
        return self.pj.pages_out if self.pj is not None else None
