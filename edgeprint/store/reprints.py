"""Reprints (issue 24): a new job made on purpose from a DONE one, linked both ways.

A reprint names its original in ``jobs.reprint_of``; the original's reprints are
the jobs naming it. :meth:`Reprints.insert` is one transaction: the new job's row
(its ``job_events`` insert row by the trigger, reason ``reprint of <id>: <why>``),
a non-transition event row on the job the person asked for (``job_events`` is
written by triggers on state changes only; this is the one explicit append, DONE →
DONE), and a ``job.reprinted`` webhook outbox row when anyone subscribed.

The new job's columns are copied from the job asked for (its title too; its document
file is a link to that job's); a reprint of a reprint names the first original, so the
limit (``[release] max_reprints``) counts every reprint of one badge. The limit
is held by the INSERT itself: it selects only while fewer than the limit of jobs
name the original. On SQLite one
writer runs every transaction in turn, so the count is exact. On PostgreSQL
several appliances may write at once: the transaction first locks the original's
row (``SELECT … FOR UPDATE``), so a concurrent reprint of the same original waits,
and its INSERT (a new snapshot under READ COMMITTED) counts the winner's row.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from edgeprint.records import JobRecord
from edgeprint.states import JobState
from edgeprint.store.interface import Store
from edgeprint.store.job_reads import ROW

_DONE = JobState.DONE.value

_INSERT_REPRINT = (
    f"""
INSERT INTO jobs (id, idempotency_key, request_sha256, state, owner, printer, pool, priority,
                  copies, document_sha256, document_bytes, created_at, updated_at, released_at,
                  token_name, correlation_id, actor, reason, document_pages, page_short_min,
                  page_short_max, page_long_min, page_long_max, page_landscape, rehearsal,
                  document_format, reprint_of, title, created_run, released_run)
SELECT ?, ?, ?, '{JobState.RELEASED.value}', o.owner, ?, ?, o.priority, o.copies,
       o.document_sha256, o.document_bytes, ?, ?, ?, ?, ?, ?, ?, o.document_pages,
       o.page_short_min, o.page_short_max, o.page_long_min, o.page_long_max, o.page_landscape,
       (SELECT CASE WHEN mode = 'rehearsal' THEN 1 ELSE 0 END FROM event_mode WHERE id = 1),
       o.document_format, ?, o.title, ?, ?
FROM jobs o
WHERE o.id = ? AND o.state = '{_DONE}' AND o.document_deleted_at IS NULL
  AND o.document_sha256 = ?
  AND (SELECT count(*) FROM jobs r WHERE r.reprint_of = ?) < ?
ON CONFLICT (idempotency_key) DO NOTHING
RETURNING """
    + ROW
)

#: A non-transition event on a DONE job: appended only when the reprint's row was stored
#: by this same transaction (its id is new).
_NOTE_ON_ORIGINAL = f"""
INSERT INTO job_events (job_id, at, from_state, to_state, actor, reason, correlation_id)
SELECT ?, ?, '{_DONE}', '{_DONE}', ?, ?, ?
WHERE EXISTS (SELECT 1 FROM jobs WHERE id = ?)
"""

_WEBHOOK = """
INSERT INTO webhook_outbox (id, type, at, job_id, printer, data)
SELECT ?, 'job.reprinted', ?, ?, ?, ?
WHERE EXISTS (SELECT 1 FROM webhook_subscriptions WHERE event = 'job.reprinted')
  AND EXISTS (SELECT 1 FROM jobs WHERE id = ?)
"""

_LOCK_ORIGINAL = "SELECT id FROM jobs WHERE id = ? FOR UPDATE"


@dataclass(frozen=True, slots=True)
class NewReprint:
    """What :meth:`Reprints.insert` stores: the new job's own fields (the rest is copied from
    the original in the statement) and who asked, and why."""

    id: str
    idempotency_key: str
    request_sha256: str
    original_id: str  # the job its reprint_of names (the root of a chain of reprints)
    asked_id: str  # the job the person asked to reprint (a reprint of original_id, or it)
    document_sha256: str  # the document the new job's spool file holds (checked in the insert)
    printer: str | None
    pool: str | None
    token_name: str
    correlation_id: str | None
    actor: str
    reason: str  # the person's words
    webhook_id: str


class Reprints:
    """Queries on reprints: make one, and the links between jobs."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def insert(
        self, new: NewReprint, *, now: float, max_reprints: int, run: float | None = None
    ) -> JobRecord | None:
        """Store the reprint, RELEASED, with its events and webhook; None when nothing was
        stored: the key exists already, or the original is not DONE, has lost its document,
        or has ``max_reprints`` reprints (read the store again to say which).

        ``run``: the run-clock reading (issue 27; default ``now``). Raises errors.StoreError.
        """
        job_reason = f"reprint of {new.asked_id}: {new.reason}"
        note = f"reprinted as {new.id}: {new.reason}"
        data: dict[str, Any] = {
            "job_id": new.id,
            "reprint_of": new.original_id,
            "asked_for": new.asked_id,
            "idempotency_key": new.idempotency_key,
            "reason": new.reason,
            "actor": new.actor,
            "printer": new.printer,
            "pool": new.pool,
            "correlation_id": new.correlation_id,
        }
        statements: list[tuple[str, tuple[Any, ...]]] = []
        if self._store.dialect == "postgresql":
            statements.append((_LOCK_ORIGINAL, (new.original_id,)))
        stamp = now if run is None else run  # created_run and released_run
        statements.append(
            (
                _INSERT_REPRINT,
                (
                    new.id,
                    new.idempotency_key,
                    new.request_sha256,
                    new.printer,
                    new.pool,
                    now,
                    now,
                    now,
                    new.token_name,
                    new.correlation_id,
                    new.actor,
                    job_reason,
                    new.original_id,
                    stamp,
                    stamp,
                    new.asked_id,
                    new.document_sha256,
                    new.original_id,
                    max_reprints,
                ),
            )
        )
        noted = [new.asked_id]
        if new.original_id != new.asked_id:
            noted.append(new.original_id)
        for job_id in noted:
            statements.append(
                (_NOTE_ON_ORIGINAL, (job_id, now, new.actor, note, new.correlation_id, new.id))
            )
        statements.append(
            (
                _WEBHOOK,
                (
                    new.webhook_id,
                    now,
                    new.id,
                    new.printer or new.pool,
                    json.dumps(data, separators=(",", ":"), ensure_ascii=False),
                    new.id,
                ),
            )
        )
        results = await self._store.write_many(statements)
        rows = results[1 if self._store.dialect == "postgresql" else 0]
        return JobRecord.from_row(rows[0]) if rows else None

    async def count(self, original_id: str) -> int:
        """How many reprints name ``original_id``."""
        rows = await self._store.read(
            "SELECT count(*) FROM jobs WHERE reprint_of = ?", (original_id,)
        )
        return int(rows[0][0])

    async def of(self, ids: Collection[str]) -> dict[str, list[str]]:
        """Each of ``ids`` → the ids of its reprints, oldest first (ids without any: absent)."""
        out: dict[str, list[str]] = {}
        chunk = list(ids)
        for i in range(0, len(chunk), 500):
            part = chunk[i : i + 500]
            marks = ", ".join("?" for _ in part)
            rows = await self._store.read(
                f"SELECT reprint_of, id FROM jobs WHERE reprint_of IN ({marks}) ORDER BY seq",
                tuple(part),
            )
            for r in rows:
                out.setdefault(str(r[0]), []).append(str(r[1]))
        return out
