"""The audit trail's queries (issue 26) on both backends: rows come back newest first with
every field, the filters and the limit hold, a bad row is refused whole, and the sweep
deletes only what is older than the retention."""

from __future__ import annotations

import pytest

from edgeprint import errors
from edgeprint.store.audit import AuditEntry, AuditLog
from edgeprint.store.interface import Store


def _entry(
    at: float,
    actor: str = "kiosk-1",
    action: str = "release",
    target: str = "j1",
    outcome: str = "done",
) -> AuditEntry:
    return AuditEntry(
        at=at,
        actor=actor,
        actor_kind="token",
        source="192.0.2.7",
        action=action,
        target_kind="job",
        target=target,
        outcome=outcome,
        detail="ok",
    )


async def test_rows_come_back_newest_first_with_every_field(store: Store) -> None:
    trail = AuditLog(store)
    ids = [await trail.record(_entry(float(t))) for t in (10, 30, 20)]
    assert len(set(ids)) == 3
    rows = await trail.since(None, limit=10)
    assert [r.at for r in rows] == [30.0, 20.0, 10.0]
    assert rows[0] == AuditEntry(
        at=30.0,
        actor="kiosk-1",
        actor_kind="token",
        source="192.0.2.7",
        action="release",
        target_kind="job",
        target="j1",
        outcome="done",
        detail="ok",
        id=ids[1],
    )
    # the same time twice: the later row first
    later = await trail.record(_entry(30.0, actor="tech-1"))
    assert [r.id for r in await trail.since(30.0, limit=10)] == [later, ids[1]]


async def test_filters_and_limit(store: Store) -> None:
    trail = AuditLog(store)
    await trail.record(_entry(1.0, actor="kiosk-1", action="release", target="j1"))
    await trail.record(_entry(2.0, actor="tech-1", action="pause", target="printer-01"))
    await trail.record(
        _entry(3.0, actor="tech-1", action="cancel", target="j1", outcome="conflict")
    )
    await trail.record(_entry(4.0, actor="kiosk-1", action="cancel", target="j2"))
    assert [r.at for r in await trail.since(2.0, limit=10)] == [4.0, 3.0, 2.0]
    assert [r.at for r in await trail.since(None, limit=10, actor="tech-1")] == [3.0, 2.0]
    assert [r.at for r in await trail.since(None, limit=10, action="cancel")] == [4.0, 3.0]
    assert [r.at for r in await trail.since(None, limit=10, target="j1")] == [3.0, 1.0]
    both = await trail.since(None, limit=10, actor="tech-1", target="j1")
    assert [(r.action, r.outcome) for r in both] == [("cancel", "conflict")]
    assert [r.at for r in await trail.since(None, limit=2)] == [4.0, 3.0]
    assert await trail.since(5.0, limit=10) == []


@pytest.mark.parametrize(("field", "value"), [("actor_kind", "admin"), ("outcome", "maybe")])
async def test_a_row_outside_the_vocabulary_is_refused(
    store: Store, field: str, value: str
) -> None:
    trail = AuditLog(store)
    bad = _entry(1.0).__dict__ | {field: value}
    with pytest.raises(errors.StoreError):
        await trail.record(AuditEntry(**bad))
    assert await trail.since(None, limit=10) == []


async def test_the_sweep_deletes_only_older_rows(store: Store) -> None:
    trail = AuditLog(store)
    for at in (1.0, 2.0, 3.0):
        await trail.record(_entry(at))
    assert await trail.sweep(2.5) == 2
    assert [r.at for r in await trail.since(None, limit=10)] == [3.0]
    assert await trail.sweep(2.5) == 0
