"""The appliance on the PostgreSQL store (``[store] url``) prints on real printers exactly once."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import psycopg
import pytest

from edgeprint.server import DB_FILE
from testbed.pdfs import make_pdf
from testbed.rig import Rig
from tests.pg_fixtures import PostgresCluster
from tests.polling import eventually
from tests.printing import appliance, assert_each_printed_once, printed_names, rig_config


async def test_jobs_print_exactly_once_with_the_store_in_postgresql(
    tmp_path: Path, printers: Rig, pg_url: str
) -> None:
    """With ``[store] url = postgresql://…`` a held job prints once after its release and a
    hold=false job once at submission; the jobs, events and copies are in PostgreSQL (no SQLite
    file is made), and a restarted appliance still answers for them."""
    cfg = rig_config(tmp_path / "data", printers)
    cfg["store"] = {"url": pg_url}
    async with appliance(cfg) as (_, kiosk):
        async with kiosk.http.get(f"{kiosk.url}/readyz") as ready:
            assert ready.status == 200  # the readiness probe writes through PostgreSQL
        held = await kiosk.submit("held-0001", printer="printer-02")
        badge = await kiosk.submit("badge-0001", pool="lobby", hold=False)
        await kiosk.wait_states([badge["id"]], {"DONE"})
        assert (await kiosk.job(held["id"]))["state"] == "HELD"
        status, _ = await kiosk.post(f"/v1/jobs/{held['id']}/release")
        assert status == 200
        status, _ = await kiosk.post(f"/v1/jobs/{held['id']}/release")
        assert status == 409  # released once: a second release is refused
        await kiosk.wait_states([held["id"]], {"DONE"})
    ids = [held["id"], badge["id"]]
    assert_each_printed_once(printers, ids)
    assert printed_names(printers)[f"edgeprint-{held['id']}"] == ["printer-02"]
    assert not (tmp_path / "data" / DB_FILE).exists()
    with psycopg.connect(pg_url) as conn:
        states = dict(conn.execute("SELECT id, state FROM jobs").fetchall())
        printed = conn.execute("SELECT job_id FROM copies WHERE state = 'printed'").fetchall()
        events = conn.execute("SELECT count(*) FROM job_events").fetchone()
    assert states == {held["id"]: "DONE", badge["id"]: "DONE"}
    assert sorted(r[0] for r in printed) == sorted(ids)
    assert events is not None
    assert events[0] == 7  # held: HELD RELEASED PRINTING DONE; badge: RELEASED PRINTING DONE
    async with appliance(cfg) as (_, kiosk):
        assert (await kiosk.job(held["id"]))["state"] == "DONE"


async def test_a_replacement_appliance_prints_held_jobs_from_the_database(
    tmp_path: Path, printers: Rig, pg_url: str
) -> None:
    """Documents are kept in PostgreSQL too: an appliance started with an empty data_dir on the
    same database restores them (byte for byte) and prints the held jobs it never received,
    exactly once."""
    # under 1 MiB: aiohttp warns about larger raw-bytes bodies, which the printer upload sends
    # (multi-chunk documents: tests/test_store_documents.py)
    big = make_pdf("thesis", pad_to=900_000)
    first = rig_config(tmp_path / "old", printers)
    first["store"] = {"url": pg_url}
    async with appliance(first) as (_, kiosk):
        badge = await kiosk.submit("badge-0001", printer="printer-01")
        thesis = await kiosk.submit("thesis-0001", printer="printer-02", doc=big)
    with psycopg.connect(pg_url) as conn:
        chunks = dict(
            conn.execute("SELECT job_id, count(*) FROM documents GROUP BY job_id").fetchall()
        )
    assert chunks == {badge["id"]: 1, thesis["id"]: 1}
    second = rig_config(tmp_path / "new", printers)
    second["store"] = {"url": pg_url}
    async with appliance(second) as (_, kiosk):
        restored = tmp_path / "new" / "spool" / f"{thesis['id']}.pdf"
        assert restored.read_bytes() == big
        for job in (badge, thesis):
            status, _ = await kiosk.post(f"/v1/jobs/{job['id']}/release")
            assert status == 200
        await kiosk.wait_states([badge["id"], thesis["id"]], {"DONE"})
    assert_each_printed_once(printers, [badge["id"], thesis["id"]])


async def test_a_lost_database_connection_is_503_then_reconnected(
    tmp_path: Path, printers: Rig, pg_url: str
) -> None:
    """When PostgreSQL drops the appliance's writer and readers, the appliance reconnects by
    itself: a release answers 503 ``store-unavailable`` with the job still HELD if it is the
    first write on the dead connection, then 200; the job prints once (the database down for
    longer: test_the_appliance_rides_out_a_database_restart)."""
    cfg = rig_config(tmp_path / "data", printers, idle_probe_interval_s=120.0)
    cfg["store"] = {"url": pg_url}
    async with appliance(cfg) as (_, kiosk):
        held = await kiosk.submit("held-0001", printer="printer-02")
        with psycopg.connect(pg_url, autocommit=True) as admin:
            row = admin.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE application_name IN ('edgeprint-writer', 'edgeprint-reader') "
                "AND pid <> pg_backend_pid()"
            ).fetchone()
        assert row is not None
        assert row[0] == 5
        answers = []

        async def released() -> bool:
            status, body = await kiosk.post(f"/v1/jobs/{held['id']}/release")
            answers.append(status)
            if status == 503:  # only on the first write after the loss, unless a worker's was
                assert body["type"] == "urn:edgeprint:problem:store-unavailable"
                assert (await kiosk.job(held["id"]))["state"] == "HELD"
            else:
                assert (status, body["state"]) == (200, "RELEASED")
            return status == 200

        await eventually(released, "a release after the connections were dropped")
        assert answers[-1] == 200
        assert set(answers[:-1]) <= {503}
        await kiosk.wait_states([held["id"]], {"DONE"})
    assert_each_printed_once(printers, [held["id"]])


@pytest.mark.slow
async def test_the_appliance_rides_out_a_database_restart(
    tmp_path: Path, printers: Rig, postgres: PostgresCluster, caplog: pytest.LogCaptureFixture
) -> None:
    """While PostgreSQL is down a release answers 503 ``store-unavailable`` (nothing stored)
    and housekeeping skips its rounds (it used to end the process); once it is back the
    appliance reconnects by itself, the same release answers 200 and the job prints once."""
    cfg = rig_config(tmp_path / "data", printers, idle_probe_interval_s=120.0)
    cfg["store"] = {"url": postgres.url()}
    cfg["retention"] = {"interval_s": 0.05}
    caplog.set_level(logging.WARNING, logger="edgeprint")
    async with appliance(cfg) as (_, kiosk):
        held = await kiosk.submit("held-0001", printer="printer-02")
        await asyncio.to_thread(postgres.halt)
        try:
            for _ in range(3):
                status, body = await kiosk.post(f"/v1/jobs/{held['id']}/release")
                assert (status, body["type"]) == (503, "urn:edgeprint:problem:store-unavailable")
            await eventually(
                lambda: any(
                    getattr(r, "event", "") == "housekeeping_store_lost" for r in caplog.records
                ),
                "housekeeping meets the lost database",
            )
        finally:
            await asyncio.to_thread(postgres.launch)

        async def released() -> bool:
            status, _ = await kiosk.post(f"/v1/jobs/{held['id']}/release")
            assert status in (200, 503)
            return status == 200

        await eventually(released, "a release after the database came back", timeout_s=30)
        await kiosk.wait_states([held["id"]], {"DONE"})
    assert_each_printed_once(printers, [held["id"]])
