"""A job's copies with their bookkeeping (issue 24, a job's story): the :class:`Copy` record
leaves out when each row was made and settled and by whom; the story needs them."""

from __future__ import annotations

from dataclasses import dataclass

from edgeprint.copies import Copy
from edgeprint.store.copy_reads import copy_from_row
from edgeprint.store.interface import Store


@dataclass(frozen=True, slots=True)
class CopyRow:
    """One copy and its row's bookkeeping (times unix seconds)."""

    copy: Copy
    actor: str
    created_at: float
    settled_at: float | None


async def copies_of(store: Store, job_id: str) -> list[CopyRow]:
    """Every copy of the job with its bookkeeping, oldest first."""
    rows = await store.read("SELECT * FROM copies WHERE job_id = ? ORDER BY id", (job_id,))
    return [
        CopyRow(
            copy_from_row(r),
            str(r["actor"]),
            float(r["created_at"]),
            None if r["settled_at"] is None else float(r["settled_at"]),
        )
        for r in rows
    ]
