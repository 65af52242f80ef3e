"""Resolving an unknown outcome: POST /v1/jobs/{id}/resolve and ``edgeprint resolve``."""

from __future__ import annotations

import asyncio
import collections
import json
from typing import Any

import pytest

from tests.conftest import KIOSK_TOKEN, TECH_TOKEN, Appliance
from tests.test_cli_tech import run_cli

PROBLEM = "urn:edgeprint:problem:"


async def dead_job(app: Appliance, key: str, reason: str = "outcome_unknown") -> dict[str, Any]:
    """A job parked DEAD with ``reason`` the way a worker parks it (printer-03 is unreachable)."""
    job = await (
        await app.submit({"owner": "ann", "printer": "printer-03", "hold": False}, key=key)
    ).json()
    service = app.running.service
    claimed = await service.worker.claim_next("printer-03")
    assert claimed is not None
    assert claimed.id == job["id"]
    assert (
        await service.outcomes.fail(claimed, "printer-03", reason, "printer forgot the job")
        is not None
    )
    return job


async def test_printed_makes_it_done_and_records_who(app: Appliance) -> None:
    """{"printed": true} → DONE; the event names the technician's token and the decision."""
    job = await dead_job(app, "resolve-key-0001")
    resp = await app.post(f"/v1/jobs/{job['id']}/resolve", {"printed": True}, token=TECH_TOKEN)
    body = await resp.json()
    assert resp.status == 200, body
    assert body["state"] == "DONE"
    assert body["finished_at"] is not None
    events = await app.running.service.jobs.events(job["id"])
    last = events[-1]
    assert (last.from_state, last.to_state, last.actor) == ("DEAD", "DONE", "tech-1")
    assert last.reason == "resolved: printed (a technician saw the copy)"


async def test_not_printed_releases_it_once_more(app: Appliance) -> None:
    """{"printed": false} → RELEASED with attempts reset, recorded with who and why."""
    job = await dead_job(app, "resolve-key-0002")
    resp = await app.post(f"/v1/jobs/{job['id']}/resolve", {"printed": False}, token=TECH_TOKEN)
    body = await resp.json()
    assert resp.status == 200, body
    assert (body["state"], body["attempts"], body["dead_reason"]) == ("RELEASED", 0, None)
    events = await app.running.service.jobs.events(job["id"])
    assert [e.to_state for e in events] == ["RELEASED", "PRINTING", "DEAD", "RELEASED"]
    assert events[-1].actor == "tech-1"
    assert events[-1].reason is not None
    assert events[-1].reason.startswith("resolved: not printed")


@pytest.mark.parametrize("printed", [True, False])
async def test_concurrent_resolutions_have_exactly_one_winner(
    app: Appliance, printed: bool
) -> None:
    """50 simultaneous resolutions of one job: one 200, 49 × 409 outcome-not-unknown."""
    job = await dead_job(app, f"resolve-key-race-{printed}")
    path = f"/v1/jobs/{job['id']}/resolve"
    responses = await asyncio.gather(
        *(app.post(path, {"printed": printed}, token=TECH_TOKEN) for _ in range(50))
    )
    assert collections.Counter(r.status for r in responses) == {200: 1, 409: 49}
    expected = "DONE" if printed else "RELEASED"
    for r in responses:
        body = await r.json()
        if r.status == 409:
            assert body["type"] == PROBLEM + "outcome-not-unknown"
            assert body["state"] == expected
    events = await app.running.service.jobs.events(job["id"])
    assert [e.to_state for e in events] == ["RELEASED", "PRINTING", "DEAD", expected]


async def test_mixed_concurrent_resolutions_have_exactly_one_winner(app: Appliance) -> None:
    """Printed and not-printed racing: exactly one decision is taken, the rest are 409."""
    job = await dead_job(app, "resolve-key-mixed")
    path = f"/v1/jobs/{job['id']}/resolve"
    responses = await asyncio.gather(
        *(app.post(path, {"printed": i % 2 == 0}, token=TECH_TOKEN) for i in range(40))
    )
    assert collections.Counter(r.status for r in responses) == {200: 1, 409: 39}
    events = await app.running.service.jobs.events(job["id"])
    assert len(events) == 4
    assert events[-1].to_state in ("DONE", "RELEASED")


async def test_other_jobs_are_refused_and_left_intact(app: Appliance) -> None:
    """A poison DEAD job, a HELD job and a DONE one: 409 outcome-not-unknown, nothing stored."""
    poison = await dead_job(app, "resolve-key-0003", reason="poison")
    held = await (await app.submit(key="resolve-key-0004")).json()
    done = await dead_job(app, "resolve-key-0005")
    await app.post(f"/v1/jobs/{done['id']}/resolve", {"printed": True}, token=TECH_TOKEN)
    before = app.snapshot()
    for job, state in ((poison, "DEAD"), (held, "HELD"), (done, "DONE")):
        for printed in (True, False):
            resp = await app.post(
                f"/v1/jobs/{job['id']}/resolve", {"printed": printed}, token=TECH_TOKEN
            )
            body = await resp.json()
            assert resp.status == 409
            assert resp.content_type == "application/problem+json"
            assert body["type"] == PROBLEM + "outcome-not-unknown"
            assert body["state"] == state
            assert body["job_id"] == job["id"]
    assert app.snapshot() == before


@pytest.mark.parametrize(
    ("body", "status", "slug"),
    [
        pytest.param(None, 422, "invalid-request", id="no-body"),
        pytest.param({}, 422, "invalid-request", id="empty-object"),
        pytest.param({"printed": "yes"}, 422, "invalid-request", id="not-boolean"),
        pytest.param({"printed": 1}, 422, "invalid-request", id="integer"),
        pytest.param({"printed": True, "x": 1}, 422, "invalid-request", id="unknown-field"),
        pytest.param([True], 422, "invalid-request", id="array"),
    ],
)  # fmt: skip
async def test_bad_bodies_are_refused_and_change_nothing(
    app: Appliance, body: Any, status: int, slug: str
) -> None:
    """A body that does not say printed true/false is refused with the exact problem."""
    job = await dead_job(app, "resolve-key-bad")
    before = app.snapshot()
    resp = await app.post(f"/v1/jobs/{job['id']}/resolve", body, token=TECH_TOKEN)
    problem = await resp.json()
    assert (resp.status, problem["type"]) == (status, PROBLEM + slug)
    assert app.snapshot() == before


async def test_malformed_json_unknown_job_and_kiosk(app: Appliance) -> None:
    """Broken JSON is 400, an unknown job 404, a kiosk token 403; nothing changes."""
    job = await dead_job(app, "resolve-key-0006")
    before = app.snapshot()
    url = f"{app.url}/v1/jobs/{job['id']}/resolve"
    headers = {**app.headers(TECH_TOKEN), "Content-Type": "application/json"}
    async with app.http.post(url, data=b'{"printed": tru', headers=headers) as r:
        assert (r.status, (await r.json())["type"]) == (400, PROBLEM + "malformed-json")
    resp = await app.post("/v1/jobs/" + "0" * 32 + "/resolve", {"printed": True}, TECH_TOKEN)
    assert (resp.status, (await resp.json())["type"]) == (404, PROBLEM + "job-not-found")
    resp = await app.post(f"/v1/jobs/{job['id']}/resolve", {"printed": True}, KIOSK_TOKEN)
    assert (resp.status, (await resp.json())["type"]) == (403, PROBLEM + "forbidden")
    assert app.snapshot() == before


async def test_cli_resolve(app: Appliance, capsys: pytest.CaptureFixture[str]) -> None:
    """edgeprint resolve ID --printed / --not-printed; a second resolution exits 1."""
    first = await dead_job(app, "resolve-key-0007")
    second = await dead_job(app, "resolve-key-0008")
    code, out, err = await run_cli(capsys, "resolve", first["id"], "--printed", "--url", app.url)
    assert (code, err) == (0, "")
    assert f"resolved {first['id']}: printed, now DONE" in out
    code, out, _ = await run_cli(
        capsys, "--json", "resolve", second["id"], "--not-printed", "--url", app.url
    )
    assert code == 0
    assert json.loads(out)["state"] == "RELEASED"
    code, out, err = await run_cli(capsys, "resolve", first["id"], "--printed", "--url", app.url)
    assert code == 1
    assert "outcome" in err
    assert "DONE" in err
    code, _, err = await run_cli(capsys, "resolve", first["id"], "--url", app.url)
    assert code == 2
    assert "--printed" in err
