"""The store engines, SQLite and PostgreSQL, pass one suite: group commit, statement isolation
inside a batch, migrations, append-only events, closed-store errors."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
import time
import uuid
from pathlib import Path

import aiosqlite
import pytest

from edgeprint import errors
from edgeprint.config import StoreConfig
from edgeprint.store import Store as SqliteStore
from edgeprint.store import backends, db
from edgeprint.store.interface import Store
from edgeprint.store.pg_connection import redact
from edgeprint.store.pg_statements import translate
from edgeprint.store.postgres import PostgresStore
from edgeprint.store.schema import postgres as pg_schema
from edgeprint.store.schema.sqlite import SCHEMA_VERSION
from tests.pg_fixtures import PostgresCluster, only_durable
from tests.polling import eventually

_INSERT = (
    "INSERT INTO jobs (id, idempotency_key, request_sha256, state, owner, priority, copies,"
    " document_sha256, document_bytes, created_at, updated_at, token_name, actor)"
    " VALUES (?, ?, 'r', ?, 'o', ?, 1, 'd', 1, 0, 0, 't', 'a')"
)


def _again(store: Store) -> Store:
    """A second, unopened store on the same database as ``store``."""
    if isinstance(store, SqliteStore):
        return SqliteStore(store.path)
    assert isinstance(store, PostgresStore)
    return PostgresStore(store.url)


def _count(store: Store) -> int:
    """Jobs as a fresh connection sees them (what was committed, not what one connection has)."""
    if isinstance(store, SqliteStore):
        with contextlib.closing(sqlite3.connect(store.path)) as db:
            return int(db.execute("SELECT count(*) FROM jobs").fetchone()[0])
    assert isinstance(store, PostgresStore)
    import psycopg

    with psycopg.connect(store.url) as conn:
        row = conn.execute("SELECT count(*) FROM jobs").fetchone()
        assert row is not None
        return int(row[0])


@only_durable
async def test_concurrent_writes_are_grouped_and_all_durable(store: Store) -> None:
    """500 concurrent inserts commit in far fewer transactions, and another connection sees all."""
    await asyncio.gather(
        *(store.write(_INSERT, (f"id{i}", f"key{i}", "HELD", 100)) for i in range(500))
    )
    assert isinstance(store, SqliteStore | PostgresStore)
    assert store.writes == 500
    assert store.batches < 100
    assert _count(store) == 500


async def test_a_failing_statement_fails_only_its_caller(store: Store) -> None:
    """A CHECK violation in a batch is that caller's error; its neighbours still commit."""
    good = [store.write(_INSERT, (f"g{i}", f"gk{i}", "HELD", 1)) for i in range(20)]
    bad = store.write(_INSERT, ("bad", "bk", "NOT-A-STATE", 1))
    results = await asyncio.gather(*good, bad, return_exceptions=True)
    assert all(isinstance(r, list) for r in results[:-1])
    assert isinstance(results[-1], errors.StoreUnavailable)
    assert "check constraint" in str(results[-1]).lower()
    rows = await store.read("SELECT count(*) FROM jobs")
    assert rows[0][0] == 20


async def test_a_failing_unit_is_undone_whole_and_alone(store: Store) -> None:
    """write_many is all or none: a unit whose second statement fails leaves nothing of its
    first, while a unit committed in the same batch stays."""
    ok = store.write_many(
        [(_INSERT, ("u1", "uk1", "HELD", 1)), (_INSERT, ("u2", "uk2", "HELD", 1))]
    )
    bad = store.write_many(
        [(_INSERT, ("u3", "uk3", "HELD", 1)), (_INSERT, ("u4", "uk4", "NOT-A-STATE", 1))]
    )
    results = await asyncio.gather(ok, bad, return_exceptions=True)
    assert not isinstance(results[0], BaseException)
    assert isinstance(results[1], errors.StoreUnavailable)
    rows = await store.read("SELECT id FROM jobs ORDER BY id")
    assert [r[0] for r in rows] == ["u1", "u2"]


async def test_a_failing_read_fails_only_its_caller(store: Store) -> None:
    """Reads queued together answer each caller: a bad one is its caller's error alone."""
    await store.write(_INSERT, ("r1", "rk1", "HELD", 1))
    good = [store.read("SELECT id FROM jobs WHERE id = ?", ("r1",)) for _ in range(20)]
    bad = store.read("SELECT no_such_column FROM jobs")
    results = await asyncio.gather(*good, bad, return_exceptions=True)
    assert all(not isinstance(r, BaseException) and r[0][0] == "r1" for r in results[:-1])
    assert isinstance(results[-1], errors.StoreUnavailable)
    assert "no_such_column" in str(results[-1])


async def test_job_events_are_append_only(store: Store) -> None:
    """The event table refuses UPDATE and DELETE; inserting a job writes its first event."""
    await store.write(_INSERT, ("e1", "ek1", "HELD", 1))
    events = await store.read("SELECT job_id, from_state, to_state FROM job_events")
    assert [tuple(e) for e in events] == [("e1", None, "HELD")]
    with pytest.raises(errors.StoreUnavailable, match="append-only"):
        await store.write("UPDATE job_events SET to_state = 'DONE'")
    with pytest.raises(errors.StoreUnavailable, match="append-only"):
        await store.write("DELETE FROM job_events")
    assert len(await store.read("SELECT * FROM job_events")) == 1


async def test_state_change_writes_event_in_same_statement(store: Store) -> None:
    """An UPDATE of state appends exactly one event; an UPDATE of other columns appends none."""
    await store.write(_INSERT, ("e2", "ek2", "HELD", 1))
    await store.write("UPDATE jobs SET state = 'RELEASED', actor = 'k' WHERE id = 'e2'")
    await store.write("UPDATE jobs SET priority = 5 WHERE id = 'e2'")
    events = await store.read(
        "SELECT from_state, to_state, actor FROM job_events WHERE job_id='e2' ORDER BY seq"
    )
    assert [tuple(e) for e in events] == [(None, "HELD", "a"), ("HELD", "RELEASED", "k")]


async def _schema_version(store: Store) -> int:
    if store.dialect == "sqlite":
        return int((await store.read("PRAGMA user_version"))[0][0])
    return int((await store.read("SELECT version FROM schema_version"))[0][0])


@only_durable
async def test_reopen_keeps_schema_and_data(store: Store) -> None:
    """Opening an existing store applies no migration twice and keeps every row."""
    await store.write(_INSERT, ("r1", "rk1", "HELD", 1))
    await store.close()
    again = _again(store)
    await again.open()
    try:
        await again.write(_INSERT, ("r2", "rk2", "HELD", 1))
        assert len(await again.read("SELECT id FROM jobs")) == 2
        expected = SCHEMA_VERSION if again.dialect == "sqlite" else pg_schema.SCHEMA_VERSION
        assert await _schema_version(again) == expected
        if isinstance(again, SqliteStore):
            assert (await again.read("PRAGMA journal_mode"))[0][0] == "wal"
    finally:
        await again.close()


@only_durable
async def test_two_stores_opening_one_new_database_migrate_it_once(store: Store) -> None:
    """Two engines opening the same new database at once migrate it once; on PostgreSQL the
    second is refused while the first uses it (one appliance per database unless `[store] shared`)."""
    await store.close()
    one, two = _again(store), _again(store)
    try:
        opened = await asyncio.gather(one.open(), two.open(), return_exceptions=True)
        if store.dialect == "sqlite":
            assert opened == [None, None]
            await one.write(_INSERT, ("m1", "mk1", "HELD", 1))
            assert len(await two.read("SELECT id FROM jobs")) == 1
        else:
            refused = [r for r in opened if isinstance(r, BaseException)]
            assert len(refused) == 1, opened
            assert isinstance(refused[0], errors.StoreUnavailable)
            assert "another edgeprint is using the database" in str(refused[0])
            winner = one if opened[0] is None else two
            assert await _schema_version(winner) == pg_schema.SCHEMA_VERSION
    finally:
        await one.close()
        await two.close()
    if store.dialect == "postgresql":  # the lock goes with the appliance that held it
        again = _again(store)
        await again.open()
        await again.close()


async def test_newer_schema_refuses_to_open(tmp_path: Path, pg_url: str) -> None:
    """A store written by a newer edgeprint is not touched (either backend)."""
    path = tmp_path / "n.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE schema_version (version integer NOT NULL)")
        conn.execute("INSERT INTO schema_version VALUES (%s)", (pg_schema.SCHEMA_VERSION + 1,))
    for s in (SqliteStore(path), PostgresStore(pg_url)):
        with pytest.raises(errors.StoreUnavailable, match="newer than this edgeprint"):
            await s.open()


async def test_closed_store_refuses_writes(store: Store) -> None:
    """After close, writes and reads raise StoreUnavailable instead of hanging."""
    await store.close()
    with pytest.raises(errors.StoreUnavailable):
        await store.write("SELECT 1")
    with pytest.raises(errors.StoreUnavailable):
        await store.read("SELECT 1")


async def test_job_record_fields_are_the_table_columns(store: Store) -> None:
    """JobRecord is built positionally from ROW: the table's columns in order, then the facts
    computed from the job's copies."""
    from edgeprint.records import JobRecord

    if store.dialect == "sqlite":
        columns = [r[1] for r in await store.read("PRAGMA table_info(jobs)")]
    else:
        columns = [
            r[0]
            for r in await store.read(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'jobs' "
                "AND table_schema = current_schema() ORDER BY ordinal_position"
            )
        ]
    assert list(JobRecord._fields) == [*columns, "cancel_requested", "truncated_copies"]


def test_a_new_jobs_fields_are_job_record_fields_of_the_same_type() -> None:
    """Every NewJob field is a JobRecord field (a column Jobs.insert writes) with the same
    annotation: the two classes cannot drift apart (JobRecord is a NamedTuple in table
    order, so NewJob cannot be derived from it; docs/decisions/0040)."""
    import dataclasses
    import typing

    from edgeprint.records import JobRecord
    from edgeprint.store.job_rows import NewJob

    record = typing.get_type_hints(JobRecord)
    new = typing.get_type_hints(NewJob)
    assert [f.name for f in dataclasses.fields(NewJob)] == list(new)
    assert {name: record.get(name) for name in new} == new


async def test_each_group_commit_reports_its_statement_count(tmp_path: Path) -> None:
    """on_commit hears every committed batch with its number of statements (units of several
    statements count each one); a failed batch is not reported."""
    seen: list[int] = []
    store = SqliteStore(tmp_path / "t.sqlite3", on_commit=seen.append)
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
    this, the store's one hop per batch must be redone (docs/decisions/0010)."""
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


# --- PostgreSQL only ---------------------------------------------------------------------


def test_placeholders_are_translated_outside_quotes_only() -> None:
    """``?`` becomes ``%s`` except inside quotes, and a literal ``%`` is escaped for psycopg."""
    assert translate("SELECT ? WHERE a = '?' AND b LIKE '%x' AND \"?\" = ?") == (
        "SELECT %s WHERE a = '?' AND b LIKE '%%x' AND \"?\" = %s"
    )


def test_a_url_is_shown_without_its_password() -> None:
    """Error messages and logs carry the PostgreSQL URL with its password masked."""
    assert redact("postgresql://ep:s3cret@db.lan:5433/edgeprint?sslmode=require") == (
        "postgresql://ep:***@db.lan:5433/edgeprint?sslmode=require"
    )
    assert redact("postgresql://db.lan/edgeprint") == "postgresql://db.lan/edgeprint"
    # a libpq multi-host URL (a Patroni pair, issue 27): urllib.parse cannot parse its port
    assert (
        redact(
            "postgresql://ep:s3cret@db1.lan:5432,db2.lan:5433/edgeprint?target_session_attrs=read-write"
        )
        == "postgresql://ep:***@db1.lan:5432,db2.lan:5433/edgeprint?target_session_attrs=read-write"
    )
    assert redact("postgresql://ep@db1,db2/edgeprint") == "postgresql://ep@db1,db2/edgeprint"
    # the password as a parameter, and one with a raw '@' in it
    assert redact(
        "postgresql://ep@h1:1,h2:2/ep?password=PwSecret&target_session_attrs=read-write"
    ) == ("postgresql://ep@h1:1,h2:2/ep?password=***&target_session_attrs=read-write")
    assert redact("postgresql://u:S3c@ret@h1/db") == "postgresql://u:***@h1/db"
    assert "p%40ss" not in redact("postgresql://u:p%40ss@h1/db")


async def test_an_unreachable_database_is_a_clear_store_error(postgres: PostgresCluster) -> None:
    """A URL nobody answers on fails open() with StoreUnavailable naming the URL, no password."""
    s = PostgresStore(
        f"postgresql://edgeprint:pw-{uuid.uuid4().hex}@127.0.0.1:1/edgeprint",
        connect_timeout_s=2,
    )
    with pytest.raises(errors.StoreUnavailable, match=r"cannot open store postgresql://") as info:
        await s.open()
    assert "pw-" not in str(info.value)


async def test_stores_in_two_schemas_of_one_database_are_independent(
    postgres: PostgresCluster,
) -> None:
    """The one-appliance lock is per schema: two stores in two schemas of one database open
    together, and neither sees the other's jobs."""
    one, two = PostgresStore(postgres.url()), PostgresStore(postgres.url())
    await one.open()
    try:
        await two.open()
        try:
            await one.write(_INSERT, ("s1", "sk1", "HELD", 1))
            assert len(await two.read("SELECT id FROM jobs")) == 0
        finally:
            await two.close()
    finally:
        await one.close()


async def test_a_lost_database_connection_fails_one_write_and_is_reconnected(
    pg_url: str,
) -> None:
    """When PostgreSQL drops the appliance's connections, the next write fails with
    StoreUnavailable (503) and stored nothing; reads are run again on a new connection;
    the write after it reconnects and is stored."""
    import psycopg

    s = PostgresStore(pg_url)
    await s.open()
    try:
        await s.write(_INSERT, ("before", "kb", "HELD", 1))
        with psycopg.connect(pg_url, autocommit=True) as admin:
            cur = admin.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE application_name IN ('edgeprint-writer', 'edgeprint-reader') "
                "AND pid <> pg_backend_pid()"
            )
            row = cur.fetchone()
            assert row is not None
            assert row[0] == 5  # the writer and the four readers (tests run one at a time)
        with pytest.raises(errors.StoreUnavailable):
            await s.write(_INSERT, ("x1", "xk1", "HELD", 1))
        assert [r[0] for r in await s.read("SELECT id FROM jobs")] == ["before"]
        await s.write(_INSERT, ("x2", "xk2", "HELD", 1))
        assert sorted(r[0] for r in await s.read("SELECT id FROM jobs")) == ["before", "x2"]
        assert s.reconnects >= 2  # the writer and at least one reader
    finally:
        await s.close()


async def test_a_commit_or_read_that_waits_too_long_fails_within_the_query_timeout(
    pg_url: str,
) -> None:
    """A write or read the server does not answer (here: blocked by another session's lock;
    in a failover: a primary cut off the network, or strict synchronous mode with no
    standby) fails with StoreReconnecting after ``query_timeout_s``, not later; the
    connection is dropped and the store works again once the server answers."""
    import psycopg

    s = PostgresStore(pg_url, query_timeout_s=1.0)
    await s.open()
    try:
        await s.write(_INSERT, ("before", "kb", "HELD", 1))
        with psycopg.connect(pg_url) as blocker:
            blocker.execute("LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE")
            started = time.monotonic()
            with pytest.raises(errors.StoreReconnecting, match="may or may not have been"):
                await s.write(_INSERT, ("x1", "xk1", "HELD", 1))
            with pytest.raises(errors.StoreReconnecting):
                await s.read("SELECT id FROM jobs")
            assert time.monotonic() - started < 1.0 * 2 + 2.0 + 1.0  # two timeouts, no hang
            blocker.rollback()
        await s.write(_INSERT, ("x2", "xk2", "HELD", 1))
        assert sorted(r[0] for r in await s.read("SELECT id FROM jobs")) == ["before", "x2"]
        assert s.in_doubt == 1
    finally:
        await s.close()


@pytest.mark.slow
async def test_a_restarted_database_is_reconnected_with_back_off(
    postgres: PostgresCluster,
) -> None:
    """While PostgreSQL is down every write and read fails at once with StoreUnavailable
    (no hang, nothing half-written); once it is back the store reconnects by itself and
    the rows committed before the outage are all there."""
    s = PostgresStore(postgres.url())
    await s.open()
    try:
        await s.write_many([(_INSERT, (f"b{i}", f"kb{i}", "HELD", 1)) for i in range(10)])
        await asyncio.to_thread(postgres.halt)
        try:
            for i in range(5):
                with pytest.raises(errors.StoreReconnecting, match="reconnecting"):
                    await asyncio.wait_for(s.write(_INSERT, (f"x{i}", f"kx{i}", "HELD", 1)), 10)
                with pytest.raises(errors.StoreReconnecting):
                    await asyncio.wait_for(s.read("SELECT count(*) FROM jobs"), 10)
        finally:
            await asyncio.to_thread(postgres.launch)

        async def stored() -> bool:
            try:
                await s.write(_INSERT, ("after", "ka", "HELD", 1))
            except errors.StoreUnavailable:
                return False
            return True

        await eventually(stored, "a write after the database came back", timeout_s=30)
        rows = await s.read("SELECT id FROM jobs ORDER BY id")
        assert [r[0] for r in rows] == ["after"] + [f"b{i}" for i in range(10)]
    finally:
        await s.close()


def test_the_config_chooses_the_backend(tmp_path: Path) -> None:
    """No url: the SQLite file; a postgresql:// url: PostgreSQL; any other url is refused."""
    assert isinstance(backends.from_config(StoreConfig(), tmp_path / "x"), SqliteStore)
    pg = backends.from_config(StoreConfig(url="postgresql://h/db"), tmp_path / "x")
    assert isinstance(pg, PostgresStore)
    with pytest.raises(ValueError, match="must be a PostgreSQL URL"):
        StoreConfig(url="mysql://h/db")
