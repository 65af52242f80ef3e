"""The SQLite store: group commit, statement isolation inside a batch, migrations, append-only events."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import aiosqlite
import pytest

from edgeprint import errors
from edgeprint.store import Store, db
from edgeprint.store.schema import SCHEMA_VERSION


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    s = Store(tmp_path / "t.sqlite3")
    await s.open()
    yield s
    await s.close()


_INSERT = (
    "INSERT INTO jobs (id, idempotency_key, request_sha256, state, owner, priority, copies,"
    " document_sha256, document_bytes, created_at, updated_at, token_name, actor)"
    " VALUES (?, ?, 'r', ?, 'o', ?, 1, 'd', 1, 0, 0, 't', 'a')"
)


async def test_concurrent_writes_are_grouped_and_all_durable(store: Store, tmp_path: Path) -> None:
    """500 concurrent inserts commit in far fewer transactions, and all are on disk."""
    await asyncio.gather(
        *(store.write(_INSERT, (f"id{i}", f"key{i}", "HELD", 100)) for i in range(500))
    )
    assert store.writes == 500
    assert store.batches < 100
    with sqlite3.connect(tmp_path / "t.sqlite3") as db:
        assert db.execute("SELECT count(*) FROM jobs").fetchone()[0] == 500


async def test_a_failing_statement_fails_only_its_caller(store: Store) -> None:
    """A CHECK violation in a batch is that caller's error; its neighbours still commit."""
    good = [store.write(_INSERT, (f"g{i}", f"gk{i}", "HELD", 1)) for i in range(20)]
    bad = store.write(_INSERT, ("bad", "bk", "NOT-A-STATE", 1))
    results = await asyncio.gather(*good, bad, return_exceptions=True)
    assert all(isinstance(r, list) for r in results[:-1])
    assert isinstance(results[-1], errors.StoreUnavailable)
    assert "CHECK constraint failed" in str(results[-1])
    rows = await store.read("SELECT count(*) FROM jobs")
    assert rows[0][0] == 20


async def test_job_events_are_append_only(store: Store) -> None:
    """The event table refuses UPDATE and DELETE; inserting a job writes its first event."""
    await store.write(_INSERT, ("e1", "ek1", "HELD", 1))
    events = await store.read("SELECT job_id, from_state, to_state FROM job_events")
    assert [tuple(e) for e in events] == [("e1", None, "HELD")]
    with pytest.raises(errors.StoreUnavailable, match="append-only"):
        await store.write("UPDATE job_events SET to_state = 'DONE'")
    with pytest.raises(errors.StoreUnavailable, match="append-only"):
        await store.write("DELETE FROM job_events")


async def test_state_change_writes_event_in_same_statement(store: Store) -> None:
    """An UPDATE of state appends exactly one event; an UPDATE of other columns appends none."""
    await store.write(_INSERT, ("e2", "ek2", "HELD", 1))
    await store.write("UPDATE jobs SET state = 'RELEASED', actor = 'k' WHERE id = 'e2'")
    await store.write("UPDATE jobs SET priority = 5 WHERE id = 'e2'")
    events = await store.read(
        "SELECT from_state, to_state, actor FROM job_events WHERE job_id='e2'"
    )
    assert [tuple(e) for e in events] == [(None, "HELD", "a"), ("HELD", "RELEASED", "k")]


async def test_reopen_keeps_schema_and_data(tmp_path: Path) -> None:
    """Opening an existing file applies no migration twice and keeps every row."""
    path = tmp_path / "r.sqlite3"
    for _ in range(2):
        s = Store(path)
        await s.open()
        await s.write(
            _INSERT.replace("?, ?, 'r'", "hex(randomblob(8)), hex(randomblob(8)), 'r'"), ("HELD", 1)
        )
        await s.close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert db.execute("SELECT count(*) FROM jobs").fetchone()[0] == 2
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_newer_schema_refuses_to_open(tmp_path: Path) -> None:
    """A store written by a newer edgeprint is not touched."""
    path = tmp_path / "n.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    s = Store(path)
    with pytest.raises(errors.StoreUnavailable, match="newer than this edgeprint"):
        await s.open()


async def test_closed_store_refuses_writes(tmp_path: Path) -> None:
    """After close, writes raise StoreUnavailable instead of hanging."""
    s = Store(tmp_path / "c.sqlite3")
    await s.open()
    await s.close()
    with pytest.raises(errors.StoreUnavailable):
        await s.write("SELECT 1")
    with pytest.raises(errors.StoreUnavailable):
        await s.read("SELECT 1")


async def test_job_record_fields_are_the_table_columns(store: Store) -> None:
    """JobRecord is built positionally from ROW: the table's columns in order, then the facts
    computed from the job's copies."""
    from edgeprint.store.jobs import JobRecord

    columns = [r[1] for r in await store.read("PRAGMA table_info(jobs)")]
    assert list(JobRecord._fields) == [*columns, "cancel_requested", "truncated_copies"]


async def test_each_group_commit_reports_its_statement_count(tmp_path: Path) -> None:
    """on_commit hears every committed batch with its number of statements (units of several
    statements count each one); a failed batch is not reported."""
    seen: list[int] = []
    store = Store(tmp_path / "t.sqlite3", on_commit=seen.append)
    await store.open()
    try:
        await asyncio.gather(
            *(store.write(_INSERT, (f"c{i}", f"ck{i}", "HELD", 1)) for i in range(10)),
            store.write_many(
                [(_INSERT, ("u1", "uk1", "HELD", 1)), (_INSERT, ("u2", "uk2", "HELD", 1))]
            ),
        )
    finally:
        await store.close()
    assert sum(seen) == 12
    assert len(seen) == store.batches
    assert all(n >= 1 for n in seen)


async def test_aiosqlite_runs_a_function_on_its_own_thread(tmp_path: Path) -> None:
    """The one private use of aiosqlite (db.on_thread: its _execute and _conn) still runs a
    function on the connection's own thread with that connection; if a new aiosqlite breaks
    this, the store's one hop per batch must be redone (DESIGN §11)."""
    conn = await aiosqlite.connect(tmp_path / "t.sqlite3", isolation_level=None)
    try:
        # The thread aiosqlite runs statements on, learnt through its public API.
        await conn.create_function("thread_id", 0, threading.get_ident)
        [(public_thread,)] = await conn.execute_fetchall("SELECT thread_id()")

        def inside(raw: sqlite3.Connection) -> tuple[int, int]:
            raw.execute("CREATE TEMP TABLE only_this_connection (x)")  # per connection
            return threading.get_ident(), raw.execute("SELECT 41 + 1").fetchone()[0]

        thread, answer = await db.on_thread(conn, inside)
        assert (thread, answer) == (public_thread, 42)
        assert thread != threading.get_ident()
        rows = await conn.execute_fetchall("SELECT count(*) FROM temp.only_this_connection")
        assert list(rows) == [(0,)]
    finally:
        await conn.close()
    # Closed: the store's writer and reader expect a ValueError.
    with pytest.raises(ValueError, match=r"no active connection|Connection closed"):
        await db.on_thread(conn, lambda raw: raw.execute("SELECT 1"))
