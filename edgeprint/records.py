"""The job record: what the store reads and the service returns (a leaf: no I/O).

Its fields are the ``jobs`` table's columns in table order, then two facts the
store computes from a job's copies; tests/test_store.py checks that they agree.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from edgeprint.states import JobState
from edgeprint.stock import PageSizes


class JobRecord(NamedTuple):
    """One row of ``jobs`` (immutable). Times are unix seconds (float).

    The fields are the table's columns in table order (migrations append
    columns, so new fields are appended here too); tests/test_store.py checks
    that they agree.
    """

    seq: int
    id: str
    idempotency_key: str
    request_sha256: str
    state: JobState
    owner: str
    printer: str | None
    pool: str | None
    priority: int
    copies: int
    document_sha256: str
    document_bytes: int
    attempts: int
    not_before: float
    printed_on: str | None
    printer_job_id: int | None
    last_error: str | None
    dead_reason: str | None
    created_at: float
    updated_at: float
    released_at: float | None
    claimed_at: float | None
    finished_at: float | None
    token_name: str
    correlation_id: str | None
    actor: str
    reason: str | None
    document_deleted_at: float | None
    failure_sig: str | None
    failure_printer: str | None
    release_pin_hash: str | None
    pin_failures: int
    pin_locked_until: float | None
    document_pages: int | None
    claims: int  # how many times a printer claimed it; its copies carry the claim number
    settled_by: str | None  # the evidence (edgeprint.evidence.Evidence) that settled it last
    pages_printed: int | None  # impressions that came out of a copy that stopped part-way
    from_page: int | None  # a person asked for the rest only: print from this page on
    page_short_min: int | None  # its pages' edges, hundredths of a mm (stock.PageSizes)
    page_short_max: int | None
    page_long_min: int | None
    page_long_max: int | None
    waiting_reason: str | None  # RELEASED, and no printer of its target has fitting stock
    page_landscape: int | None  # 1: its first page is wider than tall (stock.PageSizes)
    rehearsal: bool  # made while the event was in rehearsal (issue 23): never a live figure
    document_format: str  # as accepted: application/pdf, or a raw language sent unchanged
    reprint_of: str | None  # issue 24: a reprint names the DONE job it was made from
    title: str | None  # issue 24: what a person knows it by (None: no title)
    created_run: float | None  # issue 27: run-clock seconds (edgeprint.clock) at acceptance
    finished_run: float | None  # issue 27: run-clock seconds when it finished
    released_run: float | None  # issue 27: run-clock seconds at its (last) release
    # computed from its copies (not columns of jobs; see ROW):
    cancel_requested: bool  # a person asked to cancel it while a printer holds a copy
    truncated_copies: int  # copies that completed without being verifiably whole

    @property
    def page_sizes(self) -> PageSizes | None:
        """Its pages' sizes (None: not known, e.g. a job stored before they were read)."""
        if self.page_short_min is None or self.page_short_max is None:
            return None
        if self.page_long_min is None or self.page_long_max is None:
            return None
        return PageSizes(
            self.page_short_min,
            self.page_short_max,
            self.page_long_min,
            self.page_long_max,
            bool(self.page_landscape),
        )

    @classmethod
    def from_row(cls, row: Iterable[Any]) -> JobRecord:
        """The record for a ``SELECT *`` / ``RETURNING *`` row of ``jobs``."""
        values = list(row)
        state = values[_STATE_INDEX]
        values[_STATE_INDEX] = _STATES.get(state) or JobState(state)
        values[_CANCEL_INDEX] = bool(values[_CANCEL_INDEX])
        values[_REHEARSAL_INDEX] = bool(values[_REHEARSAL_INDEX])
        return cls._make(values)


_STATE_INDEX = JobRecord._fields.index("state")
#: State text → JobState without the Enum call (twice per release).
_STATES = {s.value: s for s in JobState}
_CANCEL_INDEX = JobRecord._fields.index("cancel_requested")
_REHEARSAL_INDEX = JobRecord._fields.index("rehearsal")
