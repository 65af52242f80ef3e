"""Whether a printer job *is* a stored copy (:func:`identify`), and the printer job of
a copy whose job-id edgeprint never learnt (:func:`find_orphans`)."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from edgeprint.copies import (
    WAITING_FOR_DATA,
    Copy,
)
from edgeprint.evidence.table import (
    JOB_HELD,
    JOB_PENDING,
    UP_TIME_SLACK_S,
    PrinterJob,
    printer_job_name,
)
from edgeprint.personality import Echo, Traits, name_matches


def _name_says(copy: Copy, pj: PrinterJob, traits: Traits) -> bool | None:
    """Whether the name shows ``pj`` is the copy (None: it says nothing).

    As the printer is known to echo names; before that is learnt, a name that is
    another edgeprint job's whole name rules it out.
    """
    sent = printer_job_name(copy.job_id)
    said = name_matches(traits.job_name, traits.name_length, sent, pj.name)
    if said is None and traits.job_name is Echo.UNKNOWN and pj.name.startswith("edgeprint-"):
        n, ours = pj.name.casefold(), sent.casefold()
        return None if n == ours or ours.startswith(n) or ours in n else False
    return said


def identify(copy: Copy, pj: PrinterJob, traits: Traits, *, epoch: int) -> bool:
    """Whether printer job ``pj`` (read in ``epoch``) is ``copy``, whose job-id is known.

    Within the copy's epoch: the job-id must match; ``time-at-creation`` and
    ``job-uuid`` must equal the stored ones where both are known (and creation
    may not precede the printer-up-time seen before the copy was made); the
    name rules it out only when the printer is known to echo names. Across
    epochs (the printer restarted since): only a stored ``job-uuid`` equal to
    the printer's, or an equal ``date-time-at-creation`` with the same job-id, is
    the copy — a job-id alone names a job of the printer's new life.
    """
    return identity_says(copy, pj, traits, epoch) is True


def identity_says(copy: Copy, pj: PrinterJob, traits: Traits, epoch: int) -> bool | None:
    """:func:`identify`, and None where only the printer's clock says it is another job
    while that clock is not yet known to move (a printer-up-time that never moves says
    nothing of when a job was made)."""
    if copy.printer_job_id is None:
        return False
    if copy.epoch is not None and copy.epoch != epoch:
        if copy.job_uuid and pj.uuid:
            return copy.job_uuid == pj.uuid
        return bool(
            copy.created_dt
            and pj.created_dt == copy.created_dt
            and pj.job_id == copy.printer_job_id
        )
    if pj.job_id != copy.printer_job_id:
        return False
    if copy.job_uuid and pj.uuid and copy.job_uuid != pj.uuid:
        return False
    if _name_says(copy, pj, traits) is False:
        return False
    if copy.created_s is not None and pj.created_s is not None:
        return pj.created_s == copy.created_s
    if (
        traits.up_time_moves is not False  # printer-up-time and time-at-creation: one clock
        and copy.printer_up_s is not None
        and pj.created_s is not None
        and pj.created_s + UP_TIME_SLACK_S < copy.printer_up_s
    ):
        return False if traits.up_time_moves else None
    return True


def find_orphans(
    copy: Copy,
    owner: str,
    jobs: Sequence[PrinterJob],
    known: Collection[tuple[int, int | None]],
    traits: Traits,
) -> list[PrinterJob]:
    """Printer jobs (listed in the copy's epoch) that may be ``copy``, whose job-id was never
    stored (a crash right after Create-Job). Newest first.

    A job named after the edgeprint job (as the printer echoes names) is it.
    Otherwise candidates are jobs not known as any other copy, created no earlier
    than the printer-up-time seen before the copy was made, by the job's owner (as
    the printer echoes users), and — for a copy that never got a document — still
    waiting for data.
    """

    def is_known(j: PrinterJob) -> bool:
        return (j.job_id, j.created_s) in known or (j.job_id, None) in known

    sent = printer_job_name(copy.job_id)
    named = [
        j
        for j in jobs
        if not is_known(j)
        and (
            name_matches(traits.job_name, traits.name_length, sent, j.name)
            if traits.job_name is not Echo.UNKNOWN
            else copy.job_id in j.name
        )
    ]
    if named:
        return sorted(named, key=lambda j: j.job_id, reverse=True)
    out = []
    for j in jobs:
        if is_known(j):
            continue
        if name_matches(traits.job_name, traits.name_length, sent, j.name) is False:
            continue
        if copy.printer_up_s is None or j.created_s is None or traits.up_time_moves is False:
            continue
        if j.created_s + UP_TIME_SLACK_S < copy.printer_up_s:
            continue
        if traits.user_name in (Echo.WHOLE, Echo.UNKNOWN) and j.user not in (
            "",
            owner,
            "Guest",
            "guest",
            "anonymous",
        ):
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
