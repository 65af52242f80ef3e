"""GET /v1/stats and ``edgeprint stats``: the numbers a technician's screen shows."""

from __future__ import annotations

import json

import pytest

from tests.conftest import KIOSK_TOKEN, TECH_TOKEN, Appliance
from tests.test_cli_tech import run_cli
from tests.test_resolve import dead_job


async def test_stats_counts_states_reasons_and_queues(app: Appliance) -> None:
    """Every state counted (zeros too), DEAD by reason, each printer's waiting jobs and pools."""
    await dead_job(app, "stats-key-0001", reason="outcome_unknown")
    await dead_job(app, "stats-key-0002", reason="poison")
    await dead_job(app, "stats-key-0003", reason="poison")
    await app.submit(key="stats-key-0004")  # HELD for the pool
    await app.submit({"owner": "bo", "printer": "printer-03", "hold": False}, key="stats-key-0005")
    await app.submit({"owner": "cy", "pool": "lobby", "hold": False}, key="stats-key-0006")
    resp = await app.get("/v1/stats", token=TECH_TOKEN)
    body = await resp.json()
    assert resp.status == 200
    assert body["jobs_by_state"] == {
        "HELD": 1, "RELEASED": 2, "PRINTING": 0, "DONE": 0, "DEAD": 3, "CANCELLED": 0,
        "EXPIRED": 0,
    }  # fmt: skip
    assert body["dead_letters"] == 3
    assert body["dead_letters_by_reason"] == {"outcome_unknown": 1, "poison": 2}
    by_name = {p["name"]: p for p in body["printers"]}
    assert list(by_name) == ["printer-01", "printer-02", "printer-03"]
    assert by_name["printer-03"]["waiting"] == 1
    assert 0 <= by_name["printer-03"]["oldest_waiting_s"] < 60  # submitted just now
    assert by_name["printer-01"]["waiting"] == 0
    assert set(by_name["printer-01"]) == {
        "name", "pool", "healthy", "health_reason", "reachable", "paused", "waiting",
        "oldest_waiting_s", "printing_job",
    }  # fmt: skip
    assert body["pools"][0]["name"] == "lobby"
    assert body["pools"][0]["waiting"] == 1


async def test_stats_is_for_technicians(app: Appliance) -> None:
    """A kiosk token gets 403, no token 401."""
    resp = await app.get("/v1/stats", token=KIOSK_TOKEN)
    assert (resp.status, (await resp.json())["type"]) == (403, "urn:edgeprint:problem:forbidden")
    async with app.http.get(f"{app.url}/v1/stats") as r:
        assert r.status == 401


async def test_cli_stats_text_and_json(app: Appliance, capsys: pytest.CaptureFixture[str]) -> None:
    """edgeprint stats prints counts and reasons; --json is the API's answer as-is."""
    await dead_job(app, "stats-key-0007", reason="outcome_unknown")
    code, out, err = await run_cli(capsys, "stats", "--url", app.url)
    assert (code, err) == (0, "")
    assert "DEAD 1" in out
    assert "outcome_unknown 1" in out
    assert "printer-03" in out
    code, out, _ = await run_cli(capsys, "stats", "--json", "--url", app.url)
    assert code == 0
    api = await (await app.get("/v1/stats", token=TECH_TOKEN)).json()
    got = json.loads(out)
    assert got["jobs_by_state"] == api["jobs_by_state"]
    assert got["dead_letters_by_reason"] == api["dead_letters_by_reason"]
