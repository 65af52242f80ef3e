"""A job's story (issue 24): every state change, every copy and what settled it, in order.

Two tables tell it: ``job_events`` (each state change, who made it and why, written by
triggers; and the few events that change no state, such as "reprinted as …") and
``copies`` (each copy handed to a printer: which printer, its IPP job-id, and the
printer's answer that settled it). This module merges them by time and says each
entry in words, so the status page and a support call read the same sentences.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from edgeprint.service.jobs import JobService
from edgeprint.service.records import JobRecord
from edgeprint.states import JobState
from edgeprint.store.job_reads import EventRecord
from edgeprint.store.story import CopyRow, copies_of


@dataclass(frozen=True, slots=True)
class StoryEntry:
    """One line of the story (times unix seconds)."""

    at: float
    kind: str  # state | note | copy-made | copy-settled
    words: str
    actor: str | None
    reason: str | None
    from_state: JobState | None = None
    to_state: JobState | None = None
    printer: str | None = None
    printer_job_id: int | None = None
    copy_id: int | None = None
    copy_state: str | None = None
    outcome: str | None = None
    settled_by: str | None = None
    job_state_reasons: list[str] = field(default_factory=list)
    order: int = 0  # ties at one time: the order the store wrote them


@dataclass(frozen=True, slots=True)
class Story:
    """A job, its reprints, and what happened to it, oldest first."""

    job: JobRecord
    reprints: list[str]
    entries: list[StoryEntry]


def _event_entry(e: EventRecord) -> StoryEntry:
    if e.from_state is None:
        words = f"Accepted as {e.to_state} from {e.actor}"
        if e.reason and e.reason != "submit":
            words += f" ({e.reason})"
        kind = "state"
    elif e.from_state == e.to_state:
        words = f"{e.actor}: {e.reason or 'noted'}"
        kind = "note"
    else:
        words = f"{e.from_state} → {e.to_state} by {e.actor}"
        if e.reason:
            words += f" ({e.reason})"
        kind = "state"
    return StoryEntry(
        at=e.at,
        kind=kind,
        words=words,
        actor=e.actor,
        reason=e.reason,
        from_state=e.from_state,
        to_state=e.to_state,
        order=e.seq,
    )


def _copy_entries(row: CopyRow, n: int) -> list[StoryEntry]:
    c = row.copy
    pj = f" as printer job {c.printer_job_id}" if c.printer_job_id is not None else ""
    made = StoryEntry(
        at=row.created_at,
        kind="copy-made",
        words=f"Copy {n} handed to {c.printer}{pj}",
        actor=row.actor,
        reason=None,
        printer=c.printer,
        printer_job_id=c.printer_job_id,
        copy_id=c.id,
        copy_state=c.state.value,
        order=c.id,
    )
    if row.settled_at is None:
        return [made]
    words = f"Copy {n} on {c.printer} settled {c.state.value}"
    if c.outcome:
        words += f": {c.outcome}"
    if c.settled_by:
        words += f" (the printer's answer: {c.settled_by})"
    reasons = [r for r in c.job_state_reasons.split(",") if r]
    settled = StoryEntry(
        at=row.settled_at,
        kind="copy-settled",
        words=words,
        actor=row.actor,
        reason=c.outcome,
        printer=c.printer,
        printer_job_id=c.printer_job_id,
        copy_id=c.id,
        copy_state=c.state.value,
        outcome=c.outcome,
        settled_by=c.settled_by,
        job_state_reasons=reasons,
        order=c.id,
    )
    return [made, settled]


def tell(events: list[EventRecord], copies: list[CopyRow]) -> list[StoryEntry]:
    """The entries of ``events`` and ``copies`` merged by time (pure).

    At one instant an event comes before a copy made then and after a copy settled then
    (the claim's event and its copy are one transaction; a copy settles, then the job).
    """
    entries = [_event_entry(e) for e in events]
    for n, c in enumerate(copies, start=1):
        entries += _copy_entries(c, n)
    rank = {"copy-settled": 0, "state": 1, "note": 1, "copy-made": 2}
    return sorted(entries, key=lambda s: (s.at, rank[s.kind], s.order))


async def story(service: JobService, job_id: str, reprints: list[str]) -> Story:
    """The story of ``job_id``; raises errors.JobNotFound."""
    job = await service.get(job_id)
    events = await service.jobs.events(job_id)
    copies = await copies_of(service.jobs.store, job_id)
    return Story(job, reprints, tell(events, copies))
