"""Read-only summaries for technicians (``GET /v1/stats``)."""

from __future__ import annotations

from edgeprint.store.interface import Store


async def dead_by_reason(store: Store) -> dict[str, int]:
    """DEAD jobs counted by ``dead_reason`` (a job without one counts as ``unknown``)."""
    rows = await store.read(
        "SELECT coalesce(dead_reason, 'unknown'), count(*) FROM jobs WHERE state = 'DEAD' "
        "GROUP BY 1 ORDER BY 1"
    )
    return {str(r[0]): int(r[1]) for r in rows}
