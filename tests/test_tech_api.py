"""Technician API, dead-letter queue, admission control and housekeeping."""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable
from pathlib import Path
from typing import Any

from testbed.rig import Rig
from tests.conftest import TECH_TOKEN, Appliance
from tests.printing import appliance, rig_config


async def _dead_job(app: Appliance, key: str) -> dict[str, Any]:
    """A job parked DEAD the way a worker parks a poison job (printer-03 is unreachable here)."""
    job = await (
        await app.submit({"owner": "ann", "printer": "printer-03", "hold": False}, key=key)
    ).json()
    service = app.running.service
    claimed = await service.worker.claim_next("printer-03")
    assert claimed is not None
    assert claimed.id == job["id"]
    assert (
        await service.outcomes.fail(claimed, "printer-03", "poison", "document-format-error")
        is not None
    )
    return job


async def test_dead_letter_lists_dead_jobs_for_tech_only(app: Appliance) -> None:
    """GET /v1/dead-letter shows DEAD jobs oldest first with their reason; kiosks get 403."""
    first = await _dead_job(app, "dead-key-0001")
    second = await _dead_job(app, "dead-key-0002")
    resp = await app.get("/v1/dead-letter", token=TECH_TOKEN)
    body = await resp.json()
    assert resp.status == 200
    assert [j["id"] for j in body["jobs"]] == [first["id"], second["id"]]
    assert body["count"] == 2
    assert {j["dead_reason"] for j in body["jobs"]} == {"poison"}
    assert (await app.get("/v1/dead-letter")).status == 403


async def test_concurrent_replays_have_exactly_one_winner(app: Appliance) -> None:
    """50 simultaneous replays of a DEAD job: one 200 (RELEASED, attempts reset), 49 × 409."""
    job = await _dead_job(app, "dead-key-0003")
    path = f"/v1/jobs/{job['id']}/replay"
    responses = await asyncio.gather(*(app.post(path, token=TECH_TOKEN) for _ in range(50)))
    assert collections.Counter(r.status for r in responses) == {200: 1, 409: 49}
    [winner] = [await r.json() for r in responses if r.status == 200]
    assert (winner["state"], winner["attempts"], winner["dead_reason"]) == ("RELEASED", 0, None)
    events = await app.running.service.jobs.events(job["id"])
    assert [e.to_state for e in events] == ["RELEASED", "PRINTING", "DEAD", "RELEASED"]


async def test_printers_view_and_unknown_printer(app: Appliance) -> None:
    """GET /v1/printers lists every printer and pool; pause of an unknown printer is 404."""
    resp = await app.get("/v1/printers", token=TECH_TOKEN)
    body = await resp.json()
    assert resp.status == 200
    names = [p["name"] for p in body["printers"]]
    assert sorted(names) == ["printer-01", "printer-02", "printer-03"]
    # a printer with a current problem first (none answers here: each is, once probed)
    order = [(p["problem"] is None, p["name"]) for p in body["printers"]]
    assert order == sorted(order)
    assert body["pools"] == [
        {
            "name": "lobby",
            "printers": ["printer-01", "printer-02"],
            "waiting": 0,
            "oldest_waiting_s": None,
        }
    ]
    resp = await app.post("/v1/printers/printer-99/pause", token=TECH_TOKEN)
    assert resp.status == 404
    assert (await resp.json())["type"] == "urn:edgeprint:problem:printer-not-found"
    assert (await app.get("/v1/printers")).status == 403


async def test_pause_survives_a_restart(make_appliance: Callable[..., Any]) -> None:
    """A paused printer is still paused after the appliance restarts (the flag is stored)."""
    async with make_appliance() as app:
        assert (await app.post("/v1/printers/printer-03/pause", token=TECH_TOKEN)).status == 200
    async with make_appliance() as app:
        body = await (await app.get("/v1/printers", token=TECH_TOKEN)).json()
        assert {p["name"]: p["paused"] for p in body["printers"]} == {
            "printer-01": False, "printer-02": False, "printer-03": True,
        }  # fmt: skip


async def test_held_jobs_expire_and_documents_are_deleted(
    make_appliance: Callable[..., Any],
) -> None:
    """Housekeeping: a held job past hold_ttl_s → EXPIRED; after retention its document goes."""
    sections = {"retention": {"hold_ttl_s": 60, "document_retention_s": 0, "interval_s": 3600}}
    async with make_appliance(sections=sections) as app:
        job = await (await app.submit(key="expire-key-01")).json()
        spooled = app.data_dir / "spool" / f"{job['id']}.pdf"
        assert spooled.exists()
        service = app.running.service
        assert await service.upkeep.housekeeping() == ([], 0)  # not yet a minute old
        ran = service.run
        service.run = lambda: ran() + 61  # the run clock is a parameter: a minute later
        await service.upkeep.housekeeping()
        final = await (await app.get(f"/v1/jobs/{job['id']}")).json()
        assert final["state"] == "EXPIRED"
        await app.running.service.upkeep.housekeeping()
        assert not spooled.exists()
        events = await app.running.service.jobs.events(job["id"])
        assert [(e.to_state, e.reason) for e in events][-1] == ("EXPIRED", "hold_ttl")
        again = await app.post(f"/v1/jobs/{job['id']}/release")
        assert (again.status, (await again.json())["state"]) == (409, "EXPIRED")


async def test_full_pool_is_503_and_stores_nothing(tmp_path: Path, printers: Rig) -> None:
    """Past high_water: named jobs go to a peer with room, then 503 + Retry-After, nothing stored."""
    for p in printers:
        printers.set_speed(p.name, 30.0)  # each printer holds one job for the whole test
    cfg = rig_config(tmp_path / "data", printers, retry_after_s=7)
    for p in cfg["printers"]:
        p["high_water"] = 2
    async with appliance(cfg) as (run, kiosk):
        holders = [
            await kiosk.submit(f"holder-{i:04d}", pool="lobby", hold=False) for i in range(2)
        ]
        await kiosk.wait_states([j["id"] for j in holders], {"PRINTING"})
        a = [
            await kiosk.submit(f"named-01-{i:04d}", printer="printer-01", hold=False)
            for i in range(2)
        ]
        assert {j["printer"] for j in a} == {"printer-01"}
        redirected = await kiosk.submit("named-01-0002", printer="printer-01", hold=False)
        assert redirected["printer"] == "printer-02"  # printer-01 is full: its peer has room
        pooled = await kiosk.submit("pooled-0000", pool="lobby", hold=False)
        assert pooled["pool"] == "lobby"
        before = await run.service.jobs.count_by_state()
        form_status, problem, headers = await _raw_submit(kiosk, "pooled-0001", {"pool": "lobby"})
        assert form_status == 503
        assert problem["type"] == "urn:edgeprint:problem:queue-full"
        assert headers["Retry-After"] == "7"
        assert await run.service.jobs.count_by_state() == before
        assert not list((tmp_path / "data" / "spool" / "tmp").iterdir())
        # a place frees up: the same key now succeeds
        status, _ = await kiosk.post(f"/v1/jobs/{pooled['id']}/cancel")
        assert status == 200
        retried = await kiosk.submit("pooled-0001", pool="lobby", hold=False)
        assert retried["state"] == "RELEASED"


async def _raw_submit(kiosk: Any, key: str, meta: dict[str, Any]) -> tuple[int, Any, Any]:
    import json

    import aiohttp

    from testbed.pdfs import make_pdf
    from tests.conftest import KIOSK_TOKEN

    form = aiohttp.FormData()
    form.add_field(
        "metadata",
        json.dumps({"owner": "ann", "hold": False, **meta}),
        content_type="application/json",
    )
    form.add_field("document", make_pdf(key), content_type="application/pdf", filename="b.pdf")
    headers = {"Authorization": f"Bearer {KIOSK_TOKEN}", "Idempotency-Key": key}
    async with kiosk.http.post(f"{kiosk.url}/v1/jobs", data=form, headers=headers) as r:
        return r.status, await r.json(), r.headers
