"""Copies: what edgeprint handed a printer for a job, as a state machine of its own (DESIGN §3).

Every Create-Job (or Print-Job) edgeprint makes for a job is a *copy*: one row
of the ``copies`` table with the printer, the printer's ``job-id`` and
``time-at-creation`` (its identity: printers reuse ids), the document sent,
whether the printer *acknowledged* the upload, and what the printer last
reported. :data:`COPY_TRANSITIONS` is its transition table, in the style of
:data:`edgeprint.states.TRANSITIONS`; the store derives every conditional
write on ``copies`` from it.

The job-level rules live here too, as pure functions over a job's copies:
:func:`judge` says what a job's copies mean for the job (done, cancelled,
retry, dead, send again, or follow/cancel a live copy) and :func:`on_failure`
is the retry/poison policy for a print attempt the printer refused.

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
from collections.abc import Sequence
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


def _reasons(copy: Copy) -> list[str]:
    return [r for r in copy.job_state_reasons.split(",") if r and r != "none"]


def _label(copy: Copy) -> str:
    pj = f"printer job {copy.printer_job_id}" if copy.printer_job_id is not None else "a job"
    return f"{pj} on {copy.printer}"


def on_failure(job: JobFacts, printer: str, sig: str, error: str, policy: Policy) -> Verdict:
    """A print attempt failed on ``printer`` in a way that may be the printer's or the job's.

    The same failure (``sig``) on two different printers blames the job:
    poison. Past ``max_attempts``: attempts_exhausted. Otherwise a retry.
    """
    if job.failure_sig == sig and job.failure_printer not in (None, printer):
        return Verdict(
            Kind.DEAD,
            dead_reason="poison",
            error=f"failed the same way on {job.failure_printer} and {printer}: {error}",
        )
    if job.attempts >= policy.max_attempts:
        return Verdict(
            Kind.DEAD,
            dead_reason="attempts_exhausted",
            error=f"{job.attempts} attempts; last: {error}",
        )
    return Verdict(Kind.RETRY, error=error, failure_sig=sig)


class Refusal(StrEnum):
    """How a printer refused a Create-Job, Send-Document or Print-Job (the IPP client's class)."""

    POISON = "poison"  # it blamed the document or its attributes (RFC 8011 §4.1.6 statuses)
    BUSY = "busy"  # server-error-busy: backpressure, not a failure
    UNREACHABLE = "unreachable"  # no connection: the printer did not act
    OTHER = "other"  # any other error status: maybe the printer's, maybe the job's


def on_refusal(
    job: JobFacts, printer: str, refusal: Refusal, sig: str, error: str, policy: Policy
) -> Verdict:
    """The printer refused a copy (nothing of it printed): what that means for the job.

    Poison → DEAD at once; busy → sent again after ``busy_backoff_s``, the attempt
    given back; unreachable → sent again at once (to a peer, or here when it is
    back); anything else → the retry policy (:func:`on_failure`).
    """
    match refusal:
        case Refusal.POISON:
            return Verdict(Kind.DEAD, dead_reason="poison", error=error)
        case Refusal.BUSY:
            return Verdict(Kind.SEND, error=error, delay_s=policy.busy_backoff_s)
        case Refusal.UNREACHABLE:
            return Verdict(Kind.SEND, error=error)
    return on_failure(job, printer, sig, error, policy)


def _follows_unacknowledged(copy: Copy, policy: Policy) -> bool:
    """A live copy whose upload was never acknowledged, and whether it has the whole document.

    The printer says so in ``job-k-octets`` (short: it does not); without that
    figure, a copy whose whole request was handed over (the answer was lost on the
    way back) is followed on a printer known to count impressions — its count will
    show whether it came out whole — and cancelled elsewhere.
    """
    if WAITING_FOR_DATA & set(_reasons(copy)):
        return False
    if copy.k_octets is not None:
        return copy.whole(copy.k_octets, None)
    if copy.whole(None, copy.impressions_completed):
        return True
    return copy.written_at is not None and copy.printer in policy.counting


def judge(job: JobFacts, copies: Sequence[Copy], policy: Policy) -> Verdict:
    """What ``copies`` (every copy of the job, any claim) mean for the job's current claim.

    In order:

    1. a copy printed whole → DONE (any live copy of it is cancelled first: never a
       second); so does an *unverified* copy (acknowledged whole, then forgotten) on a
       printer whose ``on_forgotten`` is "printed";
    2. a copy cancelled by someone else → CANCELLED (a person's decision, never a retry);
    3. a live copy of the current claim: WAIT while it is being cancelled; FIND one
       whose job-id is unknown; CANCEL older duplicates and any copy that cannot be
       whole (never sent, or sent but neither acknowledged nor shown whole by the
       printer's figures, see :func:`_follows_unacknowledged`); FOLLOW one that has
       the whole document;
    4. settled copies only: a person's cancel stands → CANCELLED; a copy that stopped
       after pages came out, or a possibly truncated copy printed, or an unverified
       copy where a person decides, or a copy with a document that vanished or was
       lost → DEAD ``outcome_unknown`` (never DONE, never a blind second copy;
       ``reprint`` sends again where the copy only vanished); the document blamed
       ``document_error_tries`` times → DEAD ``document_error``, else RETRY; an abort
       after a document was sent → the retry policy (:func:`on_failure`); a copy
       edgeprint cancelled because its upload could not be verified whole → RETRY
       (counted, backed off: a link that always breaks ends DEAD
       ``attempts_exhausted``, not in a loop); anything else (no copy, our own cancel
       of an empty copy, a refusal, an empty job gone) → SEND: nothing can have printed.
    """
    printed = [
        c for c in copies
        if c.state is C.PRINTED
        or (c.state is C.UNVERIFIED and c.printer not in policy.ask_forgotten)
    ]  # fmt: skip
    current = [c for c in copies if c.claim == job.claim]
    live = sorted((c for c in current if c.live), key=lambda c: c.id, reverse=True)
    if printed:
        return Verdict(Kind.CANCEL, live[0]) if live else Verdict(Kind.DONE, printed[0])
    elsewhere = [c for c in current if c.state is C.CANCELLED_ELSEWHERE]
    if elsewhere:
        if live:
            return Verdict(Kind.CANCEL, live[0])
        c = elsewhere[0]
        reasons = ", ".join(_reasons(c)) or "canceled"
        out = f"; {c.pages_out} impression(s) had come out" if c.pages_out else ""
        return Verdict(
            Kind.CANCELLED,
            c,
            error=f"cancelled at the printer: {_label(c)} was canceled by someone "
            f"other than edgeprint ({reasons}){out}",
        )
    if live:
        newest = live[0]
        for older in live[1:]:
            if older.state is not C.CANCELLING:
                return Verdict(Kind.CANCEL, older)
        if newest.state is C.CANCELLING:
            return Verdict(Kind.FIND if newest.printer_job_id is None else Kind.WAIT, newest)
        if newest.printer_job_id is None:
            return Verdict(Kind.FIND, newest)
        if newest.state is C.ACKNOWLEDGED:
            return Verdict(Kind.FOLLOW, newest)
        if newest.state is C.SENDING and _follows_unacknowledged(newest, policy):
            return Verdict(Kind.FOLLOW, newest)
        return Verdict(Kind.CANCEL, newest)
    return _settled(job, current, copies, policy)


def _expected(c: Copy) -> str:
    return f" of {c.impressions_expected}" if c.impressions_expected else ""


def _unknown(job: JobFacts, current: Sequence[Copy], policy: Policy) -> Verdict | None:
    """A settled copy of the current claim whose outcome only a person can decide."""
    for c in current:
        if c.state is C.PARTIAL:
            out = (
                f"{c.pages_out}{_expected(c)} impression(s) came out"
                if c.pages_out
                else "the printer does not say how many impressions came out"
            )
            return Verdict(
                Kind.DEAD, c, dead_reason="outcome_unknown",
                error=f"part of it printed: {_label(c)} stopped part-way ({c.outcome}); {out}. "
                "Resolve: printed, not printed, or print the rest",
            )  # fmt: skip
    for c in current:
        if c.state is C.INCOMPLETE:
            got = f" (it reported {c.k_octets} KiB of {math.ceil(c.document_bytes / 1024)})"
            return Verdict(
                Kind.DEAD,
                c,
                dead_reason="outcome_unknown",
                error=f"a possibly truncated copy printed: {_label(c)} completed, but the printer "
                f"never acknowledged the whole document{got if c.k_octets is not None else ''}"
                if c.settled_by != "completed_with_document_errors"
                else f"{_label(c)} {c.outcome}: check what came out",
            )
    for c in current:
        if c.state is C.UNVERIFIED:  # on a printer whose on_forgotten is "ask"
            return Verdict(
                Kind.DEAD, c, dead_reason="outcome_unknown",
                error=f"{_label(c)}: {c.outcome} (on_forgotten = \"ask\": did it come out?)",
            )  # fmt: skip
    for c in current:
        if c.state in (C.VANISHED, C.LOST) and c.document_may_have_left:
            if c.state is C.VANISHED and policy.reprint_unknown:
                return Verdict(
                    Kind.SEND,
                    c,
                    error=f"{_label(c)} vanished; reprinting (on_unknown_outcome = reprint)",
                )
            why = c.outcome or (
                "the printer no longer lists it"
                if c.state is C.VANISHED
                else "its state is unknown"
            )
            return Verdict(
                Kind.DEAD,
                c,
                dead_reason="outcome_unknown",
                error=f"{_label(c)} had the document and may have printed: {why}",
            )
    return None


def _settled(
    job: JobFacts, current: Sequence[Copy], copies: Sequence[Copy], policy: Policy
) -> Verdict:
    for c in current:
        if c.cancel_origin == ORIGIN_REQUESTED:  # a person's cancel stands, whatever came after
            maybe = (
                c.state in (C.INCOMPLETE, C.VANISHED, C.LOST, C.PARTIAL, C.UNVERIFIED)
                and c.document_may_have_left
            ) or bool(c.pages_out)
            error = (
                f"cancelled as asked; {_label(c)} may have printed part of it before it stopped"
                + (f" ({c.pages_out}{_expected(c)} impression(s))" if c.pages_out else "")
                if maybe
                else None
            )
            return Verdict(Kind.CANCELLED, c, error=error)
    unknown = _unknown(job, current, policy)
    if unknown is not None:
        return unknown
    blamed = [c for c in copies if c.state is C.DOCUMENT_ERROR]
    for c in current:
        if c.state is C.DOCUMENT_ERROR:
            error = (
                f"{_label(c)}: the printer could not print the document ({', '.join(_reasons(c))})"
            )
            if len(blamed) >= policy.document_error_tries:
                return Verdict(Kind.DEAD, c, dead_reason="document_error", error=error)
            return Verdict(Kind.RETRY, c, error=error, failure_sig="document_error")
    for c in current:
        if c.state is C.ABORTED and c.document_may_have_left:
            reasons = ",".join(sorted(_reasons(c)))
            error = f"{_label(c)} aborted" + (f" ({reasons})" if reasons else "")
            verdict = on_failure(job, c.printer, f"aborted:{reasons}", error, policy)
            return Verdict(verdict.kind, c, verdict.dead_reason, verdict.error, verdict.failure_sig)
    for c in current:
        if c.state is C.CANCELLED and c.document_may_have_left:
            # edgeprint cancelled a copy it could not verify whole (an upload that broke
            # off): nothing printed, but the attempt failed — back off, and count it.
            error = f"{_label(c)}: the upload was not acknowledged; cancelled there"
            if job.attempts >= policy.max_attempts:
                return Verdict(
                    Kind.DEAD, c, dead_reason="attempts_exhausted",
                    error=f"{job.attempts} attempts; last: {error}",
                )  # fmt: skip
            return Verdict(Kind.RETRY, c, error=error)
    last = current[-1] if current else None
    return Verdict(Kind.SEND, last, error="resent: no copy can have printed")
