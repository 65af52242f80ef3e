"""What to do with a PRINTING job after a crash or an ambiguous outcome (DESIGN §3).

:func:`decide` is a pure decision table over what edgeprint stored about the
job and what the printer reports; the worker carries out the verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from edgeprint.printers.ipp import JOB_ABORTED, JOB_CANCELED, JOB_COMPLETED, PrinterJob

#: ``job-state-reasons`` of a printer job still waiting for (all of) its document.
WAITING_FOR_DATA = frozenset({"job-data-insufficient", "job-incoming"})


class Verdict(StrEnum):
    """The reconciliation outcome for one PRINTING job."""

    WAIT = "wait"  # printer unreachable: keep the job PRINTING, ask again later
    FOLLOW = "follow"  # a live copy has the whole document: follow it
    CANCEL = (
        "cancel"  # a live copy must go (truncated, empty, unwanted): Cancel-Job, then ask again
    )
    DONE = "done"  # a copy completed: the job is printed
    TRUNCATED_DONE = "truncated_done"  # a truncated copy completed: record it, send again
    RETRY = "retry"  # only aborted/canceled copies: nothing printed, retry policy
    SEND = "send"  # provably no copy can have printed: send (again)
    UNKNOWN = "unknown"  # a document may have printed and the printer forgot: outcome_unknown


@dataclass(frozen=True)
class Stored:
    """What the store knows of the job at its printer.

    ``discounted`` names printer jobs already recorded as truncated copies
    (:func:`copy_key`): they never count as the job being printed.
    """

    job_id: str
    printer_job_id: int | None
    upload: str | None  # None | "sending" | "truncated"
    cancel_requested: bool = False
    discounted: frozenset[str] = frozenset()

    def truncated(self, copy: PrinterJob) -> bool:
        """True when ``copy`` was made from the upload known to have broken off."""
        return self.upload == "truncated" and self.printer_job_id in (None, copy.job_id)


def copy_key(copy: PrinterJob) -> str:
    """A printer job's identity across printer restarts: job-id and time-at-creation."""
    return f"{copy.job_id}@{copy.created_s}"


@dataclass(frozen=True)
class Decision:
    """A verdict, and the printer job it is about (if any)."""

    verdict: Verdict
    copy: PrinterJob | None = None


def matching(
    job_id: str, jobs: Sequence[PrinterJob], discounted: frozenset[str] = frozenset()
) -> list[PrinterJob]:
    """The printer's jobs whose job-name contains the edgeprint job id, newest first.

    Job ids are not enough: a restarted printer reuses them (DESIGN §3).
    Copies in ``discounted`` (recorded truncated copies) are left out.
    """
    found = {j.job_id: j for j in jobs if job_id in j.name and copy_key(j) not in discounted}
    return sorted(found.values(), key=lambda j: j.job_id, reverse=True)


def decide(stored: Stored, copies: Sequence[PrinterJob] | None) -> Decision:
    """Decide from ``copies`` (the printer's jobs for this edgeprint job; None: unreachable).

    The rules, in order:

    1. printer unreachable → WAIT;
    2. a live (not terminal) copy: FOLLOW it when its document was sent whole
       as far as edgeprint knows (``upload == "sending"``) and it is not still
       waiting for data; CANCEL it when the upload is known truncated or never
       started, it waits for its document, a newer live copy exists, or a
       technician asked to cancel;
    3. a completed copy: DONE (a technician's cancel came too late), unless
       it is the copy of an upload known to be truncated: TRUNCATED_DONE;
    4. only terminal, unprinted copies: RETRY if the printer aborted one or a
       copy with the whole document was cancelled; SEND if the only copies
       are cancelled empty or truncated ones (our own fencing);
    5. no copy at all: SEND when no document can have reached the printer
       (none sent, or the upload is known truncated and a truncated copy never
       counts as printed), else UNKNOWN (the printer forgot a job that may
       have printed).
    """
    if copies is None:
        return Decision(Verdict.WAIT)
    mine = matching(stored.job_id, copies, stored.discounted)
    live = [c for c in mine if not c.terminal]
    if live:
        newest = live[0]
        for extra in live[1:]:
            return Decision(Verdict.CANCEL, extra)
        sent_whole = stored.upload == "sending" and not WAITING_FOR_DATA & set(newest.reasons)
        if not sent_whole or stored.cancel_requested:
            return Decision(Verdict.CANCEL, newest)
        return Decision(Verdict.FOLLOW, newest)
    completed = [c for c in mine if c.state == JOB_COMPLETED]
    whole = [c for c in completed if not stored.truncated(c)]
    if whole:
        return Decision(Verdict.DONE, whole[0])
    if completed:
        return Decision(Verdict.TRUNCATED_DONE, completed[0])
    if any(c.state == JOB_ABORTED for c in mine):
        return Decision(Verdict.RETRY, mine[0])
    if any(c.state == JOB_CANCELED for c in mine):
        verdict = Verdict.RETRY if stored.upload == "sending" else Verdict.SEND
        return Decision(verdict, mine[0])
    if stored.upload == "sending":
        return Decision(Verdict.UNKNOWN)
    return Decision(Verdict.SEND)
