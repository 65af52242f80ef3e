"""Several appliances writing one PostgreSQL store (``[store] shared``): claims that do not
collide, one live copy per claim, the webhook outbox in commit order, idempotency keys and
PIN counters counted once across boxes."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import psycopg
import pytest

from edgeprint import errors
from edgeprint.config import parse_config
from edgeprint.server import running
from edgeprint.states import JobState
from edgeprint.store.documents import DbDocuments
from edgeprint.store.interface import Store
from edgeprint.store.job_rows import NewJob
from edgeprint.store.jobs import Jobs
from edgeprint.store.outbox import Outbox
from edgeprint.store.pg_connection import Notice
from edgeprint.store.pg_statements import translate
from edgeprint.store.postgres import PostgresStore
from edgeprint.store.printer_rows import PrinterRows
from testbed.config import config_dict
from tests.polling import eventually

_INSERT = (
    "INSERT INTO jobs (id, idempotency_key, request_sha256, state, owner, printer, pool, "
    "priority, copies, document_sha256, document_bytes, created_at, updated_at, token_name, "
    "actor) VALUES (?, ?, 'r', ?, 'o', NULL, 'lobby', 100, 1, 'd', 1, 0, 0, 't', 'a')"
)
_COPY = (
    "INSERT INTO copies (job_id, claim, printer, state, operation, document_format, "
    "document_bytes, actor, created_at, updated_at) "
    "VALUES (?, 1, 'printer-01', ?, 'Print-Job', 'application/pdf', 1, 'a', 0, 0)"
)


@contextlib.asynccontextmanager
async def _boxes(url: str, n: int = 2) -> AsyncIterator[list[PostgresStore]]:
    """``n`` open stores on one database, as ``n`` appliances with ``[store] shared`` have."""
    stores = [PostgresStore(url, exclusive=False) for _ in range(n)]
    try:
        for s in stores:
            await s.open()
        yield stores
    finally:
        for s in stores:
            await s.close()


def _new_job(job_id: str, key: str, *, pin_hash: str | None = None) -> NewJob:
    return NewJob(
        id=job_id, idempotency_key=key, request_sha256="r", state=JobState.HELD, owner="o",
        printer=None, pool="lobby", priority=100, copies=1, document_sha256="d",
        document_bytes=1, token_name="t", correlation_id=None, release_pin_hash=pin_hash,
    )  # fmt: skip


async def test_an_exclusive_store_refuses_a_second_appliance_and_a_shared_one_does_not(
    pg_url: str,
) -> None:
    """Without ``shared`` the second appliance's start-up is refused (503-class StoreUnavailable)
    and nothing is written; with it, both open the database."""
    first = PostgresStore(pg_url)
    await first.open()
    try:
        with pytest.raises(errors.StoreUnavailable, match="another edgeprint is using"):
            await PostgresStore(pg_url).open()
    finally:
        await first.close()
    async with _boxes(pg_url, 3) as boxes:
        await boxes[2].write(_INSERT, ("j1", "k1", "RELEASED"))
        assert [r[0] for r in await boxes[0].read("SELECT id FROM jobs")] == ["j1"]


async def test_shared_and_exclusive_appliances_never_mix_on_one_database(pg_url: str) -> None:
    """A box without ``shared`` is refused beside shared ones, and a shared box beside one
    without it (it would drive printers outside the leases); each refusal names the fix and
    changes nothing."""
    async with _boxes(pg_url) as (a, _):
        with pytest.raises(errors.StoreUnavailable, match="without \\[store\\] shared = true"):
            await PostgresStore(pg_url).open()
        await a.write(_INSERT, ("j1", "k1", "RELEASED"))
    alone = PostgresStore(pg_url)
    await alone.open()
    try:
        with pytest.raises(errors.StoreUnavailable, match="needs shared = true"):
            await PostgresStore(pg_url, exclusive=False).open()
        assert [r[0] for r in await alone.read("SELECT id FROM jobs")] == ["j1"]
    finally:
        await alone.close()


async def test_a_claim_skips_a_job_another_appliance_is_claiming(pg_url: str) -> None:
    """While one appliance's claim holds the first ready job (its transaction open), another
    appliance's claim takes the second one at once instead of waiting or finding nothing."""
    async with _boxes(pg_url) as (a, b):
        for i in range(2):
            await a.write(_INSERT, (f"j{i}", f"k{i}", "RELEASED"))
        sql, params = Jobs(a).claim_next_sql("printer-01", "lobby", now=1.0, actor="x")
        with psycopg.connect(pg_url) as held:  # a transaction, left open
            first = held.execute(translate(sql), params).fetchone()
            assert first is not None
            assert first[1] == "j0"
            second = await asyncio.wait_for(
                Jobs(b).claim_next("printer-02", "lobby", now=1.0, actor="y"), timeout=10
            )
            assert second is not None
            assert second.id == "j1"
            assert await Jobs(b).claim_next("printer-02", "lobby", now=1.0, actor="y") is None
            held.commit()
        rows = await b.read("SELECT id, printed_on, claims FROM jobs ORDER BY id")
        assert [tuple(r) for r in rows] == [("j0", "printer-01", 1), ("j1", "printer-02", 1)]


async def test_two_appliances_claiming_together_take_each_job_once(pg_url: str) -> None:
    """200 released pool jobs, six printers on two appliances claiming at once: every job is
    claimed exactly once and none is left."""
    async with _boxes(pg_url) as (a, b):
        await a.write_many([(_INSERT, (f"j{i:03}", f"k{i}", "RELEASED")) for i in range(200)])
        taken: list[str] = []

        async def printer(store: Store, name: str) -> None:
            while job := await Jobs(store).claim_next(name, "lobby", now=1.0, actor=name):
                taken.append(job.id)

        await asyncio.gather(
            *(printer(s, f"{box}-printer-{i}") for box, s in (("a", a), ("b", b)) for i in range(3))
        )
        assert sorted(taken) == [f"j{i:03}" for i in range(200)]
        rows = await a.read("SELECT count(*) FROM jobs WHERE claims = 1 AND state = 'PRINTING'")
        assert rows[0][0] == 200


async def test_a_job_has_at_most_one_live_copy_per_claim(store: Store) -> None:
    """A second live copy of the same claim is refused by the database itself (a unique
    partial index, on both backends), while a settled copy beside a live one is fine."""
    await store.write(_INSERT, ("j1", "k1", "PRINTING"))
    await store.write(_COPY, ("j1", "printed"))
    await store.write(_COPY, ("j1", "sending"))
    with pytest.raises(errors.StoreUnavailable, match=r"(?i)unique"):
        await store.write(_COPY, ("j1", "acknowledged"))
    rows = await store.read("SELECT state FROM copies ORDER BY id")
    assert [r[0] for r in rows] == ["printed", "sending"]


async def test_outbox_rows_are_numbered_in_commit_order(pg_url: str) -> None:
    """An outbox row written while another transaction's row is uncommitted waits for it, so a
    deliverer never sees a higher seq before a lower one commits (no row is skipped)."""
    async with _boxes(pg_url) as (a, b):
        await Outbox(a).subscribe(["printer.unhealthy"])
        with psycopg.connect(pg_url) as early:
            early.execute(
                "INSERT INTO webhook_outbox (id, type, at, printer, data) "
                "VALUES ('msg_early', 'printer.unhealthy', 1, 'p', '{}')"
            )
            late = asyncio.create_task(
                Outbox(b).add_printer_event("msg_late", "printer.unhealthy", "p", 2.0, {})
            )

            async def waiting() -> bool:
                rows = await a.read(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                )
                return bool(rows[0][0])

            await eventually(waiting, "the second outbox writer waits for the first")
            assert not late.done()
            assert await Outbox(a).after(0, ["printer.unhealthy"]) == []
            early.commit()
        assert await late
        events = await Outbox(a).after(0, ["printer.unhealthy"])
        assert [e.id for e in events] == ["msg_early", "msg_late"]


async def test_one_idempotency_key_is_one_job_across_appliances(pg_url: str) -> None:
    """The same key submitted to two appliances at once stores one job; the other insert is
    told the key exists (None) and the store holds exactly one row."""
    async with _boxes(pg_url) as (a, b):
        results = await asyncio.gather(
            *(
                Jobs(s).insert(_new_job(f"job-{i}", "same-key"), 1.0, "t")
                for i, s in enumerate([a, b] * 10)
            )
        )
        stored = [r for r in results if r is not None]
        assert len(stored) == 1
        rows = await a.read("SELECT id FROM jobs WHERE idempotency_key = 'same-key'")
        assert [r[0] for r in rows] == [stored[0].id]


async def test_pin_attempts_on_two_appliances_count_against_one_limit(pg_url: str) -> None:
    """Twenty PIN attempts raced over two appliances: exactly five are counted (1…5), the fifth
    locks the release, the other fifteen find it locked."""
    async with _boxes(pg_url) as (a, b):
        await Jobs(a).insert(_new_job("j1", "k1", pin_hash="h"), 1.0, "t")
        results = await asyncio.gather(
            *(
                Jobs(s).take_pin_attempt("j1", now=2.0, max_failures=5, lockout_s=60)
                for s in [a, b] * 10
            )
        )
        counted = sorted(r[0] for r in results if r is not None)
        assert counted == [1, 2, 3, 4, 5]
        rows = await b.read("SELECT pin_failures, pin_locked_until, state FROM jobs")
        assert tuple(rows[0]) == (5, 62.0, "HELD")


async def test_changes_are_notified_to_the_other_appliances_at_commit_only(pg_url: str) -> None:
    """A listening appliance hears "all" on connecting, then each job another appliance makes
    claimable (with its printer and pool), and nothing of its own writes or of a write that
    was rolled back."""
    notices: asyncio.Queue[Notice] = asyncio.Queue()

    async def heard(n: Notice) -> None:
        notices.put_nowait(n)

    async with _boxes(pg_url) as (a, b):
        a.listen(heard)
        assert await asyncio.wait_for(notices.get(), timeout=10) == Notice("all")
        await a.write(_INSERT, ("own", "k-own", "RELEASED"))  # a's own: not heard
        with pytest.raises(errors.StoreUnavailable):  # rolled back whole: not heard
            await b.write_many(
                [(_INSERT, ("gone", "k-gone", "RELEASED")), (_INSERT, ("own", "k-x", "HELD"))]
            )
        await b.write(_INSERT, ("held", "k-held", "HELD"))  # not claimable: not heard
        await b.write(
            "UPDATE jobs SET state = 'RELEASED', printer = 'printer-02', pool = NULL "
            "WHERE id = 'held'"
        )
        heard_first = await asyncio.wait_for(notices.get(), timeout=10)
        assert heard_first == Notice("ready", "printer-02", None, None)
        await PrinterRows(b).set_paused("printer-02", True, now=1.0, actor="tech")
        assert await asyncio.wait_for(notices.get(), timeout=10) == Notice(
            "flags", "printer-02", None, True
        )
        assert notices.empty()
        assert [r[0] for r in await a.read("SELECT id FROM jobs ORDER BY id")] == ["held", "own"]


async def test_the_start_up_sweep_spares_another_appliances_upload_in_flight(
    pg_url: str, tmp_path: Path
) -> None:
    """Chunks with no job yet (an upload on another box) survive a shared appliance's sweep
    (one hour of grace) and are dropped by a sweep without grace."""
    src = tmp_path / "doc.pdf"
    src.write_bytes(b"%PDF-1.4 in flight")
    async with _boxes(pg_url) as (a, b):
        await DbDocuments(a).put("e" * 32, src)
        assert await DbDocuments(b).sweep_orphans(older_than_s=3600) == 0
        assert len(await b.read("SELECT seq FROM documents")) == 1
        assert await DbDocuments(b).sweep_orphans() == 1
        assert await b.read("SELECT seq FROM documents") == []


async def test_the_listener_reconnects_and_says_all_may_have_changed(pg_url: str) -> None:
    """When PostgreSQL drops the listening connection, the listener reconnects by itself,
    hands over "all" (notifications sent meanwhile are lost) and hears the next change."""
    notices: asyncio.Queue[Notice] = asyncio.Queue()

    async def heard(n: Notice) -> None:
        notices.put_nowait(n)

    async with _boxes(pg_url) as (a, b):
        a.listen(heard)
        assert await asyncio.wait_for(notices.get(), timeout=10) == Notice("all")
        with psycopg.connect(pg_url, autocommit=True) as admin:
            row = admin.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE application_name = 'edgeprint-listener'"
            ).fetchone()
        assert row is not None
        assert row[0] == 1
        assert await asyncio.wait_for(notices.get(), timeout=10) == Notice("all")
        await b.write(_INSERT, ("j1", "k1", "RELEASED"))
        assert await asyncio.wait_for(notices.get(), timeout=10) == Notice(
            "ready", None, "lobby", None
        )


def test_a_shared_store_without_a_postgresql_url_is_refused(tmp_path: Path) -> None:
    """``shared = true`` without a PostgreSQL url is a config error naming the key (two boxes
    would silently keep a SQLite file each); with a url it is accepted."""
    cfg = config_dict(tmp_path)
    cfg["store"] = {"shared": True}
    with pytest.raises(errors.ConfigError, match=r"store\.shared: true needs url"):
        parse_config(cfg)
    cfg["store"] = {"shared": True, "url": "postgresql://db.lan/edgeprint"}
    assert parse_config(cfg).store.shared


async def test_a_second_appliance_with_the_same_appliance_id_is_refused(
    pg_url: str, tmp_path: Path
) -> None:
    """A shared appliance whose ``[cluster] appliance_id`` another appliance on the database
    is using refuses to start with a message naming the key (the two would renew each other's
    leases), stores nothing, and the id is free again once the first stops."""
    first = PostgresStore(pg_url, exclusive=False, appliance_id="box-a")
    await first.open()
    try:
        await first.write(_INSERT, ("j1", "k1", "RELEASED"))
        cfg = config_dict(tmp_path)
        cfg["store"] = {"url": pg_url, "shared": True}
        cfg["cluster"] = {"appliance_id": "box-a"}
        with pytest.raises(
            errors.StoreUnavailable,
            match=r"another appliance with \[cluster\] appliance_id = 'box-a' is using the "
            r"database .*: give each appliance its own \[cluster\] appliance_id",
        ):
            async with running(parse_config(cfg)):
                pass
        other = PostgresStore(pg_url, exclusive=False, appliance_id="box-b")
        await other.open()
        try:
            assert [r[0] for r in await other.read("SELECT id FROM jobs")] == ["j1"]
        finally:
            await other.close()
    finally:
        await first.close()
    again = PostgresStore(pg_url, exclusive=False, appliance_id="box-a")
    await again.open()
    await again.close()
