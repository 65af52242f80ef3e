"""Job rows: every SQL statement on ``jobs`` (the record is :class:`edgeprint.records.JobRecord`).

Each state change is one conditional ``UPDATE … WHERE id = ? AND state IN (…)
RETURNING *``; the allowed source states come from :data:`states.TRANSITIONS`.
``None`` from a transition means another writer won (a normal outcome).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from edgeprint.copies import ORIGIN_REQUESTED, PRINTED_COPY_STATES, CopyState
from edgeprint.records import JobRecord as JobRecord
from edgeprint.states import Action, JobState, sources, target
from edgeprint.stock import PageSizes
from edgeprint.store.guards import (
    CANCELLING,
    CLAIMED,
    DEAD,
    EXPIRABLE,
    EXPIRED,
    FINISHED,
    HELD,
    LEASED_JOB,
    LEASED_PRINTER,
    LIVE_COPIES,
    ON_PRINTER,
    WAITING,
    fenced,
    in_list,
)
from edgeprint.store.interface import Dialect, Store
from edgeprint.store.leases import Fence
from edgeprint.store.stock_sql import StockCondition

_ANY_FIT = StockCondition.anything()

#: What every read of a job selects (and every write returns): its columns, then the
#: facts computed from its copies (the last two fields of :class:`JobRecord`). The job's id
#: is CAST in the subqueries: SQLite (3.40) plans a RETURNING clause's correlated subquery
#: on a bare ``jobs.id`` as a scan of every copy (13 ms a write at 60,000 copies, found by
#: the soak); with the CAST it searches ``copies_by_job``.
_JOB_ID = "CAST(jobs.id AS TEXT)"
ROW = (
    f"*, (jobs.state IN ({in_list(ON_PRINTER)}) AND EXISTS (SELECT 1 FROM copies c "
    f"WHERE c.job_id = {_JOB_ID} AND c.claim = jobs.claims "
    f"AND c.state = '{CANCELLING.value}' "
    f"AND c.cancel_origin = '{ORIGIN_REQUESTED}')) AS cancel_requested, "
    f"(SELECT count(*) FROM copies c WHERE c.job_id = {_JOB_ID} "
    f"AND c.state = '{CopyState.INCOMPLETE.value}') AS truncated_copies"
)


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


#: Guard for resolving an unknown outcome: only a job parked DEAD ``outcome_unknown``.
GUARD_OUTCOME_UNKNOWN = "dead_reason = 'outcome_unknown'"


@dataclass(frozen=True, slots=True)
class EventRecord:
    """One row of ``job_events``."""

    seq: int
    job_id: str
    at: float
    from_state: JobState | None
    to_state: JobState
    actor: str
    reason: str | None
    correlation_id: str | None


#: Columns a transition may set besides the state bookkeeping.
_SETTABLE = frozenset(
    {
        "printer",
        "pool",
        "attempts",
        "not_before",
        "printed_on",
        "printer_job_id",
        "last_error",
        "dead_reason",
        "released_at",
        "claimed_at",
        "finished_at",
        "finished_run",
        "released_run",
        "failure_sig",
        "failure_printer",
        "pin_failures",
        "pin_locked_until",
        "settled_by",
        "pages_printed",
        "from_page",
    }
)

#: (action, columns set, only_from, guard) → the statement's text, its target state and its
#: allowed source states. Built once per shape: a few dozen in all, as the callers' arguments
#: are constants (a release spent a tenth of its store work writing the same SQL again).
_TRANSITION_SHAPES: dict[
    tuple[Action, tuple[str, ...], tuple[JobState, ...] | None, str | None],
    tuple[str, str, tuple[str, ...]],
] = {}


def _transition_shape(
    action: Action,
    columns: tuple[str, ...],
    only_from: tuple[JobState, ...] | None,
    guard: str | None,
) -> tuple[str, str, tuple[str, ...]]:
    """The text, target state and allowed source states of a transition of this shape.

    Raises ValueError for a column not in the allow-list.
    """
    allowed = sources(action)
    if only_from is not None:
        allowed = tuple(s for s in allowed if s in only_from)
    bad = set(columns) - _SETTABLE
    if bad:
        raise ValueError(f"transition cannot set {sorted(bad)}")
    assignments = ["state = ?", "updated_at = ?", "actor = ?", "reason = ?"]
    assignments.append("correlation_id = COALESCE(?, correlation_id)")
    assignments += [f"{col} = ?" for col in columns]
    marks = ", ".join("?" for _ in allowed)
    sql = (
        f"UPDATE jobs SET {', '.join(assignments)} "
        f"WHERE id = ? AND state IN ({marks})"
        + (f" AND {guard}" if guard else "")
        + " RETURNING "
        + ROW
    )
    return sql, target(action).value, tuple(s.value for s in allowed)


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


#: Guard for a release that keeps the job's stored target: it must have one.
GUARD_HAS_TARGET = "(printer IS NOT NULL OR pool IS NOT NULL)"
#: Guard for a printer's outcome: the job must still be held by that printer, in that claim.
GUARD_ON_PRINTER = "printed_on = ? AND claims = ?"
_LIVE_COPY = (
    "EXISTS (SELECT 1 FROM copies c WHERE c.job_id = jobs.id AND c.claim = jobs.claims "
    f"AND c.state IN ({in_list(LIVE_COPIES)}))"
)
#: Guard for a job leaving PRINTING without its printer: no copy of its claim is live.
GUARD_NO_LIVE_COPY = f"NOT {_LIVE_COPY}"
#: Guard for DONE: one of its copies printed (verified whole, no document error).
GUARD_PRINTED = (
    "EXISTS (SELECT 1 FROM copies c WHERE c.job_id = jobs.id "
    f"AND c.state IN ({in_list(PRINTED_COPY_STATES)}))"
)

_ON_PRINTER_FENCED = f"{GUARD_ON_PRINTER} AND {LEASED_JOB}"


def like_escape(text: str) -> str:
    """``text`` as a LIKE pattern that matches itself (escape character ``\\``)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class Jobs:
    """Queries on the ``jobs`` and ``job_events`` tables of one :class:`Store`."""

    def __init__(
        self,
        store: Store,
        *,
        fence: Fence | None = None,
        run: Callable[[], float] | None = None,
    ) -> None:
        self._store = store
        #: The run clock (edgeprint.clock, issue 27): what ``created_run``/``finished_run``
        #: and ``not_before`` are read on. None: each write's ``now`` stands for it (tests).
        self.run = run
        #: With printer leases (a shared store): what fences this appliance's printer writes.
        self.fence = fence

    def _run(self, now: float) -> float:
        """The run clock now (``now`` when none is kept)."""
        return now if self.run is None else self.run()

    @property
    def store(self) -> Store:
        """The store these queries run on (shared with :class:`~edgeprint.store.copies.Copies`)."""
        return self._store

    async def insert(self, job: NewJob, now: float, actor: str) -> JobRecord | None:
        """Store a new job; ``None`` when its idempotency key already exists.

        Raises errors.StoreError. Durable (committed) when it returns.
        """
        released_at = now if job.state is JobState.RELEASED else None
        run = self._run(now)
        rows = await self._store.write(
            _INSERT,
            (
                job.id, job.idempotency_key, job.request_sha256, job.state.value, job.owner,
                job.printer, job.pool, job.priority, job.copies, job.document_sha256,
                job.document_bytes, now, now, released_at, job.token_name, job.correlation_id,
                actor, job.release_pin_hash, job.document_pages, job.page_short_min,
                job.page_short_max, job.page_long_min, job.page_long_max, job.page_landscape,
                job.document_format, job.title, run, None if released_at is None else run,
            ),
        )  # fmt: skip
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

    def transition_sql(
        self,
        job_id: str,
        action: Action,
        *,
        now: float,
        actor: str,
        reason: str | None = None,
        correlation_id: str | None = None,
        sets: Mapping[str, Any] | None = None,
        only_from: Sequence[JobState] | None = None,
        guard: str | None = None,
        guard_params: tuple[Any, ...] = (),
    ) -> tuple[str, tuple[Any, ...]]:
        """The conditional UPDATE of :meth:`transition` (to run with other statements)."""
        extra = sets or {}
        if "finished_at" in extra:  # its age for retention, on the run clock (issue 27)
            extra = {**extra, "finished_run": self._run(now)}
        if "released_at" in extra:  # how long it waits, on the run clock (issue 27)
            extra = {**extra, "released_run": self._run(now)}
        key = (action, tuple(extra), None if only_from is None else tuple(only_from), guard)
        shape = _TRANSITION_SHAPES.get(key)
        if shape is None:
            shape = _TRANSITION_SHAPES[key] = _transition_shape(action, *key[1:])
        sql, state, allowed = shape
        params = (state, now, actor, reason or action.value, correlation_id, *extra.values())
        return sql, (*params, job_id, *allowed, *guard_params)

    async def transition(
        self,
        job_id: str,
        action: Action,
        *,
        now: float,
        actor: str,
        reason: str | None = None,
        correlation_id: str | None = None,
        sets: Mapping[str, Any] | None = None,
        only_from: Sequence[JobState] | None = None,
        guard: str | None = None,
        guard_params: tuple[Any, ...] = (),
    ) -> JobRecord | None:
        """Apply ``action`` to the job if its state allows it; ``None`` if it does not.

        ``sets`` are extra columns to write (from a fixed allow-list);
        ``only_from`` narrows the allowed source states further. Raises
        errors.StoreError; ValueError for a column not in the allow-list.
        ``guard`` is an extra SQL condition, one of the module's ``GUARD_*``
        constants (never client input) with ``?`` marks for ``guard_params``.
        """
        sql, params = self.transition_sql(
            job_id, action, now=now, actor=actor, reason=reason, correlation_id=correlation_id,
            sets=sets, only_from=only_from, guard=guard, guard_params=guard_params,
        )  # fmt: skip
        rows = await self._store.write(sql, params)
        return JobRecord.from_row(rows[0]) if rows else None

    async def claim_next(
        self, printer: str, pool: str | None, *, now: float, actor: str,
        fit: StockCondition | None = None, takes_zpl: bool = False, run: float | None = None,
    ) -> JobRecord | None:  # fmt: skip
        """Move the next claimable job for ``printer`` (whose pages ``fit`` its stock) to
        PRINTING; ``None`` if there is none. Raises errors.StoreError.
        """
        claim = self.claim_next_sql(
            printer, pool, now=now, actor=actor, fit=fit, takes_zpl=takes_zpl, run=run
        )
        rows = await self._store.write(*claim)
        return JobRecord.from_row(rows[0]) if rows else None

    def claim_next_sql(
        self, printer: str, pool: str | None, *, now: float, actor: str,
        fit: StockCondition | None = None, takes_zpl: bool = False, run: float | None = None,
    ) -> tuple[str, tuple[Any, ...]]:  # fmt: skip
        """The claim of :meth:`claim_next` (to run with other statements): only a job whose
        pages ``fit`` this printer's stock (None: any job); fenced by the printer's lease
        when leases are on. ``takes_zpl``: the printer takes ZPL, so its pool's ZPL jobs
        are its to claim (:data:`FORMAT_FITS`). ``now`` is the wall clock written for people;
        ``not_before`` is judged on the run clock (``run``; default: read it now)."""
        ready = self._run(now) if run is None else run
        params = (
            printer, now, now, actor, printer, ready, pool, ready, printer, ready - PEER_FIRST_S,
            takes_zpl,
        )  # fmt: skip
        fit = fit or _ANY_FIT
        if self.fence is None:
            return _claim_next(self._store.dialect, fit, False), params
        return _claim_next(self._store.dialect, fit, True), (
            *params,
            printer,
            *self.fence.params(printer),
        )

    def on_printer(self, printer: str, claims: int) -> tuple[str, tuple[Any, ...]]:
        """Guard and parameters of a printer's outcome: :data:`GUARD_ON_PRINTER`, fenced by
        the printer's lease when leases are on."""
        if self.fence is None:
            return GUARD_ON_PRINTER, (printer, claims)
        return _ON_PRINTER_FENCED, (printer, claims, *self.fence.params(printer))

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

    async def printing_on(self, printer: str) -> list[JobRecord]:
        """Jobs PRINTING on ``printer``, oldest claim first."""
        rows = await self._store.read(
            f"SELECT {ROW} FROM jobs WHERE state IN ({in_list(ON_PRINTER)}) AND printed_on = ? "
            "ORDER BY claimed_at",
            (printer,),
        )
        return [JobRecord.from_row(r) for r in rows]

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

    async def get(self, job_id: str) -> JobRecord | None:
        """The job with this id, or None. Raises errors.StoreUnavailable."""
        rows = await self._store.read(f"SELECT {ROW} FROM jobs WHERE id = ?", (job_id,))
        return JobRecord.from_row(rows[0]) if rows else None

    async def get_by_key(self, idempotency_key: str) -> JobRecord | None:
        """The job stored under this Idempotency-Key, or None."""
        rows = await self._store.read(
            f"SELECT {ROW} FROM jobs WHERE idempotency_key = ?", (idempotency_key,)
        )
        return JobRecord.from_row(rows[0]) if rows else None

    async def list_jobs(
        self,
        *,
        state: JobState | None = None,
        owner: str | None = None,
        printer: str | None = None,
        before_seq: int | None = None,
        limit: int = 50,
        idempotency_key: str | None = None,
        id_prefix: str | None = None,
        owner_contains: str | None = None,
    ) -> list[JobRecord]:
        """Jobs newest first, filtered; ``before_seq`` pages (exclusive).

        Search (issue 24): ``idempotency_key`` exact; ``id_prefix`` the id's first hex
        characters (checked by the caller: lowercase hex only); ``owner_contains`` a
        substring of the owner, case-insensitive (LIKE wildcards in it are matched as
        themselves).
        """
        where: list[str] = []
        params: list[Any] = []
        if idempotency_key is not None:
            where.append("idempotency_key = ?")
            params.append(idempotency_key)
        if id_prefix is not None:
            where.append("id LIKE ?")
            params.append(id_prefix + "%")
        if owner_contains is not None:
            where.append("lower(owner) LIKE ? ESCAPE '\\'")
            params.append("%" + like_escape(owner_contains.lower()) + "%")
        if state is not None:
            where.append("state = ?")
            params.append(state.value)
        if owner is not None:
            where.append("owner = ?")
            params.append(owner)
        if printer is not None:
            where.append("(printer = ? OR printed_on = ?)")
            params.extend([printer, printer])
        if before_seq is not None:
            where.append("seq < ?")
            params.append(before_seq)
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        params.append(limit)
        rows = await self._store.read(
            f"SELECT {ROW} FROM jobs {clause} ORDER BY seq DESC LIMIT ?", tuple(params)
        )
        return [JobRecord.from_row(r) for r in rows]

    async def events(self, job_id: str) -> list[EventRecord]:
        """The job's event history, oldest first."""
        rows = await self._store.read(
            "SELECT * FROM job_events WHERE job_id = ? ORDER BY seq", (job_id,)
        )
        out = []
        for r in rows:
            d = dict(r)
            d["from_state"] = JobState(d["from_state"]) if d["from_state"] else None
            d["to_state"] = JobState(d["to_state"])
            out.append(EventRecord(**d))
        return out

    async def count_by_state(
        self, *, rehearsal: bool = False, since: float | None = None
    ) -> dict[JobState, int]:
        """Number of live jobs (or, with ``rehearsal``, rehearsal jobs) in each state (every
        state present, zero if none); ``since``: only jobs made from then on."""
        rows = await self._store.read(
            "SELECT state, count(*) FROM jobs WHERE rehearsal = ? AND created_at >= ? "
            "GROUP BY state",
            (int(rehearsal), since if since is not None else 0.0),
        )
        counts = dict.fromkeys(JobState, 0)
        for r in rows:
            counts[JobState(r[0])] = int(r[1])
        return counts

    async def ids_with_documents(self, ids: set[str]) -> set[str]:
        """Those of ``ids`` that are jobs whose document has not been deleted."""
        out: set[str] = set()
        chunk = list(ids)
        for i in range(0, len(chunk), 500):
            part = chunk[i : i + 500]
            marks = ", ".join("?" for _ in part)
            rows = await self._store.read(
                f"SELECT id FROM jobs WHERE id IN ({marks}) AND document_deleted_at IS NULL",
                tuple(part),
            )
            out.update(str(r[0]) for r in rows)
        return out

    # --- admission, failover, dead letters, housekeeping (DESIGN §4) ------------------

    async def waiting_depths(self) -> dict[tuple[str | None, str | None], int]:
        """RELEASED jobs by (printer, pool) target: the waiting depth of each queue."""
        rows = await self._store.read(
            "SELECT printer, pool, count(*) FROM jobs "
            f"WHERE state IN ({in_list(WAITING)}) GROUP BY 1, 2"
        )
        return {(r[0], r[1]): int(r[2]) for r in rows}

    async def oldest_waiting(self) -> dict[tuple[str | None, str | None], float]:
        """The oldest release (run-clock seconds, ``released_run``) of each (printer, pool)
        queue: compare with the run clock now, which no wall-clock step moves."""
        rows = await self._store.read(
            "SELECT printer, pool, min(released_run) FROM jobs "
            f"WHERE state IN ({in_list(WAITING)}) "
            "GROUP BY 1, 2"
        )
        return {(r[0], r[1]): float(r[2]) for r in rows if r[2] is not None}

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

    async def dead_letters(self, *, after_seq: int = 0, limit: int = 100) -> list[JobRecord]:
        """DEAD jobs, oldest first; ``after_seq`` pages forwards (exclusive)."""
        rows = await self._store.read(
            f"SELECT {ROW} FROM jobs WHERE state IN ({in_list(DEAD)}) AND seq > ? "
            "ORDER BY seq LIMIT ?",
            (after_seq, limit),
        )
        return [JobRecord.from_row(r) for r in rows]

    async def expire_held(self, created_before: float, *, now: float) -> list[str]:
        """HELD jobs accepted before ``created_before`` (run clock) → EXPIRED; the ids (events
        via trigger). ``now``: the wall-clock time written for people."""
        rows = await self._store.write(
            f"UPDATE jobs SET state = '{EXPIRED.value}', updated_at = ?, finished_at = ?, "
            "finished_run = ?, actor = 'housekeeping', reason = 'hold_ttl' "
            f"WHERE state IN ({in_list(EXPIRABLE)}) AND created_run < ? RETURNING id",
            (now, now, self._run(now), created_before),
        )
        return [str(r[0]) for r in rows]

    async def retention_due(self, finished_before: float, limit: int = 500) -> list[str]:
        """Terminal jobs (not DEAD: replayable) finished before the cut (run clock) whose
        document remains."""
        rows = await self._store.read(
            f"SELECT id FROM jobs WHERE state IN ({in_list(FINISHED)}) "
            "AND finished_run <= ? AND document_deleted_at IS NULL ORDER BY finished_run LIMIT ?",
            (finished_before, limit),
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

    # --- printer flags --------------------------------------------------------

    async def paused_printers(self) -> set[str]:
        """Names of printers a technician paused (persisted across restarts)."""
        rows = await self._store.read("SELECT name FROM printer_flags WHERE paused = 1")
        return {str(r[0]) for r in rows}

    async def set_paused(self, printer: str, paused: bool, *, now: float, actor: str) -> None:
        """Persist a printer's paused flag."""
        await self._store.write(
            "INSERT INTO printer_flags (name, paused, updated_at, actor) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, "
            "updated_at = excluded.updated_at, actor = excluded.actor",
            (printer, int(paused), now, actor),
        )

    # --- ipps pins ---------------------------------------------------------------------------

    async def pin(self, printer: str) -> str | None:
        """The certificate fingerprint pinned for ``printer``, or None."""
        rows = await self._store.read(
            "SELECT fingerprint FROM printer_pins WHERE printer = ?", (printer,)
        )
        return str(rows[0][0]) if rows else None

    async def set_pin(self, printer: str, fingerprint: str, *, now: float, actor: str) -> bool:
        """Pin ``fingerprint`` unless a pin exists (trust on *first* use); True if stored."""
        rows = await self._store.write(
            "INSERT INTO printer_pins (printer, fingerprint, pinned_at, actor) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (printer) DO NOTHING RETURNING printer",
            (printer, fingerprint, now, actor),
        )
        return bool(rows)

    async def forget_pin(self, printer: str) -> bool:
        """A technician re-trusts the printer: the next contact pins its certificate anew."""
        rows = await self._store.write(
            "DELETE FROM printer_pins WHERE printer = ? RETURNING printer", (printer,)
        )
        return bool(rows)
