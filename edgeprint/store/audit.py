"""The audit trail (issue 26): who did what, from where, to what, and how it went.

One row per action a person or a signal asked for (``audit``), appended, never
updated; read newest first. Rows older than ``[retention] audit_s`` are swept by
the housekeeping. No row holds a secret: the service writes only names, addresses,
ids and short details (edgeprint.service.audit).
"""

from __future__ import annotations

from dataclasses import dataclass

from edgeprint.store.interface import Row, Store

_COLUMNS = "id, at, actor, actor_kind, source, action, target_kind, target, outcome, detail"


@dataclass(frozen=True)
class AuditEntry:
    """One audit row; ``id`` is None until it is stored."""

    at: float
    actor: str
    actor_kind: str
    source: str | None
    action: str
    target_kind: str
    target: str
    outcome: str
    detail: str = ""
    id: int | None = None


class AuditLog:
    """Queries on ``audit`` of one :class:`Store`."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def record(self, e: AuditEntry) -> int:
        """Append ``e``; its id."""
        rows = await self._store.write(
            "INSERT INTO audit (at, actor, actor_kind, source, action, target_kind, target, "
            "outcome, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (
                e.at,
                e.actor,
                e.actor_kind,
                e.source,
                e.action,
                e.target_kind,
                e.target,
                e.outcome,
                e.detail,
            ),
        )
        return int(rows[0][0])

    async def since(
        self,
        at: float | None,
        *,
        limit: int,
        actor: str | None = None,
        action: str | None = None,
        target: str | None = None,
    ) -> list[AuditEntry]:
        """Rows at or after ``at`` (None: all) matching every filter given, newest first."""
        where: list[str] = ["1 = 1"]
        params: list[object] = []
        filters = (("at >=", at), ("actor =", actor), ("action =", action), ("target =", target))
        for column, value in filters:
            if value is not None:
                where.append(f"{column} ?")
                params.append(value)
        rows = await self._store.read(
            f"SELECT {_COLUMNS} FROM audit WHERE {' AND '.join(where)} "
            "ORDER BY at DESC, id DESC LIMIT ?",
            (*params, limit),
        )
        return [_entry(r) for r in rows]

    async def sweep(self, before: float) -> int:
        """Delete rows older than ``before``; how many."""
        rows = await self._store.write("DELETE FROM audit WHERE at < ? RETURNING id", (before,))
        return len(rows)


def _entry(r: Row) -> AuditEntry:
    source = None if r[4] is None else str(r[4])
    return AuditEntry(
        float(r[1]),
        str(r[2]),
        str(r[3]),
        source,
        str(r[5]),
        str(r[6]),
        str(r[7]),
        str(r[8]),
        str(r[9]),
        id=int(r[0]),
    )
