"""Partial output (DESIGN §3): a copy that stopped after some pages came out is never DONE and
never sent again whole; a technician may print only the rest (POST …/resolve {"rest": true})."""

from __future__ import annotations

import asyncio
import collections
from pathlib import Path
from typing import Any

import pytest

from testbed.pdfs import make_pdf
from testbed.rig import Rig
from tests.conftest import TECH_TOKEN, Appliance
from tests.printing import appliance, rig_config
from tests.test_resolve import dead_job

PROBLEM = "urn:edgeprint:problem:"
DOC = make_pdf("three pages", pages=3, pad_to=3000)


@pytest.mark.slow
async def test_a_copy_aborted_after_a_page_then_the_rest_prints_the_rest(
    tmp_path: Path, printers: Rig
) -> None:
    """The printer aborts a three-page job after its first page: DEAD outcome_unknown with
    pages_printed 1, settled_by stopped_after_pages, nothing sent again; the technician asks
    for the rest and exactly pages 2–3 come out (the printer's own log)."""
    printers.fault("printer-01", "abort-at", "1", user="ann", once=True)
    cfg = rig_config(tmp_path / "data", printers, pool=None)
    async with appliance(cfg) as (_, kiosk):
        job = await kiosk.submit("rest-0001", printer="printer-01", hold=False, doc=DOC)
        [dead] = await kiosk.wait_states([job["id"]], {"DONE", "DEAD"})
        assert (dead["state"], dead["dead_reason"]) == ("DEAD", "outcome_unknown"), dead
        assert (dead["settled_by"], dead["pages_printed"]) == ("stopped_after_pages", 1)
        assert "1 of 3 impression(s) came out" in dead["last_error"]
        status, body = await kiosk.post(f"/v1/jobs/{job['id']}/resolve", {"rest": True}, tech=True)
        assert (status, body["state"]) == (200, "RELEASED"), body
        [done] = await kiosk.wait_states([job["id"]], {"DONE", "DEAD"})
    assert done["state"] == "DONE", done
    lines = [(x.pages, x.out) for x in printers.printed("printer-01") if job["id"] in x.job_name]
    assert lines == [(3, 1), (2, 2)], "the first page, then the other two only"


async def test_rest_bad_input_says_why_and_changes_nothing(app: Appliance) -> None:
    """{"rest": true} for a job with no count of pages out: 409 cannot-print-rest; with
    "printed" too: 422; for a job that is not DEAD outcome_unknown: 409 outcome-not-unknown;
    the job is as it was each time."""
    job = await dead_job(app, "rest-key-0001")
    before = app.snapshot()
    for body, status, slug in [
        ({"rest": True}, 409, "cannot-print-rest"),
        ({"rest": True, "printed": True}, 422, "invalid-request"),
        ({"rest": "yes"}, 422, None),
    ]:
        resp = await app.post(f"/v1/jobs/{job['id']}/resolve", body, token=TECH_TOKEN)
        got = await resp.json()
        assert resp.status == status, got
        if slug is not None:
            assert got["type"] == PROBLEM + slug, got
    assert app.snapshot() == before
    done = await dead_job(app, "rest-key-0002", reason="poison")
    resp = await app.post(f"/v1/jobs/{done['id']}/resolve", {"rest": True}, token=TECH_TOKEN)
    assert resp.status == 409
    assert (await resp.json())["type"] == PROBLEM + "outcome-not-unknown"


async def _partial(app: Appliance, key: str, out: int) -> dict[str, Any]:
    """A three-page job parked DEAD outcome_unknown after ``out`` pages came out."""
    job = await (
        await app.submit({"owner": "ann", "printer": "printer-03", "hold": False}, key=key,
                         document=DOC)
    ).json()  # fmt: skip
    service = app.running.service
    claimed = await service.worker.claim_next("printer-03")
    assert claimed is not None
    dead = await service.outcomes.fail(
        claimed, "printer-03", "outcome_unknown", "part of it printed",
        evidence="stopped_after_pages", pages=out,
    )  # fmt: skip
    assert dead is not None
    return job


async def test_concurrent_rests_have_exactly_one_winner(app: Appliance) -> None:
    """Eight technicians ask for the rest at once: one 200 (RELEASED from page 2), seven 409;
    one event row records it."""
    job = await _partial(app, "rest-key-0003", out=1)

    async def ask() -> int:
        resp = await app.post(f"/v1/jobs/{job['id']}/resolve", {"rest": True}, token=TECH_TOKEN)
        return resp.status

    statuses = collections.Counter(await asyncio.gather(*(ask() for _ in range(8))))
    assert statuses == {200: 1, 409: 7}
    current = await app.running.service.get(job["id"])
    assert (current.state.value, current.from_page) == ("RELEASED", 2)
    events = await app.running.service.jobs.events(job["id"])
    assert events[-1].reason == "resolved: print the rest (pages 2–3; 1 came out)"
