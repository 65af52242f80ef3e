"""Races resolved by conditional writes, proven with real concurrent HTTP clients."""

from __future__ import annotations

import asyncio
import collections
import json
import resource

import aiohttp
import pytest

from testbed.pdfs import make_pdf
from tests.conftest import KIOSK_TOKEN, Appliance


@pytest.fixture(autouse=True)
def _enough_file_descriptors() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 4096 if hard == resource.RLIM_INFINITY else min(hard, 4096)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


async def test_1000_concurrent_releases_have_exactly_one_winner(app: Appliance) -> None:
    """1,000 simultaneous releases of one job: one 200, 999 × 409 naming RELEASED, no 5xx."""
    job = await (await app.submit()).json()
    path = f"/v1/jobs/{job['id']}/release"
    responses = await asyncio.gather(*(app.post(path) for _ in range(1000)))
    counts = collections.Counter(r.status for r in responses)
    assert counts == {200: 1, 409: 999}
    conflicts = [await r.json() for r in responses if r.status == 409]
    assert {c["state"] for c in conflicts} == {"RELEASED"}
    events = await app.running.service.jobs.events(job["id"])
    assert [e.to_state for e in events] == ["HELD", "RELEASED"]


async def test_200_concurrent_submissions_with_one_key_make_one_job(app: Appliance) -> None:
    """200 simultaneous submissions with one Idempotency-Key: one job, every answer carries it."""
    responses = await asyncio.gather(*(app.submit(key="one-key-for-all") for _ in range(200)))
    counts = collections.Counter(r.status for r in responses)
    assert counts[201] == 1
    assert counts[200] == 199
    ids = {(await r.json())["id"] for r in responses}
    assert len(ids) == 1
    snap = app.snapshot()
    assert len(snap["jobs"]) == 1
    assert snap["spool"] == [f"{ids.pop()}.pdf"]


async def test_release_versus_cancel_resolve_to_one_order(app: Appliance) -> None:
    """Concurrent release and cancel of a held job behave as if run one after the other.

    Cancel is allowed from RELEASED, so "release then cancel" answers 200 twice
    and ends CANCELLED, while "cancel then release" answers 409 to the release.
    Never both applied in a way no order explains, never a lost update.
    """
    outcomes = collections.Counter()
    for i in range(30):
        job = await (await app.submit(key=f"race-key-{i:04d}")).json()
        rel, can = await asyncio.gather(
            app.post(f"/v1/jobs/{job['id']}/release"), app.post(f"/v1/jobs/{job['id']}/cancel")
        )
        final = await (await app.get(f"/v1/jobs/{job['id']}")).json()
        history = [e.to_state for e in await app.running.service.jobs.events(job["id"])]
        assert can.status == 200  # cancel is allowed from HELD and from RELEASED
        assert final["state"] == "CANCELLED"
        if rel.status == 200:
            assert history == ["HELD", "RELEASED", "CANCELLED"]
            outcomes["release-first"] += 1
        else:
            assert rel.status == 409
            assert (await rel.json())["state"] == "CANCELLED"
            assert history == ["HELD", "CANCELLED"]
            outcomes["cancel-first"] += 1
    assert sum(outcomes.values()) == 30


async def test_concurrent_double_cancel_has_one_winner(app: Appliance) -> None:
    """Two kiosks cancelling the same job at once: one 200, one 409 with CANCELLED."""
    for i in range(20):
        job = await (await app.submit(key=f"cancel-race-{i:04d}")).json()
        a, b = await asyncio.gather(
            app.post(f"/v1/jobs/{job['id']}/cancel"), app.post(f"/v1/jobs/{job['id']}/cancel")
        )
        assert sorted([a.status, b.status]) == [200, 409]


async def test_concurrent_submissions_with_distinct_keys_all_commit(app: Appliance) -> None:
    """300 simultaneous distinct submissions are all stored (group commit loses none)."""
    form_meta = json.dumps({"owner": "ann", "pool": "lobby"})

    async def one(i: int) -> aiohttp.ClientResponse:
        form = aiohttp.FormData()
        form.add_field("metadata", form_meta, content_type="application/json")
        form.add_field(
            "document", make_pdf(f"badge {i}"), content_type="application/pdf", filename="b.pdf"
        )
        headers = {"Authorization": f"Bearer {KIOSK_TOKEN}", "Idempotency-Key": f"distinct-{i:05d}"}
        resp = await app.http.post(f"{app.url}/v1/jobs", data=form, headers=headers)
        await resp.read()
        return resp

    responses = await asyncio.gather(*(one(i) for i in range(300)))
    assert collections.Counter(r.status for r in responses) == {201: 300}
    snap = app.snapshot()
    assert len(snap["jobs"]) == 300
    assert len(snap["spool"]) == 300
    assert app.running.store.batches < 300  # writes were grouped
