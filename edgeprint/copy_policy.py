"""The job-level rules over a job's copies (pure; hypothesis tests them, tests/test_copies.py
and tests/test_copy_policy.py).

:func:`judge` says what a job's copies mean for the job (done, cancelled, retry, dead,
send again, or follow/cancel a live copy). Beside it the refusal policy:
:func:`refusal_of` classifies a printer's refusal (poison, busy, unreachable, other) and
signs it, :func:`on_refusal` says what a refusal means for the job, and
:func:`on_failure` is the retry/poison policy for a failed print attempt (the same
failure on two printers blames the job; ``max_attempts`` bounds the rest).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from enum import StrEnum

from edgeprint import errors
from edgeprint.copies import (
    ORIGIN_REQUESTED,
    WAITING_FOR_DATA,
    Copy,
    CopyState,
    JobFacts,
    Kind,
    Policy,
    Verdict,
)

C = CopyState


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


def refusal_of(exc: errors.PrinterError) -> tuple[Refusal, str]:
    """How a printer's error refused a copy, and the failure's signature (what
    :func:`on_failure` compares across printers): its IPP status, else its kind."""
    if isinstance(exc, errors.PrinterPermanent):
        refusal = Refusal.POISON
    elif isinstance(exc, errors.PrinterBusy):
        refusal = Refusal.BUSY
    elif isinstance(exc, errors.PrinterUnreachable):
        refusal = Refusal.UNREACHABLE
    else:
        refusal = Refusal.OTHER
    sig = f"status:{exc.status_code:#06x}" if exc.status_code else type(exc).__name__
    return refusal, sig


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
        c
        for c in copies
        if c.state is C.PRINTED
        or (c.state is C.UNVERIFIED and c.printer not in policy.ask_forgotten)
    ]
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
                Kind.DEAD,
                c,
                dead_reason="outcome_unknown",
                error=f"part of it printed: {_label(c)} stopped part-way ({c.outcome}); {out}. "
                "Resolve: printed, not printed, or print the rest",
            )
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
                Kind.DEAD,
                c,
                dead_reason="outcome_unknown",
                error=f'{_label(c)}: {c.outcome} (on_forgotten = "ask": did it come out?)',
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
                    Kind.DEAD,
                    c,
                    dead_reason="attempts_exhausted",
                    error=f"{job.attempts} attempts; last: {error}",
                )
            return Verdict(Kind.RETRY, c, error=error)
    last = current[-1] if current else None
    return Verdict(Kind.SEND, last, error="resent: no copy can have printed")
