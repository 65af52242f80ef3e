"""Create-Jobs waiting for their Send-Document, and the ids this process life gives out.

A Create-Job has no stored job until its document comes, so it gets an IPP job-id from
a range far above any stored job's ``seq`` (:data:`PENDING_BASE` + n) and waits here, at
most :data:`MAX_PENDING` of them, each for at most multiple-operation-time-out
(RFC 8011 §5.4.29) on the monotonic timer. Once its document is stored, that id stays the
job's id for this process's life (DESIGN §11).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from edgeprint.ipp.names import Status
from edgeprint.ipp_server import attributes as A
from edgeprint.ipp_server.request import refuse
from edgeprint.ipp_server.template import PageRanges

#: Create-Job ids start here; job sequence numbers never get near it.
PENDING_BASE = 1 << 30
#: Create-Jobs waiting for their document at most; more → server-error-busy.
MAX_PENDING = 1000
#: For this long after a start, Get-Job-Attributes of a Create-Job that an earlier life
#: gave out and whose document never reached the store answers
#: server-error-service-unavailable with job-state pending-held (job-incoming): CUPS's
#: ``ipp`` backend, which took the lost Send-Document for a success, then exits "retry
#: the job now" and sends it again (DESIGN §11). Any other answer (not-found, aborted,
#: canceled, completed) makes it mark its job done. After the window: aborted.
LOST_RESEND_WINDOW_S = 600.0


@dataclass
class Pending:
    """A Create-Job waiting for its Send-Document."""

    queue: str
    owner: str
    name: str | None
    hold: bool
    copies: int
    job_uuid: str | None
    created_at: float
    page_ranges: PageRanges | None = None
    #: When it was made on the monotonic timer: its time-out is a duration (issue 27).
    opened: float = 0.0


def created_key(ipp_id: int) -> str:
    """The Idempotency-Key of the job a Create-Job (without job-uuid) got ``ipp_id`` for."""
    return f"ipp-create-job:{ipp_id}"


class PendingJobs:
    """The Create-Jobs of this process life that wait for their document, by IPP job-id."""

    def __init__(self, up_since: float, timer: Callable[[], float]) -> None:
        self.timer = timer
        self._up_timer = timer()
        self._waiting: dict[int, Pending] = {}
        # Create-Job ids of this process life start at a clock-derived offset, so that an id
        # a client still holds from before a restart names no job of this life.
        self._first_id = PENDING_BASE + int(up_since * 1000) % (1 << 29)
        self._next_id = self._first_id

    def open(self, make: Callable[[], Pending]) -> tuple[int, Pending]:
        """Give a new Create-Job its IPP job-id and keep what ``make`` reads of its request
        (opened now); refuses with server-error-busy when MAX_PENDING already wait. The id
        is taken before ``make`` runs: one that refuses the request has used it up."""
        self._expire()
        if len(self._waiting) >= MAX_PENDING:
            raise refuse(Status.SERVER_ERROR_BUSY, "too many jobs wait for their document; retry")
        ipp_id = self._next_id
        self._next_id += 1
        pending = make()
        pending.opened = self.timer()
        self._waiting[ipp_id] = pending
        return ipp_id, pending

    def _expire(self) -> None:
        """Create-Jobs whose document did not come within multiple-operation-time-out."""
        cutoff = self.timer() - A.MULTIPLE_OPERATION_TIME_OUT_S
        for ipp_id in [i for i, p in self._waiting.items() if p.opened < cutoff]:
            del self._waiting[ipp_id]

    def get(self, ipp_id: int, queue: str) -> Pending | None:
        """The Create-Job ``ipp_id`` waiting on ``queue``, or None."""
        pending = self._waiting.get(ipp_id)
        return pending if pending is not None and pending.queue == queue else None

    def close(self, ipp_id: int) -> None:
        """Forget ``ipp_id`` (its document came, or it was closed or canceled)."""
        self._waiting.pop(ipp_id, None)

    def close_owned(self, owner: str, queue: str) -> None:
        """Forget every Create-Job of ``owner`` on ``queue`` (Cancel-My-Jobs)."""
        for ipp_id, p in list(self._waiting.items()):
            if p.owner == owner and p.queue == queue:
                del self._waiting[ipp_id]

    def lost(self, ipp_id: int) -> bool:
        """A Create-Job id that an earlier life of this process gave out."""
        return ipp_id >= PENDING_BASE and not self._first_id <= ipp_id < self._next_id

    def resend_window_open(self) -> bool:
        """True within LOST_RESEND_WINDOW_S of this process's start."""
        return self.timer() - self._up_timer < LOST_RESEND_WINDOW_S
