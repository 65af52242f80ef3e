"""What the printer says about one copy, taken at its word (DESIGN §3): pure functions.

:func:`identify` decides whether a printer job *is* a stored copy (job-id and
``time-at-creation`` first, job-name second: printers reuse ids and some
rename every job "Print"); :func:`find_orphans` looks for the printer job of a
copy whose job-id edgeprint never learnt (a crash right after Create-Job);
:func:`observe` turns a printer job (or its absence) into what the copy now
is. The job-level rules that follow are :func:`edgeprint.copies.judge`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from edgeprint.copies import (
    CANCELLED_ELSEWHERE_REASONS,
    DOCUMENT_ERROR_REASONS,
    ORIGIN_EDGEPRINT,
    WAITING_FOR_DATA,
    Copy,
    CopyState,
)
from edgeprint.printers.ipp import (
    JOB_ABORTED,
    JOB_CANCELED,
    JOB_COMPLETED,
    JOB_HELD,
    JOB_PENDING,
    PrinterJob,
)

C = CopyState
#: Seconds of slack between printer-up-time read at a probe and time-at-creation.
UP_TIME_SLACK_S = 2


def printer_job_name(job_id: str) -> str:
    """The IPP job-name for an edgeprint job: contains the id verbatim (DESIGN §3)."""
    return f"edgeprint-{job_id}"


def _names_other_job(pj: PrinterJob, job_id: str) -> bool:
    """True when the job-name is one of edgeprint's, for another job."""
    return pj.name.startswith("edgeprint-") and job_id not in pj.name


def identify(copy: Copy, pj: PrinterJob) -> bool:
    """Whether printer job ``pj`` is ``copy`` (whose printer job-id is known).

    The job-id must match; ``time-at-creation`` must equal the stored one when
    both are known (a restarted printer reuses ids), and may not be earlier
    than the printer-up-time edgeprint saw before creating it; a job-name that
    belongs to another edgeprint job rules it out. A printer that names every
    job "Print" is therefore matched by id and time alone.
    """
    if copy.printer_job_id is None or pj.job_id != copy.printer_job_id:
        return False
    if copy.created_s is not None and pj.created_s is not None:
        return pj.created_s == copy.created_s
    if (
        copy.printer_up_s is not None
        and pj.created_s is not None
        and pj.created_s + UP_TIME_SLACK_S < copy.printer_up_s
    ):
        return False
    return not _names_other_job(pj, copy.job_id)


def find_orphans(
    copy: Copy,
    owner: str,
    jobs: Sequence[PrinterJob],
    known: Collection[tuple[int, int | None]],
) -> list[PrinterJob]:
    """Printer jobs that may be ``copy`` although its job-id was never stored.

    A job named after the edgeprint job is it. Otherwise (a printer that
    renames jobs) candidates are jobs not known as any other copy, created no
    earlier than the printer-up-time edgeprint saw before creating the copy,
    by the job's owner (or a printer that reports no user / "Guest"), and —
    for a copy that never got a document — waiting for data.
    """

    def is_known(j: PrinterJob) -> bool:
        return (j.job_id, j.created_s) in known or (j.job_id, None) in known

    named = [j for j in jobs if copy.job_id in j.name and not is_known(j)]
    if named:
        return sorted(named, key=lambda j: j.job_id, reverse=True)
    out = []
    for j in jobs:
        if is_known(j) or _names_other_job(j, copy.job_id):
            continue
        if copy.printer_up_s is None or j.created_s is None:
            continue
        if j.created_s + UP_TIME_SLACK_S < copy.printer_up_s:
            continue
        if j.user not in ("", owner, "Guest", "guest", "anonymous"):
            continue
        if copy.sent_at is None and not _empty_and_live(j):
            continue
        out.append(j)
    return sorted(out, key=lambda j: j.job_id, reverse=True)


def _empty_and_live(j: PrinterJob) -> bool:
    """A printer job still open that has received no document (pending, held, or waiting)."""
    if j.terminal or j.k_octets not in (None, 0):
        return False
    return j.state in (JOB_PENDING, JOB_HELD) or bool(WAITING_FOR_DATA & set(j.reasons))


@dataclass(frozen=True)
class Observation:
    """What a copy is now: still live (with the printer's figures) or settled, and why."""

    settled: CopyState | None  # None: still live at the printer
    pj: PrinterJob | None
    outcome: str | None = None


def observe(copy: Copy, pj: PrinterJob | None) -> Observation:
    """The copy's new state from the printer job it is (``None``: the printer lists no such job).

    - not listed: VANISHED (the printer purged or forgot it; a job it lists no
      more was not necessarily never printed);
    - completed with a document-error reason, or aborted with one: DOCUMENT_ERROR;
    - completed and whole (acknowledged, or the printer's figures show all of
      it): PRINTED; completed and not verifiably whole: INCOMPLETE;
    - canceled: CANCELLED when edgeprint asked (its cancel is recorded before it
      is sent), else CANCELLED_ELSEWHERE (a person at the panel, an operator);
      but when edgeprint's own cancel came after pages came out
      (``job-impressions-completed`` > 0), PRINTED if they were all of them,
      else INCOMPLETE: a copy that printed is never sent again;
    - aborted: ABORTED; anything else: still live.
    """
    if pj is None:
        return Observation(C.VANISHED, None, "the printer no longer lists it")
    reasons = set(pj.reasons)
    if pj.state in (JOB_COMPLETED, JOB_ABORTED) and reasons & DOCUMENT_ERROR_REASONS:
        blamed = ", ".join(sorted(reasons & DOCUMENT_ERROR_REASONS))
        return Observation(C.DOCUMENT_ERROR, pj, f"job-state-reasons {blamed}")
    if pj.state == JOB_COMPLETED:
        if copy.sent_at is not None and copy.whole(pj.k_octets, pj.impressions_completed):
            return Observation(C.PRINTED, pj, "completed")
        if copy.sent_at is None:
            return Observation(C.ABORTED, pj, "completed without a document")
        return Observation(C.INCOMPLETE, pj, "completed, not verifiably whole")
    if pj.state == JOB_CANCELED:
        if copy.cancel_origin == ORIGIN_EDGEPRINT and copy.sent_at and pj.impressions_completed:
            # edgeprint's cancel came after pages came out: the printer's own count says so
            if copy.whole(None, pj.impressions_completed):
                return Observation(C.PRINTED, pj, "canceled after it printed")
            return Observation(C.INCOMPLETE, pj, "canceled after part of it printed")
        if copy.cancel_origin is not None:
            return Observation(C.CANCELLED, pj, "canceled as edgeprint asked")
        by = sorted(reasons & CANCELLED_ELSEWHERE_REASONS) or ["canceled"]
        return Observation(C.CANCELLED_ELSEWHERE, pj, ", ".join(by))
    if pj.state == JOB_ABORTED:
        return Observation(C.ABORTED, pj, ", ".join(sorted(reasons - {"none"})) or "aborted")
    return Observation(None, pj)
