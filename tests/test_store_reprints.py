"""Reprints, job stories and job search in the store, on both backends (issue 24).

The reprint's one transaction (new job, a note on the original, the webhook row), the limit
held under concurrent inserts (on PostgreSQL also from two appliances at once), the links
both ways, and the search filters (LIKE wildcards taken literally).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from edgeprint.states import JobState
from edgeprint.store.interface import Store
from edgeprint.store.job_rows import NewJob
from edgeprint.store.jobs import Jobs
from edgeprint.store.outbox import Outbox
from edgeprint.store.reprints import NewReprint, Reprints
from tests.test_pg_shared import _boxes

ORIGINAL = "a" * 32


def _job(job_id: str, key: str, state: JobState = JobState.DONE, owner: str = "Ann") -> NewJob:
    return NewJob(
        id=job_id, idempotency_key=key, request_sha256="r", state=state, owner=owner,
        printer="printer-01", pool=None, priority=7, copies=2, document_sha256="d" * 64,
        document_bytes=10, token_name="kiosk-1", correlation_id=None, document_pages=1,
    )  # fmt: skip


def _reprint(i: int, key: str | None = None, asked: str = ORIGINAL, **kw: Any) -> NewReprint:
    fields: dict[str, Any] = {
        "id": f"{i:032x}", "idempotency_key": key or f"reprint-key-{i}", "request_sha256": "q",
        "original_id": ORIGINAL, "asked_id": asked, "document_sha256": "d" * 64,
        "printer": "printer-01", "pool": None, "token_name": "desk-1", "correlation_id": "c-1",
        "actor": "desk-1", "reason": "badge lost", "webhook_id": f"msg_{i}", **kw,
    }  # fmt: skip
    return NewReprint(**fields)


async def _rows(store: Store, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in await store.read(sql, params)]


async def test_a_reprint_is_one_transaction_with_both_events_and_its_webhook(
    store: Store,
) -> None:
    jobs, reprints = Jobs(store), Reprints(store)
    await Outbox(store).subscribe(["job.reprinted"])
    assert await jobs.insert(_job(ORIGINAL, "orig-key"), 1.0, "kiosk-1") is not None

    new = await reprints.insert(_reprint(1), now=5.0, max_reprints=3)

    assert new is not None
    assert (new.state, new.reprint_of, new.owner, new.copies, new.priority) == (
        JobState.RELEASED, ORIGINAL, "Ann", 2, 7,
    )  # fmt: skip
    assert (new.printer, new.released_at, new.document_sha256, new.document_pages) == (
        "printer-01", 5.0, "d" * 64, 1,
    )  # fmt: skip
    [made] = await jobs.events(new.id)
    assert (made.from_state, made.to_state, made.actor) == (None, JobState.RELEASED, "desk-1")
    assert made.reason == f"reprint of {ORIGINAL}: badge lost"
    note = (await jobs.events(ORIGINAL))[-1]
    assert (note.from_state, note.to_state, note.actor, note.at) == (
        JobState.DONE, JobState.DONE, "desk-1", 5.0,
    )  # fmt: skip
    assert note.reason == f"reprinted as {new.id}: badge lost"
    [(kind, job_id, data)] = await _rows(store, "SELECT type, job_id, data FROM webhook_outbox")
    assert (kind, job_id) == ("job.reprinted", new.id)
    assert json.loads(data)["reprint_of"] == ORIGINAL
    assert json.loads(data)["reason"] == "badge lost"
    assert await reprints.of([ORIGINAL, new.id]) == {ORIGINAL: [new.id]}
    original = await jobs.get(ORIGINAL)
    assert original is not None
    assert original.state is JobState.DONE


async def test_nothing_is_written_when_the_insert_is_refused(store: Store) -> None:
    """Not DONE, document deleted, at the limit, or the key taken: no job, no event, no
    webhook row."""
    jobs, reprints = Jobs(store), Reprints(store)
    await Outbox(store).subscribe(["job.reprinted"])
    held = "b" * 32
    await jobs.insert(_job(ORIGINAL, "orig-key"), 1.0, "k")
    await jobs.insert(_job(held, "held-key", JobState.HELD), 1.0, "k")
    before = await _rows(store, "SELECT * FROM job_events ORDER BY seq")

    assert await reprints.insert(_reprint(1, asked=held), now=2.0, max_reprints=3) is None
    assert await reprints.insert(_reprint(2, key="held-key"), now=2.0, max_reprints=3) is None
    assert await reprints.insert(_reprint(3), now=2.0, max_reprints=0) is None
    assert await reprints.insert(_reprint(4, document_sha256="e" * 64), now=2.0,
                                 max_reprints=3) is None  # fmt: skip
    await jobs.mark_documents_deleted([ORIGINAL], now=3.0)
    assert await reprints.insert(_reprint(5), now=4.0, max_reprints=3) is None

    assert await _rows(store, "SELECT * FROM job_events ORDER BY seq") == before
    assert await _rows(store, "SELECT count(*) FROM jobs") == [(2,)]
    assert await _rows(store, "SELECT count(*) FROM webhook_outbox") == [(0,)]


async def test_concurrent_reprints_never_pass_the_limit(store: Store) -> None:
    """Twenty reprints of one original at once with distinct keys, limit 3: exactly three,
    and a reprint of a reprint counts against its original."""
    jobs, reprints = Jobs(store), Reprints(store)
    await jobs.insert(_job(ORIGINAL, "orig-key"), 1.0, "k")
    made = await asyncio.gather(
        *(reprints.insert(_reprint(i), now=2.0, max_reprints=3) for i in range(1, 21))
    )
    stored = [m for m in made if m is not None]
    assert len(stored) == 3
    assert await reprints.count(ORIGINAL) == 3
    # a reprint asked of a (printed) reprint names the first original: still at the limit
    await store.write("UPDATE jobs SET state = 'DONE' WHERE id = ?", (stored[0].id,))
    assert await reprints.insert(_reprint(99, asked=stored[0].id), now=3.0, max_reprints=3) is None
    again = await reprints.insert(_reprint(98, asked=stored[0].id), now=3.0, max_reprints=4)
    assert again is not None
    assert again.reprint_of == ORIGINAL
    assert (await jobs.events(again.id))[0].reason == f"reprint of {stored[0].id}: badge lost"
    # both the job asked for and the first original have the note
    for noted in (stored[0].id, ORIGINAL):
        assert (await jobs.events(noted))[-1].reason == f"reprinted as {again.id}: badge lost"


async def test_concurrent_reprints_with_one_key_make_one_job(store: Store) -> None:
    jobs, reprints = Jobs(store), Reprints(store)
    await jobs.insert(_job(ORIGINAL, "orig-key"), 1.0, "k")
    made = await asyncio.gather(
        *(reprints.insert(_reprint(i, key="one-key"), now=2.0, max_reprints=50)
          for i in range(1, 21))
    )  # fmt: skip
    assert len([m for m in made if m is not None]) == 1
    assert await reprints.count(ORIGINAL) == 1
    # the losers left no note on the original
    notes = [e for e in await jobs.events(ORIGINAL) if e.from_state is JobState.DONE]
    assert len(notes) == 1


async def test_two_appliances_reprinting_at_once_hold_one_limit(pg_url: str) -> None:
    """PostgreSQL, two appliances (two writer connections): forty reprints raced with distinct
    keys and limit 5 store exactly five (the original's row lock orders the counts)."""
    async with _boxes(pg_url) as (a, b):
        await Jobs(a).insert(_job(ORIGINAL, "orig-key"), 1.0, "k")
        made = await asyncio.gather(
            *(Reprints(s).insert(_reprint(i), now=2.0, max_reprints=5)
              for i, s in enumerate([a, b] * 20, start=1))
        )  # fmt: skip
        assert len([m for m in made if m is not None]) == 5
        assert await _rows(a, "SELECT count(*) FROM jobs WHERE reprint_of = ?", (ORIGINAL,)) == [
            (5,)
        ]


async def test_search_by_key_id_prefix_and_owner_substring(store: Store) -> None:
    jobs = Jobs(store)
    owners = ["Ann Lee", "ANNA 50%_off", "bob", "Zed annex"]
    ids = [f"{i:x}{'0' * 31}" for i in range(10, 14)]
    for i, (job_id, owner) in enumerate(zip(ids, owners, strict=True)):
        await jobs.insert(_job(job_id, f"search-key-{i}", owner=owner), float(i), "k")

    def found(rows: list[Any]) -> list[str]:
        return [r.owner for r in rows]

    assert found(await jobs.list_jobs(idempotency_key="search-key-2")) == ["bob"]
    assert found(await jobs.list_jobs(idempotency_key="search-key")) == []
    assert found(await jobs.list_jobs(id_prefix="b000")) == ["ANNA 50%_off"]
    assert found(await jobs.list_jobs(owner_contains="ann")) == ["Zed annex", "ANNA 50%_off",
                                                                "Ann Lee"]  # fmt: skip
    # wildcards are themselves: "%" and "_" match only those characters
    assert found(await jobs.list_jobs(owner_contains="50%_")) == ["ANNA 50%_off"]
    assert found(await jobs.list_jobs(owner_contains="%")) == ["ANNA 50%_off"]
    assert found(await jobs.list_jobs(owner_contains="n_l")) == []
    assert found(await jobs.list_jobs(owner_contains="ann", id_prefix="a000")) == ["Ann Lee"]
