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
}


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
    """One copy as stored (times unix seconds; printer figures as last reported)."""

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

    @property
    def live(self) -> bool:
        return self.state in LIVE_COPY_STATES

    @property
    def document_may_have_left(self) -> bool:
        """True when some of the document may have reached the printer."""
        return self.sent_at is not None and self.state is not C.REFUSED

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
    DONE = "done"  # a copy printed whole
    CANCELLED = "cancelled"  # a person cancelled it (at the printer, or through edgeprint)
    DEAD = "dead"  # parked: poison, attempts_exhausted, document_error, outcome_unknown
    RETRY = "retry"  # a real failure: back to the queue after a back-off, the attempt counts
    SEND = "send"  # provably nothing printed: back to the queue at once, no attempt used


@dataclass(frozen=True)
class Verdict:
    """A decision about a job, the copy it is about, and the words for the job's record."""

    kind: Kind
    copy: Copy | None = None
    dead_reason: str | None = None
    error: str | None = None
    failure_sig: str | None = None


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
    """Retry and unknown-outcome settings ([dispatch] in config)."""

    max_attempts: int = 5
    reprint_unknown: bool = False  # on_unknown_outcome = "reprint"
    document_error_tries: int = 2  # copies blamed on the document before DEAD document_error


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


def judge(job: JobFacts, copies: Sequence[Copy], policy: Policy) -> Verdict:
    """What ``copies`` (every copy of the job, any claim) mean for the job's current claim.

    In order:

    1. a copy printed whole → DONE (any live copy of it is cancelled first: never a second);
    2. a copy cancelled by someone else → CANCELLED (a person's decision, never a retry);
    3. a live copy of the current claim: WAIT while it is being cancelled; FIND one
       whose job-id is unknown; CANCEL older duplicates and any copy that cannot be
       whole (never sent, or sent but neither acknowledged nor shown whole by the
       printer's figures); FOLLOW one that has the whole document;
    4. settled copies only: a possibly truncated copy printed, or a copy with a
       document that vanished or was lost → DEAD ``outcome_unknown`` (never DONE,
       never a blind second copy; ``reprint`` sends again where the copy only
       vanished) — but a person's cancel comes first → CANCELLED; the document blamed
       ``document_error_tries`` times → DEAD ``document_error``, else RETRY; an
       abort after a document was sent → the retry policy (:func:`on_failure`);
       a copy edgeprint cancelled because its upload could not be verified whole
       → RETRY (counted, backed off: a link that always breaks ends DEAD
       ``attempts_exhausted``, not in a loop); anything else (no copy, our own
       cancel of an empty copy, a refusal, an empty job gone) → SEND: nothing
       can have printed.
    """
    printed = [c for c in copies if c.state is C.PRINTED]
    current = [c for c in copies if c.claim == job.claim]
    live = sorted((c for c in current if c.live), key=lambda c: c.id, reverse=True)
    if printed:
        return Verdict(Kind.CANCEL, live[0]) if live else Verdict(Kind.DONE, printed[0])
    elsewhere = [c for c in current if c.state is C.CANCELLED_ELSEWHERE]
    if elsewhere:
        if live:
            return Verdict(Kind.CANCEL, live[0])
        reasons = ", ".join(_reasons(elsewhere[0])) or "canceled"
        return Verdict(
            Kind.CANCELLED,
            elsewhere[0],
            error=f"cancelled at the printer: {_label(elsewhere[0])} was canceled by someone "
            f"other than edgeprint ({reasons})",
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
        waiting = WAITING_FOR_DATA & set(_reasons(newest))
        if (
            newest.state is C.SENDING
            and not waiting
            and newest.whole(newest.k_octets, newest.impressions_completed)
        ):
            return Verdict(Kind.FOLLOW, newest)
        return Verdict(Kind.CANCEL, newest)
    return _settled(job, current, copies, policy)


def _settled(
    job: JobFacts, current: Sequence[Copy], copies: Sequence[Copy], policy: Policy
) -> Verdict:
    for c in current:
        if c.cancel_origin == ORIGIN_REQUESTED:  # a person's cancel stands, whatever came after
            maybe = c.state in (C.INCOMPLETE, C.VANISHED, C.LOST) and c.document_may_have_left
            error = (
                f"cancelled as asked; {_label(c)} may have printed part of it before it stopped"
                if maybe
                else None
            )
            return Verdict(Kind.CANCELLED, c, error=error)
    for c in current:
        if c.state is C.INCOMPLETE:
            got = f" (it reported {c.k_octets} KiB of {math.ceil(c.document_bytes / 1024)})"
            return Verdict(
                Kind.DEAD,
                c,
                dead_reason="outcome_unknown",
                error=f"a possibly truncated copy printed: {_label(c)} completed, but the printer "
                f"never acknowledged the whole document{got if c.k_octets is not None else ''}",
            )
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
