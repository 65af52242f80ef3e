"""The query modules (edgeprint/store/jobs.py, outbox.py, stats.py) give the same answers on
both store backends: PIN counters, queues, housekeeping, printer flags and pins, the outbox
trigger. (The transitions, claims and copies: tests/test_state_machine.py.)"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from types import SimpleNamespace

import pytest

from edgeprint.states import Action, JobState
from edgeprint.store import stats
from edgeprint.store.interface import Store
from edgeprint.store.job_reads import ROW
from edgeprint.store.job_rows import NewJob
from edgeprint.store.jobs import Jobs
from edgeprint.store.outbox import Outbox
from edgeprint.store.printer_rows import PrinterRows
from edgeprint.store.schema.sqlite import MIGRATIONS

S = JobState


def _new(i: int, state: JobState = S.HELD, **kw: object) -> NewJob:
    fields: dict[str, object] = {
        "id": f"{i:032x}", "idempotency_key": f"key-{i}", "request_sha256": "r",
        "state": state, "owner": "ann", "printer": "printer-01", "pool": None,
        "priority": 100, "copies": 1, "document_sha256": "d", "document_bytes": 10,
        "token_name": "kiosk-1", "correlation_id": None, **kw,
    }  # fmt: skip
    return NewJob(**fields)  # type: ignore[arg-type]


async def test_a_second_insert_with_the_same_key_stores_nothing(store: Store) -> None:
    """One Idempotency-Key is one job: a second insert under it returns None, adds no event."""
    jobs = Jobs(store)
    first = await jobs.insert(_new(1), now=10.0, actor="kiosk-1")
    assert first is not None
    assert (first.state, first.created_at, first.cancel_requested, first.truncated_copies) == (
        S.HELD, 10.0, False, 0,
    )  # fmt: skip
    assert await jobs.insert(_new(2, idempotency_key="key-1"), now=11.0, actor="k") is None
    assert [j.id for j in await jobs.list_jobs()] == [first.id]
    assert [(e.from_state, e.to_state) for e in await jobs.events(first.id)] == [(None, S.HELD)]
    assert await jobs.get_by_key("key-1") == first


async def test_pin_attempts_lock_and_an_expired_lock_starts_afresh(store: Store) -> None:
    """The third wrong PIN locks the release for lockout_s; during the lock no attempt counts;
    after it the count starts at one again."""
    jobs = Jobs(store)
    job = await jobs.insert(_new(1), now=0.0, actor="k")
    assert job is not None
    take = {"max_failures": 3, "lockout_s": 60.0}
    assert await jobs.take_pin_attempt(job.id, now=1.0, **take) == (1, None)
    assert await jobs.take_pin_attempt(job.id, now=2.0, **take) == (2, None)
    assert await jobs.take_pin_attempt(job.id, now=3.0, **take) == (3, 63.0)
    assert await jobs.take_pin_attempt(job.id, now=30.0, **take) is None
    assert await jobs.take_pin_attempt(job.id, now=63.0, **take) == (1, None)


async def test_queues_housekeeping_and_dead_letters(store: Store) -> None:
    """Waiting depths and ages per queue, retargeting to a pool, hold expiry, retention and the
    dead-letter list and counts agree with what was written."""
    jobs = Jobs(store)
    for i in range(3):
        await jobs.insert(_new(i, S.RELEASED), now=float(i), actor="k")
    await jobs.insert(_new(3, S.HELD), now=0.5, actor="k")
    await jobs.insert(_new(4, S.RELEASED, printer=None, pool="lobby"), now=4.0, actor="k")
    assert await jobs.waiting_depths() == {("printer-01", None): 3, (None, "lobby"): 1}
    assert await jobs.oldest_waiting() == {("printer-01", None): 0.0, (None, "lobby"): 4.0}
    assert await jobs.next_not_before("printer-01", "lobby", now=100.0) is None
    moved = await jobs.retarget_waiting("printer-01", "lobby", now=5.0, actor="t", reason="r")
    assert sorted(moved) == [f"{i:032x}" for i in range(3)]
    assert await jobs.waiting_depths() == {(None, "lobby"): 4}
    assert await jobs.expire_held(created_before=1.0, now=6.0) == [f"{3:032x}"]
    claimed = await jobs.claim_next("printer-02", "lobby", now=7.0, actor="printer:printer-02")
    assert claimed is not None
    assert (claimed.id, claimed.state, claimed.claims) == (f"{0:032x}", S.PRINTING, 1)
    dead = await jobs.transition(
        claimed.id, Action.FAIL, now=8.0, actor="printer:printer-02",
        sets={"dead_reason": "poison", "finished_at": 8.0},
    )  # fmt: skip
    assert dead is not None
    assert dead.state is S.DEAD
    assert [j.id for j in await jobs.dead_letters()] == [claimed.id]
    assert await stats.dead_by_reason(store) == {"poison": 1}
    assert (await jobs.count_by_state())[S.EXPIRED] == 1
    # the EXPIRED job's document is due; the DEAD one's stays (it can be replayed)
    assert await jobs.retention_due(finished_before=100.0) == [f"{3:032x}"]
    await jobs.mark_documents_deleted([claimed.id], now=9.0)
    assert await jobs.ids_with_documents({claimed.id, f"{1:032x}"}) == {
        claimed.id, f"{1:032x}",
    }  # fmt: skip


async def test_printer_flags_and_pins(store: Store) -> None:
    """A paused flag is kept and cleared; a certificate is pinned on first use only and can be
    forgotten by a technician."""
    jobs = Jobs(store)
    rows = PrinterRows(jobs.store)
    await rows.set_paused("printer-01", True, now=1.0, actor="t")
    await rows.set_paused("printer-02", True, now=1.0, actor="t")
    await rows.set_paused("printer-02", False, now=2.0, actor="t")
    assert await rows.paused_printers() == {"printer-01"}
    assert await rows.set_pin("printer-01", "sha256:aa", now=1.0, actor="t")
    assert not await rows.set_pin("printer-01", "sha256:bb", now=2.0, actor="t")
    assert await rows.pin("printer-01") == "sha256:aa"
    assert await rows.forget_pin("printer-01")
    assert not await rows.forget_pin("printer-01")
    assert await rows.pin("printer-01") is None


async def test_a_subscribed_job_event_is_written_to_the_outbox_by_the_change(store: Store) -> None:
    """A job reaching a subscribed terminal state writes its outbox row in the same statement,
    with the job's fields as a JSON object; an unsubscribed one writes none."""
    jobs, outbox = Jobs(store), Outbox(store)
    await outbox.subscribe({"job.cancelled"})
    for i in (1, 2):
        await jobs.insert(_new(i), now=1.0, actor="k")
    await jobs.transition(f"{1:032x}", Action.CANCEL, now=2.0, actor="k",
                          sets={"finished_at": 2.0})  # fmt: skip
    await jobs.transition(f"{2:032x}", Action.EXPIRE, now=2.0, actor="housekeeping",
                          sets={"finished_at": 2.0})  # fmt: skip
    [event] = await outbox.after(0, ["job.cancelled", "job.expired"])
    assert (event.type, event.job_id, event.printer, event.at) == (
        "job.cancelled", f"{1:032x}", "printer-01", 2.0,
    )  # fmt: skip
    assert event.id.startswith("msg_")
    assert len(event.id) == 36
    data = json.loads(event.data)
    assert (data["state"], data["from_state"], data["idempotency_key"], data["attempts"]) == (
        "CANCELLED", "HELD", "key-1", 0,
    )  # fmt: skip


async def test_a_transition_of_the_same_shape_reuses_its_statement(store: Store) -> None:
    """A transition's SQL is written once per shape (action, columns, narrowing, guard) and
    only its parameters change; a column outside the allow-list is refused every time."""
    jobs = Jobs(store)
    a, b = f"{1:032x}", f"{2:032x}"
    for i in (1, 2):
        await jobs.insert(_new(i), now=10.0, actor="kiosk-1")
    sets = {"released_at": 20.0, "printer": None, "pool": "lobby"}
    first_sql, first = jobs.transition_sql(
        a, Action.RELEASE, now=20.0, actor="k", correlation_id="c1", sets=sets
    )
    other_sql, other = jobs.transition_sql(
        b, Action.RELEASE, now=21.0, actor="j", reason="why", sets={**sets, "pool": "p"}
    )
    assert other_sql is first_sql
    # released_run (issue 27) follows released_at: the run clock, here each write's now
    assert first == ("RELEASED", 20.0, "k", "release", "c1", 20.0, None, "lobby", 20.0, a, "HELD")
    assert other == ("RELEASED", 21.0, "j", "why", None, 20.0, None, "p", 21.0, b, "HELD")
    narrowed, _ = jobs.transition_sql(a, Action.CANCEL, now=1.0, actor="k", only_from=[S.RELEASED])
    assert narrowed != first_sql
    assert narrowed.count("?") == 7  # 5 bookkeeping, the id, RELEASED
    for _ in range(2):
        with pytest.raises(ValueError, match=r"transition cannot set \['state'\]"):
            jobs.transition_sql(a, Action.RELEASE, now=1.0, actor="k", sets={"state": 1})
    released = await jobs.transition(
        a, Action.RELEASE, now=20.0, actor="k", correlation_id="c1", sets=sets
    )
    assert released is not None
    assert (released.state, released.pool) == (S.RELEASED, "lobby")
    assert await jobs.transition(a, Action.RELEASE, now=21.0, actor="k") is None


def test_a_write_returning_a_job_searches_its_copies_by_index(tmp_path: Path) -> None:
    """A claim and a transition return the job's copy facts through the copies index, never
    a scan of every copy (SQLite plans RETURNING's correlated subqueries on their own)."""
    db = sqlite3.connect(tmp_path / "plan.sqlite3")
    for migration in MIGRATIONS:
        for statement in migration:
            db.execute(statement)
    jobs = Jobs(SimpleNamespace(dialect="sqlite"))  # type: ignore[arg-type]
    claim, params = jobs.claim_next_sql("printer-01", "lobby", now=0.0, actor="t")
    transition = f"UPDATE jobs SET updated_at = ? WHERE id = ? RETURNING {ROW}"
    for sql, args in ((claim, params), (transition, (0.0, "j"))):
        plan = [row[3] for row in db.execute(f"EXPLAIN QUERY PLAN {sql}", args)]
        assert [p for p in plan if p.startswith("SCAN c")] == [], plan
