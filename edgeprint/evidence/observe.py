"""What a printer's answer means for a copy: :func:`observe` turns a :class:`Sighting`
into what the copy now is."""

from __future__ import annotations

from collections.abc import Sequence

from edgeprint.copies import (
    CANCELLED_ELSEWHERE_REASONS,
    DOCUMENT_ERROR_REASONS,
    ORIGIN_EDGEPRINT,
    Copy,
    CopyState,
)
from edgeprint.evidence.identity import identity_says
from edgeprint.evidence.table import (
    JOB_CANCELED,
    JOB_COMPLETED,
    JOB_ENDING_REASONS,
    JOB_STOPPED_REASONS,
    UNSPECIFIC_REASONS,
    Context,
    Evidence,
    Listing,
    Observation,
    PrinterJob,
    Sighting,
)
from edgeprint.personality import History

C = CopyState
E = Evidence


def _keyword(reason: str) -> str:
    for suffix in ("-report", "-warning", "-error"):
        if reason.endswith(suffix):
            return reason[: -len(suffix)]
    return reason


def ending_reasons(reasons: Sequence[str]) -> list[str]:
    """The printer-state-reasons under which a printer may end a job it could not finish
    (:data:`JOB_ENDING_REASONS`): any severity, but an unspecific keyword only at error
    severity (:data:`UNSPECIFIC_REASONS`)."""
    return sorted({_keyword(r) for r in reasons if _ends_jobs(r)})


def _ends_jobs(reason: str) -> bool:
    keyword = _keyword(reason)
    at_error = keyword == reason or reason.endswith("-error")  # no suffix: error (§5.4.12)
    return keyword in JOB_ENDING_REASONS and (at_error or keyword not in UNSPECIFIC_REASONS)


def _whole(copy: Copy, pj: PrinterJob) -> Evidence | None:
    """Which figure shows the copy whole at the printer (None: none does)."""
    if copy.acknowledged_at is not None:
        return E.COMPLETED_ACKNOWLEDGED
    if copy.whole(pj.k_octets, None):
        return E.COMPLETED_K_OCTETS
    if copy.whole(None, pj.impressions_completed):
        return E.COMPLETED_IMPRESSIONS
    return None


def _all_out(copy: Copy, out: int) -> bool:
    """The printer counted every impression of the copy as come out (pages × copies)."""
    return copy.impressions_expected is not None and out >= copy.impressions_expected


def _terminal(copy: Copy, pj: PrinterJob) -> Observation:
    reasons = set(pj.reasons) - {"none"}
    blamed = sorted(reasons & DOCUMENT_ERROR_REASONS)
    out = pj.pages_out
    expected = copy.impressions_expected
    if pj.state == JOB_COMPLETED:
        if blamed:
            if out == 0:
                return Observation(
                    C.DOCUMENT_ERROR,
                    E.DOCUMENT_ERROR,
                    pj,
                    f"completed, nothing out ({', '.join(blamed)})",
                )
            return Observation(
                C.INCOMPLETE,
                E.COMPLETED_WITH_DOCUMENT_ERRORS,
                pj,
                f"completed with {', '.join(blamed)}"
                + (f" after {out} impression(s) came out" if out else ""),
            )
        if copy.sent_at is None:
            return Observation(
                C.ABORTED, E.COMPLETED_WITHOUT_DOCUMENT, pj, "completed without a document"
            )
        whole = _whole(copy, pj)
        if whole is not None:
            return Observation(C.PRINTED, whole, pj, "completed")
        if out and expected is not None and out < expected:
            return Observation(
                C.PARTIAL,
                E.STOPPED_AFTER_PAGES,
                pj,
                f"completed after {out} of {expected} impression(s): the printer got part of it",
            )
        return Observation(
            C.INCOMPLETE, E.COMPLETED_UNVERIFIED, pj, "completed, not verifiably whole"
        )
    if pj.state == JOB_CANCELED:
        if copy.cancel_origin == ORIGIN_EDGEPRINT and copy.sent_at and out:
            if _all_out(copy, out):
                return Observation(
                    C.PRINTED, E.CANCELLED_AFTER_PRINTING, pj, "canceled after it printed"
                )
            return Observation(
                C.PARTIAL, E.STOPPED_AFTER_PAGES, pj, f"canceled after {out} impression(s) came out"
            )
        if copy.cancel_origin is not None:
            return Observation(C.CANCELLED, E.CANCELLED_AS_ASKED, pj, "canceled as edgeprint asked")
        by = sorted(reasons & CANCELLED_ELSEWHERE_REASONS) or ["canceled"]
        return Observation(C.CANCELLED_ELSEWHERE, E.CANCELLED_ELSEWHERE, pj, ", ".join(by))
    # aborted
    why = ", ".join(sorted(reasons)) or "aborted"
    if blamed and not out:
        return Observation(
            C.DOCUMENT_ERROR, E.DOCUMENT_ERROR, pj, f"job-state-reasons {', '.join(blamed)}"
        )
    if out and copy.sent_at is not None and _all_out(copy, out):
        return Observation(
            C.PRINTED, E.ABORTED_AFTER_PRINTING, pj, f"aborted after it printed ({why})"
        )
    if out:
        return Observation(
            C.PARTIAL,
            E.STOPPED_AFTER_PAGES,
            pj,
            f"aborted after {out} impression(s) came out ({why})",
        )
    if out is None and copy.sent_at is not None:
        # No count and the document was sent: a one-impression copy proves no more than a
        # longer one (a printer may print the page, then abort on a finisher or a jam after
        # it: adversary seed 324), so a person decides rather than a second copy
        of = f"how many of {expected} impressions" if expected else "whether any impression"
        return Observation(
            C.PARTIAL,
            E.ABORTED_PAGES_UNKNOWN,
            pj,
            f"aborted ({why}); the printer does not say {of} came out",
        )
    return Observation(C.ABORTED, E.ABORTED, pj, why)


def _older(j: PrinterJob, copy: Copy) -> bool:
    if j.created_s is not None and copy.created_s is not None:
        return j.created_s < copy.created_s
    return copy.printer_job_id is not None and j.job_id < copy.printer_job_id


def _gone(copy: Copy, seen: Sighting, ctx: Context) -> Observation:
    """The copy is in no answer of the printer's present epoch: forgotten, or vanished."""
    if copy.epoch is not None and copy.epoch != ctx.epoch:
        return Observation(
            C.VANISHED,
            E.VANISHED_NEW_EPOCH,
            None,
            f"the printer restarted since (epoch {copy.epoch} → {ctx.epoch}); nothing of its "
            "present life is this copy",
        )
    if (
        copy.acknowledged_at is not None
        and copy.cancel_origin is None
        and ctx.traits.up_time_moves is None
    ):
        # forgotten, or lost in a restart? Not knowable until the printer's clock was seen
        # to move (a second or two): the copy stays live, and is looked at again
        return Observation(
            None,
            E.NOT_CONFIRMED,
            None,
            "gone from the printer's answers; waiting to see whether its printer-up-time moves",
        )
    why = _not_forgotten(copy, seen, ctx)
    if why is None:
        return Observation(
            C.UNVERIFIED,
            E.FORGOTTEN_AFTER_ACKNOWLEDGED,
            None,
            "the printer acknowledged the whole document and reported no error, then forgot "
            "the job",
        )
    return Observation(C.VANISHED, E.VANISHED, None, f"the printer no longer lists it ({why})")


def _not_forgotten(copy: Copy, seen: Sighting, ctx: Context) -> str | None:
    """Why the copy's disappearance is *not* the printer forgetting a job it printed (None:
    nothing says otherwise)."""
    if copy.acknowledged_at is None:
        return "its upload was never acknowledged"
    if copy.cancel_origin is not None:
        return "it was being cancelled"
    if not ctx.traits.restarts_visible:
        return "this printer cannot show whether it restarted meanwhile"
    if (
        ctx.traits.history is History.KEPT and seen.listing is Listing.ALL
    ) or seen.listing is Listing.ALL:
        kept = [j for j in seen.listed or () if j.terminal and _older(j, copy)]
        if kept:
            return f"it still lists older finished job {kept[0].job_id}"
    stopped = [r for r in copy.job_state_reasons.split(",") if r in JOB_STOPPED_REASONS]
    if stopped:
        return f"it last reported {', '.join(stopped)}"
    now = ending_reasons(ctx.printer_reasons)
    if now:
        return f"the printer reports {', '.join(now)}"
    return None


def observe(copy: Copy, seen: Sighting, ctx: Context) -> Observation:
    """The copy's new state from what the printer answered (see :data:`EVIDENCE`).

    The printer job that *is* the copy is looked for in Get-Job-Attributes'
    answer, then in the Get-Jobs list; a job-id that names another job (another
    time-at-creation, uuid or name, or another epoch) is not the copy. Found:
    terminal states settle it, live ones record its figures. Not found: with no
    usable Get-Jobs list nothing is proven (some printers answer not-found for
    jobs they still list); with one, the copy was forgotten or vanished.
    """
    answers = ([seen.direct] if seen.direct is not None else []) + list(seen.listed or ())
    said = [(j, identity_says(copy, j, ctx.traits, ctx.epoch)) for j in answers]
    pj = next((j for j, it in said if it), None)
    if pj is None and any(it is None for _, it in said):
        return Observation(
            None,
            E.NOT_CONFIRMED,
            None,
            "a printer job with its job-id was made before it by the printer's clock; "
            "waiting to see whether that clock (printer-up-time) moves",
        )
    if pj is not None:
        if pj.terminal:
            return _terminal(copy, pj)
        if pj.state == 0:
            return Observation(None, E.NOT_CONFIRMED, None, "the answer has no job-state")
        return Observation(None, E.LISTED_LIVE, pj)
    if seen.listed is None:
        return Observation(
            None, E.NOT_CONFIRMED, None, "not found by Get-Job-Attributes; Get-Jobs not read"
        )
    return _gone(copy, seen, ctx)
