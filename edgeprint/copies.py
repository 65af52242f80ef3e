"""Copies: what edgeprint handed a printer for a job, as a state machine of its own (DESIGN §3).

Every Create-Job (or Print-Job) edgeprint makes for a job is a *copy*: one row
of the ``copies`` table with the printer, the printer's ``job-id`` and
``time-at-creation`` (its identity: printers reuse ids), the document sent,
whether the printer *acknowledged* the upload, and what the printer last
reported. :data:`COPY_TRANSITIONS` is its transition table, in the style of
:data:`edgeprint.states.TRANSITIONS`; the store derives every conditional
write on ``copies`` from it.

The words of the job-level rules live here too (:class:`Kind`, :class:`Verdict`,
:class:`JobFacts`, :class:`Policy`); the rules themselves — :func:`judge` and the
poison / busy / retry policy beside it — are :mod:`edgeprint.copy_policy`'s.

Picture (live states on the left, settled on the right)::

    creating ──created──▶ created ──send──▶ sending ──acknowledge──▶ acknowledged
        │  └───────────────send─────────────▲   │ ▲                       │
        │                         created ◀─┘unsend                        │
        └──────── any live state ──cancel──▶ cancelling ◀───────────────────┘
     any live state ──settle──▶ printed | incomplete | document_error | aborted |
                                cancelled | cancelled_elsewhere | vanished | lost | refused
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum


class CopyState(StrEnum):
    """A copy's state; the string value is what the store uses."""

    CREATING = "creating"  # Create-Job/Print-Job may be on its way; no printer job-id yet
    CREATED = "created"  # the printer job exists (job-id known); no document sent
    SENDING = "sending"  # the document is leaving or left; the printer has not acknowledged it
    ACKNOWLEDGED = "acknowledged"  # the printer answered the upload: it has the whole document
    CANCELLING = "cancelling"  # edgeprint cancels it (Cancel-Job) for itself or for a person
    PRINTED = "printed"  # completed, verified whole, no document error
    INCOMPLETE = "incomplete"  # completed, but not verified whole: possibly truncated
    DOCUMENT_ERROR = "document_error"  # the printer blamed the document (nothing usable)
    ABORTED = "aborted"  # the printer aborted it for another reason (nothing printed)
    CANCELLED = "cancelled"  # canceled after edgeprint asked
    CANCELLED_ELSEWHERE = "cancelled_elsewhere"  # canceled by someone else (panel, operator)
    VANISHED = "vanished"  # the printer no longer lists it (purged, restarted, id reused)
    LOST = "lost"  # edgeprint could not learn its fate (the printer cannot report job state)
    REFUSED = "refused"  # the printer refused the request: no printer job, or no document
    PARTIAL = "partial"  # it stopped part-way (aborted, cancelled) after pages came out
    UNVERIFIED = "unverified"  # acknowledged whole, no error seen, then forgotten by the printer


class CopyAction(StrEnum):
    """What can happen to a copy; each is one conditional store write."""

    CREATED = "created"
    SEND = "send"
    UNSEND = "unsend"
    ACKNOWLEDGE = "acknowledge"
    CANCEL = "cancel"
    PRINTED = "printed"
    INCOMPLETE = "incomplete"
    DOCUMENT_ERROR = "document_error"
    ABORTED = "aborted"
    CANCELLED = "cancelled"
    CANCELLED_ELSEWHERE = "cancelled_elsewhere"
    VANISHED = "vanished"
    LOST = "lost"
    REFUSED = "refused"
    PARTIAL = "partial"
    UNVERIFIED = "unverified"


C = CopyState
CA = CopyAction

#: A copy that may still become something on paper, or whose printer job may still exist.
LIVE_COPY_STATES: frozenset[CopyState] = frozenset(
    {C.CREATING, C.CREATED, C.SENDING, C.ACKNOWLEDGED, C.CANCELLING}
)
SETTLED_COPY_STATES: frozenset[CopyState] = frozenset(CopyState) - LIVE_COPY_STATES

#: The settle action for each settled state.
SETTLE: dict[CopyState, CopyAction] = {
    C.PRINTED: CA.PRINTED,
    C.INCOMPLETE: CA.INCOMPLETE,
    C.DOCUMENT_ERROR: CA.DOCUMENT_ERROR,
    C.ABORTED: CA.ABORTED,
    C.CANCELLED: CA.CANCELLED,
    C.CANCELLED_ELSEWHERE: CA.CANCELLED_ELSEWHERE,
    C.VANISHED: CA.VANISHED,
    C.LOST: CA.LOST,
    C.REFUSED: CA.REFUSED,
    C.PARTIAL: CA.PARTIAL,
    C.UNVERIFIED: CA.UNVERIFIED,
}
#: Settled copies that count as printed: DONE needs one (the store checks). An unverified
#: copy counts only where its printer's ``on_forgotten`` is "printed" (judge decides).
PRINTED_COPY_STATES: frozenset[CopyState] = frozenset({C.PRINTED, C.UNVERIFIED})


def _build() -> dict[tuple[CopyState, CopyAction], CopyState]:
    table: dict[tuple[CopyState, CopyAction], CopyState] = {
        (C.CREATING, CA.CREATED): C.CREATED,
        (C.CREATING, CA.SEND): C.SENDING,  # Create-Job answered and Send-Document next: one write
        (C.CREATED, CA.SEND): C.SENDING,
        (C.SENDING, CA.UNSEND): C.CREATED,  # the upload's connection was refused: nothing left
        (C.SENDING, CA.CREATED): C.SENDING,  # a Print-Job copy's job-id found after a crash
        (C.SENDING, CA.ACKNOWLEDGE): C.ACKNOWLEDGED,
        # A cancel may overtake the answer it races: the late job-id or acknowledgement is
        # still recorded (a fact), the copy stays cancelling.
        (C.CANCELLING, CA.CREATED): C.CANCELLING,
        (C.CANCELLING, CA.SEND): C.CANCELLING,
        (C.CANCELLING, CA.ACKNOWLEDGE): C.CANCELLING,
    }
    for live in LIVE_COPY_STATES:
        table[(live, CA.CANCEL)] = C.CANCELLING
        for settled, action in SETTLE.items():
            table[(live, action)] = settled
    return table


#: (from-state, action) → to-state. Anything absent is not allowed.
COPY_TRANSITIONS: dict[tuple[CopyState, CopyAction], CopyState] = _build()


def copy_sources(action: CopyAction) -> tuple[CopyState, ...]:
    """The states from which ``action`` is allowed (sorted, for stable SQL)."""
    return tuple(sorted(src for (src, act) in COPY_TRANSITIONS if act is action))


def copy_targets(action: CopyAction) -> dict[CopyState, CopyState]:
    """from-state → to-state for ``action`` (a self-loop keeps the state)."""
    return {src: dst for (src, act), dst in COPY_TRANSITIONS.items() if act is action}


# --- what the printer says (job-state-reasons, PWG 5100.x) -------------------------------

#: job-state-reasons that blame the document: nothing usable came out, whatever the job-state.
DOCUMENT_ERROR_REASONS = frozenset(
    {
        "document-format-error",
        "document-unprintable-error",
        "unsupported-document-format",
        "document-password-error",
        "document-permission-error",
        "document-security-error",
        "unsupported-compression",
        "compression-error",
    }
)
#: job-state-reasons of a job someone other than edgeprint cancelled.
CANCELLED_ELSEWHERE_REASONS = frozenset(
    {"job-canceled-at-device", "job-canceled-by-operator", "job-canceled-by-user"}
)
#: job-state-reasons of a printer job still waiting for (all of) its document.
WAITING_FOR_DATA = frozenset({"job-data-insufficient", "job-incoming"})

ORIGIN_EDGEPRINT = "edgeprint"
ORIGIN_REQUESTED = "requested"


@dataclass(frozen=True)
class Copy:
    """One copy as stored (times unix seconds; printer figures as last reported).

    The fields are the ``copies`` table's columns (tests/test_store.py checks).
    """

    id: int
    job_id: str
    claim: int  # the job's claim number it belongs to (jobs.claims when made)
    printer: str
    state: CopyState
    operation: str  # "Create-Job" or "Print-Job"
    document_format: str
    document_bytes: int
    impressions_expected: int | None  # pages × copies, when known
    printer_job_id: int | None = None
    created_s: int | None = None  # time-at-creation (printer-up-time seconds)
    printer_up_s: int | None = None  # printer-up-time seen just before the job was created
    sent_at: float | None = None  # the document started to leave (None: never sent)
    acknowledged_at: float | None = None
    cancel_origin: str | None = None  # who wanted it cancelled: "edgeprint" | "requested"
    cancel_sent_at: float | None = None
    job_state: int | None = None
    job_state_reasons: str = ""  # comma-separated, as last reported
    k_octets: int | None = None
    impressions_completed: int | None = None
    outcome: str | None = None  # why it settled, in words
    epoch: int | None = None  # the printer's epoch it was made in (edgeprint.printers.epochs)
    settled_by: str | None = None  # the evidence that settled it (edgeprint.evidence.Evidence)
    job_uuid: str | None = None  # job-uuid, where the printer reports one
    created_dt: str | None = None  # date-time-at-creation, where the printer reports one
    #: every byte of the request that carries the document was handed to the connection
    #: (an answer that was then lost leaves a copy the printer may have whole)
    written_at: float | None = None
    sheets_completed: int | None = None  # job-media-sheets-completed, as last reported

    @property
    def live(self) -> bool:
        return self.state in LIVE_COPY_STATES

    @property
    def document_may_have_left(self) -> bool:
        """True when some of the document may have reached the printer."""
        return self.sent_at is not None and self.state is not C.REFUSED

    @property
    def pages_out(self) -> int | None:
        """Impressions that came out, as the printer last reported (None: it did not say)."""
        if self.impressions_completed is not None:
            return self.impressions_completed
        return self.sheets_completed

    def whole(self, k_octets: int | None, impressions_completed: int | None) -> bool:
        """The printer has all of the document: it said so, or its own figures show it.

        ``job-k-octets`` is the size in KiB rounded up, so a whole document
        reports at least ``ceil(bytes / 1024)``; impressions completed of at
        least pages × copies show every page came out.
        """
        if self.acknowledged_at is not None:
            return True
        if k_octets is not None and k_octets >= math.ceil(self.document_bytes / 1024):
            return True
        expected = self.impressions_expected
        return (
            expected is not None
            and impressions_completed is not None
            and (impressions_completed >= expected)
        )


# --- the job-level rules -------------------------------------------------------------------


class Kind(StrEnum):
    """What a job's copies mean for it."""

    FOLLOW = "follow"  # a live copy has (or will have) the whole document: follow it
    CANCEL = "cancel"  # this live copy must go: Cancel-Job, then judge again
    WAIT = "wait"  # a live copy is being cancelled: wait for the printer to settle it
    FIND = "find"  # a copy's printer job-id is unknown: look for it by what edgeprint knows
    DONE = "done"  # a copy printed whole (or, where its printer allows, was forgotten whole)
    CANCELLED = "cancelled"  # a person cancelled it (at the printer, or through edgeprint)
    DEAD = "dead"  # parked: poison, attempts_exhausted, document_error, outcome_unknown
    RETRY = "retry"  # a real failure: back to the queue after a back-off, the attempt counts
    SEND = (
        "send"  # provably nothing printed: back to the queue (after ``delay_s``), no attempt used
    )


@dataclass(frozen=True)
class Verdict:
    """A decision about a job, the copy it is about, and the words for the job's record."""

    kind: Kind
    copy: Copy | None = None
    dead_reason: str | None = None
    error: str | None = None
    failure_sig: str | None = None
    delay_s: float = 0.0  # SEND: not before this long from now (a busy printer)

    @property
    def settled_by(self) -> str | None:
        """The evidence that settled the copy this verdict is about (None: no copy)."""
        return self.copy.settled_by if self.copy is not None else None

    @property
    def pages_printed(self) -> int | None:
        """Impressions of the copy that came out before it stopped (partial output only)."""
        c = self.copy
        if c is None or c.state not in (
            C.PARTIAL,
            C.CANCELLED,
            C.CANCELLED_ELSEWHERE,
            C.INCOMPLETE,
        ):
            return None
        return c.pages_out or None


@dataclass(frozen=True)
class JobFacts:
    """What the rules need of the job itself."""

    id: str
    claim: int
    attempts: int
    failure_sig: str | None = None
    failure_printer: str | None = None


@dataclass(frozen=True)
class Policy:
    """Retry, unknown-outcome and per-printer settings ([dispatch], [[printers]] in config)."""

    max_attempts: int = 5
    reprint_unknown: bool = False  # on_unknown_outcome = "reprint"
    document_error_tries: int = 2  # copies blamed on the document before DEAD document_error
    busy_backoff_s: float = 1.0  # a busy printer's job waits this long before it is sent again
    #: printers whose forgotten copies a person decides ([[printers]] on_forgotten = "ask")
    ask_forgotten: frozenset[str] = frozenset()
    #: printers known to count impressions (a copy whose answer was lost after its whole
    #: upload is followed there, not cancelled: the count will say whether it came out whole)
    counting: frozenset[str] = frozenset()
