"""The bulk calls' candidate query (edgeprint/store/selection.py) gives the same answers on
both store backends: every filter field, oldest first, bounded by the limit."""

from __future__ import annotations

from edgeprint.states import Action, JobState
from edgeprint.store.interface import Store
from edgeprint.store.jobs import Jobs
from edgeprint.store.selection import JobFilter, Selection
from tests.test_store_queries import _new

S = JobState


def _id(i: int) -> str:
    return f"{i:032x}"


async def _dead(jobs: Jobs, i: int, reason: str, now: float) -> None:
    """Job ``i`` (RELEASED on printer-02) claimed and parked DEAD with ``reason``."""
    await jobs.insert(_new(i, S.RELEASED, printer="printer-02"), now=now, actor="k")
    claimed = await jobs.transition(
        _id(i), Action.CLAIM, now=now, actor="printer:printer-02",
        sets={"printed_on": "printer-02"},
    )  # fmt: skip
    assert claimed is not None
    dead = await jobs.transition(
        _id(i), Action.FAIL, now=now, actor="printer:printer-02",
        sets={"dead_reason": reason, "finished_at": now},
    )  # fmt: skip
    assert dead is not None


async def test_every_filter_field_oldest_first_and_bounded(store: Store) -> None:
    """HELD jobs of two owners, targets and ages, and DEAD ones of two reasons: each field
    narrows the selection, ids come oldest first, the limit bounds them."""
    jobs = Jobs(store)
    await jobs.insert(_new(1), now=10.0, actor="k")  # ann, printer-01
    await jobs.insert(_new(2, owner="bob"), now=20.0, actor="k")
    await jobs.insert(_new(3, printer=None, pool="lobby"), now=30.0, actor="k")
    await jobs.insert(_new(4), now=40.0, actor="k")
    await _dead(jobs, 5, "attempts_exhausted", 50.0)
    await _dead(jobs, 6, "poison", 60.0)
    await _dead(jobs, 7, "attempts_exhausted", 70.0)
    pick = Selection(store).job_ids
    held = (S.HELD,)
    assert await pick(JobFilter(held), 10) == [_id(1), _id(2), _id(3), _id(4)]
    assert await pick(JobFilter(held), 2) == [_id(1), _id(2)]
    assert await pick(JobFilter(held, owner="bob"), 10) == [_id(2)]
    assert await pick(JobFilter(held, pool="lobby"), 10) == [_id(3)]
    assert await pick(JobFilter(held, printer="printer-01"), 10) == [_id(1), _id(2), _id(4)]
    assert await pick(JobFilter(held, created_after=20.0), 10) == [_id(2), _id(3), _id(4)]
    assert await pick(JobFilter(held, created_before=30.0), 10) == [_id(1), _id(2)]
    assert await pick(JobFilter(held, created_after=20.0, created_before=40.0), 10) == [
        _id(2), _id(3),
    ]  # fmt: skip
    dead = (S.DEAD,)
    assert await pick(JobFilter(dead), 10) == [_id(5), _id(6), _id(7)]
    exhausted = JobFilter(dead, dead_reason="attempts_exhausted")
    assert await pick(exhausted, 10) == [_id(5), _id(7)]
    # printed_on counts as the printer too (a dead letter's printer is where it died)
    assert await pick(JobFilter(dead, printer="printer-02"), 1) == [_id(5)]
    assert await pick(JobFilter((S.HELD, S.DEAD), owner="ann"), 10) == [
        _id(1), _id(3), _id(4), _id(5), _id(6), _id(7),
    ]  # fmt: skip
    assert await pick(JobFilter(held, owner="nobody"), 10) == []
    assert await pick(JobFilter((S.DONE,)), 10) == []
