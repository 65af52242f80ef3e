"""The webhook outbox: events waiting for delivery, each receiver's cursor, parked failures.

Job events are written by a trigger on ``jobs`` (schema migration "webhooks"), so
a state change and its outbox row commit together or not at all; printer health
events are written by :meth:`Outbox.add_printer_event`. Rows are written only for
event types in ``webhook_subscriptions`` (set at start-up from the config).
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from edgeprint.store.interface import Row, Store


@dataclass(frozen=True, slots=True)
class OutboxEvent:
    """One row of ``webhook_outbox``; ``data`` is the JSON object as stored."""

    seq: int
    id: str
    type: str
    at: float
    job_id: str | None
    printer: str | None
    data: str

    @classmethod
    def from_row(cls, row: Row) -> OutboxEvent:
        """The event for a ``SELECT *`` row of ``webhook_outbox``."""
        return cls(*row)


@dataclass(frozen=True, slots=True)
class FailedDelivery:
    """One row of ``webhook_failures``: an event given up for one receiver."""

    seq: int
    url: str
    event_seq: int
    event_id: str
    type: str
    job_id: str | None
    printer: str | None
    attempts: int
    first_attempt_at: float
    failed_at: float
    last_error: str


_ADD_PRINTER_EVENT = """
INSERT INTO webhook_outbox (id, type, at, job_id, printer, data)
SELECT ?, ?, ?, NULL, ?, ? WHERE EXISTS (SELECT 1 FROM webhook_subscriptions WHERE event = ?)
"""


class Outbox:
    """Queries on the webhook tables of one :class:`Store`."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def subscribe(self, events: Collection[str]) -> None:
        """Make ``events`` the event types written to the outbox from now on."""
        marks = ", ".join("?" for _ in events) or "NULL"
        await self._store.write(
            f"DELETE FROM webhook_subscriptions WHERE event NOT IN ({marks})", tuple(events)
        )
        for event in sorted(events):
            await self._store.write(
                "INSERT INTO webhook_subscriptions (event) VALUES (?) ON CONFLICT DO NOTHING",
                (event,),
            )

    async def add_printer_event(
        self, event_id: str, type_: str, printer: str, at: float, data: dict[str, Any]
    ) -> bool:
        """Store a printer event if anyone subscribed to ``type_``; True when stored."""
        rows = await self._store.write(
            _ADD_PRINTER_EVENT + " RETURNING seq",
            (event_id, type_, at, printer, json.dumps(data, separators=(",", ":")), type_),
        )
        return bool(rows)

    async def after(self, seq: int, types: Collection[str], limit: int = 100) -> list[OutboxEvent]:
        """Events of ``types`` after ``seq``, in order."""
        marks = ", ".join("?" for _ in types) or "NULL"
        rows = await self._store.read(
            f"SELECT * FROM webhook_outbox WHERE seq > ? AND type IN ({marks}) "
            "ORDER BY seq LIMIT ?",
            (seq, *types, limit),
        )
        return [OutboxEvent.from_row(r) for r in rows]

    async def start_cursor(self, url: str, *, now: float) -> int:
        """The receiver's cursor; a new receiver starts after the events stored so far."""
        await self._store.write(
            # WHERE true: SQLite's parser needs it before ON CONFLICT after a SELECT
            "INSERT INTO webhook_cursors (url, seq, updated_at) "
            "SELECT ?, coalesce(max(seq), 0), ? FROM webhook_outbox WHERE true "
            "ON CONFLICT DO NOTHING",
            (url, now),
        )
        rows = await self._store.read("SELECT seq FROM webhook_cursors WHERE url = ?", (url,))
        return int(rows[0][0])

    async def advance(self, url: str, seq: int, *, now: float) -> None:
        """The receiver is done with every event up to ``seq`` (delivered or parked)."""
        await self._store.write(
            "UPDATE webhook_cursors SET seq = ?, updated_at = ? WHERE url = ? AND seq < ?",
            (seq, now, url, seq),
        )

    async def park(
        self,
        url: str,
        event: OutboxEvent,
        *,
        attempts: int,
        first_attempt_at: float,
        now: float,
        error: str,
    ) -> None:
        """Record that ``event`` was given up for ``url`` (once per receiver and event)."""
        await self._store.write(
            "INSERT INTO webhook_failures (url, event_seq, event_id, type, job_id, "
            "printer, attempts, first_attempt_at, failed_at, last_error) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (
                url,
                event.seq,
                event.id,
                event.type,
                event.job_id,
                event.printer,
                attempts,
                first_attempt_at,
                now,
                error,
            ),
        )

    async def failures(self, *, after_seq: int = 0, limit: int = 100) -> list[FailedDelivery]:
        """Parked deliveries, oldest first; ``after_seq`` pages forwards (exclusive)."""
        rows = await self._store.read(
            "SELECT * FROM webhook_failures WHERE seq > ? ORDER BY seq LIMIT ?",
            (after_seq, limit),
        )
        return [FailedDelivery(*r) for r in rows]

    async def prune(self, before: float, urls: Collection[str]) -> int:
        """Delete events older than ``before`` that every receiver in ``urls`` is done with,
        and failures parked before ``before``; the number of events deleted."""
        marks = ", ".join("?" for _ in urls) or "NULL"
        rows = await self._store.write(
            "DELETE FROM webhook_outbox WHERE at < ? AND seq <= coalesce("
            f"(SELECT min(seq) FROM webhook_cursors WHERE url IN ({marks})), "
            "(SELECT max(seq) FROM webhook_outbox)) RETURNING seq",
            (before, *urls),
        )
        await self._store.write("DELETE FROM webhook_failures WHERE failed_at < ?", (before,))
        return len(rows)
