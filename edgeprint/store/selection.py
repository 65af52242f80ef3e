"""Which jobs a bulk call acts on: one named query, the same SQL on SQLite and PostgreSQL.

A bulk release, cancel, replay or resolve by filter first selects candidate ids here,
oldest first and bounded by the call's limit; each candidate then goes through its
single-job use case, whose conditional write decides (a job selected here may have moved
on by then: that answers ``conflict``, never a second action).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from edgeprint.states import JobState
from edgeprint.store.interface import Store


@dataclass(frozen=True, slots=True)
class JobFilter:
    """What the selected jobs are (every field given must match); times are epoch seconds."""

    states: Sequence[JobState]
    owner: str | None = None
    pool: str | None = None
    printer: str | None = None
    dead_reason: str | None = None
    created_after: float | None = None
    created_before: float | None = None


class Selection:
    """The bulk calls' candidate query over the ``jobs`` table."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def job_ids(self, where: JobFilter, limit: int) -> list[str]:
        """Up to ``limit`` ids of jobs matching ``where``, oldest first (by ``seq``).

        ``states`` is never empty: the action's own source states bound the scan
        (``jobs_by_state (state, seq)`` serves it).
        """
        assert where.states, "a selection names the states it takes"
        marks = ", ".join("?" for _ in where.states)
        clauses = [f"state IN ({marks})"]
        params: list[Any] = [s.value for s in where.states]
        if where.owner is not None:
            clauses.append("owner = ?")
            params.append(where.owner)
        if where.pool is not None:
            clauses.append("pool = ?")
            params.append(where.pool)
        if where.printer is not None:
            clauses.append("(printer = ? OR printed_on = ?)")
            params += [where.printer, where.printer]
        if where.dead_reason is not None:
            clauses.append("dead_reason = ?")
            params.append(where.dead_reason)
        if where.created_after is not None:
            clauses.append("created_at >= ?")
            params.append(where.created_after)
        if where.created_before is not None:
            clauses.append("created_at < ?")
            params.append(where.created_before)
        params.append(limit)
        rows = await self._store.read(
            f"SELECT id FROM jobs WHERE {' AND '.join(clauses)} ORDER BY seq LIMIT ?",
            tuple(params),
        )
        return [str(r[0]) for r in rows]
