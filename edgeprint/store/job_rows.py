"""Job rows besides the transitions: the insert, PIN attempts, the claim, notes, moves."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from edgeprint.records import JobRecord
from edgeprint.states import Action, JobState
from edgeprint.stock import PageSizes
from edgeprint.store.guards import (
    CLAIMED,
    FINISHED,
    HELD,
    LEASED_PRINTER,
    ON_PRINTER,
    WAITING,
    fenced,
    in_list,
)
from edgeprint.store.interface import Dialect, Store
from edgeprint.store.job_reads import ROW, JobReads
from edgeprint.store.leases import Fence
from edgeprint.store.stock_sql import StockCondition

_ANY_FIT = StockCondition.anything()


@dataclass(frozen=True, slots=True)
class NewJob:
    """What :meth:`Jobs.insert` stores for a new job."""

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
    token_name: str
    correlation_id: str | None
    release_pin_hash: str | None = None
    document_pages: int | None = None
    page_short_min: int | None = None  # its pages' edges (stock.PageSizes), hundredths of mm
    page_short_max: int | None = None
    page_long_min: int | None = None
    page_long_max: int | None = None
    page_landscape: int | None = None

    @staticmethod
    def edges(sizes: PageSizes | None) -> dict[str, int | None]:
        """The ``page_*`` fields for ``sizes`` (all None when not known)."""
        s = sizes
        return {
            "page_short_min": s.short_min if s else None,
            "page_short_max": s.short_max if s else None,
            "page_long_min": s.long_min if s else None,
            "page_long_max": s.long_max if s else None,
            "page_landscape": int(s.landscape) if s else None,
        }

    document_format: str = "application/pdf"
    title: str | None = None


_INSERT = (
    """
INSERT INTO jobs (id, idempotency_key, request_sha256, state, owner, printer, pool, priority,
                  copies, document_sha256, document_bytes, created_at, updated_at, released_at,
                  token_name, correlation_id, actor, reason, release_pin_hash,
                  document_pages, page_short_min, page_short_max, page_long_min, page_long_max,
                  page_landscape, rehearsal, document_format, title, created_run, released_run)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'submit', ?, ?, ?, ?, ?, ?, ?,
        (SELECT CASE WHEN mode = 'rehearsal' THEN 1 ELSE 0 END FROM event_mode WHERE id = 1),
        ?, ?, ?, ?)
ON CONFLICT (idempotency_key) DO NOTHING
RETURNING """
    + ROW
)

# Every SET expression is evaluated on the old row (SQLite and PostgreSQL alike).
# Parameters: max_failures, now, lockout_s, job_id, now.
_TAKE_PIN_ATTEMPT = f"""
UPDATE jobs
SET pin_failures = CASE WHEN pin_locked_until IS NOT NULL THEN 1 ELSE pin_failures + 1 END,
    pin_locked_until = CASE
        WHEN (CASE WHEN pin_locked_until IS NOT NULL THEN 1 ELSE pin_failures + 1 END) >= ?
        THEN ? + ?
        ELSE NULL END
WHERE id = ? AND state IN ({in_list(HELD)})
  AND (pin_locked_until IS NULL OR pin_locked_until <= ?)
RETURNING pin_failures, pin_locked_until
"""

# The next claimable job for one printer: its own jobs and its pool's, lowest
# priority number first, the printer's own jobs before pool jobs of the same
# priority, then acceptance order.
#: A pool job that just failed on a printer is left to the pool's other printers for this
#: long after it becomes claimable again; only then may the printer that failed it retake it
#: (a printer that aborts every job must not burn one job's attempts while a peer idles).
PEER_FIRST_S = 5.0

#: issue 23 (zpl): a pool job in a raw label language (ZPL) is claimed only by a printer
#: that takes it; its one parameter says whether the claiming printer does. A job naming a
#: printer is not filtered: that printer claims it and refuses it unsent if it cannot take it.
FORMAT_FITS = "(document_format = 'application/pdf' OR ?)"

_READY = """
    SELECT id, priority, 0 AS own, seq FROM jobs
    WHERE state IN ({waiting}) AND printer = ? AND not_before <= ? AND {{own_fit}}
    UNION ALL
    SELECT id, priority, 1 AS own, seq FROM jobs
    WHERE state IN ({waiting}) AND printer IS NULL AND pool = ? AND not_before <= ?
      AND (failure_printer IS DISTINCT FROM ? OR not_before <= ?) AND {{pool_fit}}
      AND {format_fits}
""".format(waiting=in_list(WAITING), format_fits=FORMAT_FITS)

#: The claimed job on SQLite: one writer, so the first ready job is free to take.
_NEXT_SQLITE = f"SELECT id FROM ({_READY}) AS ready ORDER BY priority, own, seq LIMIT 1"
#: On PostgreSQL several appliances claim at once: a job another transaction is claiming
#: (row locked) is skipped rather than waited for, so concurrent claims take different jobs
#: instead of all but one finding nothing (UNION cannot be locked: the row is, by a join).
_NEXT_POSTGRESQL = (
    f"SELECT j.id FROM jobs j JOIN ({_READY}) AS ready ON ready.id = j.id "
    "ORDER BY ready.priority, ready.own, ready.seq LIMIT 1 FOR UPDATE OF j SKIP LOCKED"
)
_NEXT: dict[Dialect, str] = {"sqlite": _NEXT_SQLITE, "postgresql": _NEXT_POSTGRESQL}

_CLAIM_NEXT_TEMPLATE = (
    f"""
UPDATE jobs
SET state = '{CLAIMED.value}', printed_on = ?, printer_job_id = NULL, claimed_at = ?,
    attempts = attempts + 1, claims = claims + 1, updated_at = ?, actor = ?,
    reason = '{Action.CLAIM.value}', waiting_reason = NULL
WHERE id = ({{next}}) AND state IN ({in_list(WAITING)})
RETURNING """
    + ROW
)


@functools.lru_cache(maxsize=256)
def _claim_next(dialect: Dialect, fit: StockCondition, fenced_: bool) -> str:
    """The claim per dialect and stock condition (printers' stock changes seldom: cached)."""
    ready = _NEXT[dialect].format(own_fit=fit.own, pool_fit=fit.pool)
    sql = _CLAIM_NEXT_TEMPLATE.format(next=ready)
    return fenced(sql, LEASED_PRINTER) if fenced_ else sql


class JobRows(JobReads):
    """The ``jobs`` rows of one :class:`Store`: inserts, claims and notes (no state machine
    transition but the claim; those are :class:`~edgeprint.store.jobs.Jobs`')."""

    def __init__(
        self,
        store: Store,
        *,
        fence: Fence | None = None,
        run: Callable[[], float] | None = None,
    ) -> None:
        super().__init__(store)
        #: The run clock (edgeprint.clock, issue 27): what ``created_run``/``finished_run``
        #: and ``not_before`` are read on. None: each write's ``now`` stands for it (tests).
        self.run = run
        #: With printer leases (a shared store): what fences this appliance's printer writes.
        self.fence = fence

    def _run(self, now: float) -> float:
        """The run clock now (``now`` when none is kept)."""
        return now if self.run is None else self.run()

    async def insert(self, job: NewJob, now: float, actor: str) -> JobRecord | None:
        """Store a new job; ``None`` when its idempotency key already exists.

        Raises errors.StoreError. Durable (committed) when it returns.
        """
        released_at = now if job.state is JobState.RELEASED else None
        run = self._run(now)
        rows = await self._store.write(
            _INSERT,
            (
                job.id,
                job.idempotency_key,
                job.request_sha256,
                job.state.value,
                job.owner,
                job.printer,
                job.pool,
                job.priority,
                job.copies,
                job.document_sha256,
                job.document_bytes,
                now,
                now,
                released_at,
                job.token_name,
                job.correlation_id,
                actor,
                job.release_pin_hash,
                job.document_pages,
                job.page_short_min,
                job.page_short_max,
                job.page_long_min,
                job.page_long_max,
                job.page_landscape,
                job.document_format,
                job.title,
                run,
                None if released_at is None else run,
            ),
        )
        return JobRecord.from_row(rows[0]) if rows else None

    async def take_pin_attempt(
        self, job_id: str, *, now: float, max_failures: int, lockout_s: float
    ) -> tuple[int, float | None] | None:
        """Count one PIN attempt on a HELD job before the PIN is checked.

        Counting first (one conditional UPDATE) means concurrent guesses cannot
        outrun the lock: the ``max_failures``-th attempt sets ``pin_locked_until``
        = now + ``lockout_s`` at once (a correct PIN's release clears it); an
        expired lock starts the count afresh.
        Returns (attempts so far, locked until) or None when the job is not
        HELD or its release is locked right now. Raises errors.StoreError.
        """
        rows = await self._store.write(
            _TAKE_PIN_ATTEMPT, (max_failures, now, lockout_s, job_id, now)
        )
        return (int(rows[0][0]), rows[0][1]) if rows else None

    async def clear_pin_attempts(self, job_id: str) -> None:
        """A right PIN shown without a release (issue 24: a release page's look-up): its
        count of tries starts afresh, as a release with it would."""
        await self._store.write(
            "UPDATE jobs SET pin_failures = 0, pin_locked_until = NULL WHERE id = ?", (job_id,)
        )

    async def claim_next(
        self,
        printer: str,
        pool: str | None,
        *,
        now: float,
        actor: str,
        fit: StockCondition | None = None,
        takes_zpl: bool = False,
        run: float | None = None,
    ) -> JobRecord | None:
        """Move the next claimable job for ``printer`` (whose pages ``fit`` its stock) to
        PRINTING; ``None`` if there is none. Raises errors.StoreError.
        """
        claim = self.claim_next_sql(
            printer, pool, now=now, actor=actor, fit=fit, takes_zpl=takes_zpl, run=run
        )
        rows = await self._store.write(*claim)
        return JobRecord.from_row(rows[0]) if rows else None

    def claim_next_sql(
        self,
        printer: str,
        pool: str | None,
        *,
        now: float,
        actor: str,
        fit: StockCondition | None = None,
        takes_zpl: bool = False,
        run: float | None = None,
    ) -> tuple[str, tuple[Any, ...]]:
        """The claim of :meth:`claim_next` (to run with other statements): only a job whose
        pages ``fit`` this printer's stock (None: any job); fenced by the printer's lease
        when leases are on. ``takes_zpl``: the printer takes ZPL, so its pool's ZPL jobs
        are its to claim (:data:`FORMAT_FITS`). ``now`` is the wall clock written for people;
        ``not_before`` is judged on the run clock (``run``; default: read it now)."""
        ready = self._run(now) if run is None else run
        params = (
            printer,
            now,
            now,
            actor,
            printer,
            ready,
            pool,
            ready,
            printer,
            ready - PEER_FIRST_S,
            takes_zpl,
        )
        fit = fit or _ANY_FIT
        if self.fence is None:
            return _claim_next(self._store.dialect, fit, False), params
        return _claim_next(self._store.dialect, fit, True), (
            *params,
            printer,
            *self.fence.params(printer),
        )

    async def note_waiting(self, printer: str, text: str, *, now: float) -> list[str]:
        """Set ``last_error`` of the RELEASED jobs aimed at ``printer``; their ids."""
        rows = await self._store.write(
            "UPDATE jobs SET last_error = ?, updated_at = ? "
            f"WHERE state IN ({in_list(WAITING)}) AND printer = ? RETURNING id",
            (text, now, printer),
        )
        return [str(r[0]) for r in rows]

    async def note_printing(self, job_id: str, printer: str, text: str, *, now: float) -> None:
        """Set ``last_error`` of a job PRINTING on ``printer`` (no state change)."""
        await self._store.write(
            "UPDATE jobs SET last_error = ?, updated_at = ? "
            f"WHERE id = ? AND state IN ({in_list(ON_PRINTER)}) AND printed_on = ?",
            (text, now, job_id, printer),
        )

    async def next_not_before(self, printer: str, pool: str | None, now: float) -> float | None:
        """When the next RELEASED job this printer could take becomes claimable (a pool job
        this printer failed: ``PEER_FIRST_S`` later), if that is after ``now``."""
        rows = await self._store.read(
            "SELECT min(ready) FROM (SELECT CASE WHEN printer IS NULL AND failure_printer = ? "
            "THEN not_before + ? ELSE not_before END AS ready FROM jobs "
            f"WHERE state IN ({in_list(WAITING)}) "
            "AND (printer = ? OR (printer IS NULL AND pool = ?))) AS q "
            "WHERE ready > ?",
            (printer, PEER_FIRST_S, printer, pool, now),
        )
        value = rows[0][0] if rows else None
        return float(value) if value is not None else None

    async def retarget_waiting(
        self, printer: str, pool: str, *, now: float, actor: str, reason: str
    ) -> list[str]:
        """Move RELEASED jobs for ``printer`` to its ``pool`` (any healthy peer takes them).

        Returns the ids moved. A conditional UPDATE: jobs claimed meanwhile stay.
        """
        rows = await self._store.write(
            "UPDATE jobs SET printer = NULL, pool = ?, updated_at = ?, actor = ?, "
            f"last_error = ? WHERE state IN ({in_list(WAITING)}) AND printer = ? RETURNING id",
            (pool, now, actor, reason, printer),
        )
        return [str(r[0]) for r in rows]

    async def mark_documents_deleted(self, ids: list[str], *, now: float) -> None:
        """Record that the documents of these (terminal) jobs were deleted."""
        for i in range(0, len(ids), 500):
            part = ids[i : i + 500]
            marks = ", ".join("?" for _ in part)
            await self._store.write(
                f"UPDATE jobs SET document_deleted_at = ? WHERE id IN ({marks}) "
                f"AND state IN ({in_list(FINISHED)})",
                (now, *part),
            )
