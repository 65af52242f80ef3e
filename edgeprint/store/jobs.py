"""Job rows: every SQL statement on ``jobs`` (the record is :class:`edgeprint.records.JobRecord`).

Each state change is one conditional ``UPDATE … WHERE id = ? AND state IN (…)
RETURNING *``; the allowed source states come from :data:`states.TRANSITIONS`.
``None`` from a transition means another writer won (a normal outcome).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from edgeprint.copies import PRINTED_COPY_STATES
from edgeprint.records import JobRecord
from edgeprint.states import Action, JobState, sources, target
from edgeprint.store.guards import (
    EXPIRABLE,
    EXPIRED,
    LEASED_JOB,
    LIVE_COPIES,
    ON_PRINTER,
    in_list,
)
from edgeprint.store.job_reads import ROW
from edgeprint.store.job_rows import JobRows

#: The states a cancel ends at once: every source of CANCEL but a printer's.
_CANCEL_AT_ONCE = tuple(s for s in sources(Action.CANCEL) if s not in ON_PRINTER)


#: Guard for resolving an unknown outcome: only a job parked DEAD ``outcome_unknown``.
GUARD_OUTCOME_UNKNOWN = "dead_reason = 'outcome_unknown'"


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


class Jobs(JobRows):
    """Writes of the ``jobs`` table of one :class:`Store`: one named method per transition
    (:class:`JobRows` holds the claim, the inserts and notes; :class:`JobReads` the reads)."""

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
            job_id,
            action,
            now=now,
            actor=actor,
            reason=reason,
            correlation_id=correlation_id,
            sets=sets,
            only_from=only_from,
            guard=guard,
            guard_params=guard_params,
        )
        rows = await self._store.write(sql, params)
        return JobRecord.from_row(rows[0]) if rows else None

    # --- one method per transition (each one conditional write, from states.TRANSITIONS) ---

    async def _one(self, sql: str, params: tuple[Any, ...]) -> JobRecord | None:
        rows = await self._store.write(sql, params)
        return JobRecord.from_row(rows[0]) if rows else None

    async def release(
        self,
        job_id: str,
        *,
        now: float,
        actor: str,
        correlation_id: str | None,
        printer: str | None,
        pool: str | None,
        reset_pin: bool = False,
    ) -> JobRecord | None:
        """HELD → RELEASED for ``printer``/``pool``; ``reset_pin``: a right PIN opened it, so
        its count of tries starts afresh. None: the job was not HELD."""
        sets: dict[str, Any] = {"released_at": now, "printer": printer, "pool": pool}
        if reset_pin:
            sets.update(pin_failures=0, pin_locked_until=None)
        return await self.transition(
            job_id,
            Action.RELEASE,
            now=now,
            actor=actor,
            correlation_id=correlation_id,
            sets=sets,
        )

    async def cancel_waiting(
        self, job_id: str, *, now: float, actor: str, correlation_id: str | None
    ) -> JobRecord | None:
        """HELD, RELEASED or DEAD → CANCELLED at once (no printer holds it)."""
        return await self.transition(
            job_id,
            Action.CANCEL,
            now=now,
            actor=actor,
            correlation_id=correlation_id,
            only_from=_CANCEL_AT_ONCE,
            sets={"finished_at": now},
        )

    async def cancel_unsent(
        self, job_id: str, *, now: float, actor: str, correlation_id: str | None
    ) -> JobRecord | None:
        """PRINTING → CANCELLED while no copy of its claim is live at a printer."""
        return await self.transition(
            job_id,
            Action.CANCEL,
            now=now,
            actor=actor,
            correlation_id=correlation_id,
            only_from=ON_PRINTER,
            sets={"finished_at": now},
            guard=GUARD_NO_LIVE_COPY,
        )

    async def replay(
        self,
        job_id: str,
        *,
        now: float,
        actor: str,
        correlation_id: str | None,
        reason: str | None = None,
        unknown_only: bool = False,
        from_page: int | None = None,
        pages_printed: int | None = None,
    ) -> JobRecord | None:
        """DEAD → RELEASED, attempts and back-off reset. ``unknown_only``: only a job parked
        ``outcome_unknown`` (a technician's "not printed"); ``from_page``: print only the
        pages from there on, of a job whose ``pages_printed`` is still that (its rest)."""
        sets: dict[str, Any] = {
            "attempts": 0,
            "not_before": 0.0,
            "dead_reason": None,
            "printed_on": None,
            "printer_job_id": None,
            "released_at": now,
        }
        guard = GUARD_OUTCOME_UNKNOWN if unknown_only else None
        params: tuple[Any, ...] = ()
        if from_page is not None:
            sets["from_page"] = from_page
            guard, params = f"{GUARD_OUTCOME_UNKNOWN} AND pages_printed = ?", (pages_printed,)
        return await self.transition(
            job_id,
            Action.REPLAY,
            now=now,
            actor=actor,
            reason=reason,
            correlation_id=correlation_id,
            sets=sets,
            guard=guard,
            guard_params=params,
        )

    async def resolve_printed(
        self, job_id: str, *, now: float, actor: str, reason: str, correlation_id: str | None
    ) -> JobRecord | None:
        """DEAD ``outcome_unknown`` → DONE: a person saw the copy."""
        return await self.transition(
            job_id,
            Action.RESOLVE,
            now=now,
            actor=actor,
            reason=reason,
            correlation_id=correlation_id,
            sets={"finished_at": now, "settled_by": "person"},
            guard=GUARD_OUTCOME_UNKNOWN,
        )

    def complete_sql(
        self,
        job_id: str,
        printer: str,
        claims: int,
        *,
        now: float,
        evidence: str | None,
        printed_on: str | None = None,
    ) -> tuple[str, tuple[Any, ...]]:
        """PRINTING on ``printer`` in ``claims`` → DONE, if one of its copies printed (to run
        with other statements: :mod:`edgeprint.store.units`). ``printed_on``: the printer the
        printed copy came out of, where it is another."""
        sets: dict[str, Any] = {
            "finished_at": now,
            "last_error": None,
            "settled_by": evidence,
            "pages_printed": None,
        }
        if printed_on is not None:
            sets["printed_on"] = printed_on
        on_printer, params = self._on_printer(printer, claims)
        return self.transition_sql(
            job_id,
            Action.COMPLETE,
            now=now,
            actor=f"printer:{printer}",
            reason=evidence,
            sets=sets,
            guard=f"{on_printer} AND {GUARD_PRINTED}",
            guard_params=params,
        )

    async def complete(
        self,
        job_id: str,
        printer: str,
        claims: int,
        *,
        now: float,
        evidence: str | None,
        printed_on: str | None = None,
    ) -> JobRecord | None:
        """See :meth:`complete_sql`; None if the job is not ``printer``'s in that claim."""
        sql, params = self.complete_sql(
            job_id, printer, claims, now=now, evidence=evidence, printed_on=printed_on
        )
        return await self._one(sql, params)

    async def requeue(
        self,
        job_id: str,
        printer: str,
        claims: int,
        *,
        now: float,
        reason: str,
        not_before: float,
        failure_sig: str | None = None,
        attempts: int | None = None,
    ) -> JobRecord | None:
        """PRINTING on ``printer`` → RELEASED, claimable from ``not_before`` (run clock).
        ``failure_sig``: how it failed there; ``attempts``: its count of attempts now (an
        attempt given back)."""
        sets: dict[str, Any] = {
            "not_before": not_before,
            "printer_job_id": None,
            "last_error": reason,
            "printed_on": None,
        }
        if failure_sig is not None:
            sets.update(failure_sig=failure_sig, failure_printer=printer)
        if attempts is not None:
            sets["attempts"] = attempts
        on_printer, params = self._on_printer(printer, claims)
        return await self.transition(
            job_id,
            Action.RETRY,
            now=now,
            actor=f"printer:{printer}",
            reason=reason,
            sets=sets,
            guard=on_printer,
            guard_params=params,
        )

    async def fail(
        self,
        job_id: str,
        printer: str,
        claims: int,
        *,
        now: float,
        reason: str,
        error: str,
        dead_reason: str,
        evidence: str | None,
        pages: int | None,
    ) -> JobRecord | None:
        """PRINTING on ``printer`` → DEAD with ``dead_reason``; ``pages``: what came out."""
        on_printer, params = self._on_printer(printer, claims)
        return await self.transition(
            job_id,
            Action.FAIL,
            now=now,
            actor=f"printer:{printer}",
            reason=reason,
            sets={
                "last_error": error,
                "dead_reason": dead_reason,
                "finished_at": now,
                "settled_by": evidence,
                "pages_printed": pages,
            },
            guard=on_printer,
            guard_params=params,
        )

    async def cancel_printing(
        self,
        job_id: str,
        printer: str,
        claims: int,
        *,
        now: float,
        reason: str,
        error: str | None,
        evidence: str | None,
        pages: int | None,
    ) -> JobRecord | None:
        """PRINTING on ``printer`` → CANCELLED: a person cancelled it (here or at the printer)."""
        on_printer, params = self._on_printer(printer, claims)
        return await self.transition(
            job_id,
            Action.CANCEL,
            now=now,
            actor=f"printer:{printer}",
            reason=reason,
            sets={
                "finished_at": now,
                "last_error": error,
                "settled_by": evidence,
                "pages_printed": pages,
            },
            only_from=ON_PRINTER,
            guard=on_printer,
            guard_params=params,
        )

    def _on_printer(self, printer: str, claims: int) -> tuple[str, tuple[Any, ...]]:
        """Guard and parameters of a printer's outcome: :data:`GUARD_ON_PRINTER`, fenced by
        the printer's lease when leases are on."""
        if self.fence is None:
            return GUARD_ON_PRINTER, (printer, claims)
        return _ON_PRINTER_FENCED, (printer, claims, *self.fence.params(printer))

    # --- admission, failover, dead letters, housekeeping (DESIGN §4) ------------------

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
