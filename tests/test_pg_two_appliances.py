"""Two appliances on one PostgreSQL store (``[store] shared``): what one does reaches the
printers the other drives at once (LISTEN/NOTIFY), and the jobs print exactly once."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import psycopg

from testbed.config import TECH_TOKEN
from testbed.pdfs import make_pdf
from testbed.rig import Rig
from tests.polling import eventually
from tests.printing import Client, appliance, assert_each_printed_once, printed_names, rig_config

#: The idle probe of the appliance that drives the printers: far longer than any wait below,
#: so a job printed within the wait was started by a notification, not found by a poll.
_SLOW_IDLE_S = 120.0


def _configs(tmp_path: Path, printers: Rig, pg_url: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Appliances A and B (``[cluster] appliance_id`` "a" and "b"), both configured with the
    rig's printer-02; B starts first and holds its lease (see :func:`_two`), so A serves the
    API only and B drives the printer."""
    a = rig_config(tmp_path / "a", printers, pool=None)
    b = rig_config(tmp_path / "b", printers, pool=None, idle_probe_interval_s=_SLOW_IDLE_S)
    for name, cfg in (("a", a), ("b", b)):
        cfg["printers"] = [p for p in cfg["printers"] if p["name"] == "printer-02"]
        cfg["store"] = {"url": pg_url, "shared": True}
        cfg["cluster"] = {"appliance_id": name}
    return a, b


@contextlib.asynccontextmanager
async def _two(a: dict[str, Any], b: dict[str, Any]) -> AsyncIterator[tuple[Client, Client]]:
    """B, then A once B holds printer-02's lease (A's share of one printer among two live
    appliances is one, but only a free or lapsed lease is taken)."""
    async with appliance(b) as (_, kiosk_b):
        await eventually(_b_holds_the_lease(kiosk_b), "B holds printer-02's lease")
        async with appliance(a) as (_, kiosk_a):
            yield kiosk_a, kiosk_b


def _b_holds_the_lease(kiosk: Client) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return bool((await _printer(kiosk, "printer-02"))["owner"] == "b")

    return check


async def _printer(kiosk: Client, name: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {TECH_TOKEN}"}
    async with kiosk.http.get(f"{kiosk.url}/v1/printers", headers=headers) as r:
        assert r.status == 200
        body = await r.json()
    items = body["printers"] if isinstance(body, dict) else body
    found: dict[str, Any] = next(p for p in items if p["name"] == name)
    return found


async def test_a_release_on_one_appliance_wakes_the_printer_on_the_other(
    tmp_path: Path, printers: Rig, pg_url: str
) -> None:
    """A job submitted held on B and released on A prints on B's printer within seconds
    although B's worker polls only every 120 s; it prints once, and a second release on
    either box is 409."""
    a, b = _configs(tmp_path, printers, pg_url)
    async with _two(a, b) as (kiosk_a, kiosk_b):
        held = await kiosk_b.submit("held-0001", printer="printer-02")
        started = time.monotonic()
        status, body = await kiosk_a.post(f"/v1/jobs/{held['id']}/release")
        assert (status, body["state"]) == (200, "RELEASED")
        await kiosk_b.wait_states([held["id"]], {"DONE"}, timeout_s=20)
        assert time.monotonic() - started < 20 < _SLOW_IDLE_S
        for kiosk in (kiosk_a, kiosk_b):
            status, body = await kiosk.post(f"/v1/jobs/{held['id']}/release")
            assert status == 409
            assert body["type"] == "urn:edgeprint:problem:state-conflict"
    assert_each_printed_once(printers, [held["id"]])
    assert printed_names(printers)[f"edgeprint-{held['id']}"] == ["printer-02"]


async def test_a_pause_and_resume_on_one_appliance_reach_the_other(
    tmp_path: Path, printers: Rig, pg_url: str
) -> None:
    """A technician's pause of printer-02 on A shows as paused on B (which drives it) at once,
    and the resume on A makes B print the job released meanwhile."""
    a, b = _configs(tmp_path, printers, pg_url)
    async with _two(a, b) as (kiosk_a, kiosk_b):
        status, _ = await kiosk_a.post("/v1/printers/printer-02/pause", tech=True)
        assert status == 200

        async def paused_on_b() -> bool:
            return bool((await _printer(kiosk_b, "printer-02"))["paused"])

        await eventually(paused_on_b, "B sees printer-02 paused", timeout_s=10)
        job = await kiosk_b.submit("held-0002", printer="printer-02")
        status, _ = await kiosk_a.post(f"/v1/jobs/{job['id']}/release")
        assert status == 200
        assert (await kiosk_b.job(job["id"]))["state"] == "RELEASED"
        status, _ = await kiosk_a.post("/v1/printers/printer-02/resume", tech=True)
        assert status == 200
        await kiosk_b.wait_states([job["id"]], {"DONE"}, timeout_s=20)
        assert not (await _printer(kiosk_b, "printer-02"))["paused"]
    assert_each_printed_once(printers, [job["id"]])


async def test_a_job_accepted_on_one_appliance_prints_on_the_other_from_the_database(
    tmp_path: Path, printers: Rig, pg_url: str
) -> None:
    """A hold=false job submitted on A prints once on B's printer: B fetches the document from
    the database on claim (byte for byte into its spool). A job whose document is missing or
    damaged in the database ends DEAD ``document_missing`` with that said, nothing printed,
    and A's copy of the document is left alone."""
    a, b = _configs(tmp_path, printers, pg_url)
    doc = make_pdf("badge from A")
    async with _two(a, b) as (kiosk_a, kiosk_b):
        badge = await kiosk_a.submit("badge-0001", printer="printer-02", hold=False, doc=doc)
        await kiosk_b.wait_states([badge["id"]], {"DONE"}, timeout_s=20)
        assert (tmp_path / "b" / "spool" / f"{badge['id']}.pdf").read_bytes() == doc
        gone = await kiosk_a.submit("gone-0001", printer="printer-02")
        damaged = await kiosk_a.submit("damaged-0001", printer="printer-02")
        with psycopg.connect(pg_url) as conn:
            conn.execute("DELETE FROM documents WHERE job_id = %s", (gone["id"],))
            conn.execute(
                "UPDATE documents SET chunk = 'not the document'::bytea WHERE job_id = %s",
                (damaged["id"],),
            )
        for job in (gone, damaged):
            status, _ = await kiosk_a.post(f"/v1/jobs/{job['id']}/release")
            assert status == 200
        dead = await kiosk_b.wait_states([gone["id"], damaged["id"]], {"DEAD"}, timeout_s=20)
        for job in dead:
            assert job["dead_reason"] == "document_missing"
            assert "missing or damaged in the database" in job["last_error"]
            assert not (tmp_path / "b" / "spool" / f"{job['id']}.pdf").exists()
            assert (tmp_path / "a" / "spool" / f"{job['id']}.pdf").exists()
    assert_each_printed_once(printers, [badge["id"]])
    assert set(printed_names(printers)) == {f"edgeprint-{badge['id']}"}


async def test_a_thousand_releases_spread_over_two_appliances_release_once(
    tmp_path: Path, printers: Rig, pg_url: str
) -> None:
    """1,000 simultaneous releases of one held job, half on each appliance: exactly one 200,
    every other one 409 ``state-conflict``, one HELD → RELEASED event, and the job prints once
    (a copy handed back under load, PRINTING → RELEASED, is not a second release)."""
    a, b = _configs(tmp_path, printers, pg_url)
    async with _two(a, b) as (kiosk_a, kiosk_b):
        job = await kiosk_b.submit("race-0001", printer="printer-02")
        answers = await asyncio.gather(
            *(
                (kiosk_a if i % 2 else kiosk_b).post(f"/v1/jobs/{job['id']}/release")
                for i in range(1000)
            )
        )
        statuses = Counter(status for status, _ in answers)
        assert statuses == {200: 1, 409: 999}
        assert {b["type"] for s, b in answers if s == 409} == {
            "urn:edgeprint:problem:state-conflict"
        }
        await kiosk_b.wait_states([job["id"]], {"DONE"}, timeout_s=30)
    with psycopg.connect(pg_url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM job_events WHERE job_id = %s "
            "AND from_state = 'HELD' AND to_state = 'RELEASED'",
            (job["id"],),
        ).fetchone()
    assert row is not None
    assert row[0] == 1
    assert_each_printed_once(printers, [job["id"]])


async def test_a_cancel_on_one_appliance_stops_the_job_printing_on_the_other(
    tmp_path: Path, printers: Rig, pg_url: str
) -> None:
    """Cancelling on A a job that B's printer is printing (2 s a page) answers 202 and B sends
    Cancel-Job at once (it follows the job and would otherwise see it print): CANCELLED, and
    nothing comes out of the printer."""
    printers.set_speed("printer-02", 2.0)
    a, b = _configs(tmp_path, printers, pg_url)
    async with _two(a, b) as (kiosk_a, kiosk_b):
        job = await kiosk_b.submit("cancel-me", printer="printer-02", hold=False)
        await kiosk_b.wait_states([job["id"]], {"PRINTING"})
        status, body = await kiosk_a.post(f"/v1/jobs/{job['id']}/cancel")
        assert (status, body["state"], body["cancel_requested"]) == (202, "PRINTING", True)
        [final] = await kiosk_b.wait_states([job["id"]], {"CANCELLED", "DONE"}, timeout_s=15)
    assert final["state"] == "CANCELLED"
    assert printed_names(printers) == {}
